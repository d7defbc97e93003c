"""The number formatters: positional notation for every finite value, separators, and
text that reads back as (about) the number it shows."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from sfqtui.core.numbers import Fixed, amount, count, decimals_for, distinct, exact, percent, ratio, seconds, span

SEPARATED = re.compile(r"^[+-]?\d{1,3}(,\d{3})*(\.\d+)?$")  # groups of three in the whole part, none after the point

magnitudes = st.floats(min_value=1e-9, max_value=1e15, allow_nan=False, allow_infinity=False)
values = st.one_of(magnitudes, magnitudes.map(lambda x: -x), st.just(0.0))
decimals = st.integers(min_value=0, max_value=6)


def read(text: str) -> float:
    return float(text.replace(",", ""))


@given(values)
def test_amount_is_positional_separated_and_close(x: float) -> None:
    text = amount(x)
    assert "e" not in text.lower() and SEPARATED.match(text), text
    # 4 significant digits, but never rounded finer than the units
    assert abs(read(text) - x) <= max(0.5, 5e-4 * abs(x)) * (1 + 1e-9), text


@given(values)
def test_exact_reads_back_as_the_same_float(x: float) -> None:
    text = exact(x)
    assert "e" not in text.lower() and SEPARATED.match(text), text
    assert read(text) == x


@given(values)
def test_seconds_keep_the_millisecond(x: float) -> None:
    text = seconds(x)
    assert "e" not in text.lower() and SEPARATED.match(text), text
    assert abs(read(text) - x) <= max(5e-4, 5e-4 * abs(x)) * (1 + 1e-9), text


@given(values, decimals, st.booleans())
def test_a_fixed_column_has_its_decimals_and_reads_back(x: float, places: int, sign: bool) -> None:
    text = Fixed(places, sign)(x)
    assert "e" not in text.lower() and SEPARATED.match(text), text
    assert len(text.partition(".")[2]) == places
    assert abs(read(text) - x) <= 0.5 * 10 ** -places + 1e-16 * abs(x) * 10
    if sign:
        assert text[0] in "+-"


@given(st.lists(values, min_size=1, max_size=20))
def test_a_column_format_fits_its_widest_cell(column: list[float]) -> None:
    fixed = Fixed.of(column)
    assert fixed.width(column) == max(len(fixed(x)) for x in column)
    assert all("e" not in fixed(x) for x in column)


@given(values, values)
def test_distinct_values_read_differently(a: float, b: float) -> None:
    shown = distinct(a, b)
    assert all("e" not in s and SEPARATED.match(s) for s in shown), shown
    assert (shown[0] == shown[1]) == (a == b)


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_counts_have_separators(n: int) -> None:
    text = count(n)
    assert SEPARATED.match(text) and int(text.replace(",", "")) == n


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_percentages_and_ratios_are_positional(x: float) -> None:
    assert "e" not in percent(x) and percent(x).endswith("%")
    assert "e" not in ratio(x) and abs(read(ratio(x)) - x) <= 0.005 + 1e-9


def test_what_the_meters_of_a_production_trace_read() -> None:
    assert amount(110_312_345.67) == "110,312,346"
    assert amount(72_560.4) == "72,560"
    assert amount(596.94) == "596.9" and amount(2295.3) == "2,295" and amount(0.5) == "0.5"
    assert amount(1e-9) == "0.000000001" and amount(1e15) == "1,000,000,000,000,000" and amount(-1234.5) == "-1,234"
    assert exact(1e-5) == "0.00001" and exact(0.1 + 0.2) == "0.30000000000000004" and exact(-0.0) == "0"
    assert seconds(41_103.3201) == "41,103.320" and seconds(0.50531) == "0.505" and seconds(12.0) == "12"
    assert seconds(0.0000123) == "0.000012"
    assert distinct(110_312_345.2, 110_312_345.4) == ("110,312,345.2", "110,312,345.4")


def test_nothing_to_show() -> None:
    for formatter in (amount, exact, seconds, percent, ratio, count, Fixed(2)):
        assert formatter(None) == "-" and formatter(math.nan) == "-"
    assert amount(math.inf) == "∞" and Fixed(1)(-math.inf) == "-∞"
    assert Fixed(2, sign=True)(-1e-9) == "+0.00" and Fixed(0)(-0.2) == "0"


def test_a_column_takes_its_decimals_from_its_magnitude() -> None:
    assert Fixed.of([596.9, 2295.3, 6336.1]) == Fixed(0)
    assert Fixed.of([0.125, 0.5]) == Fixed(4)
    assert Fixed.of([3.0, 12.0, None]) == Fixed(0)  # whole numbers stay whole
    assert Fixed.of([0.3, 12.0], scale=36_110.0) == Fixed(0)
    assert decimals_for(36_110) == 0 and decimals_for(596.9) == 1 and decimals_for(0.5) == 4


def test_an_interval_shows_both_ends_to_the_same_decimals() -> None:
    assert span(2.5, 9) == "2.500..9.000"
    assert span(10, 11) == "10..11"
    assert span(41_103.32, 41_200) == "41,103.320..41,200.000"
    assert span(None, 2) == "-..2"
