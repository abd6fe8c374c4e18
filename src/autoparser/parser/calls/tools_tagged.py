"""Parsers for calls whose name (and maybe arguments) sit in markup.

TAG_WITH_JSON: ``<marker>NAME<suffix>{json arguments}<close>``, e.g. ``[TOOL_CALLS]get_weather[ARGS]{...}`` or
DeepSeek's ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``.
TAG_WITH_TAGGED: each argument in markup, ``<parameter=NAME>\\nVALUE\\n</parameter>``. The whitespace the template
writes around a value (``value_lead``/``value_trail``) is markup; the value's own spaces are data. String-only
parameters keep the raw text; other values are read as their schema types them (:mod:`.tagged_values`).

A call to a tool the request does not declare is read too (:mod:`.undeclared`): its name is whatever the name
markup allows, its arguments are untyped.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import peg as p
from ...analysis.model import CallIdPosition, ToolFormatMode, ToolsAnalysis
from .. import tags
from ..markers import core, flex, is_markup, tight
from ..request import ParseRequest, ToolSpec
from . import undeclared
from .tagged_values import json_types, value_tag

__all__ = ["argument_name_end", "argument_stops", "tagged_call", "tagged_calls", "value_layouts", "value_stops"]

_NAME_CHAR = "[a-zA-Z0-9_.:-]"


def _name_end(tools: ToolsAnalysis) -> p.Parser:
    """What follows a complete function name: the name suffix, or anything that cannot continue the name."""
    suffix = tools.function.name_suffix
    return tight(suffix) if core(suffix) else p.negate(p.chars(_NAME_CHAR))


def _name(tools: ToolsAnalysis, tool: ToolSpec) -> p.Parser:
    """Prefix, name and suffix as one atomic unit: the name is reported once nothing can extend it."""
    fn = tools.function
    prefix = tight(fn.name_prefix) if core(fn.name_prefix) else p.eps()
    return p.atomic(prefix + p.tag(tags.TOOL_NAME, p.literal(tool.name)) + _name_end(tools))


def _undeclared_name(tools: ToolsAnalysis, declared: tuple[ToolSpec, ...]) -> p.Parser:
    """Any name the markup allows (up to the name suffix, never across whitespace or markup), but not a declared
    one; atomic like a declared name, so it is reported only once its end is seen."""
    fn = tools.function
    prefix = tight(fn.name_prefix) if core(fn.name_prefix) else p.eps()
    suffix = core(fn.name_suffix)
    name_chars = undeclared.NAME_CHARS if suffix else undeclared.IDENTIFIER_CHARS
    if suffix and suffix[0] not in "<>[]{}()\"'`,;=|\\ ":
        # The suffix starts with a character a name may hold (`:`): the name stops before it.
        name_chars = name_chars[:-1] + _class_escape(suffix[0]) + "]"
    name = p.tag(tags.TOOL_NAME, p.chars(name_chars))
    end = _name_end(tools)
    # Only a name something follows: one the output ends in may be cut off (`g`, of the declared `get_weather`).
    return p.atomic(prefix + undeclared.not_declared(declared, end) + name + end + p.negate(p.end()))


def _class_escape(char: str) -> str:
    return "\\" + char if char in "]\\^-[" else char


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


def value_layouts(whitespace: str) -> list[str]:
    """The spellings of the layout around a value, longest first: what the template writes (line breaks also as
    ``\\r\\n``), and one line break, which models write around values even where their template does not (Seed-OSS)."""
    plain = whitespace.replace("\r\n", "\n")
    return sorted({"\n", "\r\n", *((plain, plain.replace("\n", "\r\n")) if plain else ())}, key=len, reverse=True)


def argument_name_end(tools: ToolsAnalysis) -> str:
    """What ends an argument's name: its suffix (``>``, ``</arg_key>``), else the value's prefix or end tag."""
    args = tools.arguments
    return core(args.name_suffix) or core(args.value_prefix) or core(args.value_suffix)


def _name_stops(tools: ToolsAnalysis) -> list[str]:
    """Where an unknown argument name ends: its end marker, but never across markup or lines (a damaged end marker
    must not let one "name" swallow the rest of the output)."""
    return sorted({argument_name_end(tools), "<", "\n"}, key=len, reverse=True)


def argument_stops(tools: ToolsAnalysis) -> list[str]:
    """Where a tagged value ends, longest first: its end tag after the layout (``\\n</parameter>``) or alone, the
    call's own markup (:func:`value_stops`), the next argument's opener where a dropped end tag may end it."""
    return _argument_stops(tools, _unclosed_value(tools))


def _argument_stops(tools: ToolsAnalysis, ended: _Unclosed) -> list[str]:
    args = tools.arguments
    value_end = core(args.value_suffix)
    trail = {t + value_end for t in value_layouts(args.value_trail)} if value_end else set()
    return sorted({*trail, *value_stops(tools), *ended.stops}, key=len, reverse=True)


def _argument(tools: ToolsAnalysis, tool: ToolSpec | None) -> p.Parser:
    """One tagged argument; the value kind follows the parameter's schema (unknown names, and every argument of
    an undeclared tool, are untyped: JSON if it parses)."""
    args = tools.arguments
    name_end = argument_name_end(tools)
    value_end = core(args.value_suffix)
    value_prefix = tight(args.value_prefix) if core(args.value_prefix) else p.eps()
    name_close = tight(args.name_suffix) if core(args.name_suffix) else p.eps()
    if core(args.value_prefix):
        name_close = flex(args.name_suffix) if core(args.name_suffix) else p.space()
    # The layout around the value (Qwen3-Coder's line breaks) is markup: one is read before the value, and the
    # value stops before one that precedes its end tag. Other whitespace (spaces, tabs, more breaks) is the value's.
    lead = p.optional(p.choice(*map(p.literal, value_layouts(args.value_lead))))
    name_stops = _name_stops(tools)
    ended = _unclosed_value(tools)
    stops = _argument_stops(tools, ended)

    def arg(name: p.Parser, kind: str, container: bool = False) -> p.Parser:
        value = p.tag(kind, ended.text(p.until_one_of(stops)))
        if container and value_end:
            # An object or array is read as JSON first: its strings may hold the end tag or call markup, which
            # a grammar's JSON allows (the end tag closes the value only after the JSON is complete).
            whole = p.tag(kind, p.space() + p.json()) + p.peek(p.space() + ended.after(value_end))
            value = p.choice(whole, value)
        # Once an argument's name is complete the call is committed: a stream announces it, and a complete parse
        # keeps it even if the rest turns out malformed (see assemble.py).
        head = flex(args.name_prefix) + name + name_close + p.commit()
        return p.tag(tags.TOOL_ARG, head + value_prefix + lead + value + ended.closing(flex(args.value_suffix)))

    props = tool.parameters.get("properties") if tool is not None else None
    known = []
    if isinstance(props, dict):
        for prop, schema in props.items():
            # atomic with its terminator: `city` is not reported while it may still become `city_code`
            name = p.atomic(p.tag(tags.TOOL_ARG_NAME, p.literal(prop)) + p.peek(name_end))
            types = json_types(schema)
            known.append(arg(name, value_tag(schema), bool(types) and types <= {"object", "array"}))
    unknown = arg(p.tag(tags.TOOL_ARG_NAME, p.until_one_of(name_stops)) + p.peek(name_end), tags.TOOL_ARG_VALUE)
    return p.choice(*known, unknown)


@dataclass(frozen=True, slots=True)
class _Unclosed:
    """Where a tagged value whose end tag the model dropped ends: at the next argument's head (its opener, a name
    and the name's end: ``<parameter=days>``) or at the call's own end marker. ``stops`` are the openers (with the
    layout before them), ``next`` what must follow for the value to end there; an opener that starts no argument
    head is the value's text."""

    stops: tuple[str, ...] = ()
    next: p.Parser | None = None
    missing: str = ""

    def after(self, end_tag: str) -> p.Parser:
        """What may follow a complete value: its end tag, or where a value without it ends."""
        return p.literal(end_tag) if self.next is None else p.choice(p.literal(end_tag), self.next)

    def text(self, chunk: p.Parser) -> p.Parser:
        """The value's text: ``chunk`` (an until() to the stops), continued past an opener no head follows."""
        if self.next is None:
            return chunk
        opener = p.choice(*map(p.literal, self.stops))
        return chunk + p.zero_or_more(p.negate(self.next) + opener + chunk)

    def closing(self, end_tag: p.Parser) -> p.Parser:
        """The value's end tag, or — dropped — a zero-width note of it where the next argument or the call's end
        follows (the call is then repaired: see the mapper)."""
        if self.next is None:
            return end_tag
        return p.choice(end_tag, p.space() + p.tag(tags.unclosed(self.missing), p.eps()) + p.peek(self.next))


def _unclosed_value(tools: ToolsAnalysis) -> _Unclosed:
    """How a value without its end tag ends (:class:`_Unclosed`); nothing where the markers are not distinctive."""
    args, fn, fmt = tools.arguments, tools.function, tools.format
    name_stops, name_end = _name_stops(tools), argument_name_end(tools)
    opener, value_end = core(args.name_prefix), core(args.value_suffix)
    if not value_end or not _ends_values(opener) or not name_end:
        return _Unclosed()
    openers = tuple(sorted({t + opener for t in value_layouts(args.value_trail)} | {opener}, key=len, reverse=True))
    head = p.space() + p.literal(opener) + p.until_one_of(name_stops) + p.literal(name_end)
    ends = [m for m in dict.fromkeys(core(m) for m in (fn.close, fmt.per_call_end)) if m and is_markup(m)]
    following = p.choice(head, *map(p.literal, ends)) if ends else head
    return _Unclosed(openers, p.space() + following, value_end)


def value_stops(tools: ToolsAnalysis) -> list[str]:
    """Where a tagged value ends: its end tag, or — when that tag is damaged or missing — the next argument's opener
    or the call's own markup (the end of the call, the start of another), so one broken value cannot swallow the
    arguments and calls after it. A grammar's string value holds none of them. Longest first."""
    fmt, fn, args = tools.format, tools.function, tools.arguments
    markup = {core(m) for m in (fn.close, fmt.per_call_end, fmt.per_call_start, fn.name_prefix)}
    # (An empty end tag stays in: nothing could end a value, and building the parser fails, as it must.)
    stops = {core(tools.arguments.value_suffix), *(m for m in markup if is_markup(m))}
    if _ends_values(core(args.name_prefix)):
        stops.add(core(args.name_prefix))
    return sorted(stops, key=len, reverse=True)


def _ends_values(opener: str) -> bool:
    """Whether an argument's opener may end a value whose end tag was dropped: a tag-like opener (``<parameter=``,
    ``<arg_key>``, ``<arg:``, ``[KEY]``); a name and the name's end must follow it too (:class:`_Unclosed`)."""
    return len(opener) >= 2 and opener[0] in "<[" and not opener[1].isspace()


def tagged_call(tools: ToolsAnalysis, tool: ToolSpec) -> p.Parser:
    """One call of ``tool`` (untagged, without the per-call / section markers)."""
    return _call(tools, _name(tools, tool), tool)


def tagged_calls(tools: ToolsAnalysis, request: ParseRequest) -> p.Parser:
    """One call of any of the request's tools, or of a tool it does not declare (marked, see :mod:`.undeclared`)."""
    declared = [tagged_call(tools, tool) for tool in request.tools]
    other = _call(tools, _undeclared_name(tools, request.tools), None)
    return p.choice(*declared, *undeclared.alternative(request, other))


def _call(tools: ToolsAnalysis, head: p.Parser, tool: ToolSpec | None) -> p.Parser:
    fn = tools.function
    head = _id_before_name(tools) + head + _call_id(tools)
    if tools.format.mode is ToolFormatMode.TAG_WITH_JSON:
        args = tools.arguments
        opening = flex(args.start) if core(args.start) else p.space()
        body = opening + p.commit() + p.tag(tags.TOOL_ARGS, p.json(canonical=True))
        if core(args.end):
            body = body + flex(args.end)
    else:
        body = p.space() + p.zero_or_more(_argument(tools, tool) + p.space())
    # The call's closing marker commits it (a call without arguments has no earlier commit point).
    close = p.space() + p.literal(core(fn.close)) + p.commit() + p.space() if core(fn.close) else p.space()
    return head + body + close
