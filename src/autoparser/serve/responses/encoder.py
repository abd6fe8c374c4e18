"""The Responses API written from the reply's events (:mod:`..events`): a ``response`` object, or its stream.

Each block of the reply is one output item, in the order the model wrote them: reasoning (a ``reasoning`` item with
``reasoning_text`` content), answer text (a ``message`` with one ``output_text`` part), each call (a
``function_call``). Streamed, in OpenAI's order: ``response.created``, ``response.in_progress``; per item
``response.output_item.added`` and, for reasoning and messages, ``response.content_part.added``; its deltas
(``response.reasoning_text.delta``, ``response.output_text.delta``, ``response.function_call_arguments.delta``,
what one read of the upstream added to an item merged into one); its ``.done`` events, ``response.content_part.done``,
``response.output_item.done``; then ``response.completed`` — or ``response.incomplete`` when the upstream stopped at
the token limit, ``response.failed`` when it broke off — with the whole response. Every event has its
``sequence_number``, from 0.

A whole reply goes through the same items (:meth:`ResponsesEncoder.whole` replays the parsed message as events), so
the two are the same response. An item the reply was cut off in is ``incomplete`` (a reasoning or message item still
open at a ``length`` finish or a failure; a call whose arguments were cut off), every other ``completed``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ...message import CallStatus, ChatMessage
from ..chunks import Usage, warnings_field
from ..events import (
    CallArguments,
    CallEnded,
    CallStarted,
    Event,
    ReasoningEnded,
    ReasoningStarted,
    ReasoningText,
    ReplyEnded,
    TextDelta,
    TextEnded,
    TextStarted,
)
from ..upstream import UpstreamError
from . import shapes

__all__ = ["ResponsesEncoder"]


class ResponsesEncoder:
    """One response (:class:`~..encoding.Encoder`)."""

    def __init__(self, model: str, echo: dict[str, Any], notes: tuple[str, ...]) -> None:
        self.envelope = shapes.Envelope(model, echo)
        self.notes = notes  # what the request had to drop or degrade
        self.output: list[dict[str, Any]] = []  # every item so far, as it is now
        self.calls: dict[int, int] = {}  # a call's index in the reply -> its output index
        self.texts: list[str] = []  # the open reasoning or message item's text so far
        self.sequence = 0
        self.out: list[bytes] | None = None  # the events written (None: a whole reply, nothing written)
        self.cut: Event | None = None  # the event closing the item the reply was cut off in
        self.final: dict[str, Any] | None = None

    # --- the Encoder interface -----------------------------------------------------------------------------------

    def start(self) -> bytes:
        self.out = []
        snapshot = self.envelope.response("in_progress", [])
        self._emit("response.created", response=snapshot)
        self._emit("response.in_progress", response=snapshot)
        return self._written()

    def events(self, events: Sequence[Event]) -> bytes:
        for event in _merged(events):
            self._on(event)
        return self._written()

    def end(self, events: Sequence[Event], failure: UpstreamError | None) -> bytes:
        self._mark_cut(events, failure is not None)
        for event in _merged(events[:-1]):
            self._on(event)
        ended = events[-1]
        assert isinstance(ended, ReplyEnded)
        self._ended(ended, failure)
        return self._written()

    def whole(
        self, message: ChatMessage, finish: str | None, usage: Usage | None, stop_word: str | None = None
    ) -> dict[str, Any]:
        events = list(_replayed(message, finish, usage))
        self._mark_cut(events, False)
        for event in events:
            self._on(event)
        assert self.final is not None
        return self.final

    # --- events to items -----------------------------------------------------------------------------------------

    def _on(self, event: Event) -> None:
        if isinstance(event, TextDelta | ReasoningText):
            self.texts.append(event.text)
            kind = "output_text" if isinstance(event, TextDelta) else "reasoning_text"
            self._emit(f"response.{kind}.delta", **self._place(), delta=event.text, **_logprobs(kind))
        elif isinstance(event, CallArguments):
            index = self.calls[event.index]
            item = self.output[index]
            item["arguments"] += event.text
            delta = {"item_id": item["id"], "output_index": index, "delta": event.text}
            self._emit("response.function_call_arguments.delta", **delta)
        elif isinstance(event, ReasoningStarted | TextStarted):
            self._open_block(event)
        elif isinstance(event, ReasoningEnded | TextEnded):
            self._close_block(event)
        elif isinstance(event, CallStarted):
            self.calls[event.index] = len(self.output)
            item = shapes.function_call(shapes.new_id("fc"), event.id, event.name, "", "in_progress")
            self._add(item)
        elif isinstance(event, CallEnded):
            index = self.calls[event.index]
            item = self.output[index]
            item["arguments"] = event.arguments
            item["status"] = "incomplete" if event.status == CallStatus.CUT_OFF else "completed"
            done = {"item_id": item["id"], "output_index": index, "name": event.name, "arguments": event.arguments}
            self._emit("response.function_call_arguments.done", **done)
            self._emit("response.output_item.done", output_index=index, item=item)
        elif isinstance(event, ReplyEnded):
            self._ended(event, None)

    def _open_block(self, event: ReasoningStarted | TextStarted) -> None:
        self.texts.clear()
        if isinstance(event, TextStarted):
            item, part = shapes.message(shapes.new_id("msg"), None, "in_progress"), shapes.output_text("")
        else:
            item, part = shapes.reasoning(shapes.new_id("rs"), None, "in_progress"), _reasoning_part("")
        self._add(item)
        self._emit("response.content_part.added", **self._place(), part=part)

    def _close_block(self, event: ReasoningEnded | TextEnded) -> None:
        index = len(self.output) - 1
        status = "incomplete" if event is self.cut else "completed"
        text = event.text
        if isinstance(event, TextEnded):
            item = self.output[index] = shapes.message(self.output[index]["id"], text, status)
            self._emit("response.output_text.done", **self._place(), text=text, logprobs=[])
            part = item["content"][0]
        else:
            item = self.output[index] = shapes.reasoning(self.output[index]["id"], text, status)
            self._emit("response.reasoning_text.done", **self._place(), text=text)
            part = item["content"][0]
        self._emit("response.content_part.done", **self._place(), part=part)
        self._emit("response.output_item.done", output_index=index, item=item)

    def _add(self, item: dict[str, Any]) -> None:
        self.output.append(item)
        self._emit("response.output_item.added", output_index=len(self.output) - 1, item=item)

    def _place(self) -> dict[str, Any]:
        """The open reasoning or message item's place (it is the last item: blocks come one at a time)."""
        index = len(self.output) - 1
        return {"item_id": self.output[index]["id"], "output_index": index, "content_index": 0}

    def _ended(self, ended: ReplyEnded, failure: UpstreamError | None) -> None:
        warnings = warnings_field(ended.warnings, self.notes)
        if failure is not None:
            # ResponseError's codes are OpenAI's own: the failure's kind (.upstream.FAILURE_KINDS) is its type
            error = {"code": "server_error", "message": failure.message, "type": failure.kind}
            self.final = self.envelope.response("failed", self.output, ended.usage, error=error, warnings=warnings)
            self._emit("response.failed", response=self.final)
        elif ended.finish == "length":
            self.final = self.envelope.response(
                "incomplete", self.output, ended.usage, incomplete="max_output_tokens", warnings=warnings
            )
            self._emit("response.incomplete", response=self.final)
        else:
            self.final = self.envelope.response("completed", self.output, ended.usage, warnings=warnings)
            self._emit("response.completed", response=self.final)

    def _mark_cut(self, events: Sequence[Event], failed: bool) -> None:
        """Which event closes the item the reply was cut off in: the reasoning or text block still open when the
        upstream stopped at its limit or broke off (the one the end closed, just before :class:`ReplyEnded`)."""
        ended = events[-1]
        assert isinstance(ended, ReplyEnded)
        last = events[-2] if len(events) > 1 else None
        cut = failed or ended.finish == "length"
        self.cut = last if cut and isinstance(last, ReasoningEnded | TextEnded) else None

    # --- the wire ------------------------------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        if self.out is None:
            return
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        self.out.append(f"event: {kind}\ndata: {body}\n\n".encode())

    def _written(self) -> bytes:
        if not self.out:
            return b""
        written, self.out = b"".join(self.out), []
        return written


def _reasoning_part(text: str) -> dict[str, Any]:
    return {"type": "reasoning_text", "text": text}


def _logprobs(kind: str) -> dict[str, Any]:
    return {"logprobs": []} if kind == "output_text" else {}


def _merged(events: Iterable[Event]) -> Iterable[Event]:
    """``events`` with each run of text added to one block merged into one event: one delta event per item per read
    of the upstream."""
    held: Event | None = None
    for event in events:
        if held is not None:
            if isinstance(event, TextDelta) and isinstance(held, TextDelta):
                held = TextDelta(held.text + event.text)
                continue
            if isinstance(event, ReasoningText) and isinstance(held, ReasoningText):
                held = ReasoningText(held.text + event.text)
                continue
            if isinstance(event, CallArguments) and isinstance(held, CallArguments) and event.index == held.index:
                held = CallArguments(held.index, held.text + event.text)
                continue
            yield held
        held = event
    if held is not None:
        yield held


def _replayed(message: ChatMessage, finish: str | None, usage: Usage | None) -> Iterable[Event]:
    """A parsed message as the events a stream of it would have made: reasoning, text, then each call."""
    if message.reasoning_content:
        yield ReasoningStarted()
        yield ReasoningText(message.reasoning_content)
        yield ReasoningEnded(message.reasoning_content)
    if message.content:
        yield TextStarted()
        yield TextDelta(message.content)
        yield TextEnded(message.content)
    for index, call in enumerate(message.tool_calls):
        yield CallStarted(index, call.id, call.name)
        yield CallArguments(index, call.arguments)
        yield CallEnded(index, call.id, call.name, call.arguments, call.status)
    yield ReplyEnded(finish, bool(message.tool_calls), usage, message.warnings)
