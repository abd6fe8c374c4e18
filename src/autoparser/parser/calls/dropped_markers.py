"""Tool calls whose special tokens a detokenizer dropped (a server decoding with ``skip_special_tokens=True``).

Such a server removes the markers a template writes as special tokens: Mistral's ``[TOOL_CALLS]get_weather[ARGS]{…}``
comes out as ``get_weather{…}``, Cohere's ``<|START_ACTION|>[{…}]<|END_ACTION|>`` as ``[{…}]``. The call is still
there, and it is read where that is unambiguous and decided within a few characters, so ordinary text is not held
back for long: the name is a declared tool, right at the start of a JSON call object (``{"name": "get_weather"``)
or right before its JSON arguments (``get_weather{``, ``get_weather[ARGS]``). Every call read this way records the
marker it lacks, and the mapper warns about it.

A JSON call body found without its marker may also sit in a wrapper of the model's own (``<tool>``, a ```json
fence, ``<function=NAME>{…}</function>``, as Hermes-style models write them): the wrapper is consumed with the call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ... import peg as p
from ...analysis.model import CallIdPosition, TemplateAnalysis, ToolFormat, ToolFormatMode, ToolsAnalysis
from .. import tags
from ..markers import core, is_fence
from ..request import ParseRequest, ToolSpec
from .resync import JSON, call_stops, recover_call
from .tools_json import json_calls
from .tools_tagged import tagged_call

__all__ = ["DroppedMarkerCalls", "dropped_marker_calls", "name_json_call", "reads_name_then_json"]

# What tokenizers make special tokens: ``[TOOL_CALLS]``, ``<|START_ACTION|>``, ``<｜tool▁sep｜>``, ``<TOOLCALL>``.
_SPECIAL = re.compile(r"\[[A-Z_]+\]|<\|[^<>|]+\|>|<｜[^<>｜]+｜>|<[A-Z_]+>")


def _special(marker: str) -> bool:
    return bool(_SPECIAL.fullmatch(core(marker)))


def _args_markers(tools: ToolsAnalysis) -> tuple[str, ...]:
    """The markers between a call's name and its JSON arguments (Mistral's ``[ARGS]``, ``[CALL_ID]id[ARGS]``)."""
    found = [core(tools.function.name_suffix)]
    if tools.call_id.position is CallIdPosition.BETWEEN_FUNC_AND_ARGS:
        found += [core(tools.call_id.prefix), core(tools.call_id.suffix)]
    return tuple(m for m in found if m)


def reads_name_then_json(tools: ToolsAnalysis) -> bool:
    """Whether calls are ``<special>NAME<special>{json}`` (Mistral, DeepSeek V3.1): the name follows a special token
    directly and special tokens alone separate it from the arguments, so dropping them leaves ``NAME{json}``."""
    fmt = tools.format
    markers = _args_markers(tools)
    return (
        fmt.mode is ToolFormatMode.TAG_WITH_JSON
        and _special(fmt.per_call_start)
        and not core(tools.function.name_prefix)
        and bool(markers)
        and all(_special(m) for m in markers)
    )


def name_json_call(tools: ToolsAnalysis, tool: ToolSpec, *, marked: bool = True) -> p.Parser:
    """``NAME{json}``: a name-then-JSON call without the markers between name and arguments (recorded as missing).

    ``marked``: the call's opening marker was read, so the arguments' start commits the call; without any marker
    (``get_weather{`` in text) only complete JSON arguments do."""
    name = p.atomic(p.tag(tags.TOOL_NAME, p.literal(tool.name)) + p.peek("{"))
    lacks = p.tag(tags.missing(_args_markers(tools)[-1]), p.eps())  # the marker right before the arguments
    arguments = p.tag(tags.TOOL_ARGS, p.json(canonical=True))
    return name + lacks + (p.commit() + arguments if marked else arguments + p.commit())


@dataclass(frozen=True, slots=True)
class DroppedMarkerCalls:
    """Extra items of the whole-output parser, and the text where they may start (content stops there)."""

    items: list[p.Parser]
    stops: list[str]


def dropped_marker_calls(analysis: TemplateAnalysis, request: ParseRequest) -> DroppedMarkerCalls:
    """Calls read without their special-token markers, for formats where that is unambiguous."""
    tools = analysis.tools
    fmt = tools.format
    stops = call_stops(analysis)  # where the rest of a broken call ends (resync.py)
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        return _json_bodies(fmt, request.tools, stops)
    if reads_name_then_json(tools):
        return _name_then_json(tools, request.tools, stops)
    return DroppedMarkerCalls([], [])


def _json_bodies(fmt: ToolFormat, tools: tuple[ToolSpec, ...], stops: tuple[str, ...]) -> DroppedMarkerCalls:
    """JSON call objects (or an array of them) without the section / per-call marker that opens them, maybe in a
    wrapper of their own; the template's closing marker, if the model wrote it, is consumed with them. Also a call
    written in the tag syntax Hermes-style models fall back to, ``<function=NAME>{…}</function>``."""
    opener = core(fmt.section_start) or core(fmt.per_call_start)
    if not opener or is_fence(opener):
        # bare JSON is the format itself (Llama 3.x), or the section is a code fence a prompt showed, which models
        # often leave out: see assemble.py
        return DroppedMarkerCalls([], [])
    closer = core(fmt.section_end) or core(fmt.per_call_end)
    calls = json_calls(fmt, tools, unmarked=True, missing=opener, rest=stops)
    # What models put around a call body instead of the template's marker (seen from Hermes-style models): an
    # XML-like tag (`<tool>`, `<tools>`, `<response>`, `<json>`, `<function_call>`), a Markdown fence (```json,
    # ```xml), or both. Consumed with the calls, so no wrapper is left in the content. (The body may start at one of
    # _WRAPPER_OPENERS, or at its own bracket after a tag the list does not name: then the tag stays text.)
    fence = p.literal("```") + p.optional(p.chars("[a-zA-Z]"))
    tag_open = p.literal("<") + p.chars("[a-zA-Z_]") + p.literal(">")
    closing = [p.literal("</") + p.chars("[a-zA-Z_]") + p.literal(">")]
    if closer and not _TAG_CLOSE.fullmatch(closer):
        closing.insert(0, p.literal(closer))
    wrapped = (
        p.optional(fence + p.space())
        + p.optional(tag_open + p.space())
        + calls
        + p.optional(p.space() + p.choice(*closing))
        + p.optional(p.space() + p.literal("```"))
    )
    # Where such a call may start: literal openers rather than every bracket, `<` or fence, so that ordinary text
    # (code, markup) does not stop at each of them (a stream holds the text at a stop until it is decided); a list
    # of calls only where the template writes one.
    starts = [*_OBJECT_OPENERS, *(_LIST_OPENERS if fmt.tools_array_wrapped else ()), *_WRAPPER_OPENERS]
    return DroppedMarkerCalls([wrapped, _function_tag_call(tools, opener, stops)], starts)


_TAG_CLOSE = re.compile(r"</[a-zA-Z_]+>")
_OBJECT_OPENERS = ('{"', "{\n", "{ ", "{\r\n")  # a JSON call object opens with a quoted key
_LIST_OPENERS = ("[{", "[\n", "[ ")
# The wrappers Hermes-style models write around a JSON call in place of their template's marker.
_WRAPPER_OPENERS = (
    *("<tool>", "<tools>", "<function_call>", "<response>", "<json>", "<JSON>", "<xml>"),
    *("```json", "```xml", "```\n", "<function=", '<function name="'),
)


def _function_tag_call(tools: tuple[ToolSpec, ...], opener: str, stops: tuple[str, ...]) -> p.Parser:
    """``<function=NAME>{…}</function>`` or ``<function name="NAME">{…}</function>``, with a declared name."""
    names = sorted((t.name for t in tools), key=len, reverse=True)

    def name(end: str) -> p.Parser:
        return p.atomic(p.tag(tags.TOOL_NAME, p.choice(*map(p.literal, names))) + p.peek(end))

    head = p.choice(
        p.literal("<function=") + name(">") + ">",
        p.literal('<function name="') + name('"') + '">',
    )
    body = head + p.space() + p.peek("{") + p.commit() + p.tag(tags.TOOL_ARGS, p.json(canonical=True))
    call = p.tag(tags.missing(opener), p.eps()) + body + p.optional(p.space() + p.literal("</function>"))
    ends = (*stops, "</function>", "<function")
    return recover_call(p.tag(tags.TOOL, call), ends, balanced=JSON, closers=("</function>",))


def _name_then_json(tools: ToolsAnalysis, specs: tuple[ToolSpec, ...], stops: tuple[str, ...]) -> DroppedMarkerCalls:
    """``NAME[ARGS]{…}`` without the opening marker, or ``NAME{…}`` without any marker."""
    opener = core(tools.format.per_call_start)
    lacks_opener = p.tag(tags.missing(opener), p.eps())
    items: list[p.Parser] = []
    stops: list[str] = []
    for tool in specs:
        body = p.choice(tagged_call(tools, tool), name_json_call(tools, tool, marked=False))
        items.append(recover_call(p.tag(tags.TOOL, lacks_opener + body), stops, balanced=JSON))
        stops += [tool.name + "{", *(tool.name + m for m in _args_markers(tools))]
    return DroppedMarkerCalls(items, stops)

