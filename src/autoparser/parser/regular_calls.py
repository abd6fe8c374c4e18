"""The regular calls: JSON calls each wrapped in an opener and a closer, a JSON array of them after a section opener,
or calls that name their tool in markup with JSON arguments, read by a regex and ``json`` where they are written as
the template writes them.

The most common call replies (Hermes, Qwen: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``;
Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "a1B2c3D4e"}]``; DeepSeek V3.1:
``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>``)
hold nothing the engine needs its item loop for: an opener, JSON objects of the template's members in its order
(or a name and a JSON object), a closer or the section's end, whitespace. :class:`WrappedCalls` reads exactly that,
for the short path of :mod:`.regular` (which checks the text before the opener as it checks a plain answer), and
leaves anything else to the engine: another member or member order, a tool the request does not declare, a name
with an escape, an id that is not alphanumeric, arguments that are not an object or not strict JSON without
duplicate keys (``NaN``, a raw control character, a key written twice, at any depth), anything but whitespace
between or after the calls (the end of turn, a closer, more text).

What it reads is what the engine reads: each call's arguments as written (the JSON value's own text), its id as
written or generated in the template's format, status complete, no warnings. tests/parser/test_regular_calls.py
compares the two on every bundled template that takes it, whole and cut.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Protocol

from ..analysis.model import CallIdPosition, TemplateAnalysis, ToolFormatMode
from ..message import ToolCall, built_call, new_call_id
from .calls.tools_json import ARGUMENT_KEYS
from .markers import core, is_word_marker
from .request import ParseRequest

__all__ = ["STRICT_JSON", "RegularCalls", "WrappedCalls", "first_opener", "wrapped_calls"]

_WS = "[ \t\r\n]*"  # JSON's whitespace (what ``json`` skips, and no more)
# A special token before bare calls (Llama 3's `<|python_tag|>`): what the engine reads there (tools_json.SPECIAL_TOKEN)
_TOKEN = rf"(?:<\|[a-z_]+\|>{_WS})?"


class RegularCalls(Protocol):
    """What :class:`.regular.RegularReply` asks of the calls a reply may end with."""

    def find(self, text: str) -> int:
        """Where the calls would start in ``text`` (-1: nowhere): the answer before it must be plain."""
        ...

    def read(self, text: str, at: int) -> tuple[ToolCall, ...] | None:
        """The calls of ``text[at:]``, or None where it is not such calls alone (the engine's to read)."""
        ...


def first_opener(text: str, openers: tuple[str, ...]) -> int:
    """Where the first of ``openers`` found in ``text`` starts (-1: none of them)."""
    found = -1
    for opener in openers:
        at = text.find(opener)
        if at >= 0 and (found < 0 or at < found):
            found = at
    return found


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("duplicate key")  # (the engine keeps the first and warns: its reading, not this one)
    return found


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


#: Strict JSON: no raw control characters in strings, no duplicate keys, no NaN or Infinity (the short paths' reading
#: of arguments; anything else is the engine's, which warns or repairs).
STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique, parse_constant=_no_constant)


@dataclass(frozen=True, slots=True)
class WrappedCalls:
    """Call objects ``{"name_key": "NAME", "args_key": {...}}`` (then ``"id_key": "ID"`` where the template writes
    one) to ``names`` (the declared tools), JSON whitespace where JSON and the engine allow it: each in an
    opener/closer pair, one after another with whitespace between (``close`` None), a JSON array after a section
    opener (``close``: the array's end), or bare objects or a bare array (``openers``: their bracket, and the
    special token a model may write before them)."""

    openers: tuple[str, ...]  # where the calls may start (the first found)
    first: re.Pattern[str]  # from the opener to the first call's arguments; group 1: the name
    then: re.Pattern[str]  # from the end of a call to the next one's arguments; group 1: the name
    tail: re.Pattern[str]  # from the end of the arguments to the end of the call; group 1: the id, if written
    close: re.Pattern[str] | None  # the end of an array of calls (None: the text ends after a call)
    names: frozenset[str]
    id_format: str = "openai"

    def find(self, text: str) -> int:
        """Where the first opener is in ``text`` (-1: none)."""
        return first_opener(text, self.openers)

    def read(self, text: str, at: int) -> tuple[ToolCall, ...] | None:
        """The calls of ``text[at:]`` (which starts with the opener), or None where it is not such calls alone."""
        calls: list[ToolCall] = []
        end = len(text)
        head, tail, close, names = self.first, self.tail, self.close, self.names
        while True:
            found = head.match(text, at)
            if found is None or found.group(1) not in names:
                return None
            start = found.end()
            if text[start : start + 1] != "{":
                return None
            try:
                stop = STRICT_JSON.raw_decode(text, start)[1]
            except (ValueError, RecursionError):
                return None
            closed = tail.match(text, stop)
            if closed is None:
                return None
            written = closed.group(1) if closed.re.groups else None
            call_id = written or new_call_id(self.id_format)
            calls.append(built_call(found.group(1), text[start:stop], call_id, not written))
            at = closed.end()
            if close is None:
                if at == end:
                    return tuple(calls)
            elif close.fullmatch(text, at) is not None:
                return tuple(calls)
            head = self.then


def wrapped_calls(analysis: TemplateAnalysis, request: ParseRequest) -> WrappedCalls | None:
    """The regular calls of a template whose calls are JSON objects each in an opener/closer pair, a JSON array after
    a section opener, or bare objects or a bare array (None otherwise)."""
    fmt = analysis.tools.format
    if fmt.mode is ToolFormatMode.TAG_WITH_JSON:
        return _named_calls(analysis, request)
    opener, closer, section = core(fmt.per_call_start), core(fmt.per_call_end), core(fmt.section_start)
    if not (
        request.tools_enabled
        and fmt.mode is ToolFormatMode.JSON_NATIVE
        and not core(fmt.section_end)
        and not fmt.fun_name_is_key
        and not fmt.gen_id_field
        and not fmt.stated_word
        and fmt.id_field in ("", "id")
        and "." not in fmt.name_field + fmt.args_field  # (a nested function object)
        and fmt.parameter_order[:2] == (fmt.name_field, fmt.args_field)
        and fmt.parameter_order[2:] in ((), (fmt.id_field,))
    ):
        return None
    # (the arguments under the template's key or the ecosystem's others, all read alike: tools_json.ARGUMENT_KEYS)
    keys = "|".join(re.escape(json.dumps(key)) for key in dict.fromkeys((fmt.args_field, *ARGUMENT_KEYS)))
    name = re.escape(json.dumps(fmt.name_field))
    members = rf'\{{{_WS}{name}{_WS}:{_WS}"([^"\\\x00-\x1f]*)"{_WS},{_WS}(?:{keys}){_WS}:{_WS}'
    end = rf"{_WS}\}}"
    if fmt.parameter_order[2:]:
        end = rf'{_WS}(?:,{_WS}{re.escape(json.dumps(fmt.id_field))}{_WS}:{_WS}"([A-Za-z0-9]+)")?{end}'
    names = _names(request)
    if opener and closer and not section and not fmt.tools_array_wrapped and not fmt.implied_end:
        first = re.compile(rf"{re.escape(opener)}{_WS}{members}")
        tail = re.compile(rf"{end}{_WS}{re.escape(closer)}{_WS}")
        return WrappedCalls((opener,), first, first, tail, None, names, analysis.id_format)
    if section and not opener and not closer and fmt.tools_array_wrapped and not is_word_marker(section):
        # (a plain word, FireFunction's `functools`, marks calls only at a word's start: the engine's to read)
        first = re.compile(rf"{re.escape(section)}{_WS}\[{_WS}{members}")
        then = re.compile(rf"{_WS},{_WS}{members}")
        close = re.compile(rf"{_WS}\]{_WS}")
        return WrappedCalls((section,), first, then, re.compile(end), close, names, analysis.id_format)
    if not (section or opener or closer or fmt.implied_end):
        # No markers (Llama 3.x): bare objects one after another, `,` or `;` between them as the engine allows, or
        # a bare array where the template writes one; a special token (`<|python_tag|>`) may open each object or
        # the array. Only whitespace may follow them.
        if fmt.tools_array_wrapped:
            # (``[`` then at most a space: after text the engine takes ``[\t{`` or ``[\n{`` for text and a bare call)
            first = re.compile(rf"{_TOKEN}\[ ?{members}")
            then = re.compile(rf"{_WS},{_WS}{members}")
            close = re.compile(rf"{_WS}\]{_WS}")
            return WrappedCalls(("[", "<|"), first, then, re.compile(end), close, names, analysis.id_format)
        first = re.compile(rf"{_TOKEN}{members}")
        then = re.compile(rf"{_WS}(?:[,;]{_WS})?{_TOKEN}{members}")
        return WrappedCalls(("{", "<|"), first, then, re.compile(end), re.compile(_WS), names, analysis.id_format)
    return None


def _named_calls(analysis: TemplateAnalysis, request: ParseRequest) -> WrappedCalls | None:
    """Calls that name their tool in markup, the arguments JSON after it, in a section (DeepSeek V3.1:
    ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>``),
    written with no whitespace inside a call, as the template writes them (anything else: the engine's)."""
    fmt, function = analysis.tools.format, analysis.tools.function
    section, section_end = core(fmt.section_start), core(fmt.section_end)
    opener, closer, suffix = core(fmt.per_call_start), core(fmt.per_call_end), core(function.name_suffix)
    if not (
        request.tools_enabled
        and fmt.mode is ToolFormatMode.TAG_WITH_JSON
        and section
        and section_end
        and opener
        and closer
        and suffix
        and not fmt.tools_array_wrapped
        and not fmt.implied_end
        and not fmt.stated_word
        and not function.name_prefix
        and not function.close
        and analysis.tools.call_id.position is CallIdPosition.NONE
        and fmt.per_call_start == opener
        and fmt.per_call_end == closer
        and function.name_suffix == suffix
    ):
        return None
    call = rf"{re.escape(opener)}([\w.-]+){re.escape(suffix)}"
    return WrappedCalls(
        (section,),
        re.compile(re.escape(section) + call),
        re.compile(_WS + call),
        re.compile(re.escape(closer)),
        re.compile(rf"{_WS}{re.escape(section_end)}{_WS}"),
        _names(request),
        analysis.id_format,
    )


def _names(request: ParseRequest) -> frozenset[str]:
    return frozenset(tool.name for tool in request.tools)
