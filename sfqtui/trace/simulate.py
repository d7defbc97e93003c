"""Replay a loaded trace and stream its event log to Parquet."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from sfqtui import __version__
from sfqtui.core.engine.replay import Replay, ReplayConfig
from sfqtui.core.engine.gcpause import collector_paused
from sfqtui.trace.eventlog import ChunkEncoder, EventLogWriter, RequestColumns
from sfqtui.trace.schema import LOG_FORMAT
from sfqtui.trace.load import LoadedTrace

Progress = Callable[[int, int], None]


def encoder_for(replay: Replay, loaded: LoadedTrace) -> ChunkEncoder:
    table = loaded.table
    estimator = replay.estimator
    requests = RequestColumns(
        request_ids=table["request_id"].combine_chunks(),
        users=table["user"].combine_chunks(),
        weights=table["weight"].combine_chunks() if "weight" in table.column_names else None,
        ratio_used=estimator.ratio_used if estimator is not None else None,
        est_output=estimator.est_output if estimator is not None else None,
        output_tokens=loaded.trace.output_tokens,  # type: ignore[arg-type]
    )
    return ChunkEncoder(replay.config.scheduler, requests, credit="credit" in replay.traits.extra_columns)


def replay_metadata(replay: Replay, loaded: LoadedTrace) -> dict[str, Any]:
    """What a log records about how it was made, so a replay can be reproduced."""
    config = replay.config
    meta: dict[str, Any] = {
        "sfqtui_version": __version__,
        "format": LOG_FORMAT,
        "trace": str(loaded.path),
        "requests": len(loaded.trace),
        "scheduler": config.scheduler,
        "slots": config.slots,
        "cost_source": replay.cost_source,
        "service_source": replay.service_source,
        "renormalise_every": config.renormalise_every,
    }
    if replay.quantum is not None:
        meta["quantum"] = replay.quantum
    if replay.cost_source == "estimator":
        meta["estimator"] = config.estimator.as_dict()
    if replay.service_source == "model":
        meta["service_model"] = asdict(config.service)
    return meta


def simulate(loaded: LoadedTrace, config: ReplayConfig, out: Path, progress: Progress | None = None) -> Replay:
    """Replay ``loaded`` under ``config`` and write the full event log to ``out``."""
    replay = Replay(loaded.trace, config)
    encoder = encoder_for(replay, loaded)
    total = len(loaded.trace)
    with collector_paused(), EventLogWriter(out, replay_metadata(replay, loaded)) as writer:
        for arrived in replay.run(chunk=1 << 18):
            start, rows = replay.log.drain()
            if rows:
                writer.write(encoder.encode(start, rows))
            if progress is not None:
                progress(arrived, total)
    return replay
