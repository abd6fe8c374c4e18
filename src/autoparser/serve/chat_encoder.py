"""OpenAI chat completions, written from the reply's events (:mod:`.events`): ``chat.completion.chunk`` events,
one per read of the upstream that added something, then the chunk with the ``finish_reason`` (and
``autoparser_warnings``), the usage chunk when asked for, and ``data: [DONE]``; or a whole ``chat.completion``.

Each read's events fold into one delta, as the parser's deltas merged would (``merge_deltas(...).to_openai()``):
content, reasoning (under the server's ``--reasoning-field``), and the calls that read opened (index, id, type,
name) or added arguments to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..message import ChatMessage
from .chunks import DONE, Reply, Usage, completion, finish_reason, sse, warnings_field
from .events import (
    CallArguments,
    CallStarted,
    Event,
    ReasoningText,
    ReplyEnded,
    TextDelta,
)
from .failures import upstream_error_event
from .upstream import UpstreamError

__all__ = ["ChatEncoder"]


class ChatEncoder:
    """One chat completion (:class:`~.encoding.Encoder`)."""

    def __init__(self, model: str, reasoning_field: str, include_usage: bool, notes: tuple[str, ...]) -> None:
        self.reply = Reply(model, reasoning_field)
        self.include_usage = include_usage
        self.notes = notes  # what the request had to degrade (ChatParams.warnings)

    def start(self) -> bytes:
        return sse(self.reply.chunk({"role": "assistant", "content": ""}, with_usage_field=self.include_usage))

    def events(self, events: Sequence[Event]) -> bytes:
        if len(events) == 1:  # a token at an engine's pace: one piece of text
            event = events[0]
            if type(event) is TextDelta:
                return self.reply.delta_event({"content": event.text}, self.include_usage)
            if type(event) is ReasoningText:
                return self.reply.delta_event({"reasoning_content": event.text}, self.include_usage)
        delta = _delta(events)
        return self.reply.delta_event(delta, self.include_usage) if delta else b""

    def end(self, events: Sequence[Event], failure: UpstreamError | None) -> bytes:
        last = _delta(events)  # what the parser held back: nothing is lost
        ended = events[-1]
        assert isinstance(ended, ReplyEnded)
        found = warnings_field(ended.warnings, self.notes)
        if found:
            last["autoparser_warnings"] = found
        reply, usage_field = self.reply, self.include_usage
        if failure is not None:
            head = sse(reply.chunk(last, with_usage_field=usage_field)) if last else b""
            return head + sse(upstream_error_event(failure))
        out = sse(reply.chunk(last, finish_reason(ended.finish, ended.has_calls), with_usage_field=usage_field))
        if usage_field:
            out += sse(reply.usage_chunk(ended.usage or Usage()))
        return out + DONE

    def whole(
        self, message: ChatMessage, finish: str | None, usage: Usage | None, stop_word: str | None = None
    ) -> dict[str, Any]:
        return completion(self.reply, message, finish, usage, self.notes)


def _delta(events: Sequence[Event]) -> dict[str, Any]:
    """The chat delta of ``events``: what ``merge_deltas`` of the same parser deltas gives, in OpenAI's form."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, TextDelta):
            content.append(event.text)
        elif isinstance(event, ReasoningText):
            reasoning.append(event.text)
        elif isinstance(event, CallStarted):
            calls[event.index] = {
                "index": event.index,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
        elif isinstance(event, CallArguments):
            call = calls.setdefault(event.index, {"index": event.index, "function": {"arguments": ""}})
            call["function"]["arguments"] += event.text
    delta: dict[str, Any] = {}
    if content:
        delta["content"] = "".join(content)
    if reasoning:
        delta["reasoning_content"] = "".join(reasoning)  # Reply writes it under the server's reasoning field
    if calls:
        delta["tool_calls"] = [calls[index] for index in sorted(calls)]
    return delta
