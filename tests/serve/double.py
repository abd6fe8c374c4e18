"""A test double of the upstream engine, and loopback servers to run it and the autoparser server under test.

:class:`UpstreamDouble` speaks llama.cpp's ``/completion`` (server-sent events with ``content`` per token, a last
event with ``"stop": true``, ``stop_type``, ``tokens_evaluated`` and ``tokens_predicted``; no ``[DONE]``; errors as
``{"error": {"code", "message", "type"}}``), llama.cpp's ``/tokenize`` (for the BOS probe), and OpenAI-style
``/v1/completions`` and ``/v1/models``. It replays scripted raw replies token by token: each request gets the
:class:`Script` whose key occurs in its prompt (so concurrent requests get their own), and everything it received,
and every reply a client abandoned, is recorded.

It is a test double of the upstream only: what it proves is the server's own behaviour (rendering, parsing,
streaming, errors); that a real engine accepts the requests is tests/integrations/test_llama_server.py's job.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["LoopbackServer", "Script", "UpstreamDouble", "tokens"]

_WORDISH = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


def tokens(text: str, markers: Sequence[str] = ()) -> list[str]:
    """``text`` cut as a tokenizer might: each marker whole, then runs of word characters, of whitespace, and
    single other characters."""
    if not text:
        return []
    ordered = sorted({m for m in markers if m}, key=len, reverse=True)
    pieces: list[str] = []
    if ordered:
        split = re.compile("(" + "|".join(map(re.escape, ordered)) + ")")
        parts = split.split(text)
    else:
        parts = [text]
    for i, part in enumerate(parts):
        if not part:
            continue
        if ordered and i % 2 == 1:
            pieces.append(part)
        else:
            pieces += _WORDISH.findall(part)
    assert "".join(pieces) == text
    return pieces


@dataclass
class Script:
    """One scripted reply.

    ``pieces``: the text, one event per piece. ``finish``: ``stop`` or ``length``. ``status``: answer this HTTP
    status with ``error`` at once (no reply), with ``headers`` (``Retry-After``, say). ``fail_after``: after that
    many pieces, ``failure`` happens: ``event`` (an error event), ``drop`` (the connection closes mid-reply) or
    ``truncate`` (the stream ends without its last event). ``delay``: seconds before each piece. ``stop_word``: the
    client's stop string the reply ended on (llama.cpp's ``stopping_word``, vLLM's ``stop_reason``; the engine
    leaves it out of the text).
    """

    pieces: list[str] = field(default_factory=list)
    finish: str = "stop"
    status: int = 200
    error: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    fail_after: int | None = None
    failure: str = "event"
    delay: float = 0.0
    prompt_tokens: int = 11
    stop_word: str = ""


class _Drop(Exception):
    """Raised inside a streamed body: uvicorn then closes the connection without ending the response."""


class UpstreamDouble:
    """The upstream engine's stand-in (see the module docstring)."""

    def __init__(self, *, adds_bos: bool = True, models: Sequence[str] = ("double-model",)) -> None:
        self.scripts: dict[str, Script] = {}
        self.default = Script(["Hello", "!"])
        self.adds_bos = adds_bos
        self.models = list(models)
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (path, body)
        self.cancelled: list[str] = []  # keys of replies abandoned before their end
        self.finished: list[str] = []  # keys of replies sent whole
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/completion", self._llama, methods=["POST"]),
                Route("/tokenize", self._tokenize, methods=["POST"]),
                Route("/v1/completions", self._openai, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
            ]
        )

    # --- scripting and records -----------------------------------------------------------------------------------

    def script(self, key: str, script: Script) -> None:
        with self._lock:
            self.scripts[key] = script

    def _pick(self, prompt: str) -> tuple[str, Script]:
        with self._lock:
            found = [key for key in self.scripts if key in prompt]
            if not found:
                return "", self.default
            key = max(found, key=len)
            return key, self.scripts[key]

    def bodies(self, key: str, path: str | None = None) -> list[dict[str, Any]]:
        """The request bodies whose prompt held ``key`` (on ``path`` when given)."""
        with self._lock:
            return [b for p, b in self.requests if key in str(b.get("prompt", "")) and (path is None or p == path)]

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def _mark(self, record: list[str], key: str) -> None:
        with self._lock:
            record.append(key)

    # --- llama.cpp -----------------------------------------------------------------------------------------------

    async def _llama(self, request: Request) -> Response:
        body = await request.json()
        self._record("/completion", body)
        key, script = self._pick(str(body.get("prompt", "")))
        if script.status != 200:
            error = {"code": script.status, "message": script.error, "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=script.status, headers=script.headers)
        prompt_tokens = script.prompt_tokens

        def event(text: str, n: int, last: bool) -> dict[str, Any]:
            data: dict[str, Any] = {
                "index": 0,
                "content": text,
                "tokens": [],
                "stop": last,
                "id_slot": 0,
                "tokens_predicted": n,
                "tokens_evaluated": prompt_tokens,
            }
            if last:
                data.update(
                    {
                        "model": "double",
                        "stop_type": "limit" if script.finish == "length" else "word" if script.stop_word else "eos",
                        "stopping_word": script.stop_word,
                        "truncated": False,
                        "timings": {},
                    }
                )
            return data

        if not body.get("stream"):
            text = await self._whole(request, key, script)
            if text is None:
                return Response(status_code=499)
            return JSONResponse(event(text, len(script.pieces), True))

        async def events() -> AsyncIterator[bytes]:
            sent = 0
            async for piece in self._replay(key, script):
                sent += 1
                yield _sse(event(piece, sent, False))
            if script.fail_after is not None and script.failure == "event":
                error = {"code": 500, "message": script.error, "type": "server_error"}
                yield _sse({"error": error})
                return
            if script.fail_after is not None and script.failure == "truncate":
                return
            yield _sse(event("", sent, True))
            self._mark(self.finished, key)

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _tokenize(self, request: Request) -> Response:
        body = await request.json()
        self._record("/tokenize", body)
        content = str(body.get("content", ""))
        ids = list(range(2, 2 + len(content.split())))
        return JSONResponse({"tokens": ([1] if self.adds_bos and body.get("add_special") else []) + ids})

    # --- OpenAI-style --------------------------------------------------------------------------------------------

    async def _openai(self, request: Request) -> Response:
        body = await request.json()
        self._record("/v1/completions", body)
        key, script = self._pick(str(body.get("prompt", "")))
        if script.status != 200:
            error = {"message": script.error, "type": "BadRequestError", "param": None, "code": script.status}
            return JSONResponse({"error": error}, status_code=script.status, headers=script.headers)
        model = body.get("model", "")
        finish = "length" if script.finish == "length" else "stop"
        usage = {
            "prompt_tokens": script.prompt_tokens,
            "completion_tokens": len(script.pieces),
            "total_tokens": script.prompt_tokens + len(script.pieces),
        }

        def chunk(text: str, finish_reason: str | None) -> dict[str, Any]:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
            if finish_reason is not None:
                choice["stop_reason"] = script.stop_word or None  # vLLM's
            return {
                "id": "cmpl-double",
                "object": "text_completion",
                "created": int(time.time()),
                "model": model,
                "choices": [choice],
            }

        if not body.get("stream"):
            text = await self._whole(request, key, script)
            if text is None:
                return Response(status_code=499)
            return JSONResponse({**chunk(text, finish), "usage": usage})

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            async for piece in self._replay(key, script):
                yield _sse(chunk(piece, None))
            if script.fail_after is not None and script.failure == "event":
                yield _sse({"error": {"message": script.error, "type": "InternalServerError", "code": 500}})
                return
            if script.fail_after is not None and script.failure == "truncate":
                return
            yield _sse(chunk("", finish))
            if include_usage:
                yield _sse({**chunk("", None), "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"
            self._mark(self.finished, key)

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _models(self, request: Request) -> Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "double"} for m in self.models]
        return JSONResponse({"object": "list", "data": data})

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    # --- replay --------------------------------------------------------------------------------------------------

    async def _replay(self, key: str, script: Script) -> AsyncIterator[str]:
        """The script's pieces, paced; a client that goes away cancels this (recorded in :attr:`cancelled`)."""
        try:
            for i, piece in enumerate(script.pieces):
                if script.fail_after is not None and i >= script.fail_after:
                    if script.failure == "drop":
                        raise _Drop("dropped as scripted")
                    return
                if script.delay:
                    await asyncio.sleep(script.delay)
                yield piece
        except (asyncio.CancelledError, GeneratorExit):
            self._mark(self.cancelled, key)
            raise

    async def _whole(self, request: Request, key: str, script: Script) -> str | None:
        """The whole text, after the script's pacing; None when the client went away meanwhile (recorded)."""
        for _ in script.pieces:
            if script.delay:
                deadline = time.monotonic() + script.delay
                while time.monotonic() < deadline:
                    if await request.is_disconnected():
                        self._mark(self.cancelled, key)
                        return None
                    await asyncio.sleep(min(0.01, script.delay))
        self._mark(self.finished, key)
        return "".join(script.pieces)


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


class LoopbackServer:
    """An ASGI app served by uvicorn on a free loopback port, in a thread of its own."""

    def __init__(self, app: Any, **options: Any) -> None:
        """``options``: more of uvicorn's ``Config`` (``http``, say)."""
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without it every
        # keep-alive exchange waits out the peer's delayed ACK (40 ms)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="critical", lifespan="on", timeout_graceful_shutdown=2, **options)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()
