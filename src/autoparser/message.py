"""Chat messages, tool calls and streaming deltas, with their OpenAI wire forms.

A parsed model output becomes a :class:`ChatMessage`. While streaming, :class:`MessageDelta` objects carry only
what is new: text appended to ``content`` / ``reasoning_content``, or a tool call's ``index`` with its ``id`` and
``name`` (sent once) and a fragment of its ``arguments``. Deltas only ever append, so a client that concatenates
them ends up with exactly the final message.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "CallStatus",
    "ChatMessage",
    "MessageDelta",
    "ParseWarning",
    "ToolCall",
    "ToolCallDelta",
    "merge_deltas",
    "new_call_id",
]

_ID_ALPHABET = string.ascii_letters + string.digits
_ID_TABLE = bytes(ord(_ID_ALPHABET[b % 62]) for b in range(256))
_ID_REJECTED = bytes(range(248, 256))


def new_call_id(id_format: str = "openai") -> str:
    """A fresh random tool call id: ``call_`` + 24 alphanumerics (``openai``), or 9 alphanumerics (``alnum9``, the
    only ids Mistral's templates accept)."""
    length, prefix = (9, "") if id_format == "alnum9" else (24, "call_")
    # 248 = 4 * 62: bytes below it map onto the alphabet without bias, the others are dropped (one C-level translate);
    # 32 bytes leave enough after rejection
    while True:
        chars = secrets.token_bytes(32).translate(_ID_TABLE, _ID_REJECTED)
        if len(chars) >= length:
            return prefix + chars[:length].decode("ascii")


class CallStatus(StrEnum):
    """How much of a tool call the model wrote, for a server deciding whether to run it (``ToolCall.status``).

    Whatever the status, a parsed call's ``arguments`` are a JSON object that ``json.loads`` reads, without
    duplicate keys (docs/parsing.md, "Broken calls"). A str enum: it compares equal to its value (``"cut_off"``).
    """

    COMPLETE = "complete"  # the arguments are all the model wrote for the call, read as written
    CUT_OFF = "cut_off"  # the output ended inside the call: its arguments were closed where they stopped
    REPAIRED = "repaired"  # the call was malformed: what could not be read was left out (it is in the warnings)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call. ``arguments`` is JSON text: in a parsed message always a JSON object without duplicate keys.

    ``id`` is the id the model wrote, or one generated for this reply (``id_generated``) in the format the
    template accepts (:func:`new_call_id`): OpenAI clients reject empty ids, and the next turn's render must
    accept them. Two parses of one output generate different ids, so compare generated ids by shape, not value.

    ``status`` (:class:`CallStatus`) says whether the arguments are complete, cut off by the end of the output or
    repaired from a malformed call (a partial parse's calls still arriving are cut off so far); it is not part of
    the OpenAI wire form (:meth:`to_openai`) nor of :meth:`to_hf`. Equality ignores ``id_generated`` and
    ``status``, which are not part of the wire form either: compare them explicitly.
    """

    name: str
    arguments: str = "{}"
    id: str = ""
    id_generated: bool = field(default=False, compare=False)
    status: CallStatus = field(default=CallStatus.COMPLETE, compare=False)

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "id": self.id, "function": {"name": self.name, "arguments": self.arguments}}

    def to_hf(self) -> dict[str, Any]:
        """The call as transformers chat templates read it: ``arguments`` as a dict (templates iterate
        ``arguments|items`` or print ``arguments|tojson``), the id only when there is one.

        Arguments that are not a JSON object (a parse that degraded, with a warning) stay text rather than being
        dropped: templates that print arguments then show them as the model wrote them.
        """
        try:
            arguments: Any = json.loads(self.arguments)
        except ValueError:
            arguments = self.arguments
        if not isinstance(arguments, dict):
            arguments = self.arguments
        call: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": arguments}}
        if self.id:
            call["id"] = self.id
        return call


@dataclass(frozen=True, slots=True)
class ParseWarning:
    """Something in the output that could not be parsed as structure; its text was kept as content."""

    position: int
    message: str

    def __str__(self) -> str:
        return f"at {self.position}: {self.message}"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """An assistant message as parsed from model output."""

    role: str = "assistant"
    content: str = ""
    reasoning_content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()

    def to_openai(self, *, reasoning_field: str = "reasoning_content") -> dict[str, Any]:
        """The OpenAI chat-completion message dict (``content`` is None for a message with only tool calls).

        ``reasoning_field``: the key the reasoning goes under, ``"reasoning_content"`` (DeepSeek's, and vLLM's
        until 0.10) or ``"reasoning"`` (vLLM's newer field, OpenRouter's)."""
        key = _reasoning_key(reasoning_field)
        message: dict[str, Any] = {
            "role": self.role,
            "content": self.content if self.content or not self.tool_calls else None,
        }
        if self.reasoning_content:
            message[key] = self.reasoning_content
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message

    def to_hf(self) -> dict[str, Any]:
        """The message as Hugging Face chat templates read it, for the next turn of ``apply_chat_template`` (or
        ``ChatTemplate.render``): ``content`` always a string (templates concatenate it), reasoning under
        ``reasoning_content`` (the key transformers passes templates, aliasing ``thinking`` to it), tool calls
        with their arguments as dicts (:meth:`ToolCall.to_hf`)."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.reasoning_content:
            message["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            message["tool_calls"] = [call.to_hf() for call in self.tool_calls]
        return message


# The slots' own setters: a message or call the parser builds (every field known) is built without the frozen
# dataclass's ``__setattr__`` calls, one per field, which are most of what building it costs on a short reply.
_SET_FIELDS = tuple(
    getattr(ChatMessage, name).__set__ for name in ("role", "content", "reasoning_content", "tool_calls", "warnings")
)
_SET_CALL_FIELDS = tuple(
    getattr(ToolCall, name).__set__ for name in ("name", "arguments", "id", "id_generated", "status")
)


def text_message(content: str, reasoning_content: str = "") -> ChatMessage:
    """``ChatMessage(content=content, reasoning_content=reasoning_content)``, the same object, built faster."""
    return built_message(content, reasoning_content)


def built_message(
    content: str,
    reasoning_content: str = "",
    tool_calls: tuple[ToolCall, ...] = (),
    warnings: tuple[ParseWarning, ...] = (),
    role: str = "assistant",
) -> ChatMessage:
    """``ChatMessage(role, content, reasoning_content, tool_calls, warnings)``, the same object, built faster."""
    message = object.__new__(ChatMessage)
    set_role, set_content, set_reasoning, set_calls, set_warnings = _SET_FIELDS
    set_role(message, role)
    set_content(message, content)
    set_reasoning(message, reasoning_content)
    set_calls(message, tool_calls)
    set_warnings(message, warnings)
    return message


def built_call(
    name: str, arguments: str, call_id: str, id_generated: bool, status: CallStatus = CallStatus.COMPLETE
) -> ToolCall:
    """``ToolCall(name, arguments, call_id, id_generated, status)``, the same object, built faster."""
    call = object.__new__(ToolCall)
    set_name, set_arguments, set_id, set_generated, set_status = _SET_CALL_FIELDS
    set_name(call, name)
    set_arguments(call, arguments)
    set_id(call, call_id)
    set_generated(call, id_generated)
    set_status(call, status)
    return call


@dataclass(slots=True)  # not frozen: streams create one per token, and frozen init is several times slower
class ToolCallDelta:
    """A fragment of tool call ``index``: ``id`` and ``name`` arrive once (in the call's first delta); ``status``
    once too, in the delta after which the call's arguments no longer change (not part of the wire form: a delta
    carrying only a status has nothing to send, see :meth:`MessageDelta.to_openai`)."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    status: CallStatus | None = None

    @property
    def sends_something(self) -> bool:
        """Whether the OpenAI wire form of this fragment says anything (an id, a name or arguments)."""
        return self.id is not None or self.name is not None or bool(self.arguments)

    def to_openai(self) -> dict[str, Any]:
        delta: dict[str, Any] = {"index": self.index}
        if self.id is not None:
            delta["id"] = self.id
            delta["type"] = "function"
        function: dict[str, Any] = {}
        if self.name is not None:
            function["name"] = self.name
        if self.arguments or self.name is not None:
            function["arguments"] = self.arguments
        if function:
            delta["function"] = function
        return delta


@dataclass(slots=True)  # not frozen, for the same reason
class MessageDelta:
    """What one streaming step added to the message."""

    content: str = ""
    reasoning_content: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    warnings: tuple[ParseWarning, ...] = field(default=())

    def to_openai(self, *, reasoning_field: str = "reasoning_content") -> dict[str, Any]:
        """The ``delta`` object of an OpenAI ``chat.completion.chunk`` (``{}`` for a delta that adds nothing: a
        feed whose text the parser holds back; servers skip those). ``reasoning_field`` as in
        :meth:`ChatMessage.to_openai`."""
        key = _reasoning_key(reasoning_field)
        delta: dict[str, Any] = {}
        if self.content:
            delta["content"] = self.content
        if self.reasoning_content:
            delta[key] = self.reasoning_content
        wire = [call.to_openai() for call in self.tool_calls if call.sends_something]
        if wire:
            delta["tool_calls"] = wire
        return delta


_REASONING_FIELDS = ("reasoning_content", "reasoning")


def _reasoning_key(field: str) -> str:
    if field not in _REASONING_FIELDS:
        raise ValueError(f"reasoning_field must be one of {_REASONING_FIELDS}, got {field!r}")
    return field


def merge_deltas(deltas: Iterable[MessageDelta]) -> MessageDelta:
    """One delta saying what ``deltas`` say together: a server sends one ``chat.completion.chunk`` per token, while
    one ``feed()`` may return several deltas (text, then a call's header, then its arguments).

    Content and reasoning are concatenated per field, fragments of one call are joined (its id and name kept from
    the fragment that carried them), calls stay in index order. A client appending the merged delta ends with the
    same message as one appending each delta."""
    content: list[str] = []
    reasoning: list[str] = []
    warnings: list[ParseWarning] = []
    calls: dict[int, ToolCallDelta] = {}
    for delta in deltas:
        content.append(delta.content)
        reasoning.append(delta.reasoning_content)
        warnings.extend(delta.warnings)
        for part in delta.tool_calls:
            merged = calls.get(part.index)
            if merged is None:
                calls[part.index] = ToolCallDelta(part.index, part.id, part.name, part.arguments, part.status)
                continue
            merged.id = merged.id if merged.id is not None else part.id
            merged.name = merged.name if merged.name is not None else part.name
            merged.status = merged.status if merged.status is not None else part.status
            merged.arguments += part.arguments
    return MessageDelta("".join(content), "".join(reasoning), tuple(calls[i] for i in sorted(calls)), tuple(warnings))


def apply_deltas(deltas: list[MessageDelta], role: str = "assistant") -> ChatMessage:
    """Accumulate deltas the way an OpenAI client does (for tests and the CLI)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, str]] = []
    warnings: list[ParseWarning] = []
    for delta in deltas:
        content.append(delta.content)
        reasoning.append(delta.reasoning_content)
        warnings.extend(delta.warnings)
        for part in delta.tool_calls:
            while len(calls) <= part.index:  # (a call whose status has not come yet is still arriving)
                calls.append({"name": "", "arguments": "", "id": "", "status": CallStatus.CUT_OFF})
            call = calls[part.index]
            if part.name is not None:
                call["name"] = part.name
            if part.id is not None:
                call["id"] = part.id
            if part.status is not None:
                call["status"] = part.status
            call["arguments"] += part.arguments
    return ChatMessage(
        role,
        "".join(content),
        "".join(reasoning),
        tuple(ToolCall(c["name"], c["arguments"], c["id"], status=CallStatus(c["status"])) for c in calls),
        tuple(warnings),
    )
