"""Numbers a person can read, where people read them: a production trace priced by the
estimator (meters in the millions, never whole), jumped far in, in one view and side by
side; values of eight digits and more in the log and the band; the CLI's reports."""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl
import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widget import Widget
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli_app
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.trace.write import write_trace
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLog, EventLogHeader
from sfqtui.ui.panes.meter_band import MeterBand, MeterHeader
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.side_by_side.run_pane import RunPane
from tests.dashboard import TRACES, dashboard, settle, text_of, without_audit

pytestmark = pytest.mark.xdist_group("test_readable_numbers")  # one worker generates and replays the production trace once

PRODUCTION = TRACES / "production-20k.parquet"  # no cost column: the estimator prices every request
FAR = "50000"  # of about 64,000 events: v is in the millions there
SCIENTIFIC = re.compile(r"\d(\.\d+)?e[+-]?\d", re.IGNORECASE)
SEPARATED = re.compile(r"\d{1,3}(,\d{3})+")
NUMBERS = re.compile(r" ([+-][\d,]+(?:\.\d+)?) +[\d,]+ +[\d.,]+ +[\d.]+%$")  # a band row's end: lead, queued, w, share
SCROLLBAR = "▁▂▃▄▅▆▇█▉▊▋▌▍▎▏ "


def on_screen(app: App) -> str:
    """Every character on screen (the screenshot's text, without its markup)."""
    return html.unescape("".join(re.findall(r"<text [^>]*>([^<]*)</text>", app.export_screenshot()))).replace("\xa0", " ")


def side_by_side(trace: Path, *schedulers: str) -> SfqApp:
    openings = [Opening(trace, is_log=False, config=ReplayConfig(name, 64), slots_given=True) for name in schedulers]
    return SfqApp(openings, lockstep="dispatch")


async def go_far(pilot: Pilot) -> None:
    await settle(pilot, analysed=False)  # the callers start no audit (without_audit): not their claim
    await pilot.press("g", *FAR, "enter")
    await pilot.pause()


def lines_of(widget: Widget) -> list[str]:
    """The widget's lines as drawn, without its scroll bars."""
    return [line for line in (row.rstrip(SCROLLBAR) for row in text_of(widget).splitlines()) if line]


def band_rows(band: MeterBand) -> dict[str, str]:
    return {line.split()[0]: line for line in lines_of(band)}


async def test_a_production_trace_far_in_reads_without_scientific_notation_and_tells_users_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    app = dashboard(PRODUCTION)
    async with app.run_test(size=(160, 48)) as pilot:
        await go_far(pilot)
        state = app.frame().state
        assert state.v > 1_000_000 and state.v != int(state.v)  # the case of the issue: far above 10,000, never whole
        assert not SCIENTIFIC.search(on_screen(app)), SCIENTIFIC.search(on_screen(app))
        assert f"v = {state.v:,.0f}" in text_of(app.query_one(MeterHeader))  # v once, in full
        leads = {app.table.users[u]: state.value[u] - state.v for u in state.backlogged()}
        rows = band_rows(app.query_one(MeterBand))
        found = {user: NUMBERS.search(rows[user]) for user in leads if user in rows}
        shown = {user: match.group(1) for user, match in found.items() if match is not None}
        assert len(shown) == len(found), rows
        apart = sorted(shown, key=leads.__getitem__)
        assert len(apart) >= 2 and abs(leads[apart[0]] - leads[apart[-1]]) > 1
        assert shown[apart[0]] != shown[apart[-1]]  # users with different leads read differently
        for user, text in shown.items():
            assert abs(float(text.replace(",", "")) - leads[user]) <= 0.5, (user, text)


SIZES = [(100, 30), (160, 48)]  # narrow, then wide enough for every column: one app drawn at each (a resize redraws every view)


@pytest.mark.parametrize("other", ["drr", "vtc"])
async def test_side_by_side_far_in_reads_without_scientific_notation(other: str, monkeypatch: pytest.MonkeyPatch) -> None:
    without_audit(monkeypatch)
    app = side_by_side(PRODUCTION, "sfq", other)
    async with app.run_test(size=SIZES[0]) as pilot:
        await go_far(pilot)
        for size in SIZES:
            await pilot.resize_terminal(*size)
            await pilot.press("right")  # the scroll bars have settled: the band's header and rows agree
            assert app.size == size
            assert not SCIENTIFIC.search(on_screen(app)), (size, SCIENTIFIC.search(on_screen(app)))
            for pane in app.query(RunPane):
                rows = band_rows(pane.band)
                assert rows and all(row.endswith("%") for row in rows.values()), (size, rows)  # the share column is not cut off
                where = text_of(pane.head).splitlines()[0]
                assert where.startswith("seq ") and "…" not in where, (size, where)  # parts give way whole, never cut


def eight_digit_trace(path: Path) -> Path:
    """Two users whose requests cost tens of millions, never a whole number."""
    n = 40
    frame = pl.DataFrame({
        "request_id": [f"r{k:03d}" for k in range(n)],
        "user": ["whale" if k % 3 else "minnow" for k in range(n)],
        "arrival_s": [k * 0.25 for k in range(n)],
        "cost": [12_345_678.9 + 1_000_003.7 * (k % 7) for k in range(n)],
        "service_s": [1.0] * n,
    })
    write_trace(frame, path, {"slots": 2})
    return path


def assert_aligned(header: str, rows: list[str], titles: tuple[str, ...]) -> None:
    """Each right-aligned column ends where its title ends, in every row."""
    for title in titles:
        found = re.search(rf"(?<!\S){re.escape(title)}(?!\S)", header)
        assert found is not None, (title, header)
        end = found.end()
        for row in rows:
            if len(row) >= end:
                assert row[end - 1] != " " and (len(row) == end or row[end] == " "), (title, header, row)


async def test_eight_digit_values_keep_every_column_in_place(tmp_path: Path) -> None:
    app = dashboard(eight_digit_trace(tmp_path / "big.parquet"))
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(pilot)
        await pilot.press(*["n"] * 12)
        for size in SIZES:
            await pilot.resize_terminal(*size)
            assert app.size == size
            log, header = app.query_one(EventLog), app.query_one(EventLogHeader)
            rows = lines_of(log)
            assert any(len(figure.group()) >= 10 for row in rows for figure in SEPARATED.finditer(row)), rows  # 12,345,679 and up
            titles = text_of(header).split()  # a narrow log leaves out v, then t (LogColumns), never cuts them
            assert {"seq", "cost", "meter"} <= set(titles) and (size == (100, 30) or "v" in titles), titles
            assert_aligned(text_of(header), rows, tuple(t for t in ("seq", "t", "cost", "v", "meter") if t in titles))
            if size == (160, 48):  # wide enough for every column: the request ids start under their title
                starts = {row.index(" r0") + 1 for row in rows}
                assert starts == {text_of(header).index("request")}
            band = band_rows(app.query_one(MeterBand))
            assert band and all(row.endswith("%") for row in band.values()), band
            assert not SCIENTIFIC.search(on_screen(app))


async def test_eight_digit_values_side_by_side_keep_the_band_inside_its_pane(tmp_path: Path) -> None:
    app = side_by_side(eight_digit_trace(tmp_path / "big.parquet"), "sfq", "drr")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press(*["n"] * 12)
        for pane in app.query(RunPane):
            rows = band_rows(pane.band)
            assert rows and all(row.endswith("%") for row in rows.values()), rows
            titles = text_of(pane.events_header).split()
            assert {"seq", "cost"} <= set(titles), titles
            assert_aligned(text_of(pane.events_header), lines_of(pane.events), tuple(t for t in ("seq", "t", "cost") if t in titles))


async def test_leads_read_apart_when_v_is_below_one(tmp_path: Path) -> None:
    """The band at v = 0.5: costs of a tenth, leads told apart to the ten-thousandth."""
    n = 30
    frame = pl.DataFrame({
        "request_id": [f"r{k:03d}" for k in range(n)],
        "user": [("ant", "bee", "cricket")[k % 3] for k in range(n)],
        "arrival_s": [0.0] * n,
        "cost": [(0.1, 0.125, 0.0625)[k % 3] for k in range(n)],
        "service_s": [1.0] * n,
    })
    write_trace(frame, tmp_path / "small.parquet", {"slots": 1})
    app = dashboard(tmp_path / "small.parquet")
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        for _ in range(n):
            if app.frame().state.v >= 0.5:
                break
            await pilot.press("n")
        state = app.frame().state
        assert f"v = {state.v:g}" in text_of(app.query_one(MeterHeader))
        rows = band_rows(app.query_one(MeterBand))
        leads = {app.table.users[u]: state.value[u] - state.v for u in state.backlogged()}
        found = {user: NUMBERS.search(rows[user]) for user in leads}
        shown = {user: match.group(1) for user, match in found.items() if match is not None}
        assert len(shown) == len(found), rows
        assert len(set(shown.values())) == len(set(leads.values())) > 1, shown
        for user, text in shown.items():
            assert abs(float(text) - leads[user]) < 5e-5, (user, text)


async def test_the_status_line_and_the_pane_heads_say_which_seq_and_which_is_last() -> None:
    app = dashboard()
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        assert "seq - (last 48) start" in text_of(app.query_one(StatusLine))
        await pilot.press("right")
        assert "seq 0 (last 48) arrive" in text_of(app.query_one(StatusLine))
    app = side_by_side(TRACES / "seed-example.parquet", "sfq", "drr")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        heads = [text_of(pane.head).splitlines()[0] for pane in app.query(RunPane)]
        assert heads[0].startswith("seq 48 (last 48) ")
        assert all(re.match(r"seq [\d,]+ \(last [\d,]+\) ", head) for head in heads), heads


# The CLI on a production trace priced by the estimator: meters in the millions, costs not whole.


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("production")
    trace, log = folder / "t.parquet", folder / "log.parquet"
    runner = CliRunner()
    assert runner.invoke(cli_app, ["gen", "production", "-o", str(trace), "--requests", "3000", "--users", "60"]).exit_code == 0
    assert runner.invoke(cli_app, ["simulate", str(trace), "-o", str(log)]).exit_code == 0
    return trace, log


def run(*args: str) -> str:
    result = CliRunner().invoke(cli_app, list(args))
    assert result.exit_code in (0, 1), result.output
    assert not SCIENTIFIC.search(result.stdout), SCIENTIFIC.search(result.stdout)
    return result.stdout


def test_check_reports_big_figures_with_separators(production: tuple[Path, Path]) -> None:
    out = run("check", str(production[1]))
    assert re.search(r"\(bound 2 c_max = \d{1,3}(,\d{3})+\)", out), out
    assert re.search(r"closest to v from above: seq [\d,]+: \S+ meter \d{1,3}(,\d{3})+, v \d{1,3}(,\d{3})+", out), out


def test_compare_and_explain_report_big_figures_with_separators(production: tuple[Path, Path]) -> None:
    out = run("compare", str(production[0]), "--schedulers", "sfq,drr")
    assert re.search(r"worst \|W_i - W_j\| \d{1,3}(,\d{3})+ ", out), out
    requests = pl.read_parquet(production[0])["request_id"]
    out = run("explain", str(production[1]), requests[len(requests) - 200])
    assert re.search(r"\u2502 +\d{1,3}(,\d{3}){2,} \u2502", out), out  # a candidate's meter, in the millions


def test_calibrate_reports_without_scientific_notation(production: tuple[Path, Path]) -> None:
    out = run("calibrate", str(production[0]))
    assert SEPARATED.search(out)


def test_an_audit_finding_shows_every_digit_in_positional_notation(tmp_path: Path) -> None:
    trace, log = tmp_path / "t.parquet", tmp_path / "log.parquet"
    runner = CliRunner()
    runner.invoke(cli_app, ["gen", "seed-example", "-o", str(trace)])
    runner.invoke(cli_app, ["simulate", str(trace), "--slots", "1", "-o", str(log)])
    frame = pl.read_parquet(log)
    first = frame.with_row_index("k").filter(pl.col("kind") == "dispatch")["k"][0]
    tampered = frame.with_columns(pl.when(pl.int_range(pl.len()) == first).then(0.00001).otherwise(pl.col("meter")).alias("meter"))
    tampered.write_parquet(log)
    out = run("check", str(log))
    assert "meter became 0.00001; S_i + c/w = 3" in out, out
