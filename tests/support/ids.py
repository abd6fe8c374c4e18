"""Checks for tool call ids: ids the model did not write are generated per reply, in the template's format."""

from __future__ import annotations

import dataclasses
import re

from autoparser import ChatMessage, ChatTemplate, ToolCall

ID_SHAPES = {
    "openai": re.compile(r"call_[A-Za-z0-9]{24}"),
    "alnum9": re.compile(r"[A-Za-z0-9]{9}"),
    "named": re.compile(r"call_[A-Za-z0-9]{24}"),  # (the model writes functions.NAME:IDX; a generated one is OpenAI's)
}


def generated_ids_ok(message: ChatMessage, template: str | ChatTemplate) -> bool:
    """Every call has an id; each generated one has the template's format and is unlike the reply's other ids."""
    tmpl = ChatTemplate.load(template) if isinstance(template, str) else template
    shape = ID_SHAPES[tmpl.analysis.id_format]
    ids = [call.id for call in message.tool_calls]
    return all(ids) and all(
        shape.fullmatch(call.id) and ids.count(call.id) == 1 for call in message.tool_calls if call.id_generated
    )


def model_ids(message: ChatMessage) -> list[str]:
    """The ids as the model wrote them: "" where the id was generated."""
    return ["" if call.id_generated else call.id for call in message.tool_calls]


def as_written(message: ChatMessage) -> tuple[ToolCall, ...]:
    """The message's calls with generated ids blanked (what the model wrote), after checking every call has an id
    and every generated one is unique in the reply."""
    ids = [call.id for call in message.tool_calls]
    assert all(ids), f"a call without an id: {message.tool_calls}"
    assert all(ids.count(c.id) == 1 for c in message.tool_calls if c.id_generated), f"generated ids repeat: {ids}"
    return tuple(dataclasses.replace(c, id="", id_generated=False) if c.id_generated else c for c in message.tool_calls)


def written(message: ChatMessage) -> ChatMessage:
    """The message with generated call ids blanked (see :func:`as_written`), for comparing two parses."""
    return dataclasses.replace(message, tool_calls=as_written(message))
