"""`sfqtui engine`: an emulated vLLM engine to try a gateway (or the sfqtui proxy) against, without a GPU."""

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from sfqtui.cli.errors import refuses_bad_input
from sfqtui.core.numbers import count, counted

_PANEL = "Engine"
_DEFAULTS = "default: the --model-file's, else {}"


def _option(flag: str, help: str) -> Any:
    return typer.Option(flag, help=help, show_default=False, rich_help_panel=_PANEL)


@refuses_bad_input
def engine(
    port: Annotated[int, typer.Option("--port", help="TCP port to serve on (0: any free port).", rich_help_panel=_PANEL)] = 8000,
    host: Annotated[str, typer.Option("--host", help="Address to serve on.", rich_help_panel=_PANEL)] = "127.0.0.1",
    served_model_name: Annotated[
        str,
        typer.Option("--served-model-name", help="The model name /v1/models lists, answers carry and /metrics labels.",
                     rich_help_panel=_PANEL),
    ] = "sfqtui-emulated",
    model_file: Annotated[
        Path | None,
        _option("--model-file", "JSON object of engine parameters (the options below, in snake_case), e.g. a fitted model; "
                "options given on the command line win."),
    ] = None,
    max_num_seqs: Annotated[
        int | None, _option("--max-num-seqs", f"Places in the running batch (as vLLM's option); {_DEFAULTS.format(6)}."),
    ] = None,
    kv_tokens: Annotated[
        int | None,
        _option("--kv-tokens", "KV cache size in tokens: a running request holds its prompt and the tokens it generated, and "
                f"starts only when its whole length fits; {_DEFAULTS.format('65,536')}."),
    ] = None,
    prefill_us_per_token: Annotated[
        float | None,
        _option("--prefill-us-per-token", f"Microseconds a step takes per prompt token it prefills (alone in the batch); {_DEFAULTS.format(50)}."),
    ] = None,
    decode_ms_per_token: Annotated[
        float | None,
        _option("--decode-ms-per-token", f"Milliseconds of a step that generates one token for a request alone in the batch; {_DEFAULTS.format(20)}."),
    ] = None,
    batch_slowdown: Annotated[
        float | None,
        _option("--batch-slowdown", "Fraction a step's time grows by per running request beyond the first (0.1: 6 running take 1.5x "
                f"as long); {_DEFAULTS.format(0.1)}."),
    ] = None,
    context_us_per_token: Annotated[
        float | None,
        _option("--context-us-per-token", "Microseconds a step takes per token of context the running requests hold (each one's "
                f"prompt and the tokens it made so far: attention reads them all); {_DEFAULTS.format(0)}."),
    ] = None,
    slowed_prefill: Annotated[
        bool | None,
        typer.Option("--slowed-prefill/--no-slowed-prefill", show_default=False, rich_help_panel=_PANEL,
                     help="Whether the batch slowdown multiplies the prefill term too (--no-slowed-prefill: the decode term alone, "
                     "as an engine that runs prompt and decode tokens as one batch, llama.cpp on a CPU); "
                     "default: the --model-file's, else slowed."),
    ] = None,
    max_queued: Annotated[
        int | None,
        _option("--max-queued", "Requests the engine's own queue holds; more get 503 (as vLLM's --max-num-queued-reqs); default: "
                "the --model-file's, else no bound."),
    ] = None,
    output_tokens: Annotated[
        int | None, _option("--output-tokens", f"Tokens generated for a request that sets no max_tokens; {_DEFAULTS.format(256)}."),
    ] = None,
    enable_prefix_caching: Annotated[
        bool,
        typer.Option("--enable-prefix-caching/--no-enable-prefix-caching",
                     help="Keep a prefix cache, on as in vLLM's V1 engine: a prompt's prefill computes only the tokens after its "
                     "longest held prefix; answers say usage.prompt_tokens_details.cached_tokens (docs/engine.md).",
                     rich_help_panel=_PANEL),
    ] = True,
    block_size: Annotated[
        int,
        typer.Option("--block-size", help="Tokens in a block of the prefix cache (as vLLM's option): 4 characters a token, as the "
                     "sfqtui proxy names a prompt's blocks.", rich_help_panel=_PANEL),
    ] = 16,
    request_overhead_ms: Annotated[
        float | None,
        _option("--request-overhead-ms", "Milliseconds each request spends in the API server before it joins the engine's queue "
                f"(HTTP, chat template, tokenizing), every request at once; {_DEFAULTS.format(0)}."),
    ] = None,
) -> None:
    """Serve an emulated vLLM engine: OpenAI's API, continuous batching, vLLM's metrics, no GPU.

    Requests wait in the engine's FCFS queue until a place in the batch (--max-num-seqs) and
    KV for their prompt and output (--kv-tokens) are free. Each engine step generates one
    token for every running request and takes (decode + prefill of new prompts) x
    (1 + slowdown x (running - 1)) + context x (tokens the running requests hold). Prompt tokens are counted as one per 4 characters; a
    request generates exactly max_tokens. Serves /v1/chat/completions, /v1/completions
    (streamed or not), /v1/models and /metrics (vllm:num_requests_running, ...). With the prefix
cache (on by default), a request's prefill computes only the prompt tokens after its longest
held prefix, in blocks of --block-size tokens. See docs/engine.md.
    """
    from sfqtui.core.engines.model import EngineModel
    from sfqtui.emulator.server import EngineServer
    from sfqtui.errors import InputError
    from sfqtui.proxy.server import listen_socket

    model = EngineModel.load(model_file) if model_file is not None else EngineModel()
    given: dict[str, Any] = {"max_num_seqs": max_num_seqs, "kv_tokens": kv_tokens, "prefill_us_per_token": prefill_us_per_token,
             "decode_ms_per_token": decode_ms_per_token, "batch_slowdown": batch_slowdown, "max_queued": max_queued,
             "output_tokens": output_tokens, "request_overhead_ms": request_overhead_ms,
             "context_us_per_token": context_us_per_token, "slowed_prefill": slowed_prefill}
    model = dataclasses.replace(model, **{name: value for name, value in given.items() if value is not None})
    if block_size < 1:
        raise InputError(f"--block-size {block_size}: must be a whole number of at least 1")
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: must be between 0 and 65535")
    if not served_model_name.strip():
        raise InputError("--served-model-name cannot be empty")
    sock = listen_socket(host, port)
    shown_host = f"[{host}]" if ":" in host else host
    cache = f"a prefix cache of {counted(block_size, 'token')} a block" if enable_prefix_caching else "no prefix cache"
    queue = "an unbounded queue" if model.max_queued is None else f"a queue of at most {counted(model.max_queued, 'request')}"
    typer.echo(f"sfqtui engine: serving {served_model_name} on http://{shown_host}:{sock.getsockname()[1]}/v1 "
               f"({counted(model.max_num_seqs, 'place')}, {count(model.kv_tokens)} KV tokens, {queue}, {cache})", err=True)
    EngineServer(model, served_model_name, block_size if enable_prefix_caching else None).run(sockets=[sock])
