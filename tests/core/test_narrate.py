"""One sentence per event, from the state and the registry: the right user and numbers each time."""

from pathlib import Path

import polars as pl
import pytest

from sfqtui.core.analysis.narrate import narrate
from sfqtui.core.events import DISPATCH
from sfqtui.core.log.shadow import Shadow
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.runs.opening import Opening
from sfqtui.runs.run import Run
from sfqtui.trace.write import write_trace
from tests.core.test_vtc import ROWS

TRACES = Path(__file__).resolve().parents[2] / "traces"

# The article's §2.7 table: who is picked, v after the pick, then S_A and S_B after the charge.
ARTICLE_TABLE = [("A", 0, 3, 0), ("B", 0, 3, 1), ("B", 1, 3, 2), ("B", 2, 3, 3),
                 ("A", 3, 6, 3), ("B", 3, 6, 4), ("B", 4, 6, 5), ("B", 5, 6, 6)]


def run_of(path: Path, scheduler: str, slots: int) -> Run:
    return Run(Opening(path, is_log=False, config=ReplayConfig(scheduler, slots), slots_given=True)).load_all()


def dispatch_sentences(run: Run, shadow: Shadow | None = None) -> list[str]:
    table = run.table
    return [narrate(table, run.timeline, k, shadow) for k in range(len(table)) if table.kind[k] == DISPATCH]


def test_the_worked_example_names_the_right_user_v_and_meters_at_every_dispatch() -> None:
    said = dispatch_sentences(run_of(TRACES / "seed-example.parquet", "sfq", 1))
    for sentence, (user, v, meter_a, meter_b) in zip(said[: len(ARTICLE_TABLE)], ARTICLE_TABLE, strict=True):
        meters = {"A": meter_a, "B": meter_b}
        other = "B" if user == "A" else "A"
        assert sentence.startswith(f"{user} is chosen: "), sentence
        assert f", so v = {v};" in sentence, sentence
        assert sentence.endswith(f"; charged {3 if user == 'A' else 1}, S_{user} = {meters[user]}"), sentence
        assert f"S_{other} = {meters[other]}" in sentence, sentence  # the other meter, unchanged by this pick
    assert said[0] == "A is chosen: S_A = S_B = 0, a tie broken by user id, so v = 0; charged 3, S_A = 3"
    assert said[1] == "B is chosen: S_B = 0 is the smallest meter (next: S_A = 3), so v = 0; charged 1, S_B = 1"


def test_drr_narration_tells_what_the_visits_did_since_the_previous_dispatch() -> None:
    run = run_of(TRACES / "seed-example.parquet", "drr", 1)
    said = dispatch_sentences(run, Shadow.of_run(run.table, run.metadata))
    assert said[:5] == [
        "A gets its quantum 3, deficit 3 >= 3, sends r000001, deficit 0 left",
        "A's head r000002 costs 3 > deficit 0: the visit ends, A goes to the tail; "
        "B gets its quantum 3, deficit 3 >= 1, sends r000005, deficit 2 left",
        "B's visit goes on: deficit 2 >= 1, sends r000006, deficit 1 left",
        "B's visit goes on: deficit 1 >= 1, sends r000007, deficit 0 left",
        "B's head r000008 costs 1 > deficit 0: the visit ends, B goes to the tail; "
        "A gets its quantum 3, deficit 3 >= 3, sends r000002, deficit 0 left",
    ]
    assert said[-1] == "B's visit goes on: deficit 1 >= 1, sends r000016; its queue is empty: deficit 0, B leaves the list"


def test_joins_and_the_global_idle_reset_are_told_with_their_numbers() -> None:
    run = run_of(TRACES / "global-idle.parquet", "sfq", 1)
    table = run.table
    said = [narrate(table, run.timeline, k) for k in range(len(table))]
    reset = table.idle_resets[0]
    assert said[reset] == ("Nobody is waiting: global idle, v = max(v, max S_i) = 2,000 (v was 1,000, max S_i = 2,000); "
                           "the next congestion starts everyone on one line (§2.5)")
    assert "user-1 joins with r000042 at max(S_user-1, v) = 2,000 (S_user-1 was 1,000, v = 2,000)" in said
    assert said[0] == "user-0 is new: joins with r000001 at v = 0"
    assert said[1] == "r000002 of user-0 queues behind 1 of its own waiting request: no join, S_user-0 stays 0"


def test_vtc_completions_charge_the_actual_output_and_joins_are_lifted(tmp_path: Path) -> None:
    path = tmp_path / "hand.parquet"
    columns = ("request_id", "user", "arrival_s", "input_tokens", "max_tokens", "output_tokens")
    write_trace(pl.DataFrame([dict(zip(columns, row)) for row in ROWS]).with_columns(service_s=pl.lit(1.0)), path, {})
    run = run_of(path, "vtc", 1)
    said = [narrate(run.table, run.timeline, k) for k in range(len(run.table))]
    assert "a1 of A completes: charged its actual output (10 tokens), C_A = 10 + 20 = 30" in said
    assert "C joins with c1 at max(C_C, min C_j) = 50 (C_C was 0, the smallest other is 50)" in said
    assert "B is chosen: C_B = C_C = 50, a tie broken by user id; charged its input 10, C_B = 60" in said


@pytest.mark.parametrize("scheduler", ["sfq", "sfq-reset", "drr", "vtc", "fifo", "rr"])
def test_every_event_of_every_scheduler_is_told(scheduler: str) -> None:
    path = TRACES / ("calibration.parquet" if scheduler == "vtc" else "trickle.parquet")
    run = run_of(path, scheduler, 2)
    shadow = Shadow.of_run(run.table, run.metadata)
    said = [narrate(run.table, run.timeline, k, shadow) for k in range(-1, len(run.table))]
    assert said[0] == "Before the first event: nothing has arrived yet."
    assert all(said) and len(set(said)) > len(said) // 4
