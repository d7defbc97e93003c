"""Fixed-width text columns: a much cheaper per-frame render than rich's Table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from sfqtui.ui.widgets.fitted_line import FittedLine, part


def _widths(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]]) -> list[int]:
    return [max([len(header[i])] + [len(cells[i]) for cells, _ in rows]) for i in range(len(header))]


def grid(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], right: Sequence[bool]) -> list[Text]:
    """A line per row, columns sized to their widest cell; ``rows`` are (cells, style). The
    header is bold."""
    widths = _widths(header, rows)

    def line(cells: Sequence[str], style: str) -> Text:
        text = " ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()
        return Text(text, style, no_wrap=True, overflow="ellipsis")

    return [line(header, "bold")] + [line(cells, style) for cells, style in rows]


def fitted_grid(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], right: Sequence[bool],
                ranks: Sequence[int | None]) -> list[FittedLine]:
    """As ``grid``, for a view of any width: when the lines are too wide, whole columns give
    way, the lowest rank first (None: always shown), never a cell cut mid-number. Every line
    has the same column widths and ranks, so every line leaves out the same columns."""
    widths = _widths(header, rows)

    def line(cells: Sequence[str], style: str) -> FittedLine:
        return FittedLine([part(rank, Text((" " if i else "") + (c.rjust(w) if r else c.ljust(w)), style))
                           for i, (c, w, r, rank) in enumerate(zip(cells, widths, right, ranks, strict=True))])

    return [line(header, "bold")] + [line(cells, style) for cells, style in rows]
