"""The regular tagged calls: the name and each argument in markup, each call in a per-call wrapper (Qwen3-Coder and
Qwen3.5: ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>``; GLM:
``<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>``; Seed-OSS, Nemotron, StepFun) or all
in one section (MiniMax-M2: ``<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="KEY">VALUE</parameter>…``),
read by string scans where they are written as the engine reads them without a repair.

The reading follows the engine's own (parser/calls/tools_tagged.py, the call sections of parser/assemble.py) step
by step: whitespace where the engine skips it (``space()``), a declared tool's name, each argument a declared
parameter named once, the layout before a value (the engine's :func:`~.calls.tools_tagged.value_layouts`), the value
up to the first of the engine's value stops (:func:`~.calls.tools_tagged.argument_stops`), then its end tag. The value
is typed as the mapper types it (:func:`~.calls.tagged_values.decode_value`). Anything else is left to the engine:
an undeclared tool or parameter, a parameter twice, a value that is no value of its schema's types (a misfit the
engine warns about), an object or array value or parameter (read as JSON first there), a value without its end tag,
markup or text between or after the calls, a section's end left out, a call id. tests/parser/test_regular_calls.py
compares the two on every bundled template that takes this path, whole, cut and damaged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring

from ..analysis.formats import GENERIC
from ..analysis.model import CallIdPosition, TemplateAnalysis, ToolFormatMode
from ..message import ToolCall, built_call, new_call_id
from . import tags
from .calls.tagged_values import decode_value, json_types, misfit, value_tag
from .calls.tools_tagged import argument_name_end, argument_stops, value_layouts
from .markers import core
from .request import ParseRequest

__all__ = ["TaggedCalls", "regular_tagged_calls"]

_SPACE = " \t\n\r\x0b\x0c"  # what the engine's space() skips (peg/engine.py)
_CONTAINER = "container"  # the tag of an object or array parameter (left to the engine)
_NAME = re.compile(r"[a-zA-Z0-9_.:-]+")  # what a function name is made of where no suffix ends it (tools_tagged)


_SPACES = re.compile(r"[ \t\n\r\x0b\x0c]*")  # what the engine's space() skips (peg/engine.py)


def _skip(text: str, at: int) -> int:
    """Past the whitespace the engine's ``space()`` skips at ``at``."""
    return _SPACES.match(text, at).end()  # type: ignore[union-attr]  # (a `*` pattern always matches)


@dataclass(frozen=True, slots=True)
class TaggedCalls:
    """The markers' cores (``""``: none), the value layouts and stops, and each declared tool's parameters with the
    tag their values are typed by (an object or array parameter's value is the engine's to read: JSON first)."""

    opener: str  # the per-call start (`<tool_call>`; "": the calls are in a section)
    closer: str  # the per-call end (`</tool_call>`)
    section: str  # the section's start, where calls have no per-call markers (`<minimax:tool_call>`; "": none)
    section_close: str  # the section's end
    name_prefix: str  # before the function's name (`<function=`)
    name_suffix: str  # after it (`>`; "": the name ends at a character no name holds)
    key_prefix: str  # before an argument's name (`<parameter=`, `<arg_key>`)
    key_end: str  # what ends an argument's name (`>`, `</arg_key>`)
    key_suffix: str  # the argument name's end marker where a value prefix follows it ("": none)
    value_prefix: str  # before the value (`<arg_value>`)
    value_suffix: str  # the value's end tag (`</parameter>`)
    function_close: str  # after the arguments (`</function>`)
    layouts: tuple[str, ...]  # the layout the engine reads before a value, longest first
    stops: tuple[tuple[str, tuple[str, ...]], ...]  # where the engine ends a value, by their first character
    tools: Mapping[str, Mapping[str, str]]  # declared tool -> parameter -> value tag
    id_format: str = "openai"

    def find(self, text: str) -> int:
        """Where the first call's opener (or the section) is in ``text`` (-1: none)."""
        return text.find(self.section or self.opener)

    def read(self, text: str, at: int) -> tuple[ToolCall, ...] | None:
        """The calls of ``text[at:]`` (which starts with the opener or the section), or None where it is not such
        calls alone."""
        calls: list[ToolCall] = []
        end = len(text)
        if self.section:
            at = _skip(text, at + len(self.section))
        while True:
            found = self._call(text, at)
            if found is None:
                return None
            call, at = found
            calls.append(call)
            at = _skip(text, at)
            if self.section:
                if text.startswith(self.section_close, at):
                    return tuple(calls) if _skip(text, at + len(self.section_close)) == end else None
            elif at == end:
                return tuple(calls)
            elif not text.startswith(self.opener, at):
                return None

    def _call(self, text: str, at: int) -> tuple[ToolCall, int] | None:
        """One call from its opener (in a section: its name's prefix) at ``at``: the call and where it ends."""
        if self.opener:
            at = _skip(text, at + len(self.opener))
        if self.name_prefix:
            if not text.startswith(self.name_prefix, at):
                return None
            at += len(self.name_prefix)
        if self.name_suffix:
            stop = text.find(self.name_suffix, at)
            if stop < 0:
                return None
            name = text[at:stop].rstrip(_SPACE)  # (the engine's tight() suffix: whitespace before it)
            at = stop + len(self.name_suffix)
        else:
            match = _NAME.match(text, at)
            if match is None:
                return None
            name = match.group()
            at = match.end()
        params = self.tools.get(name)
        if params is None:
            return None
        parts: list[str] = []
        seen: set[str] = set()
        at = _skip(text, at)
        while self.key_prefix and text.startswith(self.key_prefix, at):
            found = self._argument(text, at + len(self.key_prefix), params, seen)
            if found is None:
                return None
            part, at = found
            parts.append(part)
            at = _skip(text, at)
        if self.function_close:
            if not text.startswith(self.function_close, at):
                return None
            at = _skip(text, at + len(self.function_close))
        if self.closer:
            if not text.startswith(self.closer, at):
                return None
            at += len(self.closer)
        arguments = "{" + ", ".join(parts) + "}"
        return built_call(name, arguments, new_call_id(self.id_format), True), at

    def _argument(self, text: str, at: int, params: Mapping[str, str], seen: set[str]) -> tuple[str, int] | None:
        """One argument after its opener: its JSON member and where its end tag ends."""
        at = _skip(text, at)
        stop = text.find(self.key_end, at)
        if stop < 0:
            return None
        key = text[at:stop]
        tag = params.get(key)
        if tag is None or tag == _CONTAINER or key in seen:
            return None
        seen.add(key)
        at = stop
        if self.key_suffix:  # (the name's end marker, then the value's prefix, whitespace around both)
            at = _skip(text, at + len(self.key_suffix))
        elif self.value_prefix:
            at = _skip(text, at)
        else:
            at += len(self.key_end)
        if self.value_prefix:
            if not text.startswith(self.value_prefix, at):
                return None
            at += len(self.value_prefix)
        for layout in self.layouts:
            if text.startswith(layout, at):
                at += len(layout)
                break
        stop = end_tag = text.find(self.value_suffix, at)
        if stop < 0:
            return None
        value = text[at:stop]
        for char, markers in self.stops:  # (a stop before the end tag starts with a character the value holds)
            if char in value:
                for marker in markers:
                    found = text.find(marker, at, end_tag + len(marker))
                    if 0 <= found < stop:
                        stop = found
        closing = _skip(text, stop)
        if not text.startswith(self.value_suffix, closing):
            return None  # (the first stop is no end tag: a value without one, or markup in it)
        value = text[at:stop]
        if tag == tags.TOOL_ARG_STRING:
            encoded = encode_basestring(value)  # (json.dumps(value, ensure_ascii=False), without its layers)
        else:
            if misfit(tag, value) is not None:
                return None
            encoded = decode_value(tag, value)
            if encoded[:1] in "{[":
                return None  # (an object or array: the mapper cleans those)
        return encode_basestring(key) + ": " + encoded, closing + len(self.value_suffix)


def regular_tagged_calls(analysis: TemplateAnalysis, request: ParseRequest) -> TaggedCalls | None:
    """The regular calls of a generic template whose calls are tagged, each in a per-call wrapper (Qwen3-Coder, GLM)
    or, without one, in a section (MiniMax-M2), with no call id (None otherwise)."""
    tools = analysis.tools
    fmt, function, args = tools.format, tools.function, tools.arguments
    opener, closer = core(fmt.per_call_start), core(fmt.per_call_end)
    section, section_close = core(fmt.section_start), core(fmt.section_end)
    key_prefix, value_suffix = core(args.name_prefix), core(args.value_suffix)
    key_end = argument_name_end(tools)
    wrapped = opener and closer and not section and not section_close
    # (a section of one word: the engine reads a marker of several words more loosely; see markers.opener)
    sectioned = section and section_close and not opener and not closer and core(function.name_prefix)
    if not (
        request.tools_enabled
        and analysis.format == GENERIC
        and fmt.mode is ToolFormatMode.TAG_WITH_TAGGED
        and (wrapped or (sectioned and len(section.split()) == 1))
        and key_prefix
        and value_suffix
        and key_end
        and not core(fmt.implied_end)
        and not core(fmt.stated_word)
        and tools.call_id.position is CallIdPosition.NONE
        and not analysis.blocks.enabled
    ):
        return None
    declared: dict[str, dict[str, str]] = {}
    for tool in request.tools:
        props = tool.parameters.get("properties")
        params: dict[str, str] = {}
        for prop, schema in props.items() if isinstance(props, dict) else ():
            types = json_types(schema)
            # (an object or array parameter is read as JSON first by the engine: a call that sets one is its own)
            params[prop] = _CONTAINER if types and types <= {"object", "array"} else value_tag(schema)
        declared[tool.name] = params
    stops = tuple(argument_stops(tools))
    return TaggedCalls(
        opener,
        closer,
        section if sectioned else "",
        section_close if sectioned else "",
        core(function.name_prefix),
        core(function.name_suffix),
        key_prefix,
        key_end,
        core(args.name_suffix) if core(args.value_prefix) else "",
        core(args.value_prefix),
        value_suffix,
        core(function.close),
        tuple(value_layouts(args.value_lead)),
        tuple((char, tuple(stop for stop in stops if stop[0] == char)) for char in sorted({stop[0] for stop in stops})),
        declared,
        analysis.id_format,
    )
