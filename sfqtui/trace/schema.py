"""Column names and types of the trace (semantics §1) and the event log (semantics §7)."""

from __future__ import annotations

import pyarrow as pa

REQUIRED = ("request_id", "user", "arrival_s")
TOKEN_COLUMNS = ("input_tokens", "max_tokens", "output_tokens")
TRACE_SCHEMA = pa.schema(
    [
        ("request_id", pa.string()),
        ("user", pa.string()),
        ("arrival_s", pa.float64()),
        ("input_tokens", pa.int64()),
        ("max_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost", pa.float64()),
        ("service_s", pa.float64()),
        ("weight", pa.float64()),
        ("model", pa.string()),
        # Optional policy columns (semantics §15): what today's gateways schedule by.
        ("priority", pa.int64()),
        ("flow", pa.string()),
        ("class", pa.string()),
        ("deadline_s", pa.float64()),
    ]
)
TRACE_COLUMNS = tuple(TRACE_SCHEMA.names)
# Semantics §14: each prompt's chained block hashes, with the trace metadata key saying how
# many tokens a block holds. Optional and beside the columns above (a trace without it reads
# and replays exactly as before).
PREFIX_BLOCKS = "prefix_blocks"
PREFIX_BLOCKS_TYPE = pa.list_(pa.uint64())
BLOCK_TOKENS_KEY = "block_tokens"
# A proxy's recording: when each request's engine began running it, on arrival_s's clock (null:
# the upstream did not say). Beside the columns above; a replay of the recording to what happened
# turns it into start rows (docs/traces.md), and a trace with no value in it reads as one without.
ENGINE_START = "engine_start_s"
# A proxy's recording: the upstream each request was sent to, by its address (null: none). A replay of
# the recording as it ran names it on the request's dispatch and start rows (docs/traces.md).
UPSTREAM = "upstream"
# A proxy's recording: the prompt tokens its index said the upstream held (--placement prefix), and
# those the upstream's usage said its cache held (null: not said). A replay of the recording as it
# ran writes them on the request's dispatch and complete rows, as the proxy's stream did (docs/traces.md).
PREDICTED_CACHED = "predicted_cached_tokens"
CACHED = "cached_tokens"

LOG_SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("t", pa.float64()),
        ("kind", pa.string()),
        ("scheduler", pa.string()),
        ("request_id", pa.string()),
        ("user", pa.string()),
        ("cost", pa.float64()),
        ("v", pa.float64()),
        ("meter", pa.float64()),
        ("deficit", pa.float64()),
    ]
)
LOG_COLUMNS = tuple(LOG_SCHEMA.names)
# Columns beyond §7 that our logs may carry; a log without one reads it as null.
LOG_EXTRAS = pa.schema(
    [
        ("weight", pa.float64()),
        ("ratio", pa.float64()),
        ("est_output", pa.float64()),
        ("credit", pa.float64()),
        ("output_tokens", pa.int64()),
        ("replica", pa.int32()),
        ("since_seq", pa.int64()),  # a live group's merge row: the last seq the replica saw before it served on its own
        # Start and limit rows, and dispatches where known: which engine ("0", "1", ... with the engine model) or upstream
        # (its name: in a proxy, in a replay that follows its recorded capacity, and in a replay of its recording as it ran).
        ("upstream", pa.string()),
        ("limit", pa.int64()),  # limit rows: the upstream's new concurrency limit
        ("reason", pa.string()),  # limit rows: why it changed (start, queue, kv, stale, room, latency, backoff, maximum)
        # The prompt tokens found cached (§14): start rows of a replay whose engines model prefix
        # caches; complete rows of a proxy whose upstream said so in its usage (and of a replay of its recording as it ran).
        ("cached_tokens", pa.int64()),
        # A proxy's dispatch rows under --placement prefix (and a replay's of its recording as it ran): what its index said the upstream held.
        ("predicted_cached_tokens", pa.int64()),
    ]
)
# The log formats. 1: the §7 columns with weight, ratio and credit (no version recorded);
# 2: est_output and output_tokens added; 3: a replicated replay's log (semantics §11): the
# replica column and sync rows. A one-scheduler log is still written as format 2, so it
# reads in versions that know nothing of replicas. 4: a log with start and limit rows and the
# upstream, limit and reason columns (a replay with the engine model, on a recorded capacity,
# or of a recording that names its engine starts or upstreams, as it ran); any other log is
# still written as format 2 or 3.
LOG_FORMAT = 2
REPLICATED_LOG_FORMAT = 3
ENGINE_LOG_FORMAT = 4
NEWEST_LOG_FORMAT = ENGINE_LOG_FORMAT  # the newest this version reads
METADATA_KEY = b"sfqtui"
