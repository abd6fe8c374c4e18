"""``POST /v1/responses``: the server's protocol-neutral completion endpoint (``app.answer``) with the Responses
API's reader (:mod:`.request`) and encoder (:mod:`.encoder`).

Errors keep OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``, which the Responses API shares),
naming the Responses field: the rendering, the template and the grammar check the translated chat request after the
body was read, and their errors are renamed here with what the translation recorded.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...params import ChatParams
from ..app import ServerInfo, Wire, answer
from ..failures import upstream_error_response
from ..protocol import APIError, ChatRequest
from .encoder import ResponsesEncoder
from .request import Translation, read_responses_request

__all__ = ["create_response"]


async def create_response(request: Request) -> Response:
    server: Any = request.app.state.autoparser
    read: list[Translation] = []  # what this request's body was read into (in the worker thread)

    def translate(body: Any, info: ServerInfo) -> ChatRequest:
        made = read_responses_request(body, info.template_vars, max_tools=info.max_tools, model=info.model)
        read.append(made)
        return made.chat

    def wire(chat: ChatRequest, params: ChatParams) -> Wire:
        notes = (*read[0].notes, *params.warnings)
        return Wire(ResponsesEncoder(server.model, read[0].echo, notes), upstream_error_response)

    def error(err: APIError) -> Response:
        if read:  # refused after the translation (rendering, template, grammar): named in the chat's terms
            err = read[0].names.error(err)
        return JSONResponse(err.body(), status_code=err.status)

    return await answer(request, translate, wire, error)
