"""Replay a trace and stream its event log to Parquet."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from sfqtui import __version__
from sfqtui.core.gcpause import collector_paused
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Drained, Replay
from sfqtui.core.requests.chunks import RequestChunk
from sfqtui.trace.chunks import TraceChunk, TraceSource
from sfqtui.trace.eventlog import ChunkEncoder, EventLogWriter, RequestColumns
from sfqtui.trace.load import LoadedTrace
from sfqtui.trace.schema import ENGINE_LOG_FORMAT, LOG_FORMAT, REPLICATED_LOG_FORMAT

Progress = Callable[[int, int], None]
_END = object()


@dataclass(frozen=True)
class ReadAhead:
    """A TraceSource whose next chunk is read on a thread of its own while the replay works
    on the current one (reading is Arrow and polars work, which releases the interpreter
    lock), so the replay's thread only replays. Memory: one chunk more."""

    source: TraceSource

    @property
    def users(self) -> Sequence[str]:
        return self.source.users

    @property
    def upstreams(self) -> Sequence[str]:
        return self.source.upstreams

    @property
    def columns(self) -> frozenset[str]:
        return self.source.columns

    def __len__(self) -> int:
        return len(self.source)

    def weights_by_code(self) -> dict[int, float]:
        return self.source.weights_by_code()

    def chunks(self) -> Iterator[TraceChunk]:
        ready: queue.Queue[object] = queue.Queue(maxsize=1)
        stop = threading.Event()

        def read() -> None:
            try:
                for chunk in self.source.chunks():
                    while not stop.is_set():
                        try:
                            ready.put(chunk, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                ready.put(_END)
            except BaseException as exc:  # handed to the replay's thread, which raises it
                ready.put(exc)

        reader = threading.Thread(target=read, name="trace reader", daemon=True)
        reader.start()
        try:
            while (item := ready.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield cast(TraceChunk, item)  # the reader puts only chunks, exceptions and _END
        finally:
            stop.set()
            reader.join()


class ReplayEncoder:
    """Encodes the rows a replay hands over (``Replay.drained``), with the request columns and
    pricing they need."""

    def __init__(self, replay: Replay, columns_of: Callable[[RequestChunk], RequestColumns]) -> None:
        self._columns_of = columns_of
        self._encoder = ChunkEncoder(replay.config.scheduler, replay.requests.users, credit="credit" in replay.traits.extra_columns,
                                     upstreams=replay.plan.upstream_names, as_ran=replay.plan.upstreams_recorded)

    def encode(self, drained: Drained) -> pa.Table:
        requests = [self._columns_of(chunk) for chunk in drained.requests]
        return self._encoder.encode(drained.rows, requests, drained.pricing, drained.cached)


def encoder_for(replay: Replay, source: LoadedTrace | TraceSource) -> ReplayEncoder:
    """The encoder for a replay of ``source``: a whole LoadedTrace, or a TraceSource read in chunks."""
    if isinstance(source, TraceSource):
        def chunk_columns(chunk: RequestChunk) -> RequestColumns:
            assert isinstance(chunk, TraceChunk)
            return RequestColumns.of(chunk.start, chunk.table, chunk.trace.output_tokens)

        return ReplayEncoder(replay, chunk_columns)
    whole = RequestColumns.of(0, source.table, source.trace.output_tokens)
    return ReplayEncoder(replay, lambda _chunk: whole)


def repriced(replay: Replay) -> bool:
    """Whether the replay priced a trace that has a cost column with the estimator (a what-if,
    ``ReplayConfig.reprice``) instead of the costs the trace records."""
    return "cost" in replay.requests.columns and replay.cost_source != "column"


def replay_metadata(replay: Replay, source: LoadedTrace | TraceSource) -> dict[str, Any]:
    """What a log records about how it was made, so a replay can be reproduced."""
    config = replay.config
    replicated = config.replicas.replicated
    meta: dict[str, Any] = {
        "sfqtui_version": __version__,
        "format": ENGINE_LOG_FORMAT if replay.plan.layout.present("upstream") else REPLICATED_LOG_FORMAT if replicated else LOG_FORMAT,
        "trace": str(source.path),
        "requests": len(replay.requests),
        "scheduler": config.scheduler,
        "slots": config.slots,
        "cost_source": replay.cost_source,
        "service_source": replay.service_source,
        "renormalise_every": config.renormalise_every,
    }
    if repriced(replay):
        meta["repriced"] = True
    if source.recorded_limits is not None and config.capacity is None:
        meta["capacity_ignored"] = True  # a what-if: other slots, or the engine model, than the recording's
    policy_columns = sorted(c for c in ("priority", "flow", "class", "deadline_s") if c in replay.requests.columns)
    if policy_columns:
        meta["policy_columns"] = policy_columns  # semantics §15: what the policies read (llm-d's turns are per user without flow)
    if replay.plan.credit_bound is not None:
        meta["credit_bound"] = replay.plan.credit_bound  # Dynamo: the most a class can hold, which `check` audits
    if replay.quantum is not None:
        meta["quantum"] = replay.quantum
    if replay.cost_source == "estimator":
        meta["estimator"] = config.estimator.as_dict()
    if replay.service_source == "model":
        meta["service_model"] = asdict(config.service)
    if replicated:
        meta["replicas"] = config.replicas.metadata(config.slots)
    if config.engine is not None:
        meta["engine"] = config.engine.metadata()
    if config.capacity is not None:
        meta["capacity"] = config.capacity.metadata()
    if replay.plan.starts_recorded:
        meta["engine_starts"] = "recorded"  # the start rows are the recording's (replay/recorded_starts.py), not a model's
    return meta


def simulate(source: LoadedTrace | TraceSource, config: ReplayConfig, out: Path, progress: Progress | None = None) -> Replay:
    """Replay ``source`` under ``config`` and write the full event log to ``out``, a row group
    at a time. A TraceSource is read a chunk at a time, so memory stays bounded by the
    requests in the system, not the length of the trace."""
    replay = Replay(ReadAhead(source) if isinstance(source, TraceSource) else source.trace, config)
    encoder = encoder_for(replay, source)
    total = len(replay.requests)
    with collector_paused(), EventLogWriter(out, replay_metadata(replay, source)) as writer:
        for drained in replay.drained(chunk=1 << 18):
            if len(drained.rows):
                writer.write(encoder.encode(drained))
            if progress is not None:
                progress(drained.arrived, total)
    return replay
