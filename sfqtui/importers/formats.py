"""Every format `sfqtui import` reads, in one registry: the public traces' (convert.py's
readers) and the gateways' request logs (logs.py's), each with the function that imports it."""

from __future__ import annotations

from collections.abc import Callable
from difflib import get_close_matches
from pathlib import Path

from sfqtui.errors import InputError
from sfqtui.importers.convert import FORMATS, ImportSummary, Progress, import_trace
from sfqtui.importers.logs import LOG_FORMATS, import_log
from sfqtui.importers.options import ImportOptions

Importer = Callable[[str, list[Path], Path, ImportOptions, Progress | None], ImportSummary]
IMPORTERS: dict[str, Importer] = {**dict.fromkeys(FORMATS, import_trace), **dict.fromkeys(LOG_FORMATS, import_log)}
IMPORT_FORMATS = tuple(IMPORTERS)


def importer(fmt: str) -> Importer:
    """The function that imports ``fmt``; InputError naming every format (and the closest to ``fmt``) for another name."""
    found = IMPORTERS.get(fmt)
    if found is None:
        named = fmt.strip().lower()
        close = [f for f in IMPORT_FORMATS if named and f.startswith(named)] or get_close_matches(named, IMPORT_FORMATS, n=1)
        meant = f" (did you mean {close[0]}?)" if close else ""
        raise InputError(f"unknown format {fmt!r}{meant}; the formats: {', '.join(IMPORT_FORMATS)}")
    return found
