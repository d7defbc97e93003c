"""What an upstream's /metrics says of its engine: requests running and waiting, and KV use, under vLLM's, SGLang's or llama.cpp's names.

The scrape asks for these names only (``QUERY``: prometheus_client's ``name[]`` filter, which
vLLM's and SGLang's /metrics serve through it), and the lines of other names are dropped before
prometheus_client's parser sees the text (a server that ignores the filter, as llama.cpp's does, sends its whole
exposition: vLLM's histograms are tens of kilobytes, which the parser would take milliseconds
over, on the proxy's event loop). Every series of a name is summed (a vLLM with several engine
cores, or models, labels each), but KV use, where the fullest counts.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from sfqtui.core.limits import EngineSignals

# (running, waiting, KV use from 0 to 1) by engine: vLLM (kv_cache_usage_perc since 0.10,
# gpu_cache_usage_perc before), SGLang, and llama.cpp's llama-server with --metrics (its
# tools/server/README.md: requests_processing, the slots at work; requests_deferred, those
# waiting for a slot; kv_cache_usage_ratio in older builds, none in current ones).
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio")
NAMES = frozenset(RUNNING + WAITING + KV_USAGE)
QUERY = {"name[]": sorted(NAMES)}
# A sample line of one of the names, or its TYPE line (the parser reads a family's type from it).
_KEPT = tuple(f"{name}{end}" for name in sorted(NAMES) for end in ("{", " ")) + tuple(f"# TYPE {name} " for name in sorted(NAMES))


def kept_lines(text: str) -> str:
    """The lines of ``text`` about the names read here."""
    return "\n".join(line for line in text.splitlines() if line.startswith(_KEPT)) + "\n"


def signals_of(text: str, t: float) -> EngineSignals | None:
    """The engine's signals in a /metrics text read at ``t``; None when it exports none of them
    (not a vLLM, SGLang or llama.cpp, or a text that does not parse)."""
    sums: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(kept_lines(text)):
            if family.name not in NAMES:
                continue
            for sample in family.samples:
                if sample.name == family.name:
                    before = sums.get(family.name)
                    if family.name in KV_USAGE:
                        sums[family.name] = sample.value if before is None else max(before, sample.value)
                    else:
                        sums[family.name] = sample.value + (before or 0.0)
    except ValueError:
        return None
    if not sums:
        return None

    def first(names: tuple[str, ...]) -> float | None:
        return next((sums[name] for name in names if name in sums), None)

    running, waiting, kv = first(RUNNING), first(WAITING), first(KV_USAGE)
    return EngineSignals(t, None if running is None else round(running), None if waiting is None else round(waiting),
                         None if kv is None else min(1.0, max(0.0, kv)))
