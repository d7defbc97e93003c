"""Fixed-width text columns: a much cheaper per-frame render than rich's Table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text


def grid(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], right: Sequence[bool]) -> list[Text]:
    """A line per row, columns sized to their widest cell; ``rows`` are (cells, style). The
    header is bold."""
    widths = [max([len(header[i])] + [len(cells[i]) for cells, _ in rows]) for i in range(len(header))]

    def line(cells: Sequence[str], style: str) -> Text:
        text = " ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()
        return Text(text, style, no_wrap=True, overflow="ellipsis")

    return [line(header, "bold")] + [line(cells, style) for cells, style in rows]
