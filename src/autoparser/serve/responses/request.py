"""A ``POST /v1/responses`` body translated into the chat request the server already knows how to answer.

The Responses body becomes an OpenAI chat-completions body (``input`` and ``instructions`` as messages:
:mod:`.inputs`; flat function tools wrapped as chat tools; ``text.format`` as ``response_format``;
``max_output_tokens`` as ``max_tokens``; ``reasoning.effort`` as ``reasoning_effort``), which the chat endpoint's own
validation reads (:func:`~..protocol.parse_chat_request`). The prompt is then exactly the chat endpoint's for the
equivalent request, and every check the two APIs share is made once; its errors are renamed to the Responses fields
(:class:`~.names.FieldNames`).

What the reply repeats of the request (tools, tool_choice, text, reasoning...) is kept as the response's ``echo``;
what the request had to drop (tools of other types than ``function``) as ``notes`` for ``autoparser_warnings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import APIError, ChatRequest, parse_chat_request
from .fields import choice, invalid, type_name, typed
from .inputs import read_input
from .names import FieldNames

__all__ = ["Translation", "read_responses_request"]

# Fields this stateless server cannot honour: a 400 rather than a reply that ignores them
_UNSUPPORTED = {
    "previous_response_id": "this server keeps no responses (it is stateless): send the whole conversation in `input`",
    "conversation": "this server keeps no conversations (it is stateless): send the whole conversation in `input`",
    "prompt": "stored prompts are not supported: send `instructions` and `input`",
    "max_tool_calls": "a limit on the number of tool calls is not supported",
}
# Fields both APIs have under one name: the chat validation checks them
_SHARED = (
    "model",
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "service_tier",
    "store",
    "top_logprobs",
)
# Sampling and template fields the Responses API does not have, taken as the chat endpoint takes them (vLLM's
# extensions, and what a client written for the chat endpoint sends along)
EXTENSIONS = (
    "seed",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "top_k",
    "min_p",
    "repetition_penalty",
    "chat_template_kwargs",
)
_SUMMARIES = ("auto", "concise", "detailed")
_VERBOSITY = ("low", "medium", "high")
_TRUNCATION = ("auto", "disabled")


@dataclass(frozen=True)
class Translation:
    """A Responses request as the server answers it: the chat request, what the reply repeats of the request,
    what the request had to drop, and the chat fields' Responses names."""

    chat: ChatRequest
    echo: dict[str, Any]
    notes: tuple[str, ...]
    names: FieldNames


def read_responses_request(
    body: object, template_vars: frozenset[str], *, max_tools: int | None = None, model: str | None = None
) -> Translation:
    """Validate and translate a ``/v1/responses`` body; :class:`APIError` (400, 404) naming the Responses field."""
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, got {type_name(body)}", code="invalid_type")
    for key, why in _UNSUPPORTED.items():
        if body.get(key) is not None:
            raise invalid(key, why, "unsupported_parameter")
    if typed(body, "background", bool, "a boolean"):
        raise invalid("background", "background responses are not supported (nothing is stored)", "unsupported_value")
    _include(body)
    typed(body, "stream_options", dict, "an object")
    choice(body, "truncation", _TRUNCATION)
    instructions = typed(body, "instructions", str, "a string")
    messages, origins = read_input(body.get("input"), instructions)
    tools, tool_names, echo_tools, notes = _tools(body, max_tools)
    names = FieldNames(origins, tool_names)
    text, response_format = _text(body)
    reasoning = typed(body, "reasoning", dict, "an object") or {}
    chat_body: dict[str, Any] = {key: body[key] for key in (*_SHARED, *EXTENSIONS) if key in body}
    chat_body["messages"] = messages
    if tools:
        chat_body["tools"] = tools
    if "tool_choice" in body:
        chat_body["tool_choice"] = _tool_choice(body["tool_choice"])
    if response_format is not None:
        chat_body["response_format"] = response_format
    if reasoning.get("effort") is not None:
        chat_body["reasoning_effort"] = reasoning["effort"]
    choice(reasoning, "summary", _SUMMARIES, "reasoning.summary")
    if body.get("max_output_tokens") is not None:
        chat_body["max_tokens"] = body["max_output_tokens"]
    if "stream" in body:
        chat_body["stream"] = body["stream"]
        if body["stream"] is True:  # the usage comes with the last event, whatever the upstream
            chat_body["stream_options"] = {"include_usage": True}
    try:
        chat = parse_chat_request(chat_body, template_vars, max_tools=None, model=model)
    except APIError as err:
        raise names.error(err) from None
    echo = {
        "instructions": instructions,
        "max_output_tokens": chat.sampling.max_tokens,
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "previous_response_id": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "store": False,  # nothing is kept, whatever the request's `store` says
        "temperature": chat.sampling.temperature,
        "text": text,
        "tool_choice": _echo_choice(body.get("tool_choice")),
        "tools": echo_tools,
        "top_p": chat.sampling.top_p,
        "truncation": body.get("truncation") or "disabled",
        "user": body.get("user"),
    }
    return Translation(chat, echo, tuple(notes), names)


def _include(body: Mapping[str, Any]) -> None:
    """``include``: extra output this server has nothing of (encrypted reasoning: the reasoning comes whole) is
    ignored; log probabilities are refused, as the chat endpoint refuses them."""
    include = typed(body, "include", list, "an array of strings") or []
    for i, value in enumerate(include):
        if not isinstance(value, str):
            raise invalid(f"include[{i}]", f"must be a string, got {type_name(value)}", "invalid_type")
        if value.endswith("logprobs"):
            raise invalid(f"include[{i}]", "log probabilities are not supported", "unsupported_value")


def _tools(body: Mapping[str, Any], max_tools: int | None) -> tuple[list[Any], list[int], list[Any], list[str]]:
    """The chat tools of the request's function tools, each one's index in ``tools``, the tools the response
    repeats, and a note for each tool of another type (skipped: this server runs function tools only, as vLLM and
    llama.cpp skip them)."""
    tools = typed(body, "tools", list, "an array of tools") or []
    if max_tools is not None and len(tools) > max_tools:
        raise invalid("tools", f"holds {len(tools)} tools; this server takes at most {max_tools}")
    chat: list[Any] = []
    indexes: list[int] = []
    echo: list[Any] = []
    notes: list[str] = []
    for j, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise invalid(f"tools[{j}]", f"must be an object, got {type_name(tool)}", "invalid_type")
        kind = tool.get("type")
        if kind is None:
            raise invalid(f"tools[{j}].type", "is required", "missing_required_parameter")
        if kind != "function":
            notes.append(f"tools[{j}]: {kind!r} tools are not supported (function tools only): left out")
            continue
        function = {key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool}
        chat.append({"type": "function", "function": function})
        indexes.append(j)
        echo.append({"type": "function", **{k: tool.get(k) for k in ("name", "description", "parameters", "strict")}})
    return chat, indexes, echo, notes


def _tool_choice(value: object) -> object:
    """The chat form of ``tool_choice`` (its modes as they are; a named function wrapped), checked by the chat
    validation; hosted tools and ``allowed_tools`` are refused."""
    if not isinstance(value, dict):
        return value  # a mode, or what the chat validation names as wrong
    kind = value.get("type")
    if kind != "function":
        raise invalid("tool_choice", f"a tool choice of type {kind!r} is not supported (function tools only)")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise invalid("tool_choice.name", "is required (a string)", "missing_required_parameter")
    return {"type": "function", "function": {"name": name}}


def _echo_choice(value: object) -> object:
    if isinstance(value, dict):
        return {"type": "function", "name": value["name"]}
    return value if value is not None else "auto"


def _text(body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``text`` as the response repeats it, and its ``format`` as the chat ``response_format``."""
    text = typed(body, "text", dict, "an object") or {}
    verbosity = choice(text, "verbosity", _VERBOSITY, "text.verbosity")
    fmt = typed(text, "format", dict, "an object", "text.format")
    echo: dict[str, Any] = {"format": fmt or {"type": "text"}}
    if verbosity is not None:
        echo["verbosity"] = verbosity
    if fmt is None:
        return echo, None
    kind = fmt.get("type")
    if kind == "text":
        return echo, None
    if kind == "json_object":
        return echo, {"type": "json_object"}
    if kind == "json_schema":
        spec = {key: fmt[key] for key in ("name", "schema", "strict", "description") if key in fmt}
        return echo, {"type": "json_schema", "json_schema": spec}
    raise invalid("text.format.type", f'must be "text", "json_object" or "json_schema", got {kind!r}')
