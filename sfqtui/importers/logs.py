"""`sfqtui import` for gateway request logs: each format's reader, then one trace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sfqtui.errors import InputError
from sfqtui.importers.envoy import read_envoy
from sfqtui.importers.gateway import LogOptions, LogRows, LogSummary, log_options, write_log_trace
from sfqtui.importers.litellm import read_litellm
from sfqtui.importers.options import ImportOptions
from sfqtui.importers.otel import read_otel


def _each(read: Callable[[Path, LogOptions], LogRows]) -> Callable[[list[Path], LogOptions], list[LogRows]]:
    return lambda paths, options: [read(path, options) for path in paths]


# otel reads its files together: a call's wrapper span or its user may be in another file
LOG_READERS: dict[str, Callable[[list[Path], LogOptions], list[LogRows]]] = {
    "litellm": _each(read_litellm),
    "otel": read_otel,
    "envoy-ai-gateway": _each(read_envoy),
}
LOG_FORMATS = tuple(LOG_READERS)


def import_log(fmt: str, sources: list[Path], out: Path, options: ImportOptions,
               progress: Callable[[str], None] | None = None) -> LogSummary:
    """Read each gateway log file, put them on one clock, and write the trace with the measured times."""
    if not sources:
        raise InputError("give at least one source file")
    settings = log_options(options)
    say = progress or (lambda _message: None)
    paths = [Path(p) for p in sources]
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: no such file")
    say(f"reading {', '.join(p.name for p in paths)}")
    parts = LOG_READERS[fmt](paths, settings)
    say(f"writing {out.name}")
    return write_log_trace(fmt, parts, sources, out, settings)
