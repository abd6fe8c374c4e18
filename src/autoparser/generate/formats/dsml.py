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
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from .. import tags
from ..assemble import GeneratedParser, response_format
from ..markers import core
from ..reasoning import extracts_reasoning, prefill, reasoning_block
from ..request import ParseRequest, ToolSpec
from ..schema_types import accepts_string

__all__ = ["build"]

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


def _marker(found: str, default: str) -> str:
    return core(found) or default


def build(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end`` where an item is a call section, bare calls, a marker that failed to start
    calls (UNPARSED) or plain text up to the next marker."""
    tools = analysis.tools
    items: list[p.Parser] = []
    triggers: list[str] = []
    # The format is known from the template source, so calls are parsed even if the analysis missed the markers.
    if request.tools_enabled:
        fmt, fn, args = tools.format, tools.function, tools.arguments
        section_start = _marker(fmt.section_start, f"<{_TOKEN}{_SECTION}>")
        section_end = _marker(fmt.section_end, section_start.replace("<", "</", 1))
        invoke_prefix = _marker(fn.name_prefix, _INVOKE_PREFIX)
        call = _call(
            request.tools,
            invoke_prefix,
            _marker(fn.name_suffix, _NAME_END),
            _marker(fn.close, _INVOKE_END),
            _marker(args.name_prefix, _PARAM_PREFIX),
            _marker(args.value_suffix, _PARAM_END),
        )
        calls = call + p.zero_or_more(p.space() + call)
        # The section's end tag is optional: calls stay calls when the model stops (or goes astray) after one.
        section = p.space() + p.literal(section_start) + p.space() + calls + p.space() + p.optional(section_end)
        items.append(section)
        items.append(p.space() + calls)  # models sometimes drop the section tags
        triggers = [section_start, invoke_prefix]
        items.append(p.tag(tags.UNPARSED, p.choice(*(p.literal(t) for t in triggers))))
    stops = sorted(set(triggers), key=len, reverse=True)
    text = p.until_one_of(stops) if stops else p.rest()
    items.append(p.negate(p.end()) + p.tag(tags.CONTENT, text))
    head = p.eps()
    if extracts_reasoning(analysis.reasoning, request):
        head = p.optional(reasoning_block(analysis.reasoning))
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format())
    parser = (head + p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(parser, prefill(request.generation_prompt, analysis.reasoning), tuple(triggers), request)


def _call(
    specs: tuple[ToolSpec, ...], invoke_prefix: str, name_end: str, invoke_end: str, param_prefix: str, param_end: str
) -> p.Parser:
    """One ``invoke`` element of a known tool, tagged TOOL from its start tag through its end tag."""
    alternatives: list[p.Parser] = []
    for spec in sorted(specs, key=lambda t: -len(t.name)):  # longest first: `get` must not take `get_time`
        # Atomic up to the closing quote, which shows the name is not the prefix of a longer one.
        name = p.tag(tags.TOOL_NAME, p.literal(spec.name))
        opening = p.atomic(p.literal(invoke_prefix) + name + p.literal(name_end))
        alternatives.append(opening + _arguments(spec, param_prefix, param_end))
    return p.tag(tags.TOOL, p.choice(*alternatives) + p.space() + p.literal(invoke_end))


def _arguments(spec: ToolSpec, param_prefix: str, param_end: str) -> p.Parser:
    """The parameters of a call to ``spec`` (the tool only matters when a parameter omits its ``string``
    attribute: the schema then decides whether the value is raw text)."""
    props = spec.parameters.get("properties")
    schemas = props.items() if isinstance(props, dict) else ()
    string_params = sorted((name for name, schema in schemas if accepts_string(schema)), key=len, reverse=True)

    def value(kind: str) -> p.Parser:
        return p.tag(kind, p.until(param_end)) + p.literal(param_end)

    def attribute(flag: str) -> p.Parser:
        return p.literal(f'{_KIND_ATTR}"{flag}"') + p.space() + ">"

    name = p.atomic(p.tag(tags.TOOL_ARG_NAME, p.chars(_ARG_NAME)) + '"')
    stated = p.choice(
        attribute("true") + value(tags.TOOL_ARG_STRING),
        attribute("false") + value(tags.TOOL_ARG_VALUE),
    )
    body = name + p.space() + stated
    if string_params:
        # No attribute: a string-typed parameter keeps its raw text, anything else is read as JSON.
        string_name = p.choice(*(p.literal(n) for n in string_params))
        untyped_string = p.atomic(p.tag(tags.TOOL_ARG_NAME, string_name) + '"') + p.space() + ">"
        body = p.choice(body, untyped_string + value(tags.TOOL_ARG_STRING))
    body = p.choice(body, name + p.space() + ">" + value(tags.TOOL_ARG_VALUE))
    arg = p.tag(tags.TOOL_ARG, p.literal(param_prefix) + body)
    return p.zero_or_more(p.space() + arg)
