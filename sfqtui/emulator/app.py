"""The engine's HTTP side: OpenAI's completion routes (streamed or not), /v1/models and /metrics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sfqtui.core.engines.model import EngineModel
from sfqtui.core.engines.prompt_blocks import DEFAULT_BLOCK_TOKENS
from sfqtui.emulator.metrics import EngineMetrics
from sfqtui.emulator.requests import Ask, BadRequest, ask_of
from sfqtui.emulator.scheduler import QueueFull, Scheduler, Sequence, TooLong
from sfqtui.protocol import ENGINE_START_HEADER

# The answer's text: one word per token, round and round.
# What nginx logs for a client that left before its answer; nobody reads it.
CLIENT_GONE = 499
WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")


def error(status: int, message: str, type: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type, "param": None, "code": status}}, status_code=status)


async def _until_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def words(start: int, count: int) -> str:
    return "".join(f"{WORDS[k % len(WORDS)]} " for k in range(start, start + count))


class EmulatedEngine:
    """The scheduler, its metrics and the OpenAI answers, for one served model name."""

    def __init__(self, model: EngineModel, served_model_name: str, block_tokens: int | None = DEFAULT_BLOCK_TOKENS) -> None:
        """``block_tokens``: the prefix cache's block (None: no prefix cache)."""
        self.name = served_model_name
        self.metrics = EngineMetrics(served_model_name)
        self.scheduler = Scheduler(model, self.metrics.finished, block_tokens)
        self.metrics.watch(self.scheduler)

    @asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        stepping = asyncio.create_task(self.scheduler.run())
        try:
            yield
        finally:
            stepping.cancel()

    def _usage(self, seq: Sequence) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": seq.prompt_tokens, "completion_tokens": seq.generated,
                                 "total_tokens": seq.prompt_tokens + seq.generated}
        if self.scheduler.cache is not None:  # OpenAI's field (vLLM fills it with --enable-prompt-tokens-details)
            usage["prompt_tokens_details"] = {"cached_tokens": seq.cached_tokens}
        return usage

    def _head(self, ask: Ask, number: int, created: int, chunk: bool) -> dict[str, Any]:
        kind = ("chat.completion" if ask.chat else "text_completion") + (".chunk" if chunk and ask.chat else "")
        return {"id": f"{'chatcmpl' if ask.chat else 'cmpl'}-{number}", "object": kind, "created": created, "model": self.name}

    def _choice(self, ask: Ask, text: str, finish: str | None, chunk: bool) -> dict[str, Any]:
        if not ask.chat:
            return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        content = {"role": "assistant", "content": text}
        return {"index": 0, "delta" if chunk else "message": content, "logprobs": None, "finish_reason": finish}

    async def completion(self, chat: bool, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            cache = self.scheduler.cache
            ask = ask_of(body, chat, self.scheduler.model.output_tokens, None if cache is None else cache.block_tokens)
        except ValueError as exc:  # not JSON, or BadRequest
            return error(400, str(exc) if isinstance(exc, BadRequest) else "the request body must be JSON", "BadRequestError")
        if ask.model is not None and ask.model != self.name:
            return error(404, f"The model `{ask.model}` does not exist.", "NotFoundError")
        overhead = self.scheduler.model.overhead_s
        arrived = asyncio.get_running_loop().time()
        if overhead:
            await asyncio.sleep(overhead)  # the API server's time before the engine sees the request
        try:
            seq = self.scheduler.submit(ask.prompt_tokens, ask.output_tokens, ask.blocks, arrived)
        except TooLong as exc:
            return error(400, str(exc), "BadRequestError")
        except QueueFull as exc:
            return error(503, str(exc), "ServiceUnavailableError")
        created = int(time.time())
        # Every answer's headers go when the request joins the batch and say when it did: a client
        # (the proxy) learns it then, even for an answer whose body comes whole at the end.
        if not await self._admitted(seq, request):
            return Response(status_code=CLIENT_GONE)
        started = {ENGINE_START_HEADER: f"{seq.admitted_unix:.6f}"}
        if ask.stream:
            return StreamingResponse(self._chunks(ask, seq, created), media_type="text/event-stream", headers=started)
        return StreamingResponse(self._whole(ask, seq, created), media_type="application/json", headers=started)

    async def _whole(self, ask: Ask, seq: Sequence, created: int) -> AsyncIterator[bytes]:
        """A non-streamed answer: one JSON body once the last token is generated."""
        try:
            while await seq.tokens.get() is not None:
                pass
        finally:
            self.scheduler.abort(seq)  # done, or the client left: free its place and KV
        yield json.dumps({**self._head(ask, seq.number, created, chunk=False),
                          "choices": [self._choice(ask, words(0, seq.generated), "length", chunk=False)],
                          "usage": self._usage(seq)}).encode()

    async def _admitted(self, seq: Sequence, request: Request) -> bool:
        """Wait until the request joins the batch; False (its place in the queue freed) if its client left first."""
        left = asyncio.ensure_future(_until_disconnect(request))
        joined = asyncio.ensure_future(seq.admitted.wait())
        try:
            await asyncio.wait((left, joined), return_when=asyncio.FIRST_COMPLETED)
        finally:
            left.cancel()
            joined.cancel()
        if not seq.admitted.is_set():
            self.scheduler.abort(seq)
            return False
        return True

    async def _chunks(self, ask: Ask, seq: Sequence, created: int) -> AsyncIterator[bytes]:
        head = self._head(ask, seq.number, created, chunk=True)
        extra: dict[str, Any] = {"usage": None} if ask.include_usage else {}
        sent = 0
        try:
            while (got := await seq.tokens.get()) is not None:
                done = sent + got >= seq.output_tokens
                yield frame({**head, "choices": [self._choice(ask, words(sent, got), "length" if done else None, chunk=True)], **extra})
                sent += got
            if ask.include_usage:
                yield frame({**head, "choices": [], "usage": self._usage(seq)})
            yield b"data: [DONE]\n\n"
        finally:
            self.scheduler.abort(seq)  # the client left: free its place and KV

    async def models(self, _request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.name, "object": "model", "created": 0, "owned_by": "sfqtui",
                                                         "max_model_len": self.scheduler.model.kv_tokens}]})

    async def prometheus(self, request: Request) -> Response:
        return Response(self.metrics.render(request.query_params.getlist("name[]")), media_type="text/plain; version=0.0.4; charset=utf-8")


def frame(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def create_app(engine: EmulatedEngine) -> Starlette:
    return Starlette(routes=[
        Route("/v1/chat/completions", partial(engine.completion, True), methods=["POST"]),
        Route("/v1/completions", partial(engine.completion, False), methods=["POST"]),
        Route("/v1/models", engine.models, methods=["GET"]),
        Route("/metrics", engine.prometheus, methods=["GET"]),
    ], lifespan=engine.lifespan)
