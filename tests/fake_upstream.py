"""A fake OpenAI-compatible server, the tests' stand-in for vLLM, and a way to run servers on loopback.

Answers are deterministic: the answer to a prompt is "echo: <prompt>", one output token
per word (cut at max_tokens), and usage counts them. Markers in the prompt choose a
behaviour: ``[fail500]`` an HTTP 500, ``[hang]`` no answer for a minute (or until the
client leaves), ``[held]`` no answer until the test calls ``release(prompt)`` (a minute at most),
``[slow]`` 0.1 s per word, ``[pause]`` a stream that stops after its first chunk until the test calls
``release(prompt)`` (``pausing`` holds the prompts stopped now), ``[cut]`` a stream that breaks off after two chunks, ``[bad400]`` an
HTTP 400 in OpenAI's format, ``[ragged]`` a stream with \r\n line ends sent three bytes at a time, ``[cached]`` a usage
whose ``prompt_tokens_details.cached_tokens`` says half the prompt was cached.
``FakeUpstream`` keeps what it was sent and how many streams were closed early.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sfqtui.proxy.server import listen_socket

MODEL = "fake-model"


def prompt_of(body: dict[str, Any]) -> str:
    if "messages" in body:
        return str(body["messages"][-1]["content"])
    return str(body.get("prompt", ""))


def answer_words(body: dict[str, Any]) -> list[str]:
    words = f"echo: {prompt_of(body)}".split(" ")
    cap = body.get("max_tokens") or body.get("max_completion_tokens")
    return words[:cap] if cap else words


def answer_text(body: dict[str, Any]) -> str:
    return " ".join(answer_words(body))


class FakeUpstream:
    def __init__(self, latency_s: float = 0.0, chunk_delay_s: float = 0.0, engine_metrics: bool = False) -> None:
        self.latency_s = latency_s
        self.chunk_delay_s = chunk_delay_s
        self.seen: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.closed_early: Counter[str] = Counter()
        self.released: dict[str, threading.Event] = {}  # by prompt, for ``[held]`` and ``[pause]``
        self.pausing: set[str] = set()
        self.running = 0  # completion requests being answered now, and the most ever at once
        self.most_running = 0
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.completion, methods=["POST"]),
            Route("/v1/completions", self.completion, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            *([Route("/metrics", self.metrics, methods=["GET"])] if engine_metrics else []),
        ])

    async def metrics(self, _request: Request) -> Response:
        """vLLM's engine gauges, as an engine without a queue would give them: all running, none waiting (``engine_metrics``)."""
        text = "".join(f"# TYPE {name} gauge\n{name}{{engine=\"0\"}} {value}\n" for name, value in (
            ("vllm:num_requests_running", self.running), ("vllm:num_requests_waiting", 0), ("vllm:kv_cache_usage_perc", 0.0)))
        return Response(text, media_type="text/plain; version=0.0.4")

    def release(self, prompt: str) -> None:
        """Let the ``[held]`` or ``[pause]`` request of this prompt (sent or still to come) be answered."""
        self.released.setdefault(prompt, threading.Event()).set()

    async def _paused(self, prompt: str) -> None:
        released = self.released.setdefault(prompt, threading.Event())
        self.pausing.add(prompt)
        deadline = time.monotonic() + 60
        try:
            while not released.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        finally:
            self.pausing.discard(prompt)

    async def models(self, request: Request) -> Response:
        self.headers_seen.append(dict(request.headers))
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "tests"}]})

    async def completion(self, request: Request) -> Response:
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            response = await self._completion(request)
        except BaseException:
            self.running -= 1
            raise
        if isinstance(response, StreamingResponse):
            response.background = BackgroundTask(self._one_fewer)
        else:
            self.running -= 1
        return response

    async def _one_fewer(self) -> None:
        """A streamed answer is over."""
        self.running -= 1

    async def _completion(self, request: Request) -> Response:
        body = await request.json()
        self.seen.append(body)
        self.headers_seen.append(dict(request.headers))
        prompt = prompt_of(body)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if "[hang]" in prompt:
            for _ in range(600):
                if await request.is_disconnected():
                    return Response(status_code=499)
                await asyncio.sleep(0.1)
        if "[held]" in prompt:
            released = self.released.setdefault(prompt, threading.Event())
            deadline = time.monotonic() + 60
            while not released.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        if "[bad400]" in prompt:
            return JSONResponse({"error": {"message": "the fake upstream rejects this request", "type": "invalid_request_error",
                                           "param": "messages", "code": None}}, status_code=400)
        if "[fail500]" in prompt:
            return JSONResponse({"error": {"message": "the fake upstream failed on purpose", "type": "server_error", "code": None}}, status_code=500)
        chat = request.url.path.endswith("/chat/completions")
        words = answer_words(body)
        usage: dict[str, Any] = {"prompt_tokens": len(prompt) // 4 + 1, "completion_tokens": len(words),
                                 "total_tokens": len(prompt) // 4 + 1 + len(words)}
        if "[cached]" in prompt:
            usage["prompt_tokens_details"] = {"cached_tokens": usage["prompt_tokens"] // 2}
        rid = f"cmpl-{len(self.seen)}"
        if not body.get("stream"):
            if "[slow]" in prompt:
                await asyncio.sleep(0.1 * len(words))
            text = " ".join(words)
            choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"} if chat
                      else {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None})
            return JSONResponse({"id": rid, "object": "chat.completion" if chat else "text_completion", "created": 0,
                                 "model": body.get("model", MODEL), "choices": [choice], "usage": usage})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = self._chunks(rid, body, chat, words, usage if include_usage else None, prompt)
        return StreamingResponse(_ragged(chunks) if "[ragged]" in prompt else chunks, media_type="text/event-stream")

    async def _chunks(self, rid: str, body: dict[str, Any], chat: bool, words: list[str], usage: dict[str, Any] | None, prompt: str) -> AsyncIterator[bytes]:
        kind = "chat.completion.chunk" if chat else "text_completion"
        delay = 0.1 if "[slow]" in prompt else self.chunk_delay_s
        finished = False

        def chunk(piece: str | None, finish: str | None = None) -> bytes:
            if chat:
                choice: dict[str, Any] = {"index": 0, "delta": {} if piece is None else {"content": piece}, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": piece or "", "finish_reason": finish, "logprobs": None}
            data = {"id": rid, "object": kind, "created": 0, "model": body.get("model", MODEL), "choices": [choice]}
            if usage is not None:
                data["usage"] = None
            return f"data: {json.dumps(data)}\n\n".encode()

        try:
            for n, word in enumerate(words):
                if n == 2 and "[cut]" in prompt:
                    raise ConnectionError("the fake upstream breaks off on purpose")
                yield chunk(word if n == 0 else " " + word)
                if n == 0 and "[pause]" in prompt:
                    await self._paused(prompt)
                if delay:
                    await asyncio.sleep(delay)
            yield chunk(None, "stop")
            if usage is not None:
                last = {"id": rid, "object": kind, "created": 0, "model": body.get("model", MODEL), "choices": [], "usage": usage}
                yield f"data: {json.dumps(last)}\n\n".encode()
            yield b"data: [DONE]\n\n"
            finished = True
        finally:
            if not finished and "[cut]" not in prompt:
                self.closed_early[prompt] += 1


async def _ragged(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream with \r\n line ends, cut into pieces of three bytes that leave one by one."""
    async for chunk in chunks:
        chunk = chunk.replace(b"\n", b"\r\n")
        for start in range(0, len(chunk), 3):
            yield chunk[start:start + 3]
            await asyncio.sleep(0.0005)


class ServerThread:
    """A uvicorn server on 127.0.0.1 (a free port, or ``port``) in a thread of its own, for a ``with`` block."""

    def __init__(self, server: uvicorn.Server, port: int = 0) -> None:
        self.server = server
        self.sock = listen_socket("127.0.0.1", port)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.sock]))

    def __enter__(self) -> ServerThread:
        self._thread.start()
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the server did not stop"

    def __exit__(self, *_exc: object) -> None:
        if self._thread.is_alive():
            self.stop()


def fake_server(fake: FakeUpstream) -> ServerThread:
    return ServerThread(uvicorn.Server(uvicorn.Config(fake.app, log_level="warning", access_log=False, lifespan="off",
                                                      timeout_graceful_shutdown=2)))


@contextlib.contextmanager
def server_process(command: list[str], cwd: Path) -> Iterator[str]:
    """A server in a process of its own (``sfqtui proxy``, as a user runs it) for a ``with`` block;
    its URL is the first it writes to stderr. Stopped with SIGTERM."""
    proc = subprocess.Popen(command, cwd=cwd, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # type: ignore[union-attr]  # started with stderr=PIPE
        if "http://" not in line:
            raise RuntimeError(f"{command[1:4]} did not start: {line}")
        yield "http://" + line.split("http://")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(30)


def closed_port() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def main() -> None:
    """Serve the fake upstream on its own (for the benchmarks): prints its URL, serves until SIGTERM."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed words")
    parser.add_argument("--engine-metrics", action="store_true", help="serve /metrics with vLLM's engine gauges (for --slots auto)")
    args = parser.parse_args()
    fake = FakeUpstream(chunk_delay_s=args.chunk_delay, engine_metrics=args.engine_metrics)
    sock = listen_socket("127.0.0.1", 0)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(fake.app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=75)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
