"""The Messages API's two routes: ``POST /v1/messages`` answered by the server's protocol-neutral completion
endpoint (``app.answer``) with the Messages reader and encoder, and ``POST /v1/messages/count_tokens``, the same
request rendered and its prompt counted by the upstream's tokenizer.

The routes are made once per app, with the app's signature key (:mod:`.signatures`): made before ``--workers``
fork, the key is every worker's.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...params import ChatParams
from ..config import ServeConfig, ServerInfo
from ..protocol import APIError, ChatRequest
from ..replies import Wire, answer, prepare
from ..upstream import UpstreamError
from .encoder import MessagesEncoder
from .errors import PATHS, error_response
from .failures import upstream_error_response
from .request import Translation, read_messages
from .signatures import Signer

__all__ = ["anthropic_routes"]


def anthropic_routes(config: ServeConfig) -> list[Route]:
    """The Messages API's routes for an app made with ``config``."""
    signer = Signer.of(config.signature_key)

    async def messages(request: Request) -> Response:
        server = request.app.state.autoparser
        seen = Translation()

        def read(body: Any, info: ServerInfo) -> ChatRequest:
            return read_messages(body, info, signer, seen)

        def wire(chat: ChatRequest, params: ChatParams) -> Wire:
            notes = (*params.warnings, *seen.notes)
            return Wire(MessagesEncoder(server.model, signer, chat.sampling.stop, notes), upstream_error_response)

        return await answer(request, read, wire, lambda err: error_response(seen.translated(err)))

    async def count_tokens(request: Request) -> Response:
        server = request.app.state.autoparser
        seen = Translation()

        def read(body: Any, info: ServerInfo) -> ChatRequest:
            return read_messages(body, info, signer, seen, counting=True)

        try:
            _, params = await prepare(request, read)
        except APIError as err:
            return error_response(seen.translated(err))
        try:
            count = await server.upstream.count_tokens(params)
        except UpstreamError as err:
            return upstream_error_response(err)
        if count is None:
            why = (
                f"count_tokens needs the upstream's tokenizer, and a {server.upstream.kind} upstream has none this "
                "server knows (llama.cpp's /tokenize)"
            )
            # 501 is a 5xx, which Anthropic's clients retry unless told not to
            return error_response(APIError(501, why), headers={"x-should-retry": "false"})
        return JSONResponse({"input_tokens": count})

    return [Route(PATHS[0], messages, methods=["POST"]), Route(PATHS[1], count_tokens, methods=["POST"])]
