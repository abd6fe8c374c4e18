"""Field names: the chat request a Responses body became names its fields its own way (``messages[2].content[1]``,
``tools[0].function.parameters``); a client that sent ``input`` and flat tools must be told about *its* fields
(``input[4].content[1]``, ``tools[1].parameters``). :class:`FieldNames` renames a chat field to the Responses field it
came from, as recorded while the body was translated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..protocol import APIError

__all__ = ["FieldNames", "Origin"]

_INDEXED = re.compile(r"(messages|tools)\[(\d+)\]")
_PART = re.compile(r"\.content\[(\d+)\]")
_CALL = re.compile(r"\.tool_calls\[(\d+)\]")
# Chat fields whose Responses counterpart has another name (everything else keeps its name)
_RENAMED = {
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
    "reasoning_effort": "reasoning.effort",
}
# A call's fields, chat -> Responses (a function_call item is flat, its id is the call_id)
_CALL_FIELDS = {".function.name": ".name", ".function.arguments": ".arguments", ".function": "", ".id": ".call_id"}


@dataclass
class Origin:
    """Where one chat message came from: the item (or ``input``, ``instructions``) as a whole, its content (a
    message's ``content``, a tool result's ``output``), each content part, each call's ``function_call`` item, the
    reasoning item folded in."""

    path: str
    content: str
    parts: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    reasoning: str | None = None
    call_id: str | None = None  # a tool result's call_id field


@dataclass
class FieldNames:
    """The chat request's fields, renamed to the Responses body's."""

    messages: list[Origin] = field(default_factory=list)
    tools: list[int] = field(default_factory=list)  # chat tool index -> Responses tool index (others were skipped)

    def rename(self, name: str) -> str:
        match = _INDEXED.match(name)
        if match is not None:
            kind, index, rest = match.group(1), int(match.group(2)), name[match.end() :]
            if kind == "tools":
                return self._tool(index, rest)
            if index < len(self.messages):
                return self._message(self.messages[index], rest)
        if name == "messages":
            return "input"
        if name.startswith("response_format"):
            return "text.format" + name.removeprefix("response_format").replace(".json_schema", "", 1)
        head, dot, rest = name.partition(".")
        return _RENAMED.get(head, head) + dot + rest

    def error(self, err: APIError) -> APIError:
        """``err`` naming the Responses field (in ``param`` and in its message)."""
        if err.param is None:
            return err
        renamed = self.rename(err.param)
        if renamed == err.param:
            return err
        message = err.message.replace(err.param, renamed)
        return APIError(err.status, message, param=renamed, code=err.code, type=err.type)

    def _tool(self, index: int, rest: str) -> str:
        where = self.tools[index] if index < len(self.tools) else index
        return f"tools[{where}]" + rest.replace(".function", "", 1)

    @staticmethod
    def _message(origin: Origin, rest: str) -> str:
        part = _PART.match(rest)
        if part is not None:
            j = int(part.group(1))
            where = origin.parts[j] if j < len(origin.parts) else origin.content
            return where + rest[part.end() :]
        call = _CALL.match(rest)
        if call is not None:
            c = int(call.group(1))
            if c >= len(origin.calls):
                return origin.path
            rest = rest[call.end() :]
            for chat, responses in _CALL_FIELDS.items():
                if rest.startswith(chat):
                    return origin.calls[c] + responses + rest[len(chat) :]
            return origin.calls[c] + rest
        if rest.startswith(".content"):
            return origin.content + rest.removeprefix(".content")
        if rest.startswith(".tool_call_id") and origin.call_id:
            return origin.call_id
        if rest.startswith((".reasoning_content", ".reasoning", ".thinking")) and origin.reasoning:
            return origin.reasoning
        return origin.path
