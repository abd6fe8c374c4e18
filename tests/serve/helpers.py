"""What the server tests share: the request every recorded output answers, the message the library itself reads from
an output (the server must give exactly that), and messages rebuilt from what the openai client received."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from autoparser import ChatMessage, ChatParams, ChatTemplate, ToolCall
from autoparser.message import ParseWarning
from autoparser.serve import apply_request, parse_chat_request
from autoparser.template.environment import variables_read
from tests.support.ids import ID_SHAPES
from tests.support.outputs import conversation, request_tools

__all__ = [
    "accumulate",
    "check_same",
    "from_completion",
    "library_params",
    "output_request",
]


def output_request(template: str, key: str, **fields: Any) -> dict[str, Any]:
    """The chat request the recorded outputs of ``template`` answer (tests/support/outputs.py's ``chat()``: its
    tools, parallel calls, thinking on), with ``key`` in the user's message so the upstream double finds the
    script."""
    *before, question = conversation(template)  # (a system message first where the template needs one)
    messages = [*before, {**question, "content": f"{question['content']} [{key}]"}]
    body: dict[str, Any] = {
        "model": template,
        "messages": messages,
        "parallel_tool_calls": True,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    tools = request_tools(template)
    if tools:
        body["tools"] = tools
    body.update(fields)
    return body


def library_params(template: str | ChatTemplate, body: Mapping[str, Any]) -> ChatParams:
    """What ``ChatTemplate.apply`` gives for the request ``body``, through the server's own validation."""
    tmpl = ChatTemplate.load(template) if isinstance(template, str) else template
    names = frozenset().union(*(variables_read(t.source) for t in tmpl.templates.values()))
    return apply_request(tmpl, parse_chat_request(dict(body), names))


def _warnings(items: object) -> tuple[ParseWarning, ...]:
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("position") is not None:
            found.append(ParseWarning(item["position"], item["message"]))
    return tuple(found)


def from_completion(completion: Any) -> ChatMessage:
    """The message of an openai ``ChatCompletion`` (reasoning and warnings from the extension fields)."""
    message = completion.choices[0].message
    extra = message.model_extra or {}
    calls = tuple(ToolCall(c.function.name, c.function.arguments, c.id) for c in message.tool_calls or ())
    return ChatMessage(
        "assistant",
        message.content or "",
        extra.get("reasoning_content") or "",
        calls,
        _warnings(extra.get("autoparser_warnings")),
    )


def accumulate(chunks: Iterable[Any]) -> tuple[ChatMessage, str | None, Any]:
    """A streamed reply accumulated as a client does it: (message, finish_reason, usage). Checks each call's id,
    type and name come once, in its first fragment."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    warnings: tuple[ParseWarning, ...] = ()
    finish = None
    usage = None
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            extra = delta.model_extra or {}
            content.append(delta.content or "")
            reasoning.append(extra.get("reasoning_content") or "")
            warnings += _warnings(extra.get("autoparser_warnings"))
            for part in delta.tool_calls or ():
                call = calls.get(part.index)
                if call is None:
                    assert part.id and part.type == "function" and part.function and part.function.name, part
                    calls[part.index] = call = {"id": part.id, "name": part.function.name, "arguments": ""}
                else:
                    assert part.id is None and (part.function is None or part.function.name is None), part
                if part.function is not None and part.function.arguments:
                    call["arguments"] += part.function.arguments
            if choice.finish_reason is not None:
                assert finish is None, "two finish reasons"
                finish = choice.finish_reason
    message = ChatMessage(
        "assistant",
        "".join(content),
        "".join(reasoning),
        tuple(ToolCall(calls[i]["name"], calls[i]["arguments"], calls[i]["id"]) for i in sorted(calls)),
        warnings,
    )
    return message, finish, usage


def check_same(got: ChatMessage, expected: ChatMessage, id_format: str) -> None:
    """``got`` (from the server) says what ``expected`` (the library's parse) says: content, reasoning, calls
    (model-written ids equal; generated ones in the template's format), warnings."""
    assert got.content == expected.content
    assert got.reasoning_content == expected.reasoning_content
    assert [(c.name, c.arguments) for c in got.tool_calls] == [(c.name, c.arguments) for c in expected.tool_calls]
    for mine, theirs in zip(got.tool_calls, expected.tool_calls, strict=True):
        if theirs.id_generated:
            assert ID_SHAPES[id_format].fullmatch(mine.id), mine.id
        else:
            assert mine.id == theirs.id
    assert [(w.position, w.message) for w in got.warnings] == [(w.position, w.message) for w in expected.warnings]


def arguments(message: ChatMessage) -> list[Any]:
    out = []
    for call in message.tool_calls:
        try:
            out.append(json.loads(call.arguments))
        except ValueError:
            out.append(call.arguments)
    return out
