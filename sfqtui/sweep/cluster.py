"""Running a sweep on Dask distributed: a LocalCluster started here, or a running scheduler.

The caller loads each trace once; ``run_on_dask`` scatters it to every worker, so
workers never read trace files (docs/sweep.md). A run whose worker died is reported in
its row like a run that raised. Importing dask.distributed takes about a second, so the
commands import this module only when they use a cluster.

Ctrl-C reaches every process of the terminal's foreground group, the local cluster's
workers too, which would each print a traceback: they are started deaf to it, so only
this process hears it and closes the cluster as its KeyboardInterrupt leaves ``dask_client``.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress

from dask.distributed import Client, LocalCluster, as_completed

from sfqtui.core.requests.trace import Trace
from sfqtui.errors import InputError
from sfqtui.sweep.measures import Measure
from sfqtui.sweep.plan import RunSettings
from sfqtui.sweep.runs import Progress, Row, measured

CONNECT_TIMEOUT_S = 10
WORKERS_TIMEOUT_S = 30


def run_on_dask(client: Client, runs: Sequence[RunSettings], traces: Mapping[str, Trace], measure: Measure,
                progress: Progress | None = None) -> list[Row]:
    """Submit every run at once; rows come back in the order of ``runs``."""
    needed = {run.trace for run in runs}
    # hash=False: tokenising a trace of millions of requests would cost more than sending it.
    shared = {name: client.scatter(trace, broadcast=True, hash=False) for name, trace in traces.items() if name in needed}
    futures = [client.submit(measured, measure, shared[run.trace], run, pure=False) for run in runs]
    position = {future.key: k for k, future in enumerate(futures)}
    rows: list[Row] = [{} for _ in runs]
    for done, future in enumerate(as_completed(futures), 1):
        k = position[future.key]
        try:
            rows[k] = future.result()
        except Exception as exc:  # the worker running it died (killed, out of memory)
            rows[k] = {**runs[k].as_row(), "seconds": None, "error": f"{type(exc).__name__}: {exc}"}
        future.release()
        if progress is not None:
            progress(done, len(runs))
    return rows


@contextmanager
def _deaf_children() -> Iterator[None]:
    """Processes started inside ignore SIGINT (an ignored signal stays ignored across exec, and
    Python then installs no KeyboardInterrupt for it); a Ctrl-C meanwhile is lost, not delayed.
    Only the main thread may set a handler, and only its Ctrl-C matters: elsewhere, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@contextmanager
def dask_client(workers: int | None = None, address: str | None = None) -> Iterator[Client]:
    """A client of a LocalCluster of ``workers`` processes started and closed here, or of
    the running Dask scheduler at ``address`` (left running)."""
    if address is None:
        # One thread per worker: a replay is pure Python and holds the GIL, so processes give the
        # parallelism. The scheduler's HTTP server takes any free port: several sweeps can run at once.
        with _deaf_children():
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR)
        with cluster, Client(cluster) as client:
            try:
                yield client
            except KeyboardInterrupt:
                # Closing tears down work in flight (a scatter, runs): what Dask logs about it, here and
                # in the workers, is noise.
                logging.disable(logging.CRITICAL)
                with suppress(Exception):
                    client.run(logging.disable, logging.CRITICAL)
                raise
        return
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} ({exc})") from None
    with client:
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
        except TimeoutError:
            raise InputError(f"no Dask worker joined the scheduler at {address} within {WORKERS_TIMEOUT_S} s") from None
        yield client
