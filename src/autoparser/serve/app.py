"""The ASGI app: ``POST /v1/chat/completions`` (streamed and not), ``POST /v1/responses`` (:mod:`.responses`),
Anthropic's ``POST /v1/messages`` and ``/v1/messages/count_tokens`` (:mod:`.anthropic`), ``GET /v1/models``,
``GET /health`` (and ``/health/live``, :mod:`.health`), ``GET /metrics`` (:mod:`.metrics`), behind :mod:`.access`
(request ids, timing, the access log, replies scrubbed of secrets) and :mod:`.security` (Host, API key, media type;
CORS where asked).

A request is validated (:mod:`.protocol`), rendered with ``ChatTemplate.apply``, sent to the upstream
(:mod:`.upstream`) and its reply read back with the request's own parser: ``params.parse()`` for a whole reply,
``params.stream()`` fed each upstream piece as it arrives, one ``chat.completion.chunk`` per piece that adds
something (``merge_deltas``). Nothing is shared between requests but the template (read-only once analysed) and the
httpx client (a connection pool made for concurrent use).

A client that disconnects cancels the upstream request (its connection is closed), streamed or not: each reply
watches the ASGI ``receive`` channel while it waits on the upstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..api import ChatTemplate
from ..cache import DEFAULT_CACHE_MB, set_cache_budget
from ..params import ChatParams
from ..template.environment import variables_read
from . import collector
from .access import REQUEST_ID_HEADER, Access, request_id_of
from .anthropic.errors import error_response as anthropic_error
from .anthropic.errors import is_messages_path
from .body import RequestLimits, parse_json, read_body
from .chat_encoder import ChatEncoder
from .chunks import Usage
from .encoding import Encoder
from .events import ReplyEvents
from .failures import upstream_error_response
from .health import HealthProbe, health, live
from .metrics import Metrics, metrics_endpoint, observation
from .protocol import APIError, ChatRequest, apply_request, build_grammar, parse_chat_request
from .responses import ResponsesEncoder, Translation, read_responses_request
from .security import Guard, Scrubber, is_loopback, scrub_logs, split_credentials
from .upstream import PieceStream, Upstream, UpstreamError, grammar_fields, make_upstream

__all__ = ["ReadRequest", "ServeConfig", "ServerInfo", "Wire", "answer", "create_app", "prepare"]

_log = logging.getLogger("autoparser.serve")
T = TypeVar("T")
LARGE_REQUEST = 64 * 1024  # bytes of a request body (or characters of a whole reply) prepared in the large lane
SMALL_REPLY = 4096  # characters of a whole reply parsed on the event loop (its scanners are built by _prepare)


@dataclass(frozen=True)
class ServeConfig:
    """How the server reaches its upstream (the command line's options; see docs/serving.md)."""

    upstream: str
    upstream_kind: str = "llama.cpp"
    grammar_field: str = "none"
    model_name: str | None = None
    upstream_model: str | None = None
    upstream_api_key: str | None = None
    default_max_tokens: int | None = None
    bos: str = "auto"
    upstream_extra: dict[str, Any] = field(default_factory=dict)
    upstream_timeout: float | None = 600.0  # seconds without a byte from the upstream; None: no limit
    reasoning_field: str = "reasoning_content"  # the reply's reasoning field: chunks.REASONING_FIELDS
    api_key: str | None = None  # clients must send "Authorization: Bearer <api_key>" (health and metrics stay open)
    allowed_origins: tuple[str, ...] = ()  # CORS: the browser origins allowed ("*": any); none: CORS off
    host: str = "127.0.0.1"  # where the server listens: on loopback, only loopback Host headers are answered
    allowed_hosts: tuple[str, ...] = ()  # further Host names answered on loopback (a proxy that keeps its Host)
    # What one request may be (body.RequestLimits): 413 past the size, 400 past the tools or the depth, 408 when
    # the body stops arriving
    max_body_bytes: int = RequestLimits.max_body_bytes
    max_tools: int = RequestLimits.max_tools
    max_json_depth: int = RequestLimits.max_json_depth
    body_timeout: float | None = RequestLimits.body_timeout
    cache_mb: float = DEFAULT_CACHE_MB  # the parser and grammar caches' memory budget (the process's: autoparser.cache)
    # Streamed replies read straight off their connection (.direct) rather than through the httpx client: None,
    # wherever the upstream's URL allows it (http or https, no proxy); False: always through the client
    direct_streams: bool | None = None
    # The key of the Messages API's thinking signatures (anthropic.signatures); None: drawn at random when the app
    # is made (shared by --workers, not by restarts or other servers)
    signature_key: str | None = None


class _Server:
    """What every request reads (never writes): the template, the upstream, the model's name."""

    def __init__(self, template: ChatTemplate, config: ServeConfig, client: httpx2.AsyncClient) -> None:
        templates = list(template.templates.values())
        self.template = template
        self.model = config.model_name or template.name.removesuffix(".jinja")
        self.template_vars = frozenset().union(*(variables_read(t.source) for t in templates))
        end_of_turn: list[str] = []
        next_turn: list[str] = []
        for one in templates:  # analysed here, once, rather than by the first request
            end_of_turn += [m.strip() for m in one.analysis.end_of_turn if m.strip() and m.strip() not in end_of_turn]
            # What would open the next turn (a model that skips its end marker); not "</s>" guessed for an unknown
            # EOS (it is also HTML)
            next_turn += [m.strip() for m in one.analysis.stop_markers if m.strip() not in ("", "</s>", *next_turn)]
        self.client = client
        # The URL's user and password become a header: no message, /health or log line can show them
        credentials = split_credentials(config.upstream, config.upstream_api_key)
        self.scrubber = Scrubber(credentials.secrets)
        scrub_logs(credentials.secrets)
        self.upstream: Upstream = make_upstream(
            config.upstream_kind,
            credentials.url,
            client,
            grammar_field=config.grammar_field,
            model=config.upstream_model,
            bos_token=template.bos_token,
            end_of_turn=tuple(end_of_turn),
            next_turn=tuple(m for m in next_turn if m not in end_of_turn),
            bos=config.bos,
            default_max_tokens=config.default_max_tokens,
            extra=config.upstream_extra,
            api_key=config.upstream_api_key,
            direct=config.direct_streams,
        )
        self.upstream.headers.update(credentials.headers)
        self.created = int(time.time())
        self.reasoning_field = config.reasoning_field
        # The worker threads that prepare requests and parse whole replies: the event loop only moves bytes, so a
        # 1,000-tool request does not hold up other streams. Large requests (bodies past LARGE_REQUEST bytes) get
        # one thread: Python runs one thread at a time, so more would add no throughput, only threads the event
        # loop must wait behind for the interpreter; the others get four of their own, so that a small request
        # never queues behind a large one
        self.cpu = anyio.CapacityLimiter(4)
        self.cpu_large = anyio.CapacityLimiter(1)
        self.replying = 0  # requests being prepared or answered now (full garbage collections wait for none)
        self.limits = RequestLimits(config.max_body_bytes, config.max_tools, config.max_json_depth, config.body_timeout)
        self.info = ServerInfo(self.model, self.template_vars, self.limits.max_tools)
        self.grammar_fields = grammar_fields(self.upstream)


def _error(err: APIError) -> JSONResponse:
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
    ``work`` raises is raised as it is."""
    outcome: list[T] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            outcome.append(await work())
        except Exception as err:  # raised below, outside the task group (which would wrap it in a group)
            failure.append(err)
        finally:
            group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    if not outcome:
        raise _Disconnected
    return outcome[0]


class _CompleteReply(Response):
    """A non-streamed reply: the upstream's whole text, parsed at once, written by the request's encoder."""

    def __init__(self, server: _Server, params: ChatParams, request: ChatRequest, wire: Wire) -> None:
        self.server, self.params, self.request, self.wire = server, params, request, wire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.server.replying += 1
        try:
            await self._answer(scope, receive, send)
        finally:
            self.server.replying -= 1

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


class _StreamedReply(Response):
    """A streamed reply: the request's encoder writes the reply's events (:mod:`.events`) as server-sent events."""

    def __init__(self, server: _Server, params: ChatParams, request: ChatRequest, wire: Wire) -> None:
        self.server, self.params, self.request, self.wire = server, params, request, wire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.server.replying += 1
        try:
            await self._answer(scope, receive, send)
        finally:
            self.server.replying -= 1

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
            await _until_disconnect(receive, lambda: self._relay(pieces, send))
        except _Disconnected:
            _log.info("client disconnected: upstream request cancelled")
        finally:
            with anyio.CancelScope(shield=True):
                await pieces.aclose()

    async def _relay(self, pieces: PieceStream, send: Send) -> None:
        encoder = self.wire.encoder

        async def send_bytes(body: bytes) -> None:
            if body:
                await send({"type": "http.response.body", "body": body, "more_body": True})

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
                text = "".join(piece.text for piece in batch)
                if text:
                    await send_bytes(encoder.events(events.feed(parser.feed(text))))
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
        await send({"type": "http.response.body", "body": b"", "more_body": False})


# What reads a request body (parsed JSON, within the limits) into a ChatRequest: the chat endpoint's
# parse_chat_request, or another protocol's translation (raising APIError naming its own fields)
ReadRequest = Callable[[Any, "ServerInfo"], ChatRequest]


@dataclass(frozen=True)
class ServerInfo:
    """What a protocol's request reader may need to know of the server."""

    model: str
    template_vars: frozenset[str]
    max_tools: int


def _prepare(server: _Server, raw: bytes, read: ReadRequest) -> tuple[ChatRequest, ChatParams]:
    """The request's body read into the prompt and the parser: all of the request's CPU work (JSON, validation,
    rendering, the parser and the grammar), run in a worker thread so that no request stalls another's stream."""
    body = parse_json(raw, server.limits)
    chat = read(body, server.info)
    params = apply_request(server.template, chat)
    build_grammar(params, chat, server.grammar_fields)  # here, where a schema it cannot take is still a 400
    # What reading the reply needs and makes on first use, made here rather than on the event loop (the scan for
    # markup left in content compiles one pattern of every tool name: 40 ms for a thousand tools; cached)
    params.parse("")
    return chat, params


def _read_chat(body: Any, info: ServerInfo) -> ChatRequest:
    return parse_chat_request(body, info.template_vars, max_tools=info.max_tools, model=info.model)


async def prepare(request: Request, read: ReadRequest) -> tuple[ChatRequest, ChatParams]:
    """The request's body read within the limits, then (``read``: into a ChatRequest) validated and rendered, with
    the parser and the grammar, in a worker thread. Raises :class:`APIError`."""
    server: _Server = request.app.state.autoparser
    raw = await read_body(request, server.limits)
    server.replying += 1
    try:
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
    server: _Server = request.app.state.autoparser
    try:
        chat, params = await prepare(request, read)
    except APIError as err:
        return (error or _error)(err)
    reply = wire(chat, params)
    if chat.stream:
        return _StreamedReply(server, params, chat, reply)
    return _CompleteReply(server, params, chat, reply)


async def chat_completions(request: Request) -> Response:
    server: _Server = request.app.state.autoparser

    def wire(chat: ChatRequest, params: ChatParams) -> Wire:
        encoder = ChatEncoder(server.model, server.reasoning_field, chat.include_usage, params.warnings)
        return Wire(encoder, upstream_error_response)

    return await answer(request, _read_chat, wire)


async def responses(request: Request) -> Response:
    """OpenAI's Responses API (:mod:`.responses`): the body translated into the equivalent chat request, its reply
    written as a ``response``. What is refused after the translation (the rendering, the template, the grammar
    check the chat request) is renamed to the Responses fields with what the translation recorded."""
    server: _Server = request.app.state.autoparser
    read: list[Translation] = []  # what this request's body was read into (in the worker thread)

    def translate(body: Any, info: ServerInfo) -> ChatRequest:
        made = read_responses_request(body, info.template_vars, max_tools=info.max_tools, model=info.model)
        read.append(made)
        return made.chat

    def wire(chat: ChatRequest, params: ChatParams) -> Wire:
        encoder = ResponsesEncoder(server.model, read[0].echo, (*read[0].notes, *params.warnings))
        return Wire(encoder, upstream_error_response)

    def error(err: APIError) -> Response:
        return _error(read[0].names.error(err) if read else err)

    return await answer(request, translate, wire, error)


async def models(request: Request) -> Response:
    server: _Server = request.app.state.autoparser
    model = {"id": server.model, "object": "model", "created": server.created, "owned_by": "autoparser"}
    return JSONResponse({"object": "list", "data": [model]})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _error_of(request, APIError(exc.status_code, message, code=None, type=kind))


def _error_of(request: Request, err: APIError) -> Response:
    """``err`` in the shape of the path's protocol: Anthropic's on the Messages API, else OpenAI's."""
    return anthropic_error(err) if is_messages_path(request.url.path) else _error(err)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """A client that left (or was cut off by a read timeout) before sending its whole body: nobody to answer, and
    nothing wrong with the server."""
    _log.info("client disconnected before sending its whole request")
    return Response(status_code=400)


async def _server_error(request: Request, exc: Exception) -> Response:
    """A 500 says only "internal error" and the request id; the traceback goes to the log alone."""
    rid = request_id_of(request.scope)
    _log.error("internal error on %s (request %s)", request.url.path, rid, exc_info=exc)
    reply = _error_of(request, APIError(500, f"internal error (request id {rid})", type="server_error"))
    reply.headers[REQUEST_ID_HEADER] = rid
    return reply


def create_app(template: ChatTemplate, config: ServeConfig, *, client: httpx2.AsyncClient | None = None) -> Starlette:
    """The server's ASGI app for ``template`` in front of ``config.upstream``. ``client``: the httpx client for
    the upstream (one is made, and closed at shutdown, when not given)."""
    set_cache_budget(config.cache_mb)
    own_client = client is None
    if client is None:
        timeout = httpx2.Timeout(connect=30.0, read=config.upstream_timeout, write=60.0, pool=None)
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=64)
        client = httpx2.AsyncClient(timeout=timeout, limits=limits)
    server = _Server(template, config, client)
    metrics = Metrics()
    # Outermost first: every reply gets its request id and is counted, refused ones too; CORS answers a browser's
    # preflight before the key is asked for
    middleware = [Middleware(Access, metrics=metrics, scrubber=server.scrubber)]
    if config.allowed_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.allowed_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "X-Api-Key", "Anthropic-Version", "Content-Type", "X-Request-Id"],
                expose_headers=["X-Request-Id"],
                max_age=600,
            )
        )
    middleware.append(
        Middleware(
            Guard, api_key=config.api_key, check_host=is_loopback(config.host), allowed_hosts=config.allowed_hosts
        )
    )

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        async with anyio.create_task_group() as tasks:
            if collector.installed():  # serve() took full collections off Python's hands: run them between replies
                tasks.start_soon(collector.FullCollections(lambda: server.replying > 0).run)
            yield
            tasks.cancel_scope.cancel()
        if own_client:
            await server.client.aclose()

    from .anthropic.routes import anthropic_routes  # here: it reads this module's answer()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            *anthropic_routes(config),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/health/live", live, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, ClientDisconnect: _client_gone, Exception: _server_error},
        lifespan=lifespan,
    )
    app.state.autoparser = server
    app.state.metrics = metrics
    app.state.health = HealthProbe(server.upstream)
    return app
