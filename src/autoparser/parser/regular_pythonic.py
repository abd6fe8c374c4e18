"""The regular pythonic calls: a list of keyword-argument calls with literal values, in an outer marker pair or bare
(LFM2: ``<|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>``), read by a regex and the
engine's own literal scanner where they are written as the templates write them.

The engine reads such a list with its item loop, the keyword-argument parser and then, per call, a second parse of
the argument text that turns it into JSON (:func:`.calls.python_literals.kwargs_to_json`). For the list as a model
writes it — ``[``, calls of declared tools separated by ``,``, each ``name(key=value, ...)`` with keys written once
and every value a literal, ``]``, the closing marker — none of that is needed: :class:`PythonicCalls` finds each
value's end with the engine's scanner (:func:`..peg.json_scan.scan_json`, the ``pythonic`` flavor) and converts it
with the engine's own :func:`.calls.python_literals.python_literal_to_json`, so the arguments are the JSON text the
engine writes, byte for byte. Anything else is left to the engine: another wrapper or a code fence, JSON calls in the
wrapper, an unknown tool, an empty list, positional arguments, a value that is not a literal (bare text, a string
whose inner quotes are not escaped), a key written twice, arguments separated by whitespace only, a trailing comma,
whitespace JSON does not know, anything after the list but whitespace (the end of turn, text, another list).

tests/parser/test_regular_calls.py compares the two on every bundled template that takes it, whole and cut.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..analysis.model import TemplateAnalysis, ToolFormatMode
from ..message import ToolCall, built_call, new_call_id
from ..peg.json_scan import OK, scan_json
from .calls.python_literals import python_literal_to_json
from .calls.tools_pythonic import COMMON_WRAPPERS, split_wrapper
from .regular_calls import STRICT_JSON, first_opener
from .request import ParseRequest

__all__ = ["PythonicCalls", "pythonic_calls"]

_WS = "[ \t\r\n]*"  # what a JSON reader skips (the engine's space() skips more: those replies are its own)
_NAME = r"([A-Za-z_][\w.-]*)\("  # a tool's name (checked against the declared ones) and its parenthesis
_ARGUMENT = re.compile(rf"([A-Za-z_][A-Za-z0-9_]*){_WS}={_WS}")  # the engine's IDENTIFIER, then "="
_AFTER = re.compile(rf"{_WS}([,)])(?:{_WS})")  # after a value: the next argument's comma or the call's end
_NEXT = re.compile(rf"{_WS},{_WS}{_NAME}{_WS}")
_KEYWORDS = {"True": "true", "False": "false", "None": "null", "true": "true", "false": "false", "null": "null"}
_encode_string = json.encoder.encode_basestring  # json.dumps(s, ensure_ascii=False) for a str


@dataclass(frozen=True, slots=True)
class PythonicCalls:
    """A ``[call, ...]`` list after one of ``ends``' markers ("": the bare list), the calls to ``names``."""

    openers: tuple[str, ...]  # where the calls may start: "[" and the markers (the first found)
    head: re.Pattern[str]  # the marker (group 1, may be empty), "[" and the first call's name (group 2) and "("
    ends: dict[str, re.Pattern[str]]  # by marker: from the list's last ")" to the end of the text
    names: frozenset[str]
    id_format: str = "openai"

    def find(self, text: str) -> int:
        """Where the first opener is in ``text`` (-1: none)."""
        return first_opener(text, self.openers)

    def read(self, text: str, at: int) -> tuple[ToolCall, ...] | None:
        """The calls of ``text[at:]`` (which starts with an opener), or None where it is not such a list alone."""
        found = self.head.match(text, at)
        if found is None:
            return None
        end = self.ends.get(found.group(1))
        if end is None:
            return None
        names, calls = self.names, []
        name, pos = found.group(2), found.end()
        while True:
            if name not in names:
                return None
            read = _arguments(text, pos)
            if read is None:
                return None
            arguments, pos = read
            calls.append(built_call(name, arguments, new_call_id(self.id_format), True))
            after = _NEXT.match(text, pos)
            if after is None:
                return tuple(calls) if end.fullmatch(text, pos) is not None else None
            name, pos = after.group(1), after.end()


def _arguments(text: str, pos: int) -> tuple[str, int] | None:
    """The JSON of the keyword arguments at ``pos`` (after the call's ``(`` and whitespace) and where the call's
    ``)`` ends, as the engine converts them (None where it reads them otherwise, or warns)."""
    if text.startswith(")", pos):
        return "{}", pos + 1
    members: list[str] = []
    keys: set[str] = set()
    containers = False
    while True:
        found = _ARGUMENT.match(text, pos)
        if found is None:
            return None
        key = found.group(1)
        if key in keys:
            return None
        keys.add(key)
        start = found.end()
        status, stop = scan_json(text, start, "value", "pythonic", False)
        if status != OK:
            return None
        value = text[start:stop]
        first = value[0]
        if first == '"' or first == "'":
            value = _encode_string(value[1:-1]) if "\\" not in value else python_literal_to_json(value)
        elif first == "[" or first == "{":
            value, containers = python_literal_to_json(value), True
        else:
            value = _KEYWORDS.get(value, value)  # (a number: JSON's syntax, as the scanner read it)
        members.append(f'"{key}": {value}')
        after = _AFTER.match(text, stop)
        if after is None:
            return None
        pos = after.end()
        if after.group(1) == ")":
            break
    arguments = "{" + ", ".join(members) + "}"
    if containers:
        try:  # (what the engine checks of converted arguments: strict JSON, no key twice)
            STRICT_JSON.decode(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments, pos


def pythonic_calls(analysis: TemplateAnalysis, request: ParseRequest) -> PythonicCalls | None:
    """The regular calls of a template whose calls are a pythonic list, bare or in an outer marker pair, with quoted
    strings (None otherwise)."""
    tools = analysis.tools
    fmt = tools.format
    if not (request.tools_enabled and fmt.mode is ToolFormatMode.PYTHONIC and tools.pythonic.quote):
        return None
    wrapper = split_wrapper(fmt)
    if wrapper.fence is not None or wrapper.irregular is not None or not (wrapper.open or fmt.tools_array_wrapped):
        return None  # (a fence, words, or calls one per line: the engine's)
    pairs = dict(COMMON_WRAPPERS)
    if wrapper.open:
        pairs = {wrapper.open: wrapper.close, **pairs}
    # After the list: whitespace, the closing marker (which may be missing), whitespace; after a bare list, whitespace.
    ends = {"": re.compile(rf"{_WS}\]{_WS}")}
    for opener, closer in pairs.items():
        ends[opener] = re.compile(rf"{_WS}\]{_WS}(?:{re.escape(closer)}{_WS})?" if closer else rf"{_WS}\]{_WS}")
    markers = "|".join(re.escape(opener) for opener in sorted(pairs, key=len, reverse=True))
    head = re.compile(rf"((?:{markers})?){_WS}\[{_WS}{_NAME}{_WS}")
    names = frozenset(tool.name for tool in request.tools)
    return PythonicCalls(("[", *pairs), head, ends, names, analysis.id_format)
