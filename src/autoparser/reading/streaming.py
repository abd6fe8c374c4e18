"""Streaming: turn a growing model output into append-only :class:`MessageDelta` objects.

The output accumulates in one :class:`~autoparser.peg.TextBuffer` read by a :class:`~autoparser.peg.ParseSession`.
A feed then does one of two things:

1. **Advance the frontier.** When the last parse stopped because one primitive ran into the end of the input
   (an ``until()`` reading content, reasoning or a tagged value, a JSON value, a marker still arriving), and that
   primitive still needs more input after the new piece, the parse would come out the same with that open
   element longer (:meth:`ParseSession.advance`). The stream maps just the element's new text — content and
   reasoning trimmed as the mapper trims them, a string argument JSON-encoded, raw JSON arguments as written,
   anything shown only when complete not at all. No parse happens.
2. **Parse**, resuming after the last settled item. Settled top-level nodes are folded into a
   :class:`MessageBuilder` once; the unsettled tail is mapped on a fork of it; every field is emitted from the
   position it reached, so the cost is the tail's, not the whole output's.

Either way the stream only appends, and what it has sent always equals the mapping of a prefix parse, so after
``finish()`` the accumulated message equals ``parse(text)``. A call is announced (id and name) once, when the
grammar has committed to it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from ..message import (
    CallStatus,
    ChatMessage,
    MessageDelta,
    ParseWarning,
    ToolCall,
    ToolCallDelta,
    built_call,
    built_message,
    new_call_id,
)
from ..parser import tags
from ..parser.assemble import GeneratedParser
from ..peg import AstNode, ParseResult, TextBuffer
from .json_args import JsonView
from .leftovers import leftover_warnings
from .mapper import WHITESPACE, LiveCall, MessageBuilder, final_count, map_raw

__all__ = ["StreamParser", "parse_output"]

_encode_string = json.encoder.encode_basestring  # what json.dumps(s, ensure_ascii=False) does for a str
_HOLD = "hold"  # an open element whose text the message does not show while it is open
_SHOWN = (tags.CONTENT, tags.REASONING, tags.TOOL_ARG_STRING, tags.TOOL_ARGS)


def parse_output(generated: GeneratedParser, text: str, *, partial: bool = False) -> ChatMessage:
    """Parse ``text`` (model output only; the prompt's prefill is added here)."""
    regular = generated.regular
    if regular is not None and not partial:  # no markup, or regular calls: a few string scans (parser/regular.py)
        message = regular.read(generated.prefill, text)
        if message is not None:
            return message
    full = generated.prefill + text
    result = generated.parser.parse(full, partial=partial)
    if result.fail:  # a generated parser never fails on text (every item falls back to content); be safe anyway
        warning = ParseWarning(0, "the output could not be parsed; it was kept as content")
        return ChatMessage(content=text.strip(WHITESPACE), warnings=(warning,))
    offset = len(generated.prefill)
    message = _with_ids(map_raw(result, offset, generated.id_position, generated.convert_args)[0], generated.id_format)
    if partial:
        return message
    message = _request_warnings(generated, message, len(text))
    leftovers = leftover_warnings(generated.leftovers, result.nodes, result.text, offset)
    return dataclasses.replace(message, warnings=(*message.warnings, *leftovers)) if leftovers else message


def _with_ids(message: ChatMessage, id_format: str) -> ChatMessage:
    """Give every call the model wrote without an id a fresh one (one reply, one set of ids; see ToolCall)."""
    if all(call.id for call in message.tool_calls):
        return message
    # (built directly: dataclasses.replace() reads the fields' list on every call, a frozen __init__ sets each field
    # through object.__setattr__)
    calls = tuple(
        call if call.id else built_call(call.name, call.arguments, new_call_id(id_format), True, call.status)
        for call in message.tool_calls
    )
    return built_message(message.content, message.reasoning_content, calls, message.warnings, message.role)


def _request_warnings(generated: GeneratedParser, message: ChatMessage, end: int) -> ChatMessage:
    """Warnings about the request's constraints (the parser is lenient about them)."""
    extra = _request_warning_list(generated, bool(message.tool_calls), end)
    if not extra:
        return message
    return dataclasses.replace(message, warnings=(*message.warnings, *extra))


def _request_warning_list(generated: GeneratedParser, has_calls: bool, end: int) -> list[ParseWarning]:
    request = generated.request
    if request.tool_choice == "required" and request.tools and not has_calls:
        return [ParseWarning(end, "tool_choice is 'required' but the output has no tool call")]
    return []


class _Text:
    """Append-only text that joins its parts only when read (``+=`` on a growing str is quadratic)."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[str] = []

    def append(self, text: str) -> None:
        self._parts.append(text)

    @property
    def value(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""


class _TextField:
    """Content or reasoning as the stream emits it: raw pieces in, trimmed append-only text out.

    ``seen`` counts the raw characters already taken (emitted, or held as trailing whitespace in ``pending``):
    the message trims the field, so whitespace is only sent once text follows it, and leading whitespace never.
    """

    __slots__ = ("_base", "_index", "emitted", "pending", "pieces", "seen", "started")

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces  # the builder's settled raw pieces (they only grow)
        self._index = 0  # pieces[:_index] are wholly seen and start at raw offset... _base is where _index starts
        self._base = 0
        self.seen = 0
        self.pending: list[str] = []
        self.started = False
        self.emitted = _Text()

    def update(self, live: list[str]) -> str:
        """Take what the pieces gained; return the text to emit now."""
        if self._index == len(self.pieces) and not live:
            return ""
        return self.push(self.take(live))

    def take(self, live: list[str]) -> str:
        """The raw text not seen yet: the rest of the settled pieces, then the live (unsettled) pieces."""
        seen, base, pieces = self.seen, self._base, self.pieces
        out: list[str] = []
        for index in range(self._index, len(pieces)):
            piece = pieces[index]
            end = base + len(piece)
            if seen < end:
                out.append(piece[seen - base :])
                seen = end
            base = end
        self._index, self._base = len(pieces), base
        for piece in live:
            end = base + len(piece)
            if seen < end:
                out.append(piece[max(seen - base, 0) :])
                seen = end
            base = end
        self.seen = seen
        return "".join(out)

    def push(self, raw: str) -> str:
        """Take ``raw`` (already counted in ``seen``); return the text to emit now."""
        if not raw:
            return ""
        if not self.started:
            raw = raw.lstrip(WHITESPACE)
            if not raw:
                return ""
        core = raw.rstrip(WHITESPACE)
        if not core:
            self.pending.append(raw)
            return ""
        text = "".join(self.pending) + core if self.pending else core
        self.pending = [raw[len(core) :]] if len(core) < len(raw) else []
        self.started = True
        self.emitted.append(text)
        return text


@dataclass(slots=True)
class _CallOut:
    """One announced call: what was sent of it."""

    name: str
    id: str
    id_generated: bool
    sent: int = 0  # characters of ``arguments`` sent
    arguments: _Text = dataclasses.field(default_factory=_Text)
    status: CallStatus | None = None  # sent once the call is final
    view: JsonView | None = None  # raw JSON arguments still arriving: what a client is shown of them
    view_start: int = -1  # where in the source the viewed arguments start
    view_end: int = -1  # how far the view has read them

    def view_of(self, source: str, start: int, end: int) -> str:
        """The new text a client is shown of raw JSON arguments that now span ``source[start:end]``."""
        view = self.view
        if view is None or self.view_start != start or end < self.view_end:
            view = self.view = JsonView()
            self.view_start = start
            shown = view.feed(source[start:end])
            self.view_end = end
            return shown[self.sent :]
        before = view.shown
        fragment = view.feed(source[self.view_end : end]) if end > self.view_end else ""
        self.view_end = end
        if before < self.sent:
            # The client has more than this view showed: the arguments were sent read whole meanwhile (a parse found
            # the call complete, and the next one open again). Both are prefixes of one shown text: send the rest.
            fragment = fragment[self.sent - before :]
        return fragment


@dataclass(slots=True)
class _Leaf:
    """The open element at the frontier of the last parse and how its growth maps to the message."""

    kind: str  # tags.CONTENT, tags.REASONING, tags.TOOL_ARG_STRING, tags.TOOL_ARGS or _HOLD
    end: int  # where the element ends now
    call: int = -1  # the call an argument leaf belongs to
    pending: str = ""  # a string argument: trailing whitespace held back until the value goes on or ends


class StreamParser:
    """Feed model output piece by piece; get the deltas each piece adds (see the module docstring)."""

    __slots__ = (
        "_buffer",
        "_builder",
        "_calls",
        "_content",
        "_finished",
        "_folded",
        "_generated",
        "_leaf",
        "_open_call",
        "_open_value",
        "_reasoning",
        "_session",
        "_settled_calls",
        "_warned",
        "_warnings",
    )

    def __init__(self, generated: GeneratedParser) -> None:
        self._generated = generated
        self._buffer = TextBuffer(generated.prefill)
        self._session = generated.parser.session()
        self._builder = MessageBuilder(len(generated.prefill), generated.id_position, generated.convert_args)
        self._folded = 0  # top-level nodes folded into the builder
        self._content = _TextField(self._builder.content)
        self._reasoning = _TextField(self._builder.reasoning)
        self._calls: list[_CallOut] = []
        self._settled_calls = 0  # leading calls that are settled and wholly sent
        self._warned = 0  # builder warnings already sent
        self._warnings: list[ParseWarning] = []
        self._leaf: _Leaf | None = None
        self._open_call = False  # whether the output ends inside an announced call (the last one)
        self._open_value: AstNode | None = None  # the string value the last call's arguments end inside
        self._finished = False

    @property
    def message(self) -> ChatMessage:
        """Everything emitted so far, as one message (tool calls carry their stream ids; a call still arriving is
        cut off so far)."""
        calls = tuple(
            ToolCall(c.name, c.arguments.value, c.id, c.id_generated, c.status or CallStatus.CUT_OFF)
            for c in self._calls
        )
        return ChatMessage(
            "assistant", self._content.emitted.value, self._reasoning.emitted.value, calls, tuple(self._warnings)
        )

    def feed(self, piece: str) -> list[MessageDelta]:
        """Add ``piece`` to the output; return what the message gained."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if not isinstance(piece, str):
            raise TypeError(f"feed() needs a str, got {type(piece).__name__}")
        if not piece:
            return []
        self._buffer.append(piece)
        leaf = self._leaf
        if leaf is not None:
            end = self._session.advance(self._buffer)
            if end is not None:
                return self._grow(leaf, end)
            self._leaf = None
        return self._update(partial=True)

    def finish(self) -> list[MessageDelta]:
        """The output is complete: flush what was held back (closing braces, a trailing value)."""
        if self._finished:
            return []
        self._finished = True
        self._leaf = None
        return self._update(partial=False)

    # --- parsing -----------------------------------------------------------------------------------------------

    def _update(self, *, partial: bool) -> list[MessageDelta]:
        result = self._session.parse(self._buffer, partial=partial)
        if result.fail:  # see parse_output: cannot happen for generated parsers
            return self._unparsable(partial)
        nodes = result.nodes
        builder = self._builder
        folded = self._folded
        final = final_count(result, folded) if partial else len(nodes)
        while folded < final:
            builder.add(nodes[folded])
            folded += 1
        self._folded = folded
        self._open_call = False
        self._open_value = None
        if folded < len(nodes):
            live = builder.fork()
            live_calls: list[LiveCall] = []
            for node in nodes[folded:]:
                call = live.add_live(node)
                if call is not None:
                    live_calls.append(call)
                    self._open_call = node.is_partial
                    self._open_value = call.open_value
            live_content, live_reasoning = live.content, live.reasoning
        else:
            live_calls, live_content, live_reasoning = [], [], []
        content = self._content.update(live_content)
        reasoning = self._reasoning.update(live_reasoning)
        call_deltas = self._call_deltas(builder.calls, live_calls) if builder.calls or live_calls else []
        warnings: list[ParseWarning] = []
        if self._warned < len(builder.warnings):
            warnings = builder.warnings[self._warned :]
            self._warned = len(builder.warnings)
        if not partial:
            has_calls = bool(builder.calls)
            warnings += _request_warning_list(self._generated, has_calls, len(self._buffer) - self._builder.offset)
            warnings += leftover_warnings(self._generated.leftovers, nodes, result.text, self._builder.offset)
        if warnings:
            self._warnings.extend(warnings)
        self._leaf = self._open_leaf(result) if partial else None
        if not (content or reasoning or call_deltas or warnings):
            return []
        return [MessageDelta(content, reasoning, tuple(call_deltas), tuple(warnings))]

    def _unparsable(self, partial: bool) -> list[MessageDelta]:
        """The grammar failed outright (cannot happen for generated parsers): report it once, at the end."""
        if partial:
            return []
        warning = ParseWarning(0, "the output could not be parsed; it was kept as content")
        self._warnings.append(warning)
        return [MessageDelta(warnings=(warning,))]

    def _call_deltas(self, settled: list[ToolCall], live: list[LiveCall]) -> list[ToolCallDelta]:
        """What the calls gained; a call that became final (settled) sends its status with its last fragment."""
        deltas: list[ToolCallDelta] = []
        source = self._buffer.text
        for index in range(self._settled_calls, len(settled) + len(live)):
            status: CallStatus | None = None
            if index < len(settled):
                call = settled[index]
                name, call_id, text, span, status = call.name, call.id, call.arguments, None, call.status
            else:
                view = live[index - len(settled)]
                name, call_id, text, span = view.name, view.id, view.text, view.span
            if index == len(self._calls):
                out = _CallOut(name, call_id or new_call_id(self._generated.id_format), not call_id)
                self._calls.append(out)
                fragment = out.view_of(source, *span) if span is not None else text
                out.sent = len(fragment)
                out.arguments.append(fragment)
                out.status = status
                deltas.append(ToolCallDelta(index, out.id, name, fragment, status))
            else:
                out = self._calls[index]
                if name != out.name:  # a grammar never renames a call it announced; never re-send one
                    continue
                fragment = out.view_of(source, *span) if span is not None else text[out.sent :]
                if fragment:
                    out.sent += len(fragment)
                    out.arguments.append(fragment)
                if status is not None and out.status is None:
                    out.status = status
                else:
                    status = None
                if fragment or status is not None:
                    deltas.append(ToolCallDelta(index, arguments=fragment, status=status))
            if index < len(settled) and index == self._settled_calls:
                self._settled_calls = index + 1
        return deltas

    # --- the open element -----------------------------------------------------------------------------------------

    def _open_leaf(self, result: ParseResult) -> _Leaf | None:
        """How the element at the parse's frontier grows (None: a growth this stream cannot map; parse instead)."""
        frontier = result.frontier
        if frontier is None:
            return None
        end = frontier[2]
        node = _deepest_partial(result.nodes)
        if node is None or node.tag not in _SHOWN:
            return _Leaf(_HOLD, end)
        if node.end != end:
            return None
        if node.tag in (tags.CONTENT, tags.REASONING):
            if node.end <= self._builder.offset:
                # Text of the prompt's prefill only, which the mapper leaves out until the model's text joins it (then
                # all of it is content: reasoning_format "none"); a feed cannot grow that, it must parse.
                return None
            return _Leaf(node.tag, end)
        if not self._open_call:
            return _Leaf(_HOLD, end)  # arguments of a call not announced yet show nothing
        call = len(self._calls) - 1
        if node.tag == tags.TOOL_ARGS:
            if self._generated.convert_args is not None:
                return _Leaf(_HOLD, end)
            out = self._calls[call]
            if out.view is None or out.view_start != node.start or out.view_end != end:
                return None  # not the arguments this call shows: parse instead
            return _Leaf(tags.TOOL_ARGS, end, call)
        if node is not self._open_value:
            return _Leaf(_HOLD, end)  # a value the arguments do not show (a repeated argument name)
        value = node.text  # (the template's layout around a value is not part of the node)
        core = value.rstrip(WHITESPACE)
        if not core:
            return None  # only whitespace so far: the mapper shows none of it yet
        return _Leaf(tags.TOOL_ARG_STRING, end, call, pending=value[len(core) :])

    def _grow(self, leaf: _Leaf, end: int) -> list[MessageDelta]:
        """The open element now ends at ``end``: emit what the mapper would show of its new text."""
        start, leaf.end = leaf.end, end
        kind = leaf.kind
        if end <= start or kind == _HOLD:
            return []
        source = self._buffer.text
        if kind == tags.CONTENT or kind == tags.REASONING:
            field = self._content if kind == tags.CONTENT else self._reasoning
            raw = source[start:end]
            field.seen += len(raw)
            text = field.push(raw)
            if not text:
                return []
            return [MessageDelta(content=text) if kind == tags.CONTENT else MessageDelta(reasoning_content=text)]
        out = self._calls[leaf.call]
        if kind == tags.TOOL_ARGS:
            fragment = out.view_of(source, out.view_start, end)
        else:
            raw = source[start:end]
            core = raw.rstrip(WHITESPACE)
            if not core:
                leaf.pending += raw
                return []
            fragment = _encode_string(leaf.pending + core)[1:-1]
            leaf.pending = raw[len(core) :]
        if not fragment:
            return []
        out.sent += len(fragment)
        out.arguments.append(fragment)
        return [MessageDelta(tool_calls=(ToolCallDelta(leaf.call, arguments=fragment),))]


def _deepest_partial(nodes: list[AstNode]) -> AstNode | None:
    """The innermost tagged node on the partial spine at the end of the parse tree (where it stopped)."""
    if not nodes or not nodes[-1].is_partial:
        return None
    node = nodes[-1]
    leaf = node if node.tag is not None else None
    while node.children and node.children[-1].is_partial:
        node = node.children[-1]
        if node.tag is not None:
            leaf = node
    return leaf
