"""Grammar pieces every format shares, generic or dedicated: the template's markup that free text may not hold,
the reasoning a whole-output grammar allows after the prompt, the JSON answer, and the shapes a request picks
(lazy with triggers, or whole-output) around a format's tool-call section."""

from __future__ import annotations

import dataclasses
import json
import re

from .. import peg as p
from ..analysis.formats import GENERIC
from ..analysis.model import ReasoningMode, TemplateAnalysis, ToolFormatMode
from ..parser.calls.dropped_markers import dropped_marker_calls
from ..parser.leftovers import WELL_KNOWN_CALL_MARKERS, learned_call_marker
from ..parser.markers import core, is_markup
from ..parser.reasoning import prefill
from ..parser.request import ParseRequest
from .spec import FormatGrammar, GrammarSpec, Trigger

__all__ = [
    "Names",
    "base_spec",
    "extras",
    "format_grammar",
    "json_answer",
    "lazy_grammar",
    "markup",
    "optional_parameters",
    "reasoning_after_prompt",
    "rule_safe",
    "text_before_calls",
    "text_stops",
    "whole_grammar",
    "with_contribution",
]


def base_spec(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """What every grammar of ``analysis`` carries besides its root: the tokens to preserve, the reasoning tags,
    and why the request gets no structural tag."""
    reasoning = analysis.reasoning
    start, end = (reasoning.start.strip(), reasoning.end.strip()) if reasoning.enabled else ("", "")
    return GrammarSpec(
        preserved_tokens=analysis.preserved_tokens,
        thinking_start_tag=start,
        thinking_end_tag=end,
        no_tag=no_tag_reason(request),
    )


def with_contribution(base: GrammarSpec, contributed: FormatGrammar) -> GrammarSpec:
    """``base`` with the preserved tokens and reasoning tags a dedicated format states for itself."""
    if contributed.preserved_tokens is not None:
        base = dataclasses.replace(base, preserved_tokens=contributed.preserved_tokens)
    if contributed.thinking_tags is not None:
        base = dataclasses.replace(
            base, thinking_start_tag=contributed.thinking_tags[0], thinking_end_tag=contributed.thinking_tags[1]
        )
    return base


def markup(analysis: TemplateAnalysis, request: ParseRequest | None = None) -> list[str]:
    """Every marker of the template the parser may read as structure, longest first (not the answer's own
    wrapper, which free text may hold).

    Free text in a grammar (an answer before or instead of calls, a string value) never contains one: the parser
    would read it as a call that does not parse, or end a value there, and the grammar must describe only what
    the parser reads back as meant."""
    tools = analysis.tools
    fmt, fn, args, cid = tools.format, tools.function, tools.arguments, tools.call_id
    # Dedicated formats read reasoning their own way (Gemma 4 thinks in a channel of the answer): their reasoning
    # markers are theirs to place (text_before_calls keeps them out of the text after a leading block).
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
    # The name prefix the parser reports left in content though it is no tag (R1's `function<｜tool▁sep｜>`), and the
    # well-known call markers inside the template's own (`<｜tool▁call▁begin｜>` alone, `<invoke name=` without its
    # quote): the parser reports those wherever they stand.
    found |= {m for m in (core(fn.name_prefix),) if learned_call_marker(m) == "call"}
    found |= {w for w in WELL_KNOWN_CALL_MARKERS if any(w in m for m in found)}
    if request is not None and request.tools_enabled:
        # A declared name right before its arguments (`get_weather[ARGS]`, `get_weather{`) is read as a call whose
        # markers a detokenizer dropped.
        found |= {s for s in dropped_marker_calls(analysis, request).stops if len(s) >= 3 and s[0] not in "{[`"}
    return sorted(found, key=len, reverse=True)


def rule_safe(name: str) -> str:
    """A tool or parameter name as a rule-name fragment (letters, digits and dashes)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-") or "tool"


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
    block the prompt opened, an optional block where the template reasons, and where the prompt closed it, at most
    that closer again (a model used to the block left open writes it; the parser reads it as the empty block)."""
    reasoning = analysis.reasoning
    end = core(reasoning.end)
    tail = prefill(request.generation_prompt, reasoning)
    if tail and end and end in tail:  # the prompt opened and closed the block
        return p.optional(p.space() + p.literal(end)) + p.space()
    if tail:
        return p.space() if not end else p.until(end) + p.literal(end) + p.space()
    if end and reasoning.mode is not ReasoningMode.NONE and request.generation_prompt.rstrip().endswith(end):
        return p.optional(p.space() + p.literal(end)) + p.space()
    start = _optional_block_start(analysis, request)
    if start is None:
        return p.eps()
    return p.optional(p.space() + (p.literal(start) if start else p.eps()) + p.until(end) + p.literal(end) + p.space())


def text_before_calls(analysis: TemplateAnalysis, request: ParseRequest, words: list[str]) -> p.Parser:
    """Text before the first call (tool_choice required), up to one of the trigger ``words``; may be empty (an
    optional star confuses llguidance). It may not open a reasoning block: with the optional block first, reasoning
    that mentions a trigger word would otherwise also read as text ending there, and llguidance commits to that."""
    start = _optional_block_start(analysis, request)
    # Nor may it hold a reasoning marker, in any format that reasons in a leading block (this text follows it): the
    # parser reports one left in the answer (a closer no block is open for, an opener starting the content).
    reasoning = [m for m in map(core, (analysis.reasoning.start, analysis.reasoning.end)) if is_markup(m)]
    stops = text_stops([*words, *([start] if start else [])], [*markup(analysis, request), *reasoning])
    return p.until_one_of(stops)


def text_stops(words: list[str], markers: list[str]) -> list[str]:
    """Where free text ends: the ``words`` that start what follows it, and the ``markers`` it may not hold —
    except those inside a word (MiniMax-M3's ``<]minimax[>`` in its call trigger), where text would stop early."""
    inner = [m for m in markers if not any(m in w for w in words)]
    return list(dict.fromkeys([*words, *inner]))


def no_tag_reason(request: ParseRequest) -> str:
    """Why ``request`` gets no structural tag whatever its format ("" when it may get one)."""
    if request.json_schema is not None:
        return "a json_schema request: the answer is one JSON value (use `full_grammar`, or the schema itself)"
    if not request.tools_enabled:
        return "the request has no tools"
    if request.tool_choice != "auto":
        return "tool_choice is not 'auto': `grammar` constrains the whole output from the first token"
    return ""


def whole_grammar(body: p.Parser) -> GrammarSpec:
    """A grammar applied from the first generated token on."""
    return GrammarSpec(body, lazy=False)


def lazy_grammar(root: p.Parser, triggers: tuple[Trigger, ...], whole: p.Parser | None) -> GrammarSpec:
    """A grammar rooted at ``root``'s trigger rules, applied once a trigger fires; ``whole`` is the same calls over
    the whole output, for engines that apply a grammar from the first token."""
    return GrammarSpec(root, lazy=True, triggers=triggers, whole=whole)


def extras(spec: GrammarSpec) -> dict[str, object]:
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


def format_grammar(contributed: FormatGrammar, analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """A dedicated format's grammar: the format supplies the parts, the request picks the shape."""
    if request.json_schema is not None:
        body = contributed.response
        return whole_grammar(body if body is not None else p.space() + json_answer(request) + p.space())
    if contributed.section is None or not request.tools_enabled:
        return GrammarSpec()
    words = [t.value for t in contributed.triggers if t.type == "word"]
    text = p.until_one_of(text_stops(words, markup(analysis, request))) if words else p.eps()
    if request.tool_choice == "required":
        body = contributed.required
        return whole_grammar(body if body is not None else text + contributed.section + p.space())
    whole = contributed.auto
    if whole is None and contributed.required is None and words:
        whole = text + p.optional(contributed.section + p.space())
    root = p.trigger_rule("calls", contributed.section)
    return lazy_grammar(root, contributed.triggers, whole)


class Names:
    """Rule names unique across one request's tools (``a`` + ``b-c`` and ``a-b`` + ``c`` must not collide: two
    different rules under one name are an error)."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = "-".join(part for part in parts if part)
        name, count = base, 1
        while name in self._used:
            count += 1
            name = f"{base}-{count}"
        self._used.add(name)
        return name


# Up to this many optional parameters may come in any order (each at most once); beyond, in the schema's order.
ANY_ORDER = 5


def optional_parameters(prefix: str, params: list[p.Parser]) -> p.Parser:
    """A call's optional parameters ``params`` (each one whole parameter, in the schema's order), each at most once.

    A parameter may not repeat (the parser would keep the first and warn). "Each optional parameter at most once,
    in any order" needs a grammar state per subset of the parameters written so far: no grammar of polynomial size
    describes all orders of n parameters. So with up to :data:`ANY_ORDER` of them the grammar has one rule per
    subset (at most 32 rules, 80 alternatives: models and llama.cpp's own tests write them in any order); with more,
    they follow the schema's order, one optional element each (linear size). That excludes no call: a template
    writes a call's arguments in the order of its ``arguments`` dict, so every call has a rendering in that order —
    the order JSON arguments follow under the schema converter (``peg.schema``) and DSML's parameters too. Rules are
    named after ``prefix``."""
    if len(params) > ANY_ORDER:
        return p.sequence(*(p.optional(param) for param in params))
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
