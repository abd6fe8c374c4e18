"""Anthropic's Messages reply, written from the reply's events (:mod:`..events`): a whole ``message``, or the
stream of server-sent events Anthropic's clients accumulate.

Streamed: ``message_start`` (the message with no content yet; the input tokens are not known before the upstream
ends, so its usage is 0 and ``message_delta`` carries the counts) and a ``ping``; then each block as the reply
writes it — ``content_block_start``, its deltas (``thinking_delta``, ``text_delta``, ``input_json_delta``; a
thinking block's ``signature_delta`` just before its stop), ``content_block_stop`` —, one block at a time, numbered
in order; then ``message_delta`` (``stop_reason``, ``stop_sequence``, usage) and ``message_stop``. A failure after
the reply began closes the open block and ends the stream with ``event: error``.

Blocks: reasoning is a ``thinking`` block signed by the server (:mod:`.signatures`), text a ``text`` block, each
call a ``tool_use`` block (its id: :mod:`.ids`; ``input`` the parsed arguments, always a JSON object). The stop
reason: ``max_tokens`` when the upstream hit its limit, else ``tool_use`` when the reply made calls, else
``stop_sequence`` when the upstream stopped on one of the request's ``stop_sequences``, else ``end_turn``.

Extension field, as on the chat endpoint: ``autoparser_warnings`` (``{"message", "position"}``: what of the reply
did not parse as structure, what the request had to degrade) on the message, streamed on ``message_delta``'s
``delta``; only when there is something to say.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from ...message import ChatMessage
from ..chunks import Usage, warnings_field
from ..events import (
    CallArguments,
    CallStarted,
    Event,
    ReasoningEnded,
    ReasoningStarted,
    ReasoningText,
    ReplyEnded,
    TextDelta,
    TextStarted,
)
from ..upstream import UpstreamError
from .failures import upstream_error_event
from .ids import wire_id
from .signatures import Signer

__all__ = ["MessagesEncoder", "stop_reason"]

_PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def _dumps(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()


def stop_reason(finish: str | None, has_calls: bool, stop_sequence: str | None) -> str:
    """Anthropic's ``stop_reason`` (see the module docstring)."""
    if finish == "length":
        return "max_tokens"
    if has_calls:
        return "tool_use"
    return "stop_sequence" if stop_sequence is not None else "end_turn"


def _usage(usage: Usage | None) -> dict[str, int]:
    usage = usage or Usage()
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


class MessagesEncoder:
    """One Messages reply (:class:`~..encoding.Encoder`)."""

    def __init__(self, model: str, signer: Signer, stop_sequences: Sequence[str], notes: tuple[str, ...]) -> None:
        self.id = f"msg_{secrets.token_hex(12)}"
        self.model = model
        self.signer = signer
        self.stop_sequences = frozenset(stop_sequences)
        self.notes = notes  # what the request had to degrade (ChatParams.warnings, thinking left out)
        self._block = -1  # the index of the block open now (or last closed)

    def _message(self, content: list[dict[str, Any]], usage: Usage | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(usage),
        }

    def _stop_sequence(self, stop_word: str | None) -> str | None:
        return stop_word if stop_word is not None and stop_word in self.stop_sequences else None

    # --- streamed -------------------------------------------------------------------------------------------------

    def start(self) -> bytes:
        return _sse("message_start", {"type": "message_start", "message": self._message([], None)}) + _PING

    def events(self, events: Sequence[Event]) -> bytes:
        out: list[bytes] = []
        pending: list[str] = []  # a run of deltas of the open block, sent as one
        kind = ""
        for event in events:
            text, delta_kind = _delta_text(event)
            if text is not None and (delta_kind == kind or not pending):
                pending.append(text)
                kind = delta_kind
                continue
            if pending:
                out.append(self._delta(kind, "".join(pending)))
                pending.clear()
            if text is not None:
                pending.append(text)
                kind = delta_kind
            else:
                out.append(self._edge(event))
        if pending:
            out.append(self._delta(kind, "".join(pending)))
        return b"".join(out)

    def end(self, events: Sequence[Event], failure: UpstreamError | None) -> bytes:
        *blocks, ended = events
        assert isinstance(ended, ReplyEnded)
        out = self.events(blocks)
        if failure is not None:
            return out + upstream_error_event(failure)
        stop_sequence = self._stop_sequence(ended.stop_word)
        delta: dict[str, Any] = {
            "stop_reason": stop_reason(ended.finish, ended.has_calls, stop_sequence),
            "stop_sequence": stop_sequence,
        }
        found = warnings_field(ended.warnings, self.notes)
        if found:
            delta["autoparser_warnings"] = found
        usage = _usage(ended.usage)
        return out + _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}) + _STOP

    def _delta(self, kind: str, text: str) -> bytes:
        field = {"thinking_delta": "thinking", "text_delta": "text", "input_json_delta": "partial_json"}[kind]
        delta = {"type": "content_block_delta", "index": self._block, "delta": {"type": kind, field: text}}
        return _sse("content_block_delta", delta)

    def _edge(self, event: Event) -> bytes:
        """A block's start or stop."""
        if isinstance(event, ReasoningStarted | TextStarted | CallStarted):
            self._block += 1
            block: dict[str, Any]
            if isinstance(event, ReasoningStarted):
                block = {"type": "thinking", "thinking": "", "signature": ""}
            elif isinstance(event, TextStarted):
                block = {"type": "text", "text": ""}
            else:
                block = {"type": "tool_use", "id": wire_id(event.id), "name": event.name, "input": {}}
            start = {"type": "content_block_start", "index": self._block, "content_block": block}
            return _sse("content_block_start", start)
        out = b""
        if isinstance(event, ReasoningEnded):
            signature = {"type": "signature_delta", "signature": self.signer.sign(event.text)}
            out = _sse("content_block_delta", {"type": "content_block_delta", "index": self._block, "delta": signature})
        if isinstance(event, ReplyEnded):  # only end() writes the end
            return out
        return out + _sse("content_block_stop", {"type": "content_block_stop", "index": self._block})

    # --- whole ----------------------------------------------------------------------------------------------------

    def whole(
        self, message: ChatMessage, finish: str | None, usage: Usage | None, stop_word: str | None = None
    ) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if message.reasoning_content:
            reasoning = message.reasoning_content
            content.append({"type": "thinking", "thinking": reasoning, "signature": self.signer.sign(reasoning)})
        if message.content:
            content.append({"type": "text", "text": message.content})
        for call in message.tool_calls:  # arguments: always a JSON object's text (ToolCall)
            block = {"type": "tool_use", "id": wire_id(call.id), "name": call.name, "input": json.loads(call.arguments)}
            content.append(block)
        body = self._message(content, usage)
        stop_sequence = self._stop_sequence(stop_word)
        body["stop_reason"] = stop_reason(finish, bool(message.tool_calls), stop_sequence)
        body["stop_sequence"] = stop_sequence
        found = warnings_field(message.warnings, self.notes)
        if found:
            body["autoparser_warnings"] = found
        return body


def _delta_text(event: Event) -> tuple[str | None, str]:
    """The text a delta event adds to the open block, and its Anthropic delta type; (None, "") for other events."""
    if isinstance(event, TextDelta):
        return event.text, "text_delta"
    if isinstance(event, ReasoningText):
        return event.text, "thinking_delta"
    if isinstance(event, CallArguments):
        return event.text, "input_json_delta"
    return None, ""
