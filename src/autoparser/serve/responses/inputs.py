"""The Responses API's ``input`` (and ``instructions``) as the chat messages the template renders.

A Responses conversation is a list of items; a chat conversation is a list of turns. The items map one to one except
the assistant's: a reply comes back as several output items (reasoning, a message, function calls), and a client
sends them back as they came. A run of assistant items — ``reasoning``, assistant ``message`` and ``function_call``
items with nothing else between them — is therefore *one* assistant turn: its reasoning (``reasoning_content``), its
text, its ``tool_calls``, in the order the reply wrote them. That is the message the chat endpoint would have
returned for the same reply, so the next prompt is the one the chat endpoint renders for the same conversation.

Each message records where it came from (:class:`~.names.Origin`), so that what the chat validation and the template
refuse is reported under the Responses field. Content parts translate one to one (so their indexes hold):
``input_text``/``output_text``/``refusal`` are text parts, ``input_image`` an ``image_url`` part (which the chat
validation refuses as it refuses the chat endpoint's images: the engine gets a text prompt only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .fields import invalid, string, type_name
from .names import Origin

__all__ = ["read_input"]

_ROLES = ("user", "assistant", "system", "developer")
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}  # part type -> its text's key
_ITEMS = ("message", "function_call", "function_call_output", "reasoning")


@dataclass
class _Turn:
    """The assistant turn being gathered from a run of assistant items."""

    origin: Origin
    reasoning: list[str] = field(default_factory=list)
    content: list[Any] | str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def message(self) -> dict[str, Any]:
        made: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning:
            made["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            made["tool_calls"] = self.calls
        return made


class _Reader:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.origins: list[Origin] = []
        self.turn: _Turn | None = None

    def add(self, message: dict[str, Any], origin: Origin) -> None:
        self.end_turn()
        self.messages.append(message)
        self.origins.append(origin)

    def end_turn(self) -> None:
        if self.turn is not None:
            turn, self.turn = self.turn, None
            self.messages.append(turn.message())
            self.origins.append(turn.origin)

    def open_turn(self, where: str) -> _Turn:
        if self.turn is None:
            self.turn = _Turn(Origin(where, where))
        return self.turn

    def item(self, item: object, where: str) -> None:
        if not isinstance(item, dict):
            raise invalid(where, f"must be an object, got {type_name(item)}", "invalid_type")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            self.message(item, where)
        elif kind == "function_call":
            self.function_call(item, where)
        elif kind == "function_call_output":
            self.function_call_output(item, where)
        elif kind == "reasoning":
            self.reasoning(item, where)
        elif kind == "item_reference":
            raise invalid(
                where, "item references are not supported: this server keeps no items; send the item itself",
                "unsupported_value",
            )  # fmt: skip
        elif kind is None:
            raise invalid(f"{where}.type", "is required", "missing_required_parameter")
        else:
            raise invalid(
                f"{where}.type",
                f"items of type {kind!r} are not supported (this server takes {', '.join(_ITEMS)} items)",
                "unsupported_value",
            )

    def message(self, item: Mapping[str, Any], where: str) -> None:
        role = item.get("role")
        if role not in _ROLES:
            found = role if isinstance(role, str) else type_name(role)
            raise invalid(f"{where}.role", f"must be one of {', '.join(_ROLES)}, got {found!r}")
        content, parts = _content(item.get("content"), f"{where}.content")
        if role != "assistant":
            self.add({"role": role, "content": content}, Origin(where, f"{where}.content", parts))
            return
        turn = self.open_turn(where)
        if turn.content is None:
            turn.content, turn.origin.content = content, f"{where}.content"
            turn.origin.parts = parts
            return
        # A second message in the same turn: its parts follow the first's
        before = [{"type": "text", "text": turn.content}] if isinstance(turn.content, str) else turn.content
        after = [{"type": "text", "text": content}] if isinstance(content, str) else content
        turn.content = [*before, *after]
        turn.origin.parts = [*(turn.origin.parts or [turn.origin.content]), *(parts or [f"{where}.content"])]

    def function_call(self, item: Mapping[str, Any], where: str) -> None:
        call_id = string(item, "call_id", where, empty=False)
        name = string(item, "name", where, empty=False)
        arguments = string(item, "arguments", where)
        turn = self.open_turn(where)
        turn.calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        turn.origin.calls.append(where)

    def function_call_output(self, item: Mapping[str, Any], where: str) -> None:
        call_id = string(item, "call_id", where, empty=False)
        content, parts = _content(item.get("output"), f"{where}.output")
        origin = Origin(where, f"{where}.output", parts, call_id=f"{where}.call_id")
        self.add({"role": "tool", "tool_call_id": call_id, "content": content}, origin)

    def reasoning(self, item: Mapping[str, Any], where: str) -> None:
        texts = _texts(item.get("content"), f"{where}.content", "reasoning_text")
        summary = _texts(item.get("summary"), f"{where}.summary", "summary_text")
        text = "".join(texts) if texts else "\n\n".join(summary)
        turn = self.open_turn(where)
        if text:
            turn.reasoning.append(text)
            turn.origin.reasoning = turn.origin.reasoning or where


def _content(value: object, where: str) -> tuple[str | list[dict[str, Any]], list[str]]:
    """A message's content (or a tool result's output) as chat content, with each part's Responses field."""
    if isinstance(value, str):
        return value, []
    if value is None:
        raise invalid(where, "is required (a string or an array of content parts)", "missing_required_parameter")
    if not isinstance(value, list):
        raise invalid(where, f"must be a string or an array of content parts, got {type_name(value)}", "invalid_type")
    parts = [_part(part, f"{where}[{j}]") for j, part in enumerate(value)]
    return parts, [f"{where}[{j}]" for j in range(len(value))]


def _part(part: object, where: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise invalid(where, f"must be an object, got {type_name(part)}", "invalid_type")
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": string(part, _TEXT_PARTS[kind], where)}
    if kind == "input_image":
        # The chat endpoint's image part: refused there as the chat endpoint refuses it (a text prompt only)
        image: dict[str, Any] = {"url": part.get("image_url") or part.get("file_id")}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind in ("input_file", "input_audio"):
        raise invalid(
            where, f"{kind} parts are not supported: this server sends the engine a text prompt only",
            "unsupported_content",
        )  # fmt: skip
    raise invalid(f"{where}.type", f'must be "input_text", "output_text", "refusal" or "input_image", got {kind!r}')


def _texts(value: object, where: str, kind: str) -> list[str]:
    """The texts of a reasoning item's ``content`` or ``summary`` (parts of type ``kind``)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid(where, f"must be an array, got {type_name(value)}", "invalid_type")
    texts = []
    for j, part in enumerate(value):
        if not isinstance(part, dict) or part.get("type", kind) != kind:
            raise invalid(f"{where}[{j}]", f'must be a {{"type": "{kind}", "text": ...}} part')
        texts.append(string(part, "text", f"{where}[{j}]"))
    return texts


def read_input(value: object, instructions: str | None) -> tuple[list[dict[str, Any]], list[Origin]]:
    """The chat messages of a Responses ``input`` (a string: one user message; or a list of items), after a system
    message of the ``instructions``; and where each came from."""
    reader = _Reader()
    if instructions is not None:
        reader.add({"role": "system", "content": instructions}, Origin("instructions", "instructions"))
    if isinstance(value, str):
        reader.add({"role": "user", "content": value}, Origin("input", "input"))
    elif isinstance(value, list):
        if not value:
            raise invalid("input", "must hold at least one item")
        for k, item in enumerate(value):
            reader.item(item, f"input[{k}]")
        reader.end_turn()
    elif value is None:
        raise invalid("input", "is required (a string or an array of items)", "missing_required_parameter")
    else:
        raise invalid("input", f"must be a string or an array of items, got {type_name(value)}", "invalid_type")
    return reader.messages, reader.origins
