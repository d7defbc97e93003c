"""`sfqtui proxy`: an SFQ proxy in front of OpenAI-compatible servers that publishes every decision."""

import logging
import socket
from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.replay_options import DEFAULT_ESTIMATOR, with_estimator_options
from sfqtui.core.numbers import count, counted
from sfqtui.core.pricing.estimator import EstimatorParams
from sfqtui.errors import InputError
from sfqtui.paths import check_output

_PANEL = "Proxy"


def check_state_url(url: str) -> None:
    """InputError unless ``url`` names a Redis database the way docs/replicas.md says
    (redis://HOST:PORT/DB, rediss://...): redis-py's own parsing, and a database that is a
    number (redis-py reads any other path as database 0, another group's)."""
    from urllib.parse import unquote, urlsplit

    from redis.connection import parse_url

    from sfqtui.proxy.group import redacted

    try:
        shown = f"--state {redacted(url)}"
    except ValueError:  # a port that is not a number
        shown = "--state"
    try:
        parse_url(url)
        parts = urlsplit(url)
    except ValueError as exc:
        raise InputError(f"{shown}: {exc}; give redis://HOST:PORT/DB or rediss://HOST:PORT/DB (docs/replicas.md)") from None
    database = unquote(parts.path).strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise InputError(f"{shown}: the database {database!r} is not a number; give redis://HOST:PORT/DB with DB a number "
                         "(each group of replicas needs its own, docs/replicas.md)")


@refuses_bad_input
@with_estimator_options
def proxy(
    upstream: Annotated[
        list[str],
        typer.Option(
            "--upstream",
            help=(
                "Base URL of an OpenAI-compatible server (vLLM, llama.cpp, SGLang, ...), with or without /v1. Repeat for "
                "several; each request goes to the one with the fewest requests in flight."
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ],
    keys: Annotated[
        Path,
        typer.Option(
            "--keys",
            help=(
                'keys.toml: tables `[keys."<api key>"]` with `user = "name"` and optional `weight = 2.0`. Clients send the key '
                'as `Authorization: Bearer <key>`; keys are never forwarded, published or recorded.'
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ],
    slots: Annotated[
        str,
        typer.Option(
            "--slots",
            "-n",
            help=(
                "Requests sent upstream at once, over all upstreams; the rest wait in their users' queues and SFQ picks the next "
                "whenever a slot frees up. auto: each upstream gets a limit that follows it (its engine's queue and KV from its "
                "metrics, else its latency), starting low; auto:MAX: at most MAX each. See docs/proxy.md."
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ],
    limit_from: Annotated[
        str,
        typer.Option(
            "--limit-from",
            help=(
                "With --slots auto: what the limits follow. metrics: the engines' own (vLLM's or SGLang's /metrics; an upstream "
                "without them is refused); latency: each request's time per output token; auto: metrics where exported, else latency."
            ),
            rich_help_panel=_PANEL,
        ),
    ] = "auto",
    listen: Annotated[str, typer.Option("--listen", help="host:port to serve on (port 0: any free port).", rich_help_panel=_PANEL)] = "127.0.0.1:8080",
    events_token: Annotated[
        str | None,
        typer.Option(
            "--events-token",
            envvar="SFQTUI_EVENTS_TOKEN",
            help=(
                "Bearer token required by /v1/sfq/state and /v1/sfq/events (they name users). Also read from "
                "SFQTUI_EVENTS_TOKEN, which keeps it out of the process list."
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ] = None,
    ring: Annotated[
        int,
        typer.Option("--ring", help="Recent events kept for clients of /v1/sfq/events that connect or resume late.", rich_help_panel=_PANEL),
    ] = 100_000,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            help=(
                "Write every finished request to this trace (Parquet, semantics §1, with the actual output_tokens and the cost "
                "it was charged), rewritten periodically and at shutdown; sfqtui replay of it makes this proxy's decisions again "
                "(--reprice: a what-if). With --state, the requests this replica held: the replicas' recordings never overlap "
                "and, read as one trace, replay to the group's decisions (docs/replicas.md); "
                "sfqtui attach --record records the group's decisions."
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ] = None,
    metrics_users: Annotated[
        int,
        typer.Option(
            "--metrics-users",
            help="Users with their own label in /metrics (those with the most cost dispatched); the rest are summed as user=\"other\".",
            rich_help_panel=_PANEL,
        ),
    ] = 20,
    upstream_timeout: Annotated[
        float,
        typer.Option(
            "--upstream-timeout",
            help="Seconds an upstream may stay silent (before its answer, or between two streamed chunks) before the request fails with 504.",
            rich_help_panel=_PANEL,
        ),
    ] = 600.0,
    shutdown_grace: Annotated[
        float,
        typer.Option(
            "--shutdown-grace",
            help="On SIGINT/SIGTERM, seconds running requests get to finish before they are failed; queued requests get 503 at once.",
            rich_help_panel=_PANEL,
        ),
    ] = 30.0,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help=(
                "redis://HOST:PORT/DB (or rediss://; Redis or Valkey): join the group of replicas sharing one SFQ there; "
                "--slots is then the group's pool. See docs/replicas.md."
            ),
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ] = None,
    lease: Annotated[
        float,
        typer.Option(
            "--lease",
            help="With --state: seconds after which a replica that stopped renewing its lease is presumed dead and the others settle its requests.",
            rich_help_panel=_PANEL,
        ),
    ] = 5.0,
    store_timeout: Annotated[
        float,
        typer.Option(
            "--store-timeout",
            help="With --state: seconds a store call may take before the replica serves on its own (the global bound suspended).",
            rich_help_panel=_PANEL,
        ),
    ] = 1.0,
    estimator: EstimatorParams = DEFAULT_ESTIMATOR,  # with_estimator_options puts the options given here
) -> None:
    """Put Start-time Fair Queueing in front of OpenAI-compatible servers, and publish every decision.

    Clients use the proxy as their OpenAI base URL (`http://HOST:PORT/v1`) with their API
    key. Each request waits in its user's queue; whenever one of the --slots is free,
    SFQ dispatches the head request of the user with the smallest meter. The cost is
    estimated at dispatch from the prompt (about 4 characters per token) and max_tokens
    (docs/estimator.md) and never refunded.

    Also served: GET /v1/sfq/state and /v1/sfq/events (the live event stream; sfqtui
    attach follows it) and GET /metrics (Prometheus). See docs/proxy.md.
    """
    from sfqtui.core.limits.slots import parse_slots
    from sfqtui.proxy.keys import load_keys
    from sfqtui.proxy.limits import SOURCES, check_metrics
    from sfqtui.proxy.server import ProxyServer, listen_socket, parse_listen
    from sfqtui.proxy.settings import ProxySettings
    from sfqtui.proxy.upstream import base_url

    host, port = parse_listen(listen)
    fixed, limits = parse_slots(slots)
    if limit_from not in SOURCES:
        raise InputError(f"--limit-from {limit_from!r}: expected one of {', '.join(SOURCES)}")
    if limits is not None and limit_from == "metrics":
        check_metrics([base_url(u) for u in upstream])
    if fixed is not None:
        pool = fixed
    else:
        assert limits is not None
        pool = max(1, len(upstream) * limits.first)
    if state is not None:
        check_state_url(state)
    if events_token is not None and not events_token.strip():
        raise InputError("--events-token cannot be empty")
    if record is not None:
        check_output(record, "--record")
    book = load_keys(keys)
    sock = listen_socket(host, port)
    if state is not None:
        from sfqtui.proxy.group import check_store, group_settings, redacted

        check_store(state, store_timeout, group_settings(pool, ring, estimator, None if limits is None else limits.maximum))
    settings = ProxySettings(upstreams=tuple(upstream), slots=pool, limits=limits, limit_from=limit_from, keys=book, events_token=events_token, ring_size=ring,
                             record=record, metrics_users=metrics_users, estimator=estimator,
                             upstream_timeout_s=upstream_timeout, shutdown_grace_s=shutdown_grace, state_url=state,
                             replica_name=f"{socket.gethostname()}/{host}:{sock.getsockname()[1]}", lease_s=lease,
                             store_timeout_s=store_timeout)
    server = ProxyServer(settings)
    logging.basicConfig(level=logging.WARNING, format="sfqtui proxy: %(message)s")
    logging.getLogger("sfqtui.proxy").setLevel(logging.INFO)
    shown_host = f"[{host}]" if ":" in host else host
    typer.echo(f"sfqtui proxy: listening on http://{shown_host}:{sock.getsockname()[1]} ({counted(len(book.users), 'user')}, "
               f"{counted(fixed, 'slot') if fixed is not None else f'slots auto (starting at {count(pool)})'}, "
               f"{counted(len(upstream), 'upstream')}; "
               f"events {'need the token' if events_token else 'are open to anyone who can connect'}"
               + (f"; one SFQ with the group at {redacted(state)}" if state else "") + ")", err=True)
    server.run(sockets=[sock])
