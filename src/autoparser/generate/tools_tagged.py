"""Parsers for calls whose name (and maybe arguments) sit in markup.

TAG_WITH_JSON: ``<marker>NAME<suffix>{json arguments}<close>``, e.g. ``[TOOL_CALLS]get_weather[ARGS]{...}`` or
DeepSeek's ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``.
TAG_WITH_TAGGED: each argument in markup, ``<parameter=NAME>\\nVALUE\\n</parameter>``. String-typed parameters
keep the raw text; other values are read as JSON (and kept as text if they are not JSON).
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.model import CallIdPosition, ToolFormatMode, ToolsAnalysis
from . import tags
from .markers import core, flex, tight
from .request import ToolSpec
from .schema_types import accepts_string

__all__ = ["tagged_call"]

_NAME_CHAR = "[a-zA-Z0-9_.:-]"


def _name(tools: ToolsAnalysis, tool: ToolSpec) -> p.Parser:
    """Prefix, name and suffix as one atomic unit: the name is reported once nothing can extend it."""
    fn = tools.function
    parts = [tight(fn.name_prefix) if core(fn.name_prefix) else p.eps(), p.tag(tags.TOOL_NAME, p.literal(tool.name))]
    if core(fn.name_suffix):
        parts.append(tight(fn.name_suffix))
    else:
        parts.append(p.negate(p.chars(_NAME_CHAR)))
    return p.atomic(p.sequence(*parts))


def _id_before_name(tools: ToolsAnalysis) -> p.Parser:
    """The id a template writes before the name (PRE_FUNC_NAME), after its prefix marker unless that marker is the
    per-call start the section already read."""
    cid, fmt = tools.call_id, tools.format
    name_prefix = core(tools.function.name_prefix)
    if cid.position is not CallIdPosition.PRE_FUNC_NAME or not name_prefix:
        return p.eps()
    stops = sorted({name_prefix, "{", "[", "<", "\n"}, key=len, reverse=True)
    ident = p.tag(tags.TOOL_ID, p.until_one_of(stops))
    if core(cid.prefix) and core(cid.prefix) not in (core(fmt.per_call_start), core(fmt.section_start)):
        ident = flex(cid.prefix) + ident
    return p.optional(ident)


def _call_id(tools: ToolsAnalysis) -> p.Parser:
    cid = tools.call_id
    if cid.position is not CallIdPosition.BETWEEN_FUNC_AND_ARGS or not core(cid.prefix):
        return p.eps()
    # An id is a short token: it never runs across markup, braces or lines (a missing suffix must not let it
    # swallow the arguments and the next call).
    stops = sorted({core(cid.suffix) or "{", "{", "[", "<", "\n"}, key=len, reverse=True)
    ident = flex(cid.prefix) + p.tag(tags.TOOL_ID, p.until_one_of(stops))
    return p.optional(ident) + (flex(cid.suffix) if core(cid.suffix) else p.space())


def _argument(tools: ToolsAnalysis, tool: ToolSpec) -> p.Parser:
    """One tagged argument; the value kind follows the parameter's schema (unknown names: JSON if it parses)."""
    args = tools.arguments
    name_end = core(args.name_suffix) or core(args.value_prefix) or core(args.value_suffix)
    value_end = core(args.value_suffix)
    value_prefix = tight(args.value_prefix) if core(args.value_prefix) else p.eps()
    name_close = tight(args.name_suffix) if core(args.name_suffix) else p.eps()
    if core(args.value_prefix):
        name_close = flex(args.name_suffix) if core(args.name_suffix) else p.space()

    # A value ends at its end tag, or — when that tag is damaged or missing — at the call's own markup (the end of
    # the call, the start of another), so one broken value cannot swallow the calls after it.
    fmt, fn = tools.format, tools.function
    markup = [core(m) for m in (fn.close, fmt.per_call_end, fmt.per_call_start, fn.name_prefix)]
    value_stops = sorted({value_end, *(m for m in markup if _is_markup(m) and m != value_end)}, key=len, reverse=True)

    def arg(name: p.Parser, is_string: bool) -> p.Parser:
        kind = tags.TOOL_ARG_STRING if is_string else tags.TOOL_ARG_VALUE
        value = p.tag(kind, p.until_one_of(value_stops))
        # Once an argument's name is complete the call is committed: a stream announces it, and a complete parse
        # keeps it even if the rest turns out malformed (see assemble.py).
        head = flex(args.name_prefix) + name + name_close + p.commit()
        return p.tag(tags.TOOL_ARG, head + value_prefix + value + flex(args.value_suffix))

    props = tool.parameters.get("properties")
    known = []
    if isinstance(props, dict):
        for prop, schema in props.items():
            # atomic with its terminator: `city` is not reported while it may still become `city_code`
            name = p.atomic(p.tag(tags.TOOL_ARG_NAME, p.literal(prop)) + p.peek(name_end))
            known.append(arg(name, accepts_string(schema)))
    # An unknown name is read up to its end marker, but never across markup or lines: a damaged end marker must
    # not let one "name" swallow the rest of the output.
    stops = sorted({name_end, "<", "\n"}, key=len, reverse=True)
    unknown = arg(p.tag(tags.TOOL_ARG_NAME, p.until_one_of(stops)) + p.peek(name_end), False)
    return p.choice(*known, unknown)


def _is_markup(marker: str) -> bool:
    """A marker distinctive enough to end a value early (``</function>``, ``<tool_call>``), not plain text."""
    return len(marker) >= 3 and marker[0] in "<[" and marker[-1] in ">]=\""


def tagged_call(tools: ToolsAnalysis, tool: ToolSpec) -> p.Parser:
    """One call of ``tool`` (untagged, without the per-call / section markers)."""
    fn = tools.function
    head = _id_before_name(tools) + _name(tools, tool) + _call_id(tools)
    if tools.format.mode is ToolFormatMode.TAG_WITH_JSON:
        args = tools.arguments
        opening = flex(args.start) if core(args.start) else p.space()
        body = opening + p.commit() + p.tag(tags.TOOL_ARGS, p.json())
        if core(args.end):
            body = body + flex(args.end)
    else:
        body = p.space() + p.zero_or_more(_argument(tools, tool) + p.space())
    # The call's closing marker commits it (a call without arguments has no earlier commit point).
    close = p.space() + p.literal(core(fn.close)) + p.commit() + p.space() if core(fn.close) else p.space()
    return head + body + close
