"""Fixed-width text columns: a much cheaper per-frame render than rich's Table."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text


def grid(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], right: Sequence[bool]) -> Text:
    """Columns sized to their widest cell; ``rows`` are (cells, style). The header is bold."""
    widths = [max([len(header[i])] + [len(cells[i]) for cells, _ in rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    text = Text(line(header), style="bold", no_wrap=True, overflow="ellipsis")
    for cells, style in rows:
        text.append("\n")
        text.append(line(cells), style=style)
    return text
