"""The ASGI app: the routes — ``POST /v1/chat/completions``, ``POST /v1/responses`` (:mod:`.responses`), Anthropic's
``POST /v1/messages`` and ``/v1/messages/count_tokens`` (:mod:`.anthropic`), ``GET /v1/models``, ``GET /health`` and
``/health/live`` (:mod:`.ops.health`), ``GET /metrics`` (:mod:`.ops.metrics`) — behind :mod:`.http.access` (request
ids, timing, the access log, replies scrubbed of secrets) and :mod:`.http.security` (Host, API key, media type;
CORS where asked), with the error replies in each path's protocol.

Every completion endpoint is :func:`.replies.answer` with its protocol's request reader and encoder; what every
request reads of the server is :class:`.config.Server`. Nothing is shared between requests but the template
(read-only once analysed) and the httpx client (a connection pool made for concurrent use).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..api import ChatTemplate
from ..cache import set_cache_budget
from ..params import ChatParams
from .anthropic.errors import error_response as anthropic_error
from .anthropic.errors import is_messages_path
from .anthropic.routes import anthropic_routes
from .chat_encoder import ChatEncoder
from .config import ServeConfig, Server, ServerInfo
from .failures import upstream_error_response
from .http.access import REQUEST_ID_HEADER, Access, request_id_of
from .http.security import Guard, is_loopback
from .ops import collector
from .ops.health import HealthProbe, health, live
from .ops.metrics import Metrics, metrics_endpoint
from .protocol import APIError, ChatRequest, parse_chat_request
from .replies import Wire, answer, error_response
from .responses import ResponsesEncoder, Translation, read_responses_request

__all__ = ["ServeConfig", "create_app"]

_log = logging.getLogger("autoparser.serve")


def _read_chat(body: Any, info: ServerInfo) -> ChatRequest:
    return parse_chat_request(body, info.template_vars, max_tools=info.max_tools, model=info.model)


async def chat_completions(request: Request) -> Response:
    server: Server = request.app.state.autoparser

    def wire(chat: ChatRequest, params: ChatParams) -> Wire:
        encoder = ChatEncoder(server.model, server.reasoning_field, chat.include_usage, params.warnings)
        return Wire(encoder, upstream_error_response)

    return await answer(request, _read_chat, wire)


async def responses(request: Request) -> Response:
    """OpenAI's Responses API (:mod:`.responses`): the body translated into the equivalent chat request, its reply
    written as a ``response``. What is refused after the translation (the rendering, the template, the grammar
    check the chat request) is renamed to the Responses fields with what the translation recorded."""
    server: Server = request.app.state.autoparser
    read: list[Translation] = []  # what this request's body was read into (in the worker thread)

    def translate(body: Any, info: ServerInfo) -> ChatRequest:
        made = read_responses_request(body, info.template_vars, max_tools=info.max_tools, model=info.model)
        read.append(made)
        return made.chat

    def wire(chat: ChatRequest, params: ChatParams) -> Wire:
        encoder = ResponsesEncoder(server.model, read[0].echo, (*read[0].notes, *params.warnings))
        return Wire(encoder, upstream_error_response)

    def error(err: APIError) -> Response:
        return error_response(read[0].names.error(err) if read else err)

    return await answer(request, translate, wire, error)


async def models(request: Request) -> Response:
    server: Server = request.app.state.autoparser
    model = {"id": server.model, "object": "model", "created": server.created, "owned_by": "autoparser"}
    return JSONResponse({"object": "list", "data": [model]})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _error_of(request, APIError(exc.status_code, message, code=None, type=kind))


def _error_of(request: Request, err: APIError) -> Response:
    """``err`` in the shape of the path's protocol: Anthropic's on the Messages API, else OpenAI's."""
    return anthropic_error(err) if is_messages_path(request.url.path) else error_response(err)


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
    server = Server(template, config, client)
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
        server.upstream.pool.close()
        if own_client:
            await server.client.aclose()

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
