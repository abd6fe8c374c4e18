"""Streaming: turn a growing model output into append-only :class:`MessageDelta` objects.

A feed normally re-parses the output in partial mode and emits what the message gained (the mapper is
prefix-monotone, so the gain is always an extension; the stream never retracts what it sent). That costs time
proportional to the whole output, so most feeds take a **fast path** instead: when the parse ended inside an open
text element — reasoning or content read by ``until()``, a string argument value, or a JSON string inside raw JSON
arguments — a new piece that contains none of that element's delimiters (nor completes one) can only extend it.
The stream then appends the piece to that element without parsing, applying the same whitespace rules as the
mapper, so a 20 KB output streamed one character per feed costs O(n), not O(n²).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from dataclasses import dataclass

from ..message import ChatMessage, MessageDelta, ParseWarning, ToolCall, ToolCallDelta, new_call_id
from ..peg import AstNode, ParseResult
from . import tags
from .assemble import GeneratedParser
from .mapper import WHITESPACE, map_raw, strip_leading_break

__all__ = ["StreamParser", "parse_output"]

# Inside a JSON string: an escape (complete), a quote (ends the string), or a backslash cut off at the end.
_JSON_STRING_EVENT = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{0,4})?|"')
_HOLD = "hold"  # an open element whose text the message does not show yet
_encode_string = json.encoder.encode_basestring  # what json.dumps(s, ensure_ascii=False) does for a str
_SPACE_CHARS = frozenset(" \t\r\n")
_QUOTE_OR_ESCAPE = re.compile(r'\\.|"', re.DOTALL)


def parse_output(generated: GeneratedParser, text: str, *, partial: bool = False) -> ChatMessage:
    """Parse ``text`` (model output only; the prompt's prefill is added here)."""
    message = _parse(generated, generated.prefill + text, partial)[0]
    if partial:
        return message
    return _request_warnings(generated, message, len(text))


def _request_warnings(generated: GeneratedParser, message: ChatMessage, end: int) -> ChatMessage:
    """Warnings about the request's constraints (the parser is lenient about them)."""
    request = generated.request
    extra: list[ParseWarning] = []
    if request.tool_choice == "required" and request.tools and not message.tool_calls:
        extra.append(ParseWarning(end, "tool_choice is 'required' but the output has no tool call"))
    if not extra:
        return message
    return dataclasses.replace(message, warnings=(*message.warnings, *extra))


def _parse(generated: GeneratedParser, full: str, partial: bool) -> tuple[ChatMessage, str, str, ParseResult]:
    result = generated.parser.parse(full, partial=partial)
    if result.fail:  # cannot happen for generated parsers (every item falls back to content); be safe anyway
        text = full[len(generated.prefill) :]
        return ChatMessage(content=text), text, "", result
    message, content, reasoning = map_raw(result, len(generated.prefill), generated.id_position, generated.convert_args)
    return message, content, reasoning, result


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


@dataclass(slots=True)
class _OpenLeaf:
    """The text element the last parse ended in, and how new text extends the message through it."""

    kind: str  # tags.CONTENT, tags.REASONING, tags.TOOL_ARG_STRING or tags.TOOL_ARGS (inside a JSON string)
    delimiters: tuple[str, ...]  # until() delimiters; empty for JSON strings
    stops: re.Pattern[str]  # first characters of the delimiters: a piece without them cannot start one
    withheld: str  # text after the element that may still become a delimiter (not yet part of anything)
    tail: str  # whitespace at the element's end, not emitted yet (the mapper trims it unless text follows)
    started: bool  # whether the field already shows text (else leading whitespace is dropped)
    call_index: int = -1


class StreamParser:
    """Feed model output piece by piece; get the deltas each piece adds."""

    __slots__ = (
        "_arguments",
        "_calls",
        "_content",
        "_finished",
        "_generated",
        "_ids",
        "_leaf",
        "_pieces",
        "_reasoning",
    )

    def __init__(self, generated: GeneratedParser) -> None:
        self._generated = generated
        self._pieces: list[str] = [generated.prefill]
        self._content = _Text()
        self._reasoning = _Text()
        self._calls: list[ToolCall] = []
        self._arguments: list[_Text] = []
        self._ids: list[str] = []
        self._leaf: _OpenLeaf | None = None
        self._finished = False

    @property
    def message(self) -> ChatMessage:
        """Everything emitted so far, as one message (tool calls carry their stream ids)."""
        calls = tuple(
            ToolCall(c.name, a.value, i) for c, a, i in zip(self._calls, self._arguments, self._ids, strict=True)
        )
        return ChatMessage("assistant", self._content.value, self._reasoning.value, calls)

    def feed(self, piece: str) -> list[MessageDelta]:
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if not piece:
            return []
        self._pieces.append(piece)
        if self._leaf is not None:
            deltas = self._extend(self._leaf, piece)
            if deltas is not None:
                return deltas
        return self._update(partial=True)

    def finish(self) -> list[MessageDelta]:
        """The output is complete: flush what was held back (closing braces, a trailing value)."""
        if self._finished:
            return []
        self._finished = True
        return self._update(partial=False)

    # --- slow path: parse everything ---------------------------------------------------------------------------

    def _update(self, *, partial: bool) -> list[MessageDelta]:
        full = "".join(self._pieces)
        self._pieces = [full]
        message, raw_content, raw_reasoning, result = _parse(self._generated, full, partial)
        content = _gain(self._content.value, message.content)
        reasoning = _gain(self._reasoning.value, message.reasoning_content)
        self._content.append(content)
        self._reasoning.append(reasoning)
        call_deltas: list[ToolCallDelta] = []
        for index, call in enumerate(message.tool_calls):
            if index < len(self._calls):
                if call.name != self._calls[index].name:
                    continue
                extra = _gain(self._arguments[index].value, call.arguments)
                if extra:
                    self._arguments[index].append(extra)
                    call_deltas.append(ToolCallDelta(index, arguments=extra))
            elif index == len(self._calls):
                call_id = call.id or new_call_id()
                self._calls.append(call)
                self._arguments.append(_Text())
                self._arguments[-1].append(call.arguments)
                self._ids.append(call_id)
                call_deltas.append(ToolCallDelta(index, call_id, call.name, call.arguments))
        warnings = () if partial else _request_warnings(self._generated, message, len(full)).warnings
        synced = message.content == self._content.value and message.reasoning_content == self._reasoning.value
        synced = synced and len(message.tool_calls) == len(self._calls)
        if synced and self._calls:
            synced = message.tool_calls[-1].arguments == self._arguments[-1].value
        self._leaf = self._open_leaf(result, full, raw_content, raw_reasoning) if partial and synced else None
        if not (content or reasoning or call_deltas or warnings):
            return []
        return [MessageDelta(content, reasoning, tuple(call_deltas), tuple(warnings))]

    def _open_leaf(self, result: ParseResult, full: str, raw_content: str, raw_reasoning: str) -> _OpenLeaf | None:
        """The element a fast path can extend, if the parse ended inside one (see the module docstring)."""
        node = _last_leaf(result)
        if node is None or not node.is_partial or node.end == node.start:
            # An empty element may still be preempted by what precedes it (a repeated opening marker, say).
            return None
        withheld = full[node.end :]
        if result.open_until is not None and result.open_until[0] == node.start:
            delimiters = result.open_until[1]
            if node.tag == tags.CONTENT:
                return _text_leaf(tags.CONTENT, delimiters, withheld, raw_content)
            if node.tag == tags.REASONING:
                return _text_leaf(tags.REASONING, delimiters, withheld, raw_reasoning)
            if node.tag == tags.TOOL_ARG_STRING and self._calls:
                value = node.text
                trimmed = strip_leading_break(value)
                if not trimmed.strip(WHITESPACE):
                    return None  # the leading line break is not settled yet
                core = trimmed.rstrip(WHITESPACE)
                tail = trimmed[len(core) :]
                index = len(self._calls) - 1
                return _OpenLeaf(tags.TOOL_ARG_STRING, delimiters, _stops(delimiters), withheld, tail, True, index)
            return None
        if node.tag == tags.TOOL_ARGS and self._generated.convert_args is not None and result.open_until is not None:
            # Arguments in a non-JSON syntax are shown only when complete: text that stays inside an open until()
            # within them changes nothing, so it needs no parse.
            start, delimiters = result.open_until
            if delimiters and node.start <= start < node.end:
                return _OpenLeaf(_HOLD, delimiters, _stops(delimiters), withheld, "", True)
            return None
        if node.tag == tags.TOOL_ARGS and self._generated.convert_args is None and self._calls and not withheld:
            raw = node.text
            quotes = _QUOTE_OR_ESCAPE.findall(raw).count('"')  # escapes are matched whole, so never counted
            if quotes % 2 == 0 or raw.endswith("\\"):
                return None  # not inside a JSON string (or an escape is cut off)
            core = raw.rstrip(WHITESPACE)
            return _OpenLeaf(tags.TOOL_ARGS, (), _NEVER, "", raw[len(core) :], True, len(self._calls) - 1)
        return None

    # --- fast path ---------------------------------------------------------------------------------------------

    def _extend(self, leaf: _OpenLeaf, piece: str) -> list[MessageDelta] | None:
        """Append ``piece`` to the open element, or None if it may change the structure (then parse)."""
        if leaf.kind == tags.TOOL_ARGS:
            region = leaf.withheld + piece
            cut = len(region)
            for event in _JSON_STRING_EVENT.finditer(region):
                token = event.group()
                if token == '"':
                    return None  # the string ends: structure follows
                if token == "\\" or (token.startswith("\\u") and len(token) < 6):
                    if event.end() != len(region):
                        return None  # an invalid escape: let the parser decide
                    cut = event.start()  # an escape cut off at the end: hold it back
            consumed, leaf.withheld = region[:cut], region[cut:]
        elif not leaf.withheld and leaf.stops.search(piece) is None:
            consumed = piece  # the common case: nothing here can start a delimiter
        else:
            region = leaf.withheld + piece
            if any(d in region for d in leaf.delimiters):
                return None
            keep = _delimiter_prefix_len(region, leaf.delimiters)
            consumed, leaf.withheld = region[: len(region) - keep], region[len(region) - keep :]
        if not consumed or leaf.kind == _HOLD:
            return []
        if consumed[-1] in _SPACE_CHARS:
            core = consumed.rstrip(WHITESPACE)
            if not core or not core.strip(WHITESPACE):
                leaf.tail += consumed
                return []
            trailing = consumed[len(core) :]
        else:
            core, trailing = consumed, ""
        text = leaf.tail + core if leaf.tail else core
        if not leaf.started:
            text = text.lstrip(WHITESPACE)
            leaf.started = True
        leaf.tail = trailing
        return [self._emit(leaf, text)]

    def _emit(self, leaf: _OpenLeaf, text: str) -> MessageDelta:
        if leaf.kind == tags.CONTENT:
            self._content.append(text)
            return MessageDelta(content=text)
        if leaf.kind == tags.REASONING:
            self._reasoning.append(text)
            return MessageDelta(reasoning_content=text)
        fragment = _encode_string(text)[1:-1] if leaf.kind == tags.TOOL_ARG_STRING else text
        self._arguments[leaf.call_index].append(fragment)
        return MessageDelta(tool_calls=(ToolCallDelta(leaf.call_index, arguments=fragment),))


def _text_leaf(kind: str, delimiters: tuple[str, ...], withheld: str, raw: str) -> _OpenLeaf:
    core = raw.rstrip(WHITESPACE)
    started = bool(core.strip(WHITESPACE))
    return _OpenLeaf(kind, delimiters, _stops(delimiters), withheld, raw[len(core) :] if started else raw, started)


_NEVER = re.compile(r"(?!)")


@functools.lru_cache(maxsize=512)
def _stops(delimiters: tuple[str, ...]) -> re.Pattern[str]:
    if not delimiters:
        return _NEVER
    return re.compile("[" + "".join(re.escape(c) for c in sorted({d[0] for d in delimiters})) + "]")


def _last_leaf(result: ParseResult) -> AstNode | None:
    """The innermost tagged node at the end of the parse tree (where a partial parse stopped)."""
    if not result.nodes:
        return None
    node = result.nodes[-1]
    leaf = node if node.tag is not None else None
    while node.children and node.children[-1].end == node.end:
        node = node.children[-1]
        if node.tag is not None:
            leaf = node
    return leaf


def _delimiter_prefix_len(text: str, delimiters: tuple[str, ...]) -> int:
    """Length of the longest end of ``text`` that is a proper prefix of a delimiter."""
    longest = max(map(len, delimiters), default=0)
    for k in range(min(len(text), longest - 1), 0, -1):
        tail = text[-k:]
        if any(d.startswith(tail) for d in delimiters):
            return k
    return 0


def _gain(sent: str, now: str) -> str:
    """What ``now`` adds to ``sent`` ("" if it does not extend it)."""
    if now.startswith(sent):
        return now[len(sent) :]
    return ""
