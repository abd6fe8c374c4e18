"""DeepSeek V3.2 / V4 DSML tool calls (format ``deepseek-dsml``).

The model writes XML-like markup with fullwidth bars in the tag names::

    <｜DSML｜function_calls>                     (V4: <｜DSML｜tool_calls>)
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

Each parameter states its own kind: ``string="true"`` values are raw text, ``string="false"`` values are JSON.
The generic tagged-argument parser needs one fixed argument-name suffix, which this attribute rules out; every
other marker is the one the generic analysis found (with the format's own markers as fallback), and the shared
mapper reads the usual tags, so streaming stays append-only:

* a call is a TOOL node spanning ``</｜DSML｜invoke>``, so it is complete only once that is seen;
* the tool name and each argument name are atomic (reported only when their closing quote arrives);
* values are ``until`` the parameter's end tag, which withholds a half-received end tag.

Anything that does not parse as a call (an unknown tool, a truncated call in a complete output) stays content,
and the marker that started it is reported as UNPARSED.

The grammar (:func:`grammar`) is strict where the parser is lenient: a section as the templates write it (tags
required, parameters in schema order, each ``string`` attribute the one its schema allows), switched on by the
section's start tag.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import peg as p
from ..analysis.model import TemplateAnalysis
from ..grammar.common import json_answer, reasoning_after_prompt, rule_safe, text_before_calls
from ..grammar.spec import FormatGrammar, Trigger
from ..parser import tags
from ..parser.assemble import GeneratedParser, end_of_turn, end_of_turn_markers, response_format
from ..parser.calls import undeclared
from ..parser.calls.resync import recover_call
from ..parser.calls.tagged_values import json_value_tag
from ..parser.markers import core
from ..parser.reasoning import extracts_reasoning, leading_block, prefill
from ..parser.request import ParseRequest, ToolSpec
from ..parser.schema_types import accepts_string, non_string_part, only_string, string_part

__all__ = ["build_grammar", "build_parser"]

_TOKEN = "｜DSML｜"
# The format's own markers, used where the analysis found nothing (it normally finds all of these).
_SECTION = "function_calls"
_INVOKE_PREFIX = f'<{_TOKEN}invoke name="'
_NAME_END = '">'
_INVOKE_END = f"</{_TOKEN}invoke>"
_PARAM_PREFIX = f'<{_TOKEN}parameter name="'
_PARAM_END = f"</{_TOKEN}parameter>"
_KIND_ATTR = "string="
# An argument name: anything up to its closing quote that cannot belong to the surrounding markup.
_ARG_NAME = r'[^"<>\n]'
# The layout a model writes between a value and the next tag (when it dropped the value's end tag): not the value's.
_LAYOUT = ("", "\n", "\r\n")


class _Markup(NamedTuple):
    """The format's tags, whitespace trimmed: the generic analysis's findings, else the format's own."""

    section_start: str
    section_end: str
    invoke_prefix: str
    name_end: str
    invoke_end: str
    param_prefix: str
    param_end: str


def _marker(found: str, default: str) -> str:
    return core(found) or default


def _markup(analysis: TemplateAnalysis) -> _Markup:
    fmt, fn, args = analysis.tools.format, analysis.tools.function, analysis.tools.arguments
    section_start = _marker(fmt.section_start, f"<{_TOKEN}{_SECTION}>")
    return _Markup(
        section_start,
        _marker(fmt.section_end, section_start.replace("<", "</", 1)),
        _marker(fn.name_prefix, _INVOKE_PREFIX),
        _marker(fn.name_suffix, _NAME_END),
        _marker(fn.close, _INVOKE_END),
        _marker(args.name_prefix, _PARAM_PREFIX),
        _marker(args.value_suffix, _PARAM_END),
    )


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end`` where an item is a call section, bare calls, a marker that failed to start
    calls (UNPARSED) or plain text up to the next marker."""
    items: list[p.Parser] = []
    triggers: list[str] = []
    # The format is known from the template source, so calls are parsed even if the analysis missed the markers.
    if request.tools_enabled:
        m = _markup(analysis)
        call = _call(request, m, m.invoke_prefix, m.name_end, m.invoke_end, m.param_prefix, m.param_end)
        calls = call + p.zero_or_more(p.space() + call)
        # The section's end tag is optional: calls stay calls when the model stops (or goes astray) after one.
        section = p.space() + p.literal(m.section_start) + p.space() + calls + p.space() + p.optional(m.section_end)
        items.append(section)
        items.append(p.space() + calls)  # models sometimes drop the section tags
        triggers = [m.section_start, m.invoke_prefix]
        items.append(p.tag(tags.UNPARSED, p.choice(*(p.literal(t) for t in triggers))))
    stops = sorted({*triggers, *end_of_turn_markers(analysis)}, key=len, reverse=True)
    text = p.until_one_of(stops) if stops else p.rest()
    items += end_of_turn(analysis)  # markup at the end of the output, text elsewhere
    items.append(p.negate(p.end()) + p.tag(tags.CONTENT, text))
    head = p.eps()
    if extracts_reasoning(analysis.reasoning, request):
        # (``</think>`` first is an empty block; after a prompt that closed an empty block, one the model writes anyway
        # is reasoning too)
        head = p.optional(leading_block(analysis.reasoning))
        end = core(analysis.reasoning.end)
        if end and end in prefill(request.generation_prompt, analysis.reasoning):
            head = head + head
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format(stops))  # (where a broken fenced answer ends)
    parser = (head + p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(parser, prefill(request.generation_prompt, analysis.reasoning), tuple(triggers), request)


def _call(
    request: ParseRequest,
    m: _Markup,
    invoke_prefix: str,
    name_end: str,
    invoke_end: str,
    param_prefix: str,
    param_end: str,
) -> p.Parser:
    """One ``invoke`` element, tagged TOOL from its start tag through its end tag: of a known tool, or of one the
    request does not declare (marked, see undeclared.py; its parameters are typed by their attributes only)."""
    alternatives: list[p.Parser] = []
    for spec in sorted(request.tools, key=lambda t: -len(t.name)):  # longest first: `get` must not take `get_time`
        # Atomic up to the closing quote, which shows the name is not the prefix of a longer one.
        name = p.tag(tags.TOOL_NAME, p.literal(spec.name))
        opening = p.atomic(p.literal(invoke_prefix) + name + p.literal(name_end))
        alternatives.append(opening + _arguments(spec, param_prefix, param_end, invoke_end))
    other = undeclared.not_declared(request.tools, p.literal(name_end))
    other += p.tag(tags.TOOL_NAME, p.chars(undeclared.NAME_CHARS)) + p.literal(name_end)
    opening = p.atomic(p.literal(invoke_prefix) + other)
    alternatives += undeclared.alternative(request, opening + _arguments(None, param_prefix, param_end, invoke_end))
    # committed at its first parameter's name (see _arguments): kept as it stood if the rest breaks
    closing = p.space() + p.literal(invoke_end) + p.commit()  # a call without parameters commits here
    # (the rest of a broken call, up to its end tag or the next call, is left out with a warning)
    stops = (invoke_end, invoke_prefix, m.section_start, m.section_end)
    return recover_call(p.tag(tags.TOOL, p.choice(*alternatives) + closing), stops, closers=(invoke_end,))


def _arguments(spec: ToolSpec | None, param_prefix: str, param_end: str, invoke_end: str) -> p.Parser:
    """The parameters of a call to ``spec`` (the tool only matters when a parameter omits its ``string``
    attribute: the schema then decides whether the value is raw text; None: an undeclared tool, no schema)."""
    props = spec.parameters.get("properties") if spec is not None else None
    schemas = list(props.items()) if isinstance(props, dict) else []
    string_params = sorted((name for name, schema in schemas if accepts_string(schema)), key=len, reverse=True)
    # A value whose end tag the model dropped ends where the next parameter's start tag (a name and its closing
    # quote) or the invoke's end tag begins, with the layout before it: the call is then repaired (tag UNCLOSED).
    # A start tag not followed by a name is the value's text.
    openers = sorted({layout + param_prefix for layout in _LAYOUT}, key=len, reverse=True)
    following = p.space() + p.choice(p.literal(param_prefix) + p.chars(_ARG_NAME) + '"', p.literal(invoke_end))
    chunk = p.until_one_of(sorted({param_end, *openers, *(lay + invoke_end for lay in _LAYOUT)}, key=len, reverse=True))
    text = chunk + p.zero_or_more(p.negate(following) + p.choice(*map(p.literal, openers)) + chunk)
    dropped = p.space() + p.tag(tags.unclosed(param_end), p.eps()) + p.peek(following)
    closing = p.choice(p.literal(param_end), dropped)

    def value(kind: str) -> p.Parser:
        """Raw text up to the end tag (or where a value without it ends); a JSON value (``string="false"``, or a
        parameter the schema types) is read as JSON first, as the generic tagged parser reads objects and arrays:
        its strings may hold the end tag or a parameter's start tag, which a grammar's JSON allows (the value ends
        only after the JSON is complete)."""
        plain = p.tag(kind, text) + closing
        if kind == tags.TOOL_ARG_STRING:
            return plain
        return p.choice(p.tag(kind, p.space() + p.json()) + p.space() + closing, plain)

    def attribute(flag: str) -> p.Parser:
        return p.literal(f'{_KIND_ATTR}"{flag}"') + p.space() + ">"

    name = p.atomic(p.tag(tags.TOOL_ARG_NAME, p.chars(_ARG_NAME)) + '"')
    stated = p.choice(
        attribute("true") + value(tags.TOOL_ARG_STRING),
        attribute("false") + value(tags.TOOL_ARG_VALUE),
    )
    body = name + p.space() + stated
    # A JSON value of a known parameter is read as its schema types it (``True`` for a boolean, as models of other
    # templates write it: see tagged_values.py).
    typed = []
    for prop, schema in sorted(schemas, key=lambda item: -len(item[0])):
        kind = json_value_tag(schema)
        if kind != tags.TOOL_ARG_VALUE:
            known = p.atomic(p.tag(tags.TOOL_ARG_NAME, p.literal(prop)) + '"') + p.space()
            typed.append(known + p.choice(attribute("false"), ">") + value(kind))
    body = p.choice(*typed, body)
    if string_params:
        # No attribute: a string-typed parameter keeps its raw text, anything else is read as JSON.
        string_name = p.choice(*(p.literal(n) for n in string_params))
        untyped_string = p.atomic(p.tag(tags.TOOL_ARG_NAME, string_name) + '"') + p.space() + ">"
        body = p.choice(body, untyped_string + value(tags.TOOL_ARG_STRING))
    body = p.choice(body, name + p.space() + ">" + value(tags.TOOL_ARG_VALUE))
    arg = p.tag(tags.TOOL_ARG, p.literal(param_prefix) + p.peek(name) + p.commit() + body)
    return p.zero_or_more(p.space() + arg)


# --- grammar -------------------------------------------------------------------------------------------------------

# JSON-schema keywords that only annotate: a property schema made of these alone says nothing about the value.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The grammar parts for ``request``: the call section as the templates write it, switched on by its start tag.

    * the section holds one ``invoke`` (several only with ``parallel_tool_calls``) of a requested tool; its
      parameters come in schema order, required ones present, no unknown ones, and each with the ``string``
      attribute its schema allows: ``"true"`` for raw text (honouring enum, const, pattern and length),
      ``"false"`` for JSON valid under the schema;
    * the only trigger is the section tag, as in the reference: the template always writes it, so a bare
      ``invoke`` (which the parser still reads) is not something to steer a model towards;
    * ``tool_choice="required"`` and ``json_schema`` grammars first finish the reasoning block the generation
      prompt opened (``<think>``); with thinking off the prompt already closed it.

    The preserved tokens are the reference's: ``｜DSML｜`` and the thinking tags are single tokens of the DeepSeek
    tokenizer, the longer tags are not (the analysis reports those, and a ``string="true"`` suffix that is only
    one of the two spellings)."""
    reasoning = analysis.reasoning
    tokens = (_TOKEN, *(t for t in (core(reasoning.start), core(reasoning.end)) if t))
    response = None
    if request.json_schema is not None:
        response = reasoning_after_prompt(analysis, request) + p.space() + json_answer(request) + p.space()
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=tokens)
    m = _markup(analysis)
    body = _section_body(m, request)
    lead = reasoning_after_prompt(analysis, request) + text_before_calls(analysis, request, [m.section_start])
    return FormatGrammar(
        section=p.literal(m.section_start) + body,
        triggers=(Trigger("word", m.section_start),),
        required=lead + p.literal(m.section_start) + body,
        auto=lead + p.optional(p.literal(m.section_start) + body),
        response=response,
        preserved_tokens=tokens,
    )


def _section_body(m: _Markup, request: ParseRequest) -> p.Parser:
    """Everything after the section's start tag: the call(s), the end tag, trailing whitespace."""
    seen: set[str] = set()
    invokes: list[p.Parser] = []
    for tool in request.tools:
        if tool.name not in seen:  # a repeated tool name would define its rule twice
            seen.add(tool.name)
            invokes.append(p.rule(f"invoke-{tool.name}", _invoke(tool, m)))
    call = p.choice(*invokes) + p.space()
    calls = p.one_or_more(call) if request.parallel_tool_calls else call
    return p.space() + calls + p.literal(m.section_end) + p.space()


def _invoke(tool: ToolSpec, m: _Markup) -> p.Parser:
    """``<｜DSML｜invoke name="NAME">`` parameters ``</｜DSML｜invoke>``.

    Parameters follow the schema's property order, as JSON arguments do under the schema converter: required
    ones must be there, optional ones may be left out. Names outside ``properties`` are allowed only where the
    schema allows additional properties (by default: when it declares no properties)."""
    schema = tool.parameters
    declared = schema.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    listed = schema.get("required")
    required: set[str] = set(listed) if isinstance(listed, list) else set()
    params: list[p.Parser] = []
    for name, sub in props.items():
        one = _parameter(tool.name, p.literal(name), name, sub if isinstance(sub, dict) else {}, m) + p.space()
        params.append(one if name in required else p.optional(one))
    extra = schema.get("additionalProperties", not props)
    if extra is not False:
        any_name = p.chars(_ARG_NAME)
        value_schema = extra if isinstance(extra, dict) else {}
        params.append(p.zero_or_more(_parameter(tool.name, any_name, "additional", value_schema, m) + p.space()))
    head = p.literal(f"{m.invoke_prefix}{tool.name}{m.name_end}") + p.space()
    return head + p.sequence(*params) + p.literal(m.invoke_end)


def _parameter(tool: str, name: p.Parser, label: str, schema: dict[str, Any], m: _Markup) -> p.Parser:
    """One parameter element; its ``string`` attribute must fit the schema (``label`` names the grammar rules).

    ``string="true"``: the raw text up to the end tag, constrained as a string of the schema's string part.
    ``string="false"``: JSON of the schema's non-string part. A schema admitting both (a type list, anyOf, or
    no type at all) allows either attribute."""
    rule = f"{rule_safe(tool)}-{rule_safe(label)}"
    kinds: list[p.Parser] = []
    if accepts_string(schema) or _untyped(schema):
        # (never a parameter's start tag or the invoke's end tag: the parser ends a value without its end tag there)
        stops = sorted({m.param_prefix, m.param_end, m.invoke_end}, key=len, reverse=True)
        raw = p.schema(p.until_one_of(stops), rule, string_part(schema), raw=True)
        kinds.append(p.literal(f'{_KIND_ATTR}"true">') + raw + p.literal(m.param_end))
    if not only_string(schema):
        value = p.schema(p.json(), rule, non_string_part(schema))
        kinds.append(p.literal(f'{_KIND_ATTR}"false">') + value + p.literal(m.param_end))
    return p.literal(m.param_prefix) + name + p.literal('" ') + p.choice(*kinds)


def _untyped(schema: dict[str, Any]) -> bool:
    """No constraint at all: the value may be text or JSON."""
    return schema.keys() <= _ANNOTATIONS
