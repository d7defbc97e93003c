"""`compare` on engines that model their prefix caches (docs/semantics.md §14): the prefix
figures in its tables and JSON, placement by prefix against room and affinity on the bundled
Mooncake slice, and the placements refused where they cannot work."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sfqtui.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
MOONCAKE = ROOT / "traces" / "real" / "mooncake"


def compared(cli: CliRunner, trace: Path, *args: str) -> dict:
    result = cli.invoke(app, ["compare", str(trace), "--schedulers", "sfq", "--json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["schedulers"]["sfq"]


@pytest.fixture(scope="module")
def mooncake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mooncake") / "conversation.parquet"
    result = CliRunner().invoke(app, ["import", "mooncake", str(MOONCAKE / "conversation_trace_first2000.jsonl"), "-o", str(out),
                                      "--users", "16", "--jitter", "3"])
    assert result.exit_code == 0, result.stderr
    return out


def test_prefix_placement_beats_room_and_keeps_affinity_s_hit_rate_on_mooncake(mooncake: Path, cli: CliRunner) -> None:
    """4 engines of the Mooncake example's model (docs/engine.md): the issue's target."""
    engines = ["--engine-model", str(MOONCAKE / "engine-model.json"), "--engines", "4"]
    found = {p: compared(cli, mooncake, *engines, "--placement", p) for p in ("room", "prefix", "affinity")}
    hit = {p: f["prefix"]["hit_rate"] for p, f in found.items()}
    assert hit["prefix"] > hit["room"] and hit["prefix"] >= 0.9 * hit["affinity"]
    assert found["prefix"]["prefix"]["prefill_saved_tokens"] > found["room"]["prefix"]["prefill_saved_tokens"]
    # Bounded by load: under prefix placement no engine idles while another queues; under affinity one does for long.
    assert found["prefix"]["prefix"]["idle_while_queued_s"] == 0.0 < found["affinity"]["prefix"]["idle_while_queued_s"]
    assert set(found["prefix"]["prefix"]["users"]) == set(found["prefix"]["users"])


def test_compare_prints_the_prefix_figures(cli: CliRunner) -> None:
    result = cli.invoke(app, ["compare", str(ROOT / "traces" / "multi-turn.parquet"), "--schedulers", "sfq", "--engines", "2",
                              "--placement", "prefix"])
    assert result.exit_code == 0, result.stderr
    assert "prefix cache: hit rate" in result.stdout and "TTFT p99 s" in result.stdout and "placement prefix" in result.stdout
    plain = compared(cli, ROOT / "traces" / "demo.parquet", "--engines", "2")
    assert "prefix" not in plain


@pytest.mark.parametrize(("args", "said"), [
    (["demo.parquet", "--engines", "2", "--placement", "prefix"], "it needs a trace with prefix_blocks"),
    (["multi-turn.parquet", "--placement", "affinity"], "--placement affinity places requests among engines: give --engines N"),
])
def test_a_placement_that_cannot_work_is_refused(args: list[str], said: str, tmp_path: Path, cli: CliRunner) -> None:
    result = cli.invoke(app, ["simulate", str(ROOT / "traces" / args[0]), *args[1:], "-o", str(tmp_path / "log.parquet")])
    assert result.exit_code == 2 and said in result.stderr and result.stderr.count("\n") == 1


def test_calibrate_sets_predicted_against_found_cached_tokens(cli: CliRunner) -> None:
    trace = str(ROOT / "traces" / "multi-turn.parquet")
    result = cli.invoke(app, ["calibrate", trace, "--engines", "2", "--placement", "prefix", "--json"])
    assert result.exit_code == 0, result.stderr
    caches = json.loads(result.stdout)["prefix_cache"]
    assert set(caches) == {"chat-0", "chat-1", "chat-2", "oneshot-0", "oneshot-1", "oneshot-2"}
    # the chat users resend their history: cache-blind pricing charges them most for input never computed
    assert min(caches[u]["blind_overcharge_tokens"] for u in ("chat-0", "chat-1", "chat-2")) > \
        max(caches[u]["blind_overcharge_tokens"] for u in ("oneshot-0", "oneshot-1", "oneshot-2"))
    plain = cli.invoke(app, ["calibrate", trace, "--json"])
    assert plain.exit_code == 0 and "prefix_cache" not in json.loads(plain.stdout)
    refused = cli.invoke(app, ["calibrate", trace, "--replicas", "2"])
    assert refused.exit_code == 2 and "--replicas is not supported" in refused.stderr
