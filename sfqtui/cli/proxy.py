"""`sfqtui proxy`: an SFQ proxy in front of OpenAI-compatible servers that publishes every decision."""

from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.errors import refuses_bad_input
from sfqtui.cli.replay_options import DEFAULT_ESTIMATOR, with_estimator_options
from sfqtui.core.pricing.estimator import EstimatorParams

_PANEL = "Proxy"


@refuses_bad_input
@with_estimator_options
def proxy(
    upstream: Annotated[
        list[str],
        typer.Option(
            "--upstream",
            help=(
                "Base URL of an OpenAI-compatible server (vLLM, llama.cpp, SGLang, ...), with or without /v1: http://HOST:8000 "
                "or http://HOST:8000/v1, not an endpoint's URL. Repeat for several; each request goes to the one with the fewest "
                "requests in flight."
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
    block_tokens: Annotated[
        int,
        typer.Option(
            "--block-tokens",
            help=(
                "Tokens in a prompt block of the --record's prefix_blocks (semantics §14). The proxy does not tokenise: a block is "
                "4 x this many characters of the prompt's text (this many token ids of a prompt given as ids); vLLM's block is 16."
            ),
            rich_help_panel=_PANEL,
        ),
    ] = 16,
    placement: Annotated[
        str,
        typer.Option(
            "--placement",
            help=(
                "Which upstream a dispatched request goes to. room: the most room (least in flight; with --slots auto, the most "
                "under its limit). prefix: among the upstreams with room (under their limit, or their even share of --slots), the "
                "one that holds the longest prefix of the prompt, by the proxy's index of the blocks it sent where. Never changes "
                "SFQ's order (docs/proxy.md)."
            ),
            rich_help_panel=_PANEL,
        ),
    ] = "room",
    prefix_index_blocks: Annotated[
        int,
        typer.Option(
            "--prefix-index-blocks",
            help="With --placement prefix: prompt blocks (of --block-tokens) the index keeps per upstream, the least recently "
                 "sent leaving first; about what an engine's KV cache holds.",
            rich_help_panel=_PANEL,
        ),
    ] = 32_768,
    scheduler: Annotated[
        str,
        typer.Option(
            "--scheduler",
            "-s",
            help=(
                "What picks the next request on a lone proxy: sfq, or a policy operators run today (llm-d, dynamo, litellm, las; "
                "fifo, rr) to A/B it live; a request's priority is its body's `priority` (LiteLLM's) or the header "
                "x-sfqtui-priority, its flow the header x-gateway-inference-fairness-id (llm-d's), its class x-sfqtui-class "
                "(semantics §15). A group (--state) shares one SFQ."
            ),
            rich_help_panel=_PANEL,
        ),
    ] = "sfq",
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
    from sfqtui.proxy.launch import launch
    from sfqtui.proxy.settings import ProxySettings

    settings = ProxySettings.from_options(
        upstream=upstream, keys=keys, slots=slots, listen=listen, limit_from=limit_from, events_token=events_token, ring_size=ring,
        record=record, metrics_users=metrics_users, estimator=estimator, upstream_timeout_s=upstream_timeout,
        shutdown_grace_s=shutdown_grace, state_url=state, lease_s=lease, store_timeout_s=store_timeout,
        block_tokens=block_tokens, placement=placement, prefix_index_blocks=prefix_index_blocks,
        scheduler=scheduler)
    launch(settings, say=lambda line: typer.echo(line, err=True))
