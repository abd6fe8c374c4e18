"""Streaming: turn a growing model output into append-only :class:`MessageDelta` objects.

Each feed re-parses the output in partial mode and emits what the message gained since the last feed. The
mapper is prefix-monotone (see :mod:`.mapper`), so the gain is always an extension; the stream still guards
against a regression (it never retracts what it sent: it waits until the parse catches up again).
"""

from __future__ import annotations

from ..message import ChatMessage, MessageDelta, ToolCall, ToolCallDelta, new_call_id
from .assemble import GeneratedParser
from .mapper import map_result

__all__ = ["StreamParser", "parse_output"]


def parse_output(generated: GeneratedParser, text: str, *, partial: bool = False) -> ChatMessage:
    """Parse ``text`` (model output only; the prompt's prefill is added here)."""
    full = generated.prefill + text
    result = generated.parser.parse(full, partial=partial)
    if result.fail:  # cannot happen for generated parsers (every item falls back to content); be safe anyway
        return ChatMessage(content=text)
    return map_result(result, len(generated.prefill), generated.id_position, generated.convert_args)


class StreamParser:
    """Feed model output piece by piece; get the deltas each piece adds."""

    __slots__ = ("_calls", "_content", "_finished", "_generated", "_ids", "_reasoning", "_text", "_warnings")

    def __init__(self, generated: GeneratedParser) -> None:
        self._generated = generated
        self._text: list[str] = []
        self._content = ""
        self._reasoning = ""
        self._calls: list[ToolCall] = []
        self._ids: list[str] = []
        self._warnings = 0
        self._finished = False

    @property
    def message(self) -> ChatMessage:
        """Everything emitted so far, as one message (tool calls carry their stream ids)."""
        calls = tuple(ToolCall(c.name, c.arguments, i) for c, i in zip(self._calls, self._ids, strict=True))
        return ChatMessage("assistant", self._content, self._reasoning, calls)

    def feed(self, piece: str) -> list[MessageDelta]:
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if not piece:
            return []
        self._text.append(piece)
        return self._update(partial=True)

    def finish(self) -> list[MessageDelta]:
        """The output is complete: flush what was held back (closing braces, a trailing value)."""
        if self._finished:
            return []
        self._finished = True
        return self._update(partial=False)

    def _update(self, *, partial: bool) -> list[MessageDelta]:
        text = "".join(self._text)
        self._text = [text]
        message = parse_output(self._generated, text, partial=partial)
        content = _gain(self._content, message.content)
        reasoning = _gain(self._reasoning, message.reasoning_content)
        self._content += content
        self._reasoning += reasoning
        call_deltas: list[ToolCallDelta] = []
        for index, call in enumerate(message.tool_calls):
            if index < len(self._calls):
                known = self._calls[index]
                if call.name != known.name:
                    continue
                extra = _gain(known.arguments, call.arguments)
                if extra:
                    self._calls[index] = ToolCall(known.name, known.arguments + extra, known.id)
                    call_deltas.append(ToolCallDelta(index, arguments=extra))
            elif index == len(self._calls):
                call_id = call.id or new_call_id()
                self._calls.append(call)
                self._ids.append(call_id)
                call_deltas.append(ToolCallDelta(index, call_id, call.name, call.arguments))
        warnings = message.warnings[self._warnings :] if not partial else ()
        self._warnings += len(warnings)
        if not (content or reasoning or call_deltas or warnings):
            return []
        return [MessageDelta(content, reasoning, tuple(call_deltas), tuple(warnings))]


def _gain(sent: str, now: str) -> str:
    """What ``now`` adds to ``sent`` ("" if it does not extend it)."""
    if now.startswith(sent):
        return now[len(sent) :]
    return ""
