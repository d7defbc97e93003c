"""The worked example of docs/guide.md: today's policies beside SFQ on the Azure 2023 trace, two tenants, 32 slots."""

from __future__ import annotations

from pathlib import Path

import pytest

from sfqtui.core.analysis.fairness import fairness_of_replay
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.importers.formats import importer
from sfqtui.importers.options import ImportOptions
from sfqtui.trace.load import load_trace

AZURE = Path(__file__).resolve().parents[2] / "traces" / "real" / "azure_llm_2023"
# policy: worst gap, the pair, code's and conv's shares, code's and conv's waits p50 / p99 (docs/guide.md's table)
TABLE = {
    "sfq": ("21,312", "code over conv", "50.1%", "49.9%", "119.5 / 259.5", "297.2 / 328.1"),
    "llm-d": ("1,862,108", "code over conv", "60.3%", "39.7%", "17.3 / 142.0", "302.0 / 329.6"),
    "dynamo": ("9,320,393", "conv over code", "42.4%", "57.6%", "252.9 / 306.7", "269.9 / 312.3"),
    "litellm": ("9,320,393", "conv over code", "42.4%", "57.6%", "252.9 / 306.7", "269.9 / 312.3"),
    "las": ("330,557", "code over conv", "59.0%", "41.0%", "72.0 / 231.3", "298.2 / 329.7"),
}


@pytest.fixture(scope="module")
def azure(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("azure") / "azure2023.parquet"
    files = [AZURE / "AzureLLMInferenceTrace_code.csv", AZURE / "AzureLLMInferenceTrace_conv.csv"]
    importer("azure")("azure", files, out, ImportOptions(), None)
    return out


@pytest.mark.parametrize("scheduler", TABLE)
def test_the_guides_table(azure: Path, scheduler: str) -> None:
    report = fairness_of_replay(load_trace(azure).trace, ReplayConfig(scheduler, 32))
    gap = report.worst_gap
    assert gap is not None

    def waits(user: str) -> str:
        figures = report.users[user]
        return f"{figures.wait_quantile(0.5):.1f} / {figures.wait_quantile(0.99):.1f}"

    shown = (f"{gap.gap:,.0f}", f"{gap.ahead} over {gap.behind}", f"{report.share('code'):.1%}", f"{report.share('conv'):.1%}",
             waits("code"), waits("conv"))
    assert shown == TABLE[scheduler]
