"""A reply as one typed event stream, whatever the wire format: reasoning, answer text and calls, each opened, added to
and closed, then the end.

The parser's deltas (:class:`~autoparser.message.MessageDelta`) say what the message gained; the wire formats want
more: Anthropic's content blocks and the Responses API's output items are opened and closed, in order, with an index,
and a client renders each as it arrives. :class:`ReplyEvents` turns deltas into that sequence once, and each
protocol's encoder (``chunks.ChatEncoder``, ``responses``, ``anthropic``) writes the same sequence in its own framing.

The blocks come one at a time: a reasoning block, a text block or a call is closed when another kind begins (or
another call), and everything open is closed at the end. Within one delta the order is reasoning, text, calls (the
order a model writes them; a delta is what one read of the upstream added). Reasoning after text (interleaved
thinking) opens a second reasoning block. A call's arguments are JSON text, streamed as it grows; its ``status``
(:class:`~autoparser.message.CallStatus`) comes with its close.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..message import CallStatus, MessageDelta, ParseWarning
from .chunks import Usage

__all__ = [
    "CallArguments",
    "CallEnded",
    "CallStarted",
    "Event",
    "ReasoningEnded",
    "ReasoningStarted",
    "ReasoningText",
    "ReplyEnded",
    "ReplyEvents",
    "TextDelta",
    "TextEnded",
    "TextStarted",
]


@dataclass(frozen=True, slots=True)
class ReasoningStarted:
    """A reasoning block opens (its text follows)."""


@dataclass(frozen=True, slots=True)
class ReasoningText:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningEnded:
    """The reasoning block closes; ``text``: all of it (what a signature is made from)."""

    text: str


@dataclass(frozen=True, slots=True)
class TextStarted:
    """An answer text block opens."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class TextEnded:
    """The text block closes; ``text``: all of it."""

    text: str


@dataclass(frozen=True, slots=True)
class CallStarted:
    """Call ``index`` (0, 1, ... in the reply) opens, with the id and the tool's name."""

    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class CallArguments:
    """More of call ``index``'s arguments (JSON text)."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class CallEnded:
    """Call ``index`` closes: all its ``arguments`` (a JSON object's text) and how much the model wrote of it."""

    index: int
    id: str
    name: str
    arguments: str
    status: CallStatus


@dataclass(frozen=True, slots=True)
class ReplyEnded:
    """The reply is over. ``finish``: the upstream's (``stop`` or ``length``; None when it broke off);
    ``has_calls``: whether the reply made calls; ``usage`` as the upstream counted it; ``warnings``: what of the
    reply was kept as content, or repaired; ``stop_word``: the stop string that ended it, where the upstream said
    (:attr:`~.upstream.Piece.stop_word`)."""

    finish: str | None
    has_calls: bool
    usage: Usage | None
    warnings: tuple[ParseWarning, ...] = ()
    stop_word: str | None = None


Event = (
    ReasoningStarted
    | ReasoningText
    | ReasoningEnded
    | TextStarted
    | TextDelta
    | TextEnded
    | CallStarted
    | CallArguments
    | CallEnded
    | ReplyEnded
)


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)
    ended: bool = False


class ReplyEvents:
    """Turns the parser's deltas into :data:`Event` s: :meth:`feed` with what each read added, :meth:`end` once."""

    def __init__(self) -> None:
        self._open: str | int | None = None  # "reasoning", "text", a call's index, or nothing
        self._text: list[str] = []  # the open reasoning or text block's text so far
        self._calls: dict[int, _Call] = {}
        self._warnings: list[ParseWarning] = []

    def feed(self, deltas: Iterable[MessageDelta]) -> list[Event]:
        events: list[Event] = []
        for delta in deltas:
            if delta.reasoning_content:
                self._block("reasoning", events)
                self._text.append(delta.reasoning_content)
                events.append(ReasoningText(delta.reasoning_content))
            if delta.content:
                self._block("text", events)
                self._text.append(delta.content)
                events.append(TextDelta(delta.content))
            for part in delta.tool_calls:
                call = self._calls.get(part.index)
                if call is None:
                    self._close(events)
                    call = self._calls[part.index] = _Call(part.id or f"call_{part.index}", part.name or "")
                    self._open = part.index
                    events.append(CallStarted(part.index, call.id, call.name))
                if part.arguments:
                    call.arguments.append(part.arguments)
                    events.append(CallArguments(part.index, part.arguments))
                if part.status is not None and not call.ended:
                    self._end_call(part.index, part.status, events)
            self._warnings.extend(delta.warnings)
        return events

    def end(
        self,
        finish: str | None,
        usage: Usage | None,
        deltas: Iterable[MessageDelta] = (),
        stop_word: str | None = None,
    ) -> list[Event]:
        """What the parser's last deltas (``finish()``) add, everything still open closed, and the end."""
        events = self.feed(deltas)
        self._close(events)
        for index, call in self._calls.items():
            if not call.ended:  # cannot happen once the parser finished; a call is never left open on the wire
                self._end_call(index, CallStatus.CUT_OFF, events)
        events.append(ReplyEnded(finish, bool(self._calls), usage, tuple(self._warnings), stop_word))
        return events

    def _block(self, kind: str, events: list[Event]) -> None:
        if self._open == kind:
            return
        self._close(events)
        self._open = kind
        events.append(ReasoningStarted() if kind == "reasoning" else TextStarted())

    def _close(self, events: list[Event]) -> None:
        opened, self._open = self._open, None
        if opened == "reasoning" or opened == "text":
            text = "".join(self._text)
            self._text.clear()
            events.append(ReasoningEnded(text) if opened == "reasoning" else TextEnded(text))
        elif isinstance(opened, int):
            call = self._calls[opened]
            if not call.ended:
                # another block begins: this call's arguments are done, though its status comes later; the wire
                # closes it now, with what the parser will say of it (complete unless it says otherwise)
                self._end_call(opened, CallStatus.COMPLETE, events)

    def _end_call(self, index: int, status: CallStatus, events: list[Event]) -> None:
        call = self._calls[index]
        call.ended = True
        if self._open == index:
            self._open = None
        events.append(CallEnded(index, call.id, call.name, "".join(call.arguments), status))
