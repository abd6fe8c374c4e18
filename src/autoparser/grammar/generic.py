"""The grammar of the generic formats (JSON, tagged and dict calls; pythonic calls in :mod:`.pythonic`).

Grammars for constrained decoding (GBNF), with the lazy triggers that switch them on.

The parsers in this package are lenient: anything they cannot read as structure becomes content. A grammar has the
opposite job: it describes only what the model is *supposed* to write, so a sampler can keep a tool call well formed
and valid under the tool's parameter schema. It is therefore built separately, from the same analysis:

* tools with ``tool_choice="auto"``: a **lazy** grammar whose root is the tool-call section, switched on by a
  trigger (the section or per-call start marker; a pattern on the JSON call's start for formats without markers),
  and for engines that cannot wait for a trigger (xgrammar, llguidance as vLLM and SGLang drive it) a **full**
  grammar over the whole output: reasoning where the template has it, free text that never starts a call, then
  optionally the calls;
* ``tool_choice="required"`` or a named tool: a grammar over the whole output (reasoning first where the template
  has it);
* ``json_schema``: a grammar for the JSON answer;
* otherwise no grammar.

Whole-output grammars describe what the *model* writes, from its first token: never the generation prompt (an
engine matches generated tokens only; a reasoning block the prompt opened is finished, not re-opened).
"""

from __future__ import annotations

import re

from .. import peg as p
from ..analysis.model import CallIdPosition, TemplateAnalysis, ToolFormatMode
from ..parser.calls.tools_dict import syntax_of
from ..parser.calls.tools_json import field_key, member_key
from ..parser.calls.tools_tagged import value_stops
from ..parser.markers import core, flex, is_word_marker, tight
from ..parser.request import ParseRequest, ToolSpec
from ..parser.schema_types import accepts_string, constrains_text, string_part
from ..peg.first import first_set
from .common import (
    Names,
    json_answer,
    lazy_grammar,
    markup,
    optional_parameters,
    reasoning_after_prompt,
    rule_safe,
    text_before_calls,
    whole_grammar,
)
from .dicts import dict_grammar
from .pythonic import pythonic_grammar_section
from .spec import GrammarSpec, Trigger

__all__ = ["generic_grammar"]



def _tight(marker: str) -> p.Parser:
    text = core(marker)
    return p.literal(text) if text else p.eps()


def _opening(marker: str) -> p.Parser:
    """A marker that data follows directly (a name prefix): whitespace before it, none after (the parser reads
    the name right after the marker); just whitespace where there is no marker."""
    return tight(marker) if core(marker) else p.space()


def _arguments_schema(tool: ToolSpec) -> dict[str, object]:
    schema = tool.parameters
    return schema if schema else {"type": "object"}


def _json_call(analysis: TemplateAnalysis, tool: ToolSpec) -> p.Parser:
    fmt = analysis.tools.format
    sep = p.space() + "," + p.space()
    args = p.schema(p.json(), f"{rule_safe(tool.name)}-args", _arguments_schema(tool))
    if fmt.fun_name_is_key:
        return "{" + p.space() + p.literal(f'"{tool.name}"') + p.space() + ":" + p.space() + args + p.space() + "}"
    members: dict[str, p.Parser] = {}
    if fmt.name_field:
        members[fmt.name_field] = member_key(fmt.name_field) + f'"{tool.name}"'
    if fmt.args_field:
        members[fmt.args_field] = member_key(fmt.args_field) + args
    for field in (fmt.id_field, fmt.gen_id_field):
        if field:
            members[field] = member_key(field) + (
                '"' + _id_chars(analysis) + '"' if _strict_ids(analysis) else p.json_string()
            )
    order = [f for f in fmt.parameter_order if f in members] + [f for f in members if f not in fmt.parameter_order]
    body = members[order[0]]
    for field in order[1:]:
        body = body + sep + members[field]
    return "{" + p.space() + body + p.space() + "}"


def _strict_ids(analysis: TemplateAnalysis) -> bool:
    """The template renders only ids of one shape (Mistral's 9 alphanumerics): a model writing another one would
    write a conversation its own template refuses on the next turn (and a random one may never end it)."""
    return analysis.id_format == "alnum9"


def _id_chars(analysis: TemplateAnalysis) -> p.Parser:
    return p.chars("[a-zA-Z0-9]", 9, 9) if _strict_ids(analysis) else p.chars("[a-zA-Z0-9_-]", 1)


def _tagged_value(analysis: TemplateAnalysis, tool: ToolSpec, name: str) -> p.Parser:
    schema = tool.property_schema(name) or {}
    rule = f"{rule_safe(tool.name)}-{rule_safe(name)}"
    # Templates put a line break around values (``>\nVALUE\n</parameter>``); the value itself is constrained.
    pad = p.optional(p.choice("\r\n", "\n"))
    if accepts_string(schema):
        text_schema = string_part(schema)  # a raw value is a string; the raw converter rejects other branches
        stops = value_stops(analysis.tools)
        if not constrains_text(text_schema):
            return p.until_one_of(stops)  # any text; the closing tag follows directly (one Lark lexeme)
        constrained = p.schema(p.until_one_of(stops), rule, text_schema, raw=True)
        return p.choice(pad + constrained + pad, constrained)
    return p.space() + p.schema(p.json(), rule, schema) + p.space()


def _after_value(analysis: TemplateAnalysis, tool: ToolSpec, name: str) -> p.Parser:
    """A tagged value's end tag: right after a string (spaces before it are part of the value), after optional
    whitespace following any other value."""
    suffix = analysis.tools.arguments.value_suffix
    return _tight(suffix) + p.space() if accepts_string(tool.property_schema(name) or {}) else flex(suffix)


def _tagged_arguments(analysis: TemplateAnalysis, tool: ToolSpec) -> p.Parser:
    """The tagged arguments of one call: the required parameters first, in the schema's order, then the optional
    ones, each at most once.

    A parameter may not repeat (the parser would keep the first and warn); the optional ones come in any order up to
    a bound, beyond it in the schema's order (:func:`~.common.optional_parameters` says why)."""
    args = analysis.tools.arguments
    props = tool.parameters.get("properties") or {}
    required = [r for r in dict.fromkeys(tool.parameters.get("required") or []) if r in props]

    def one(name: str) -> p.Parser:
        head = _opening(args.name_prefix) + p.literal(name) + _tight(args.name_suffix)
        if core(args.value_prefix):
            head = head + p.space() + _tight(args.value_prefix)
        return head + _tagged_value(analysis, tool, name) + _after_value(analysis, tool, name)

    parts = [one(name) for name in required]
    optional = [one(name) for name in props if name not in required]
    if optional:
        parts.append(optional_parameters(rule_safe(tool.name), optional))
    return p.sequence(*parts) if parts else p.eps()


def _tag_call(analysis: TemplateAnalysis, tool: ToolSpec, names: Names | None = None) -> p.Parser:
    tools = analysis.tools
    fn = tools.function
    head = _opening(fn.name_prefix) + p.literal(tool.name) + flex(fn.name_suffix)
    if tools.format.mode is ToolFormatMode.TAG_WITH_DICT and core(fn.name_prefix):
        head = p.space() + p.literal(fn.name_prefix.lstrip() + tool.name)  # `call:get_weather{`, `func get_weather{`
    cid = tools.call_id
    if cid.position is CallIdPosition.PRE_FUNC_NAME and core(fn.name_prefix):
        opening = flex(cid.prefix) if core(cid.prefix) not in ("", core(tools.format.per_call_start)) else p.eps()
        head = opening + _id_chars(analysis) + head
    if cid.position is CallIdPosition.BETWEEN_FUNC_AND_ARGS and core(cid.prefix):
        head = head + p.optional(flex(cid.prefix) + _id_chars(analysis)) + flex(cid.suffix)
    if tools.format.mode is ToolFormatMode.TAG_WITH_JSON:
        body = p.schema(p.json(), f"{rule_safe(tool.name)}-args", _arguments_schema(tool))
    elif tools.format.mode is ToolFormatMode.TAG_WITH_DICT:  # the template's own dict syntax (grammar/dicts.py)
        values = tools.dict_values
        body = dict_grammar(syntax_of(values), values.true, values.null).arguments(tool, names)
    else:
        body = _tagged_arguments(analysis, tool)
    return head + body + flex(fn.close)


def _tool_section(analysis: TemplateAnalysis, request: ParseRequest) -> p.Parser:
    fmt = analysis.tools.format
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        calls = [p.rule(f"tool-{t.name}", _json_call(analysis, t)) for t in request.tools]
    else:
        names = Names()  # rule names of dict arguments, unique across the tools
        calls = [p.rule(f"tool-{t.name}", _tag_call(analysis, t, names)) for t in request.tools]
    call = p.choice(*calls)
    if core(fmt.per_call_start):
        call = flex(fmt.per_call_start) + call + flex(fmt.per_call_end)
    if core(fmt.per_call_start) or fmt.mode is not ToolFormatMode.JSON_NATIVE:
        sep = p.space()
    elif fmt.tools_array_wrapped:
        sep = p.space() + ","
    else:  # JSON objects one after another, as Llama 4's JSON template writes them (`}{`), or with commas
        sep = p.space() + p.optional(",")
    many = call + p.zero_or_more(sep + p.space() + call) if request.parallel_tool_calls else call
    word = _word_opener(analysis)
    if word:  # `functools[`: one literal, the trigger (see _word_opener)
        return p.space() + word + p.space() + many + p.space() + "]" + flex(fmt.section_end)
    if fmt.tools_array_wrapped:
        many = "[" + p.space() + many + p.space() + "]"
    if core(fmt.section_start):
        many = flex(fmt.section_start) + many + flex(fmt.section_end)
        if fmt.implied_end_written:  # a closer the template writes after several calls only: optional
            many = many + p.optional(flex(fmt.implied_end))
    if core(fmt.stated_word):  # the word the instructions prescribe, which the renders leave out: either way
        many = p.choice(p.literal(core(fmt.stated_word)) + p.space() + many, many)
    return many


def _word_opener(analysis: TemplateAnalysis) -> str:
    """The section marker and the bracket of the call list, where the marker is a plain word (FireFunction's
    ``functools[``), else "".

    A word is ordinary text too (``import functools``): as a lazy grammar's trigger it would force a call on an
    answer that mentions it, so the trigger is the word with the bracket the template writes right after it."""
    fmt = analysis.tools.format
    start = core(fmt.section_start)
    if fmt.mode is not ToolFormatMode.JSON_NATIVE or not fmt.tools_array_wrapped or not is_word_marker(start):
        return ""
    return start + "["


def _triggers(analysis: TemplateAnalysis, request: ParseRequest) -> tuple[Trigger, ...]:
    fmt = analysis.tools.format
    start = _word_opener(analysis) or core(fmt.section_start) or core(fmt.per_call_start)
    if start:
        return (Trigger("word", start),)
    # No marker (Llama 3.x writes bare JSON): fire on the start of a call object naming one of the tools.
    names = "|".join(re.escape(t.name) for t in request.tools)
    key = re.escape(field_key(fmt.name_field)) if fmt.name_field else ""
    opener = r"\[\s*" if fmt.tools_array_wrapped else ""
    # (a word the instructions prescribe before the calls fires where a bracket follows it: `callfn[`)
    worded = re.escape(core(fmt.stated_word)) + r"\s*" if core(fmt.stated_word) else ""
    worded = rf"(?:{worded})?" if worded else ""
    if fmt.fun_name_is_key or not key:
        return (Trigger("pattern", rf'({worded}{opener}\{{\s*"(?:{names})"\s*:)'),)
    first = next((f for f in fmt.parameter_order if f), fmt.name_field)
    if first != fmt.name_field:
        # The template writes another member first (`{"parameters": {…}, "function": "get"}`): the call starts there.
        return (Trigger("pattern", rf'({worded}{opener}\{{\s*"{re.escape(field_key(first))}"\s*:)'),)
    return (Trigger("pattern", rf'({worded}{opener}\{{\s*"{key}"\s*:\s*"(?:{names})")'),)


def generic_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    fmt = analysis.tools.format
    has_tools = request.tools_enabled and fmt.mode is not ToolFormatMode.NONE
    if request.json_schema is not None:
        body = reasoning_after_prompt(analysis, request) + p.space() + json_answer(request) + p.space()
        return whole_grammar(body)
    if not has_tools:
        return GrammarSpec()
    if fmt.mode is ToolFormatMode.PYTHONIC:
        section, triggers = pythonic_grammar_section(analysis.tools, request)
    else:
        section, triggers = _tool_section(analysis, request), _triggers(analysis, request)
    if core(analysis.content.end) and analysis.content.mode.value != "PLAIN":
        section = section + p.optional(p.literal(core(analysis.content.end)))  # the answer's end marker may follow
    lead = reasoning_after_prompt(analysis, request)
    words = [t.value for t in triggers if t.type == "word"]
    if request.tool_choice == "required":
        body = lead + text_before_calls(analysis, request, words or ["{"]) + section + p.space()
        return whole_grammar(body)
    if words:
        whole = lead + text_before_calls(analysis, request, words) + p.optional(section + p.space())
    else:  # calls without a marker (bare JSON): either the calls, or text that does not open one
        whole = lead + p.choice(section + p.space(), _text_not_opening(section, markup(analysis, request)))
    root = p.trigger_rule("calls", section + p.space())
    return lazy_grammar(root, triggers, whole)


def _text_not_opening(section: p.Parser, markers: list[str]) -> p.Parser:
    """Any text whose first non-blank character cannot start ``section`` (a bare ``{`` or ``[``), or nothing; it
    contains none of the template's ``markers``."""
    first, _ = first_set(section)
    excluded = sorted((first or frozenset()) | set(" \t\n\r"))
    char_class = "[^" + "".join(f"\\x{ord(ch):02X}" for ch in excluded) + "]"
    rest = p.until_one_of(markers) if markers else p.zero_or_more(p.any_char())
    return p.optional(p.space() + p.chars(char_class) + rest)
