"""The checklist every registered scheduler passes (docs/architecture.md, "a new scheduler").

It simulates, is checked by `check` or explicitly not, explains a dispatch, and steps in
the dashboard. A scheduler added to the registry is tested here without another line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sfqtui.core.analysis.audit import audit
from sfqtui.core.analysis.explain import explain_dispatch
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.schedulers import REGISTRY, SCHEDULERS
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.eventlog import log_rows, read_log
from sfqtui.trace.load import load_trace
from sfqtui.trace.simulate import simulate
from sfqtui.ui.panes.explain_panel import ExplainPanel
from sfqtui.ui.panes.status_line import StatusLine
from tests.dashboard import SIZE, dashboard, settle, text_of

DEMO = Path(__file__).resolve().parents[2] / "traces" / "demo.parquet"  # has tokens, so VTC runs on it too


@pytest.mark.parametrize("name", SCHEDULERS)
def test_it_simulates_and_is_checked_or_explicitly_not(name: str, tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    simulate(load_trace(DEMO), ReplayConfig(name, 4), log)
    frame, metadata = read_log(log)
    assert metadata["scheduler"] == name and set(frame["scheduler"].unique()) == {name}
    report = audit(log_rows(frame))
    assert report.ok, report.violations
    rules = {rule for rules, _text in report.checks for rule in rules}
    if REGISTRY[name].audit is None:
        assert rules == {"structure"}
    else:
        assert rules - {"structure"}, f"{name} says it is audited but no rule of its own was checked"


@pytest.mark.parametrize("name", SCHEDULERS)
def test_it_explains_a_contested_dispatch(name: str) -> None:
    run = Run(Opening(DEMO, is_log=False, config=ReplayConfig(name, 4), slots_given=True)).load_all()
    explanations = [explain_dispatch(run.table, run.timeline, k) for k in run.table.dispatches]
    contested = [e for e in explanations if e is not None and len(e.candidates) > 1]
    assert contested, "the demo trace should make users wait"
    for e in contested[:20]:
        assert e.user in e.reason and "only user" not in e.reason, e.reason


@pytest.mark.parametrize("name", SCHEDULERS)
async def test_it_steps_in_the_dashboard(name: str) -> None:
    app = dashboard("demo.parquet", scheduler=name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        explained = []
        for key in ["g", *"120", "enter"] + ["n"] * 6 + ["left"] * 3 + ["end", "home", "r"]:
            await pilot.press(key)
            explained.append(app.query_one(ExplainPanel).text)
        assert app.table.scheduler == name
        assert any("why:" in text for text in explained)
        assert "seq" in text_of(app.query_one(StatusLine))


@pytest.mark.parametrize("name", SCHEDULERS)
def test_it_names_its_oldest_queued_request(name: str) -> None:
    # A replay retires a chunk of requests once the oldest queued, running or yet to come is past it.
    sched = REGISTRY[name].build({}, 2.0)
    for req, user in enumerate(["a", "b", "a", "c", "b", "a"]):
        sched.arrive(req, user)
    sent: set[int] = set()
    while sched.backlogged:
        assert sched.oldest_queued() == min(set(range(6)) - sent)
        sent.add(sched.dispatch(lambda req: 1.0 + req % 2)[0])
    assert sched.oldest_queued() is None and sent == set(range(6))
