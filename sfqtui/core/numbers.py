"""Numbers as people read them, the same in explanations, tables and the dashboard."""

from __future__ import annotations


def fmt(x: float | None, width: int = 0) -> str:
    """Integers with thousands separators and no .0; others to 4 significant digits; '-' for null."""
    if x is None or x != x:
        text = "-"
    elif x == int(x) and abs(x) < 1e15:
        text = f"{int(x):,}"
    else:
        text = f"{x:,.4g}" if abs(x) >= 1 else f"{x:.4g}"
    return text.rjust(width) if width else text
