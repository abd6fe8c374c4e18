"""Replies, whatever the protocol: a completion endpoint reads its body into a chat request (each protocol its own
way), prepares it in a worker thread, asks the upstream, and has the request's encoder (:mod:`.encoding`) write the
reply's events (:mod:`.events`), streamed or whole.

A client that disconnects cancels the upstream request (its connection is closed), streamed or not: each reply
watches the ASGI ``receive`` channel while it waits on the upstream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from ..cache import Deferred, quick
from ..params import ChatParams
from .chunks import Usage
from .config import Server, ServerInfo
from .encoding import Encoder
from .events import ReplyEvents
from .http.access import body_sender
from .http.body import parse_json, read_body
from .ops.metrics import observation
from .protocol import APIError, ChatRequest, apply_request, build_grammar
from .upstream import PieceStream, UpstreamError

__all__ = [
    "LARGE_REQUEST",
    "QUICK_REQUEST",
    "SMALL_REPLY",
    "ReadRequest",
    "Wire",
    "answer",
    "error_response",
    "prepare",
]

_log = logging.getLogger("autoparser.serve")
T = TypeVar("T")
LARGE_REQUEST = 64 * 1024  # bytes of a request body (or characters of a whole reply) prepared in the large lane
SMALL_REPLY = 4096  # characters of a whole reply parsed on the event loop (its scanners are built by _prepare)
QUICK_REQUEST = 16 * 1024  # bytes of a request body first prepared on the event loop, in quick mode (prepare)
QUICK_SECONDS = 0.005  # how long its rendering may hold the event loop there (Python's switch interval)


def error_response(err: APIError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status)


@dataclass(frozen=True)
class Wire:
    """How one request's reply is written: its protocol's encoder, and the error reply for an upstream that refused
    before the reply began."""

    encoder: Encoder
    refused: Callable[[UpstreamError], Response]


class _Disconnected(Exception):
    """The client went away while the reply was being made."""


async def _until_disconnect(receive: Receive, work: Callable[[], Awaitable[T]]) -> T:
    """``await work()``, cancelled (raising :class:`_Disconnected`) when the client disconnects meanwhile; what
    ``work`` raises is raised as it is.

    ``work`` runs in a task of its own, whose stack is a few frames deep instead of under every layer of ASGI
    middleware and routing (a streamed reply's task is resumed once per token, and each resumption passes through
    every frame of its stack). Two plain tasks rather than an anyio task group: the group's exit waits for its
    watcher to be cancelled, loop turns on every request's critical path (0.3 ms of a whole request's 1.3 ms
    upstream wait, measured); the watcher is cancelled here and ends on its own. A cancelled ``work`` is awaited to
    its end, so that what it cleans up (the upstream connection) is done when this returns or raises."""
    loop = asyncio.get_running_loop()
    job: asyncio.Future[T] = asyncio.ensure_future(work())
    watcher = loop.create_task(_disconnect(receive))
    try:
        await asyncio.wait((job, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not job.done():
            job.cancel()
            await asyncio.wait((job,))
    if job.cancelled():
        raise _Disconnected
    return job.result()


async def _disconnect(receive: Receive) -> None:
    """Until the client disconnects (or its connection cannot be read: the same for the reply)."""
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:  # (nobody would retrieve it: the reply is what is cancelled)
        _log.debug("reading the client's connection failed", exc_info=True)


class _Reply(Response):
    """A reply to one request, counted in ``Server.replying`` while it runs (full garbage collections wait for
    none)."""

    def __init__(self, server: Server, params: ChatParams, request: ChatRequest, wire: Wire) -> None:
        self.server, self.params, self.request, self.wire = server, params, request, wire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.server.replying += 1
        try:
            await self._answer(scope, receive, send)
        finally:
            self.server.replying -= 1

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class _CompleteReply(_Reply):
    """A non-streamed reply: the upstream's whole text, parsed at once, written by the request's encoder."""

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        upstream = self.server.upstream
        try:
            piece = await _until_disconnect(receive, lambda: upstream.complete(self.params, self.request))
        except _Disconnected:
            return
        except UpstreamError as err:
            _log.warning("%s", err.message)
            await self.wire.refused(err)(scope, receive, send)
            return
        if len(piece.text) <= SMALL_REPLY:  # a fraction of a millisecond: cheaper here than a thread's round trip
            message = self.params.parse(piece.text)
        else:
            limiter = self.server.cpu_large if len(piece.text) > LARGE_REQUEST else self.server.cpu
            message = await anyio.to_thread.run_sync(self.params.parse, piece.text, limiter=limiter)
        observation(scope).reply(piece.usage, message.warnings, self.params.warnings)
        body = self.wire.encoder.whole(message, piece.finish, piece.usage, piece.stop_word)
        await JSONResponse(body)(scope, receive, send)


class _StreamedReply(_Reply):
    """A streamed reply: the request's encoder writes the reply's events (:mod:`.events`) as server-sent events."""

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        upstream = self.server.upstream
        try:
            pieces = await _until_disconnect(receive, lambda: upstream.stream(self.params, self.request))
        except _Disconnected:
            return
        except UpstreamError as err:  # refused before the reply began: an HTTP error, as the protocols answer
            _log.warning("%s", err.message)
            await self.wire.refused(err)(scope, receive, send)
            return
        self.seen = observation(scope)
        try:
            await _until_disconnect(receive, lambda: self._relay(pieces, send, scope))
        except _Disconnected:
            _log.info("client disconnected: upstream request cancelled")
        finally:
            with anyio.CancelScope(shield=True):
                await pieces.aclose()

    async def _relay(self, pieces: PieceStream, send: Send, scope: Scope) -> None:
        encoder = self.wire.encoder
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        write = body_sender(scope, send)  # the response has started

        async def send_bytes(body: bytes) -> None:
            if body:
                await write({"type": "http.response.body", "body": body, "more_body": True})

        await send_bytes(encoder.start())
        parser = self.params.stream()
        events = ReplyEvents()
        finish: str | None = None
        usage: Usage | None = None
        stop_word: str | None = None
        failure: UpstreamError | None = None
        try:
            # What one read of the upstream brought is parsed and sent at once: one write per read (the direct
            # reader's reads take all the connection holds: a burst is one read)
            async for batch in pieces.batches():
                text = batch[0].text if len(batch) == 1 else "".join([piece.text for piece in batch])
                if text:
                    body = encoder.events(events.feed(parser.feed(text)))
                    if body:
                        await write({"type": "http.response.body", "body": body, "more_body": True})
                for piece in batch:
                    finish = piece.finish or finish
                    usage = piece.usage or usage
                    stop_word = piece.stop_word or stop_word
        except UpstreamError as err:
            failure = err
        # nothing held back is lost
        last = events.end(None if failure else finish, usage, parser.finish(), None if failure else stop_word)
        message = parser.message
        self.seen.reply(usage, message.warnings, self.params.warnings)
        if failure is not None:
            _log.warning("%s", failure.message)
            self.seen.error("upstream_error")
        await send_bytes(encoder.end(last, failure))
        await write({"type": "http.response.body", "body": b"", "more_body": False})


# What reads a request body (parsed JSON, within the limits) into a ChatRequest: the chat endpoint's
# parse_chat_request, or another protocol's translation (raising APIError naming its own fields)
ReadRequest = Callable[[Any, "ServerInfo"], ChatRequest]


def _prepare(server: Server, raw: bytes, read: ReadRequest) -> tuple[ChatRequest, ChatParams]:
    """The request's body read into the prompt and the parser: all of the request's CPU work (JSON, validation,
    rendering, the parser and the grammar), run in a worker thread so that no request stalls another's stream, or
    in quick mode on the event loop (:func:`prepare`)."""
    body = parse_json(raw, server.limits)
    chat = read(body, server.info)
    params = apply_request(server.template, chat)
    build_grammar(params, chat, server.grammar_fields)  # here, where a schema it cannot take is still a 400
    # What reading the reply needs and makes on first use, made here rather than on the event loop (the scan for
    # markup left in content compiles one pattern of every tool name: 40 ms for a thousand tools; cached)
    params.parse("")
    return chat, params


async def prepare(request: Request, read: ReadRequest) -> tuple[ChatRequest, ChatParams]:
    """The request's body read within the limits, then (``read``: into a ChatRequest) validated and rendered, with
    the parser and the grammar. Raises :class:`APIError`.

    A small body is first prepared right here, in quick mode (:func:`~autoparser.cache.quick`): where its parser,
    grammar and schemas are cached (every request of a shape seen before) that takes well under a millisecond,
    less than a worker thread's round trip (0.7–1 ms on a loaded machine); where anything is not cached, or the
    rendering runs past :data:`QUICK_SECONDS`, it is dropped and done in a worker thread, which no stream waits
    for. A first request of a new shape costs its reading and rendering twice (a small body's: a millisecond)."""
    server: Server = request.app.state.autoparser
    raw = await read_body(request, server.limits)
    server.replying += 1
    try:
        if len(raw) <= QUICK_REQUEST:
            try:
                with quick(QUICK_SECONDS):
                    return _prepare(server, raw, read)
            except Deferred:
                pass
        limiter = server.cpu_large if len(raw) > LARGE_REQUEST else server.cpu
        return await anyio.to_thread.run_sync(_prepare, server, raw, read, limiter=limiter)
    finally:
        server.replying -= 1


async def answer(
    request: Request,
    read: ReadRequest,
    wire: Callable[[ChatRequest, ChatParams], Wire],
    error: Callable[[APIError], Response] | None = None,
) -> Response:
    """A completion endpoint of any protocol: the body read (``read``: into a ChatRequest, in a worker thread, with
    the rendering, the parser and the grammar: :func:`prepare`), the upstream asked, the reply written by
    ``wire``'s encoder, streamed or not (``ChatRequest.stream``). A request error is answered by ``error`` (OpenAI's
    shape by default)."""
    server: Server = request.app.state.autoparser
    try:
        chat, params = await prepare(request, read)
    except APIError as err:
        return (error or error_response)(err)
    reply = wire(chat, params)
    if chat.stream:
        return _StreamedReply(server, params, chat, reply)
    return _CompleteReply(server, params, chat, reply)
