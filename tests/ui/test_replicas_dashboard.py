"""The dashboard on a run of several replicas (semantics §11): each replica's band and v,
the replica selector (k), the log's replica column and filter, where each user's requests
went, the why panel across replicas, one SFQ beside a replicated run, a saved replicated
log opening the same way, and a snapshot.

The trace is the replicas lesson's: premium (weight 4) and regular (weight 1), equal costs
512, all waiting at t = 0, 4 slots; hash routing puts regular on replica 0 and premium on
replica 1, 2 slots each. At the 10th dispatch (t = 2, event 617: regular's r000406 on
replica 0) regular's meter is 2,560 and premium's, on replica 1, 384.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from typer.testing import CliRunner

from sfqtui.cli.app import app as cli
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replicas.settings import ReplicaSettings, Share
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.scenarios.lessons import LESSONS
from sfqtui.ui.app import SfqApp
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.meter_band import MeterBand
from sfqtui.ui.panes.replicas import run_label
from sfqtui.ui.panes.shares import SharesPanel
from sfqtui.ui.panes.status_line import StatusLine
from sfqtui.ui.side_by_side.lesson import LessonPanel
from sfqtui.ui.side_by_side.run_pane import RunPane
from sfqtui.ui.side_by_side.view import DivergenceLine
from tests.dashboard import Panes, frame_of, lesson_dashboard, notifications, settle, text_of, until

SIZE = (140, 40)
BORDER = str.maketrans({c: " " for c in "│╭╮╰╯─▁▂▃▄▅▆▇█"})
HASHED = ReplicaSettings(2, "hash")
TENTH_DISPATCH = ["n"] * 10


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "premium-regular.parquet"
    LESSONS["replicas"].write(path)
    return path


def replicated(trace: Path, share: str = "none") -> SfqApp:
    config = ReplayConfig("sfq", slots=4, replicas=ReplicaSettings(2, "hash", Share.parse(share)))
    return SfqApp(Opening(trace, is_log=False, config=config, slots_given=True))


def lines_of(widget: Widget) -> list[list[str]]:
    """A view's lines, each split into words, border left out."""
    return [line.translate(BORDER).split() for line in text_of(widget).splitlines()]


def log_replicas(app: SfqApp) -> list[int]:
    """The replica column of the event log's rows on screen."""
    return [int(line.split()[3]) for line in text_of(app.query_one(EventLog)).splitlines() if line.strip()]


async def test_each_replica_has_its_own_band_and_k_shows_one_at_a_time(trace: Path) -> None:
    app = replicated(trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*TENTH_DISPATCH)
        assert app.cursor.k == 617
        band, status = app.query_one(MeterBand), app.query_one(StatusLine)
        assert "replicas: all 2 (k)  v 0:2,560 1:384" in status.text and "v=" not in status.text  # no one v for them all
        lines = text_of(band).splitlines()
        assert lines[0].startswith("replica 0: v 2,560, in flight 2/2, waiting 194")
        assert lines[1].startswith("regular ") and lines[1].split()[3] == "+512"  # S 3,072 after its charge, read against replica 0's v
        assert lines[2].startswith("replica 1: v 384, in flight 0/2, waiting 396")
        assert lines[3].startswith("premium ") and lines[3].split()[3] == "+128"  # S 512 against replica 1's v 384
        assert set(log_replicas(app)) == {0, 1}

        await pilot.press("k")
        assert app.options.replica == 0
        assert "replica 0 of 2 (k)  v=2,560  in flight 2/2  waiting 194" in status.text
        lines = text_of(band).splitlines()
        assert lines[0].startswith("replica 0: v 2,560") and not any(line.startswith("replica 1") for line in lines)
        assert set(log_replicas(app)) == {0}  # the log lists replica 0's events only
        assert app.query_one("#log-box").border_title == "event log: all events on replica 0"

        await pilot.press("k")
        assert app.options.replica == 1 and "replica 1 of 2 (k)  v=384  in flight 0/2  waiting 396" in status.text
        assert text_of(band).splitlines()[0].startswith("replica 1: v 384") and set(log_replicas(app)) == {1}
        await pilot.press("d")  # with dispatches only: replica 1's dispatches
        rows = [line.split() for line in text_of(app.query_one(EventLog)).splitlines() if line.strip()]
        assert rows and all(r[2] == "dispatch" and r[3] == "1" and r[4] == "premium" for r in rows)
        await pilot.press("d", "k")
        assert app.options.replica is None and "replicas: all 2 (k)" in status.text


async def test_k_says_so_on_a_run_of_one_balancer(trace: Path) -> None:
    app = SfqApp(Opening(trace, is_log=False, config=ReplayConfig("sfq", slots=4), slots_given=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("k")
        assert app.options.replica is None
        assert any("no replicas to choose" in str(n.message) for n in notifications(app))
        columns = app.query_one(EventLog).columns
        assert columns is not None and " r " not in columns.header  # no replica column either


async def test_the_why_panel_names_who_waiting_on_another_replica_had_a_smaller_meter(trace: Path) -> None:
    """The why panel drawn from the frame the dashboard draws at the 10th dispatch, then at the next."""
    run = Run(replicated(trace).opening).load_all()
    async with Panes().run_test(size=SIZE) as pilot:
        panel = pilot.app.query_one(ExplainPanel)

        async def why_after(dispatches: int) -> str:
            for _ in range(dispatches):
                run.cursor.next_dispatch()
            panel.show(frame_of(run), run.timeline)  # SFQ's: no shadow (SfqApp._explain)
            await pilot.pause()
            return " ".join(panel.text.split())  # all of it, scrolled or not

        why = await why_after(len(TENTH_DISPATCH))
        assert run.cursor.k == 617
        assert "Dispatch regular r000406 cost 512 on replica 0" in why
        assert ("held on replica 0 (share none): under one SFQ, 1 user waiting on other replicas had smaller meters "
                "than regular's 2,560 and would have gone first") in why
        assert "would go first replica meter below queued premium 1 512 2,048 396" in why  # premium's 512 on replica 1, after its charge
        assert "1 waiting on replica 0:" in why and "▶ regular 2,560" in why
        assert "5 dispatches went ahead while it waited" in why  # replica 0's own, not premium's on replica 1
        why = await why_after(1)  # premium's r000007 on replica 1: regular's 3,072 is above it
        assert "on replica 1" in why and "no user waiting on another replica had a meter below premium's" in why


async def test_under_share_global_the_why_panel_says_there_is_one_sfq(trace: Path) -> None:
    app = replicated(trace, "global")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*TENTH_DISPATCH)
        why = " ".join(app.query_one(ExplainPanel).text.split())  # all of it, scrolled or not
        assert "one SFQ over every replica, so nobody waiting on any replica had a smaller meter" in why
        status = app.query_one(StatusLine).text
        assert "replicas: all 2 (k)" in status and "v=" in status  # one scheduler: one v
        assert not text_of(app.query_one(MeterBand)).startswith("replica")  # its one band
        await pilot.press("k")
        assert text_of(app.query_one(MeterBand)).startswith("replica 0 holds: in flight")


async def test_the_shares_panel_counts_each_users_requests_per_replica(trace: Path) -> None:
    app = replicated(trace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*TENTH_DISPATCH)
        shares = lines_of(app.query_one(SharesPanel))
        at = shares.index(["requests", "on", "r0", "r1"])
        assert {tuple(shares[at + 1]), tuple(shares[at + 2])} == {("regular", "200", "·"), ("premium", "·", "400")}


async def test_a_saved_replicated_log_opens_as_its_replay_does(trace: Path, tmp_path: Path) -> None:
    log = tmp_path / "replicated.parquet"
    result = CliRunner().invoke(cli, ["simulate", str(trace), "-o", str(log), "--slots", "4", "--replicas", "2", "--router", "hash"])
    assert result.exit_code == 0, result.output
    seen = []
    for app in (replicated(trace), SfqApp(Opening(log, is_log=True, config=ReplayConfig()))):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press(*TENTH_DISPATCH, "k")
            seen.append([text_of(app.query_one(view)) for view in (MeterBand, EventLog, ExplainPanel, SharesPanel)])
    assert seen[0] == seen[1]


def test_replay_compare_takes_run_specs(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[list[Opening]] = []
    monkeypatch.setattr("sfqtui.ui.app.run_dashboard", lambda openings, **_kwargs: opened.append(openings))
    result = CliRunner().invoke(cli, ["replay", str(trace), "--compare", "sfq@replicas=2,router=hash,share=none,drr@share=global"])
    assert result.exit_code == 0, result.output
    main, split, drr = opened[0]
    assert main.config.replicas == ReplicaSettings() and main.config.slots == 4  # the trace's own suggestion
    assert split.config.scheduler == "sfq" and split.config.replicas == HASHED
    assert drr.config.scheduler == "drr" and drr.config.replicas == ReplicaSettings(share=Share("global"))  # nothing else differs
    refused = CliRunner().invoke(cli, ["replay", str(trace), "--compare", "sfq@replicas=8"])
    assert refused.exit_code == 2 and "fewer than --replicas 8" in refused.stderr
    refused = CliRunner().invoke(cli, ["replay", str(trace), "--compare", "sfq@routers=hash"])
    assert refused.exit_code == 2 and "'routers=hash' is not a setting" in refused.stderr


async def test_one_sfq_beside_two_replicas_says_where_the_orders_part(trace: Path) -> None:
    base = ReplayConfig("sfq", slots=4)
    openings = [Opening(trace, is_log=False, config=base, slots_given=True),
                Opening(trace, is_log=False, config=ReplayConfig("sfq", slots=4, replicas=HASHED), slots_given=True)]
    app = SfqApp(openings, lockstep="dispatch")
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        line = " ".join(app.query_one(DivergenceLine).text.split())
        # One SFQ sends premium first (the tie at 0 goes by user id); replica 0, first at every timestamp, sends regular.
        assert ("sfq (2 replicas, hash, share none): orders first differ at dispatch #1 "
                "(regular's r000401 on replica 0 vs premium's r000001); 1 of 1 positions differ so far") in line
        panes = list(app.query(RunPane))
        assert panes[1].border_title == "sfq: Start-time Fair Queueing, 2 replicas, hash, share none"
        assert "replicas: all 2 (k)" in panes[1].head.text and text_of(panes[1].band).startswith("replica 0: v 0")
        assert panes[1].head.text.splitlines()[1].startswith("replica 0: regular is chosen")
        assert app.runs[1].cursor.dispatch_number == app.runs[0].cursor.dispatch_number == 0  # stepped in lockstep


async def test_teach_replicas_steps_one_balancer_beside_two_and_ends_with_the_measured_outcome(tmp_path: Path) -> None:
    app = lesson_dashboard(tmp_path, "replicas")
    async with app.run_test(size=(160, 46)) as pilot:
        await settle(pilot)
        assert [run_label(run) for run in app.runs] == ["sfq", "sfq (2 replicas, hash, share none)", "sfq (2 replicas, hash, share global)"]
        await pilot.press(*TENTH_DISPATCH)
        assert len({run.cursor.dispatch_number for run in app.runs}) == 1  # in lockstep by dispatch
        line = " ".join(app.query_one(DivergenceLine).text.split())
        assert "sfq (2 replicas, hash, share global): same order as sfq so far" in line
        panel = app.query_one(LessonPanel)
        await pilot.press("end")
        await until(pilot, lambda: panel.outcome is not None, "the lesson's measured outcome")
        await pilot.pause()
        said = " ".join(panel.text.split())
        assert "sfq, one balancer: shares while congested premium 80.0%, regular 20.0% (4 : 1); first 320 dispatches 256 : 64" in said
        assert "share none: shares while congested premium 49.7%, regular 50.3% (1 : 1); first 320 dispatches 160 : 160" in said
        assert "stranded capacity 24.8%" in said


def test_the_replicated_dashboard(snap_compare, trace: Path) -> None:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press(*TENTH_DISPATCH)
        await pilot.pause()

    assert snap_compare(replicated(trace), terminal_size=SIZE, run_before=run_before)
