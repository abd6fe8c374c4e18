"""Grammars for constrained decoding (GBNF), with the lazy triggers that switch them on.

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

import dataclasses
import functools
import json
import re
from dataclasses import dataclass

from .. import peg as p
from ..analysis.formats import GENERIC
from ..analysis.model import CallIdPosition, ReasoningMode, TemplateAnalysis, ToolFormatMode
from ..peg.first import first_set
from .dict_grammar import Names, dict_grammar
from .dropped_markers import dropped_marker_calls
from .markers import core, flex, is_markup, tight
from .reasoning import prefill
from .request import ParseRequest, ToolSpec
from .schema_types import accepts_string, constrains_text, string_part
from .structural_tag import build_structural_tag
from .tools_dict import syntax_of
from .tools_json import field_key, member_key
from .tools_tagged import value_stops

__all__ = [
    "FormatGrammar",
    "GrammarSpec",
    "Trigger",
    "build_grammar",
    "json_answer",
    "markup",
    "reasoning_after_prompt",
    "rule_safe",
    "text_before_calls",
    "text_stops",
]


@dataclass(frozen=True, slots=True)
class Trigger:
    """What switches a lazy grammar on: ``word`` (literal text), ``pattern`` (regex search), ``pattern_full``
    (regex matching the whole output so far) or ``token``.

    Triggers are searched in the generated text (llama.cpp's sampler buffers the output, not the prompt); patterns
    that must see the end of the generation prompt also match at the start of the output (``^...``). The grammar
    starts at a pattern's first capture group (its match start if it has none), or at a word."""

    type: str
    value: str


@dataclass(frozen=True)
class GrammarSpec:
    """Everything a constrained-decoding engine needs for one request.

    ``root`` is the grammar as a parser graph; :attr:`gbnf` and :attr:`lark` write it on first use (then keep
    it): a serving stack needs one dialect, so it does not pay for the other.
    """

    root: p.Parser | None = None
    lazy: bool = False
    triggers: tuple[Trigger, ...] = ()
    preserved_tokens: tuple[str, ...] = ()
    thinking_start_tag: str = ""
    thinking_end_tag: str = ""
    whole: p.Parser | None = None  # a lazy grammar's whole-output counterpart (free text and/or the calls)
    no_tag: str = "the request has no tools"  # why a request gets no :attr:`structural_tag` ("" when it may)

    @functools.cached_property
    def gbnf(self) -> str | None:
        """GBNF text (llama.cpp, xgrammar), or None when the request has no grammar."""
        return None if self.root is None else p.to_gbnf(self.root, lazy=self.lazy)

    @functools.cached_property
    def lark(self) -> str | None:
        """The same language in llguidance's Lark dialect, or None when the request has no grammar."""
        return None if self.root is None else p.to_lark(self.root, lazy=self.lazy)

    @property
    def full_root(self) -> p.Parser | None:
        """The grammar over the whole output, applied from the first token: the grammar itself when it is not
        lazy, else its whole-output counterpart."""
        return self.whole if self.lazy else self.root

    @functools.cached_property
    def full_gbnf(self) -> str | None:
        """GBNF over the whole output (see :attr:`full_root`), or None."""
        if not self.lazy:
            return self.gbnf
        return None if self.whole is None else p.to_gbnf(self.whole)

    @functools.cached_property
    def full_lark(self) -> str | None:
        """Lark over the whole output (see :attr:`full_root`), or None."""
        if not self.lazy:
            return self.lark
        return None if self.whole is None else p.to_lark(self.whole)

    @functools.cached_property
    def _structural(self) -> tuple[dict[str, object] | None, str]:
        if self.no_tag or not self.lazy:
            return None, self.no_tag or "the template shows no tool-call format to constrain"
        return build_structural_tag(self.whole, self.triggers)

    @property
    def structural_tag(self) -> dict[str, object] | None:
        """The whole-output grammar as an xgrammar structural tag (see :mod:`.structural_tag`), or None."""
        return self._structural[0]

    @property
    def structural_tag_reason(self) -> str:
        """Why there is no :attr:`structural_tag` ("" when there is one)."""
        return self._structural[1]


@dataclass(frozen=True, slots=True)
class FormatGrammar:
    """What a dedicated format (``formats/<name>.py``, function ``grammar(analysis, request)``) contributes.

    Grammar parsers describe what the model is *supposed* to write, strictly (no fallbacks to content), and are
    written with grammar-friendly nodes: ``until(D)`` directly followed by ``literal(D)``, ``schema()`` for JSON
    arguments, no lookaheads (they are dropped from grammars).

    * ``section``: the tool calls from the trigger on; the root of the lazy grammar (tool_choice auto). None when
      the request has no tools.
    * ``triggers``: what switches the lazy grammar on; the grammar starts at the first capture group of a pattern
      trigger (else the match start) or at a word trigger.
    * ``required``: the whole output after the generation prompt for tool_choice required (None: text up to the
      first word trigger, then ``section``).
    * ``auto``: the whole output after the generation prompt for tool_choice auto, for engines without lazy
      triggers: ``required`` with the calls optional (None: text up to the first word trigger, then optionally
      ``section``; formats with their own ``required`` must give their own ``auto``, else there is none).
    * ``response``: the whole output after the generation prompt for a json_schema request (None: the JSON value).
    * ``preserved_tokens`` / ``thinking_tags``: override what the analysis reports (None: keep it).
    """

    section: p.Parser | None = None
    triggers: tuple[Trigger, ...] = ()
    required: p.Parser | None = None
    auto: p.Parser | None = None
    response: p.Parser | None = None
    preserved_tokens: tuple[str, ...] | None = None
    thinking_tags: tuple[str, str] | None = None


def _tight(marker: str) -> p.Parser:
    text = core(marker)
    return p.literal(text) if text else p.eps()


def _opening(marker: str) -> p.Parser:
    """A marker that data follows directly (a name prefix): whitespace before it, none after (the parser reads
    the name right after the marker); just whitespace where there is no marker."""
    return tight(marker) if core(marker) else p.space()


def markup(analysis: TemplateAnalysis, request: ParseRequest | None = None) -> list[str]:
    """Every marker of the template the parser may read as structure, longest first (not the answer's own
    wrapper, which free text may hold).

    Free text in a grammar (an answer before or instead of calls, a string value) never contains one: the parser
    would read it as a call that does not parse, or end a value there, and the grammar must describe only what
    the parser reads back as meant."""
    tools = analysis.tools
    fmt, fn, args, cid = tools.format, tools.function, tools.arguments, tools.call_id
    # Dedicated formats read reasoning their own way (Gemma 4 thinks in a channel of the answer, MiniMax-M3 may
    # close a block it never opened): their reasoning markers are theirs to place.
    reasoning = [analysis.reasoning.start, analysis.reasoning.end] if analysis.format == GENERIC else []
    fields = [
        *reasoning,
        fmt.section_start,
        fmt.section_end,
        fmt.per_call_start,
        fmt.per_call_end,
        fn.name_prefix,
        fn.close,
        args.start,
        args.end,
        args.name_prefix,
        args.value_suffix,
        cid.prefix,
        *analysis.end_of_turn,
    ]
    if fmt.mode is ToolFormatMode.TAG_WITH_DICT:  # the dict's string delimiters (Gemma's `<|"|>`) belong in calls
        fields += [tools.dict_values.quote_open, tools.dict_values.quote_close]
    found = {core(f) for f in fields if is_markup(core(f))}
    if request is not None and request.tools_enabled:
        # A declared name right before its arguments (`get_weather[ARGS]`, `get_weather{`) is read as a call whose
        # markers a detokenizer dropped.
        found |= {s for s in dropped_marker_calls(analysis, request).stops if len(s) >= 3 and s[0] not in "{[`"}
    return sorted(found, key=len, reverse=True)


def rule_safe(name: str) -> str:
    """A tool or parameter name as a rule-name fragment (letters, digits and dashes)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-") or "tool"


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


# Up to this many optional parameters may come in any order (each at most once); beyond, in the schema's order.
_ANY_ORDER = 5


def _tagged_arguments(analysis: TemplateAnalysis, tool: ToolSpec) -> p.Parser:
    """The tagged arguments of one call: the required parameters first, in the schema's order, then the optional
    ones, each at most once.

    A parameter may not repeat (the parser would keep the first and warn). "Each optional parameter at most once,
    in any order" needs a grammar state per subset of the parameters written so far: no grammar of polynomial size
    describes all orders of n parameters. So with up to :data:`_ANY_ORDER` optional parameters the grammar has one
    rule per subset (at most 32 rules, 80 alternatives: models and llama.cpp's own tests write them in any order);
    with more, they follow the schema's order, one optional element each (linear size). That excludes no call: a
    template writes a call's arguments in the order of its ``arguments`` dict, so every call has a rendering in
    that order — the order JSON arguments follow under the schema converter (``peg.schema``) and DSML's
    parameters too."""
    args = analysis.tools.arguments
    props = tool.parameters.get("properties") or {}
    required = [r for r in dict.fromkeys(tool.parameters.get("required") or []) if r in props]

    def one(name: str) -> p.Parser:
        head = _opening(args.name_prefix) + p.literal(name) + _tight(args.name_suffix)
        if core(args.value_prefix):
            head = head + p.space() + _tight(args.value_prefix)
        return head + _tagged_value(analysis, tool, name) + _after_value(analysis, tool, name)

    parts = [one(name) for name in required]
    optional = [name for name in props if name not in required]
    if len(optional) > _ANY_ORDER:
        parts += [p.optional(one(name)) for name in optional]
    elif optional:
        parts.append(_any_order(rule_safe(tool.name), [one(name) for name in optional]))
    return p.sequence(*parts) if parts else p.eps()


def _any_order(prefix: str, params: list[p.Parser]) -> p.Parser:
    """Each of ``params`` at most once, in any order: one rule per set of parameters already written."""
    shared = [p.rule(f"{prefix}-optional-arg-{i}", param) for i, param in enumerate(params)]
    full = (1 << len(params)) - 1
    rules: dict[int, p.Parser] = {}

    def after(used: int) -> p.Parser:
        if used == full:
            return p.eps()
        if used not in rules:
            rest = [shared[i] + after(used | 1 << i) for i in range(len(params)) if not used & 1 << i]
            rules[used] = p.rule(f"{prefix}-optional-{used}", p.optional(p.choice(*rest)))
        return rules[used]

    return after(0)


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
    elif tools.format.mode is ToolFormatMode.TAG_WITH_DICT:  # the template's own dict syntax (dict_grammar.py)
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
    sep = p.space() if core(fmt.per_call_start) or fmt.mode is not ToolFormatMode.JSON_NATIVE else p.space() + ","
    many = call + p.zero_or_more(sep + p.space() + call) if request.parallel_tool_calls else call
    if fmt.tools_array_wrapped:
        many = "[" + p.space() + many + p.space() + "]"
    if core(fmt.section_start):
        many = flex(fmt.section_start) + many + flex(fmt.section_end)
    return many


def _triggers(analysis: TemplateAnalysis, request: ParseRequest) -> tuple[Trigger, ...]:
    fmt = analysis.tools.format
    start = core(fmt.section_start) or core(fmt.per_call_start)
    if start:
        return (Trigger("word", start),)
    # No marker (Llama 3.x writes bare JSON): fire on the start of a call object naming one of the tools.
    names = "|".join(re.escape(t.name) for t in request.tools)
    key = re.escape(field_key(fmt.name_field)) if fmt.name_field else ""
    opener = r"\[\s*" if fmt.tools_array_wrapped else ""
    if fmt.fun_name_is_key or not key:
        return (Trigger("pattern", rf'({opener}\{{\s*"(?:{names})"\s*:)'),)
    return (Trigger("pattern", rf'({opener}\{{\s*"{key}"\s*:\s*"(?:{names})")'),)


def _optional_block_start(analysis: TemplateAnalysis, request: ParseRequest) -> str | None:
    """The start tag of the optional reasoning block a whole-output grammar offers after the generation prompt
    ("" for a block without a start tag), or None when it offers none: the template has no reasoning, or the
    prompt already opened (then :func:`reasoning_after_prompt` finishes the block) or closed it."""
    reasoning = analysis.reasoning
    end = core(reasoning.end)
    gp = request.generation_prompt
    if reasoning.mode is ReasoningMode.NONE or not end or prefill(gp, reasoning) or gp.rstrip().endswith(end):
        return None
    return core(reasoning.start)


def reasoning_after_prompt(analysis: TemplateAnalysis, request: ParseRequest) -> p.Parser:
    """What a whole-output grammar allows between the generation prompt and the answer: the rest of a reasoning
    block the prompt opened, an optional block where the template reasons, nothing where the prompt closed it."""
    reasoning = analysis.reasoning
    end = core(reasoning.end)
    tail = prefill(request.generation_prompt, reasoning)
    if tail:
        return p.space() if not end or end in tail else p.until(end) + p.literal(end) + p.space()
    start = _optional_block_start(analysis, request)
    if start is None:
        return p.eps()
    return p.optional(p.space() + (p.literal(start) if start else p.eps()) + p.until(end) + p.literal(end) + p.space())


def text_before_calls(analysis: TemplateAnalysis, request: ParseRequest, words: list[str]) -> p.Parser:
    """Text before the first call (tool_choice required), up to one of the trigger ``words``; may be empty (an
    optional star confuses llguidance). It may not open a reasoning block: with the optional block first, reasoning
    that mentions a trigger word would otherwise also read as text ending there, and llguidance commits to that."""
    start = _optional_block_start(analysis, request)
    return p.until_one_of(text_stops([*words, *([start] if start else [])], markup(analysis, request)))


def text_stops(words: list[str], markers: list[str]) -> list[str]:
    """Where free text ends: the ``words`` that start what follows it, and the ``markers`` it may not hold —
    except those inside a word (MiniMax-M3's ``<]minimax[>`` in its call trigger), where text would stop early."""
    inner = [m for m in markers if not any(m in w for w in words)]
    return list(dict.fromkeys([*words, *inner]))


@functools.lru_cache(maxsize=256)
def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """The grammar, triggers, preserved tokens and reasoning tags for ``request`` (cached)."""
    reasoning = analysis.reasoning
    start, end = (reasoning.start.strip(), reasoning.end.strip()) if reasoning.enabled else ("", "")
    base = GrammarSpec(
        preserved_tokens=analysis.preserved_tokens,
        thinking_start_tag=start,
        thinking_end_tag=end,
        no_tag=_no_tag(request),
    )
    if analysis.format == GENERIC:
        return dataclasses.replace(_generic_grammar(analysis, request), **_extras(base))
    from .formats import dedicated_grammar  # formats build on this module

    builder = dedicated_grammar(analysis.format)
    if builder is None:
        return base
    contributed = builder(analysis, request)
    if contributed.preserved_tokens is not None:
        base = dataclasses.replace(base, preserved_tokens=contributed.preserved_tokens)
    if contributed.thinking_tags is not None:
        base = dataclasses.replace(
            base, thinking_start_tag=contributed.thinking_tags[0], thinking_end_tag=contributed.thinking_tags[1]
        )
    return dataclasses.replace(_format_grammar(contributed, analysis, request), **_extras(base))


def _no_tag(request: ParseRequest) -> str:
    """Why ``request`` gets no structural tag whatever its format ("" when it may get one)."""
    if request.json_schema is not None:
        return "a json_schema request: the answer is one JSON value (use `full_grammar`, or the schema itself)"
    if not request.tools_enabled:
        return "the request has no tools"
    if request.tool_choice != "auto":
        return "tool_choice is not 'auto': `grammar` constrains the whole output from the first token"
    return ""


def _whole(body: p.Parser) -> GrammarSpec:
    """A grammar applied from the first generated token on."""
    return GrammarSpec(body, lazy=False)


def _lazy(root: p.Parser, triggers: tuple[Trigger, ...], whole: p.Parser | None) -> GrammarSpec:
    """A grammar rooted at ``root``'s trigger rules, applied once a trigger fires; ``whole`` is the same calls over
    the whole output, for engines that apply a grammar from the first token."""
    return GrammarSpec(root, lazy=True, triggers=triggers, whole=whole)


def _extras(spec: GrammarSpec) -> dict[str, object]:
    return {
        "preserved_tokens": spec.preserved_tokens,
        "thinking_start_tag": spec.thinking_start_tag,
        "thinking_end_tag": spec.thinking_end_tag,
        "no_tag": spec.no_tag,
    }


def json_answer(request: ParseRequest) -> p.Parser:
    """A JSON answer under the request's response schema, bare or in a ```json fence."""
    assert request.json_schema is not None
    value = p.schema(p.json(), "response", json.loads(request.json_schema))
    return p.choice(p.literal("```json") + p.space() + value + p.space() + "```", value)


def _format_grammar(contributed: FormatGrammar, analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """A dedicated format's grammar: the format supplies the parts, the request picks the shape."""
    if request.json_schema is not None:
        body = contributed.response
        return _whole(body if body is not None else p.space() + json_answer(request) + p.space())
    if contributed.section is None or not request.tools_enabled:
        return GrammarSpec()
    words = [t.value for t in contributed.triggers if t.type == "word"]
    text = p.until_one_of(text_stops(words, markup(analysis, request))) if words else p.eps()
    if request.tool_choice == "required":
        body = contributed.required
        return _whole(body if body is not None else text + contributed.section + p.space())
    whole = contributed.auto
    if whole is None and contributed.required is None and words:
        whole = text + p.optional(contributed.section + p.space())
    root = p.trigger_rule("calls", contributed.section)
    return _lazy(root, contributed.triggers, whole)


def _generic_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    fmt = analysis.tools.format
    has_tools = request.tools_enabled and fmt.mode is not ToolFormatMode.NONE
    if request.json_schema is not None:
        body = reasoning_after_prompt(analysis, request) + p.space() + json_answer(request) + p.space()
        return _whole(body)
    if not has_tools:
        return GrammarSpec()
    if fmt.mode is ToolFormatMode.PYTHONIC:
        from .pythonic_grammar import pythonic_grammar_section  # it builds on this module

        section, triggers = pythonic_grammar_section(analysis.tools, request)
    else:
        section, triggers = _tool_section(analysis, request), _triggers(analysis, request)
    if core(analysis.content.end) and analysis.content.mode.value != "PLAIN":
        section = section + p.optional(p.literal(core(analysis.content.end)))  # the answer's end marker may follow
    lead = reasoning_after_prompt(analysis, request)
    words = [t.value for t in triggers if t.type == "word"]
    if request.tool_choice == "required":
        body = lead + text_before_calls(analysis, request, words or ["{"]) + section + p.space()
        return _whole(body)
    if words:
        whole = lead + text_before_calls(analysis, request, words) + p.optional(section + p.space())
    else:  # calls without a marker (bare JSON): either the calls, or text that does not open one
        whole = lead + p.choice(section + p.space(), _text_not_opening(section, markup(analysis, request)))
    root = p.trigger_rule("calls", section + p.space())
    return _lazy(root, triggers, whole)


def _text_not_opening(section: p.Parser, markers: list[str]) -> p.Parser:
    """Any text whose first non-blank character cannot start ``section`` (a bare ``{`` or ``[``), or nothing; it
    contains none of the template's ``markers``."""
    first, _ = first_set(section)
    excluded = sorted((first or frozenset()) | set(" \t\n\r"))
    char_class = "[^" + "".join(f"\\x{ord(ch):02X}" for ch in excluded) + "]"
    rest = p.until_one_of(markers) if markers else p.zero_or_more(p.any_char())
    return p.optional(p.space() + p.chars(char_class) + rest)
