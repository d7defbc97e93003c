"""Numbers as people read them: the same in the dashboard, the CLI's reports and the narrations.

None of these ever prints scientific notation: every finite number comes out in positional
notation with thousands separators in its whole part; None and NaN print as "-" and
infinities as "∞" / "-∞".

- ``count(n)``: whole things (requests, events, users, seq numbers, slots): ``2,643``.
- ``amount(x)``: one figure in a sentence (a meter, v, a cost, a gap, a weight): whole
  numbers as they are, others to 4 significant digits but never rounded finer than the
  units: ``110,312,346``, ``596.9``, ``0.5``.
- ``distinct(a, b)``: two figures compared in a sentence, with as many decimals as it
  takes for different values to read differently.
- ``exact(x)``: every digit the float has (the audit, where a last digit is the finding):
  ``110,312,345.67``, ``0.00001``.
- ``seconds(x)``: a time or duration, to the millisecond (finer below it): ``41,103.320``.
- ``percent(x)``: a fraction as a percentage: ``9.7%``.
- ``ratio(x)``: a dimensionless ratio (a bias, an output ratio, Jain's index): ``1.23``.
- ``Fixed``: one format for a table column: fixed decimals (and an optional sign), chosen
  once per column with ``Fixed.of(values)`` from the magnitude of what the column shows,
  so a column never mixes ``596.9`` and ``2,295``; ``Fixed.width(values)`` sizes it.
  A column of times takes ``TIME`` (to the millisecond), a column of waits ``WAIT`` (to
  ten milliseconds, whatever their size, so that every table of waits reads alike).
- ``decimals_for(scale)``: the decimals that show 4 significant digits of a figure as
  large as ``scale``, for columns whose scale is known apart from their values (c_max).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

NONE = "-"
MAX_DECIMALS = 12  # down to 1e-9 with 4 significant digits
SECONDS_DECIMALS = 2  # the least a column of waits shows: ten milliseconds
MILLISECONDS = 3  # decimals of seconds to the millisecond


def _missing(x: float) -> str | None:
    """The text of a number that has no digits (NaN, an infinity), else None."""
    if x != x:
        return NONE
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return None


def _positional(x: float, decimals: int, sign: bool = False) -> str:
    text = f"{x:{'+' if sign else ''},.{decimals}f}"
    if text.lstrip("+-").strip("0.,") == "":  # rounds to zero: never "-0" (a signed column says "+0")
        text = ("+" if sign else "") + text.lstrip("+-")
    return text


def _trimmed(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def count(n: int | float | None) -> str:
    """Whole things with thousands separators: ``2,643``; "-" for none."""
    if n is None:
        return NONE
    return _missing(n) or f"{int(n):,}"


def counted(n: int, noun: str, nouns: str | None = None) -> str:
    """A count and its noun, in the singular for one: ``1 slot``, ``2,643 slots``."""
    return f"{count(n)} {noun if n == 1 else nouns or noun + 's'}"


def decimals_for(scale: float, significant: int = 4) -> int:
    """How many decimals show ``significant`` digits of a number as large as ``scale``:
    none from 10^(significant-1) up (with 4 digits: 36,110 -> 0, 596.9 -> 1, 0.5 -> 4)."""
    if not scale or not math.isfinite(scale):
        return 0
    return max(0, min(MAX_DECIMALS, significant - 1 - math.floor(math.log10(abs(scale)))))


def amount(x: float | None) -> str:
    """One figure in a sentence: whole numbers as they are, others to 4 significant digits
    but never rounded finer than the units (``110,312,346``, ``596.9``, ``0.5``)."""
    if x is None:
        return NONE
    missing = _missing(x)
    if missing is not None:
        return missing
    if x == int(x):
        return _positional(x, 0)
    return _trimmed(_positional(x, decimals_for(x)))


def distinct(a: float | None, b: float | None) -> tuple[str, str]:
    """Two figures compared in a sentence (the smallest meter and the next): as ``amount``,
    with more decimals when that is what tells two different values apart."""
    shown = amount(a), amount(b)
    if a is None or b is None or a == b or shown[0] != shown[1] or not (math.isfinite(a) and math.isfinite(b)):
        return shown
    for decimals in range(decimals_for(a), MAX_DECIMALS + 1):
        shown = _trimmed(_positional(a, decimals)), _trimmed(_positional(b, decimals))
        if shown[0] != shown[1]:
            return shown
    return exact(a), exact(b)


def exact(x: float | None) -> str:
    """Every digit of the float, in positional notation: the shortest text that reads back
    as the same float (``0.30000000000000004``, ``110,312,345.67``)."""
    if x is None:
        return NONE
    missing = _missing(x)
    if missing is not None:
        return missing
    text = _trimmed(format(Decimal(repr(float(x))), ",f"))
    return "0" if text == "-0" else text


def seconds(x: float | None) -> str:
    """A time or duration in seconds: whole seconds as they are, others to the millisecond
    (two significant digits below it): ``12``, ``41,103.320``, ``0.505``, ``0.000012``."""
    if x is None:
        return NONE
    missing = _missing(x)
    if missing is not None:
        return missing
    return _positional(x, _seconds_decimals(x))


def _seconds_decimals(x: float) -> int:
    return 0 if x == int(x) else max(MILLISECONDS, decimals_for(x, 2))


def span(start: float | None, end: float | None) -> str:
    """Two times in seconds as an interval, both to the decimals the finer one needs:
    ``2.500..9.000``, ``10..11``."""
    if start is None or end is None or _missing(start) is not None or _missing(end) is not None:
        return f"{seconds(start)}..{seconds(end)}"
    decimals = max(_seconds_decimals(start), _seconds_decimals(end))
    return f"{_positional(start, decimals)}..{_positional(end, decimals)}"


def percent(x: float | None, decimals: int = 1) -> str:
    """A fraction as a percentage: ``0.097`` -> ``9.7%``."""
    if x is None:
        return NONE
    return _missing(x) or _positional(100 * x, decimals) + "%"


def ratio(x: float | None, decimals: int = 2) -> str:
    """A dimensionless ratio to fixed decimals: ``1.23``."""
    if x is None:
        return NONE
    return _missing(x) or _positional(x, decimals)


@dataclass(frozen=True)
class Fixed:
    """One format for a column: ``decimals`` fixed, a ``+`` on positive numbers if ``sign``."""

    decimals: int = 0
    sign: bool = False

    @classmethod
    def of(cls, values: Iterable[float | None], scale: float | None = None, sign: bool = False, least: int = 0) -> Fixed:
        """The format for a column of ``values``: no decimals if they are all whole, else
        4 significant digits of ``scale`` (by default the largest value's magnitude), and
        at least ``least`` decimals (``SECONDS_DECIMALS`` for a column of seconds)."""
        largest, whole = 0.0, True
        for x in values:
            if x is not None and math.isfinite(x):
                largest = max(largest, abs(x))
                whole = whole and x == int(x)
        if whole:
            return cls(0, sign)
        return cls(max(least, decimals_for(largest if scale is None else scale)), sign)

    def __call__(self, x: float | None) -> str:
        if x is None:
            return NONE
        return _missing(x) or _positional(x, self.decimals, self.sign)

    def width(self, values: Iterable[float | None]) -> int:
        """How wide the column's widest cell is (the largest magnitude, its sign included)."""
        low = high = None
        for x in values:
            if x is not None and x == x:
                low = x if low is None or x < low else low
                high = x if high is None or x > high else high
        if low is None or high is None:
            return len(NONE)
        return max(len(self(low)), len(self(high)))


TIME = Fixed(MILLISECONDS)  # a column of times
WAIT = Fixed(SECONDS_DECIMALS)  # a column of waits, in every table
