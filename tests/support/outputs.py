"""Well-formed model outputs for every bundled template, written the way the template itself writes them.

The robustness tests and benchmarks need realistic outputs whose correct parse is known without trusting the
parser. So each output is *rendered*: an assistant turn (tool calls, content, reasoning) is rendered through the
template after the user's turn, and the model's part is what follows the prompt, minus the end-of-turn text and
stop tokens. The expected message is what went into the rendering. Where the rendered history does not continue
the prompt (the generation prompt opened a reasoning block that history turns drop), the part of the turn header
the prompt already wrote is removed and the open block is closed first, as a model would.

Tools share name and parameter prefixes (``get`` / ``get_weather``, ``city`` / ``city_code``) and cover every JSON
type. A template that renders a non-string value as a Python literal (``True``, ``None``, ``['a']``) gets calls
without that argument: what the model writes then is not JSON, and that is not what these tests measure.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.analysis.diff import common_prefix_len
from autoparser.analysis.formats import GENERIC
from autoparser.analysis.model import ContentMode, TemplateAnalysis, ToolFormatMode
from autoparser.errors import TemplateError
from autoparser.generate.reasoning import prefill

from ..generate.helpers import STOP_TOKENS

__all__ = [
    "HOSTILE",
    "TOOLS",
    "USER",
    "ExpectedCall",
    "Output",
    "call_marker_cores",
    "chat",
    "markers",
    "outputs",
    "payload_words",
    "render_calls",
    "skip_reasons",
    "tool_templates",
]

USER: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather?"}]

# A string with what breaks naive parsers: quotes, a line break, tags and closing-tag look-alikes, a backslash,
# non-ASCII letters and an astral-plane emoji.
HOSTILE = 'Pa "ris" <b>x</b> a<b & c\\d\nline two \u6771\u4eac \u00e9t\u00e9 \U0001f30d'
CONTENT = 'Here is the forecast for "Paris": 21 < 25 degrees.\nBring an umbrella \u2614, s\'il vous pla\u00eet.'
REASONING = "First, the user asks about the weather in Paris.\nThe lookup tool needs a city; 2 < 3 holds."
CALL_CONTENT = "Let me check the forecast."
FILLER_REASONING = "Let me call the tool."  # written before a call when the prompt left a reasoning block open


def _param(kind: Mapping[str, Any]) -> dict[str, Any]:
    return {**kind, "description": "a parameter"}  # command-r-plus's template reads every description


_WEATHER_PROPS: dict[str, Any] = {
    "city": _param({"type": "string"}),
    "city_code": _param({"type": "string"}),
    "days": _param({"type": "integer"}),
    "temp": _param({"type": "number"}),
    "metric": _param({"type": "boolean"}),
    "note": _param({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    "unit": _param({"type": "string", "enum": ["celsius", "fahrenheit"]}),
    "tags": _param({"type": "array", "items": {"type": "string"}}),
    "options": _param({"type": "object", "additionalProperties": {}}),
}


def _tool(name: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": dict(properties)}
    return {"type": "function", "function": {"name": name, "description": "Weather lookup", "parameters": schema}}


TOOLS: list[dict[str, Any]] = [
    _tool("get_weather", _WEATHER_PROPS),
    _tool("get", {"city": _param({"type": "string"})}),
    _tool("ping", {}),
]

FULL_ARGS: dict[str, Any] = {
    "city": HOSTILE,
    "city_code": "PAR",
    "days": 3,
    "temp": 21.5,
    "metric": True,
    "note": None,
    "unit": "celsius",
    "tags": ["rain", "wind"],
    "options": {"depth": {"levels": [1, False, None, 2.5], "label": "deep"}},
}

# Call sets rendered as one assistant turn; a template that cannot render several calls gets the first alone.
CALL_SETS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "one": (("get_weather", FULL_ARGS),),
    "prefix": (("get", {"city": "Zanzibar"}), ("get_weather", {"city_code": "ZNZ", "days": 2})),
    "three": (("ping", {}), ("get_weather", {"city": "Oslo", "city_code": "OSL"}), ("get", {"city": "Timbuktu"})),
}
CALL_IDS = ("call00001", "call00002", "call00003")  # Mistral templates insist on 9 alphanumerics


@dataclass(frozen=True)
class ExpectedCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""  # the id the output carries ("" when the template writes none of ours)


@dataclass(frozen=True)
class Output:
    """One well-formed output and the message it must parse to."""

    template: str
    label: str
    text: str
    content: str = ""
    reasoning: str = ""
    calls: tuple[ExpectedCall, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.template}:{self.label}"


@functools.cache
def chat(template: str) -> ChatParams:
    """The request every output of ``template`` answers (tools offered, reasoning extracted; no tools for a
    template that cannot render any, such as MiroThinker)."""
    tmpl = ChatTemplate.load(template)
    try:
        return tmpl.apply(USER, tools=TOOLS, reasoning_format="auto", parallel_tool_calls=True)
    except TemplateError:
        return tmpl.apply(USER, reasoning_format="auto")


def tool_templates() -> list[str]:
    """Templates whose parser reads tool calls (generic ones with a call format, and every dedicated format)."""
    names = []
    for name in bundled_templates():
        analysis = ChatTemplate.load(name).analysis
        if analysis.tools.format.mode is not ToolFormatMode.NONE or analysis.format != GENERIC:
            names.append(name)
    return names


def markers(template: str) -> tuple[str, ...]:
    """Every marker string the analysis found (whitespace-trimmed), plus the request's preserved tokens; longest
    first. For JSON calls, the quoted member names are structure too."""
    analysis = ChatTemplate.load(template).analysis
    found = {m.strip() for m in _marker_fields(analysis)} | set(chat(template).preserved_tokens)
    fmt = analysis.tools.format
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        found |= {json.dumps(f) for f in (fmt.name_field, fmt.args_field, fmt.id_field) if f}
    return tuple(sorted((m for m in found if len(m) >= 2), key=lambda m: (-len(m), m)))


def call_marker_cores(template: str) -> tuple[str, ...]:
    """Markers that open a tool call: seeing one in the content means a call did not parse."""
    analysis = ChatTemplate.load(template).analysis
    if analysis.format != GENERIC:
        return ()
    tools = analysis.tools
    found = (tools.format.section_start, tools.format.per_call_start, tools.function.name_prefix)
    return tuple(m.strip() for m in found if len(m.strip()) >= 3)


def _marker_fields(analysis: TemplateAnalysis) -> list[str]:
    tools = analysis.tools
    fmt, fn, args, ids = tools.format, tools.function, tools.arguments, tools.call_id
    return [
        analysis.reasoning.start,
        analysis.reasoning.end,
        analysis.content.start,
        analysis.content.end,
        fmt.section_start,
        fmt.section_end,
        fmt.per_call_start,
        fmt.per_call_end,
        fn.name_prefix,
        fn.name_suffix,
        fn.close,
        args.start,
        args.end,
        args.name_prefix,
        args.name_suffix,
        args.value_prefix,
        args.value_suffix,
        args.separator,
        ids.prefix,
        ids.suffix,
    ]


def payload_words(output: Output) -> frozenset[str]:
    """Words of the output's data (content, reasoning, string arguments) that no marker or name contains: each
    one still in a (damaged) output must survive parsing somewhere."""
    texts = [output.content, output.reasoning]
    for call in output.calls:
        texts.extend(_strings(call.arguments))
    structural = " ".join([*markers(output.template), *(t["function"]["name"] for t in TOOLS), *_WEATHER_PROPS])
    words = {w for t in texts for w in re.findall(r"[A-Za-z]{5,}", t)}
    return frozenset(w for w in words if w.lower() not in structural.lower())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# --- rendering ----------------------------------------------------------------------------------------------------


def _render(tmpl: ChatTemplate, messages: Sequence[Mapping[str, Any]], generation: bool) -> str:
    return tmpl.apply(messages, tools=TOOLS, reasoning_format="auto", add_generation_prompt=generation).prompt


def _turn_text(tmpl: ChatTemplate, message: Mapping[str, Any], reasoning: str) -> tuple[str, str] | None:
    """The model's part of a rendered assistant turn, and the reasoning it carries ("" if none). None when the
    template cannot render it."""
    try:
        params = chat(tmpl.name)
        prompt = params.prompt
        full = _render(tmpl, [*USER, message], False)
        base = _render(tmpl, USER, False)
        plain = _render(tmpl, [*USER, {"role": "assistant", "content": "END_MARK"}], False)
    except (TemplateError, RecursionError):
        return None
    analysis = tmpl.analysis
    start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
    tail = prefill(params.generation_prompt, analysis.reasoning)
    if full.startswith(prompt):
        text = full[len(prompt) :]
    elif full.startswith(base):
        text = full[len(base) :]
        header = params.generation_prompt[: len(params.generation_prompt) - len(tail)]
        shared = common_prefix_len(header, text)
        while shared < len(header) and shared and text[shared - 1] not in "\n>":
            shared -= 1  # stop at a marker boundary, not inside a marker both happen to start alike
        text = text[shared:]
        if tail and end and end not in tail:  # the prompt left a block open: write into it, then close it
            text = text.lstrip()
            if start and text.startswith(start):
                text = text[len(start) :].lstrip()
            if end not in text:
                text = (reasoning or FILLER_REASONING) + analysis.reasoning.end + text
            elif not reasoning and text.startswith(end):
                text = FILLER_REASONING + text
    else:
        return None
    end_of_turn = plain.partition("END_MARK")[2]
    if end_of_turn.strip() and text.endswith(end_of_turn):
        text = text[: -len(end_of_turn)]
    if reasoning and reasoning not in text and analysis.format == GENERIC and start and end:
        text = _inject_reasoning(text, analysis, reasoning, bool(tail))
    unmarked = text
    for marker in _marker_fields(analysis)[4:]:  # the tool-call markers (GigaChat's section starts with the stop)
        if marker.strip():
            unmarked = unmarked.replace(marker.strip(), "")
    if end_of_turn.strip() and end_of_turn.strip() in unmarked:
        return None  # the template split the turn in two (content, then calls): no model writes that
    shown = reasoning if reasoning and reasoning in text else ""
    if not shown and FILLER_REASONING in text:
        shown = FILLER_REASONING
    if tail and start and start in tail:  # the prompt's part of the block is reasoning too (Apriel's preamble)
        shown = (tail[tail.index(start) + len(start) :] + shown).strip()
    return text, shown


def _inject_reasoning(text: str, analysis: TemplateAnalysis, reasoning: str, opened: bool) -> str:
    """Put reasoning into a turn whose history rendering dropped it: into an empty block, or before the turn."""
    start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
    empty = re.compile(re.escape(start) + r"\s*" + re.escape(end))
    if empty.search(text):
        return empty.sub(lambda _: start + reasoning + end, text, count=1)
    if opened:
        stripped = text.lstrip()
        if stripped.startswith(end):
            return reasoning + text
        return reasoning + analysis.reasoning.end + text
    return analysis.reasoning.start + reasoning + analysis.reasoning.end + text


def _cut_stop(text: str, after: int) -> str:
    cuts = [c for c in (text.find(t, max(after, 0)) for t in STOP_TOKENS) if c >= 0]
    return text[: min(cuts)] if cuts else text


def _json_spellings(value: Any) -> list[str]:
    return [json.dumps(value), json.dumps(value, separators=(",", ":")), json.dumps(value, ensure_ascii=False)]


@functools.cache
def _unfaithful_args(template: str) -> tuple[str, ...]:
    """Arguments the template does not write as JSON (Python literals), found by rendering a call with each."""
    tmpl = ChatTemplate.load(template)
    if tmpl.analysis.format != GENERIC:
        return ()  # a dedicated format reads its own literal syntax
    bad = []
    for key, value in FULL_ARGS.items():
        rendered = _call_turn(tmpl, (("get_weather", {key: value}),), "")
        if rendered is None:
            continue
        if isinstance(value, str):
            spelled = [value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]
        else:
            spelled = _json_spellings(value)
        if not any(s in rendered[0] for s in spelled):
            bad.append(key)
    return tuple(bad)


def _call_turn(
    tmpl: ChatTemplate, calls: Sequence[tuple[str, Mapping[str, Any]]], content: str, reasoning: str = ""
) -> tuple[str, str] | None:
    wire = [
        {"id": CALL_IDS[i], "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": wire}
    if reasoning:
        message["reasoning_content"] = reasoning
    turn = _turn_text(tmpl, message, reasoning)
    if turn is None:
        return None
    text, shown = turn
    at = _find_name(text, calls[-1][0])
    if at < 0 or any(_find_name(text, name) < 0 for name, _ in calls):
        return None
    return _cut_stop(text, at), shown


def render_calls(template: str, calls: Sequence[tuple[str, dict[str, Any]]], content: str = "") -> str | None:
    """The template's own text for an assistant turn with these calls (None if it cannot render them)."""
    rendered = _call_turn(ChatTemplate.load(template), tuple(calls), content)
    return rendered[0] if rendered is not None else None


def _find_name(text: str, name: str) -> int:
    """Position of the last whole occurrence of a call name, or -1."""
    hits = [m.start() for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text)]
    return hits[-1] if hits else -1


def _call_outputs(template: str) -> tuple[list[Output], str | None]:
    tmpl = ChatTemplate.load(template)
    dropped = _unfaithful_args(template)
    notes = (f"written as non-JSON literals, left out: {', '.join(dropped)}",) if dropped else ()
    found: list[Output] = []
    variants: list[tuple[str, tuple[tuple[str, dict[str, Any]], ...], str, str]] = [
        (label, calls, "", "") for label, calls in CALL_SETS.items()
    ]
    variants.append(("content+call", (("get_weather", {"city": "Reykjavik"}),), CALL_CONTENT, ""))
    if _reasoning_enabled(tmpl):
        variants.append(("reasoning+call", (("get", {"city": "Kathmandu"}),), "", REASONING))
    for label, calls, content, reasoning in variants:
        kept = tuple((name, {k: v for k, v in args.items() if k not in dropped}) for name, args in calls)
        rendered = _call_turn(tmpl, kept, content, reasoning)
        if rendered is None and len(kept) > 1:
            kept = kept[:1]
            label += "[single]"
            rendered = _call_turn(tmpl, kept, content, reasoning)
        if rendered is None:
            continue
        text, shown = rendered
        if content and content in text and text.index(content) > _find_name(text, kept[0][0]):
            continue  # the template writes the content after the calls (Gemma 4): not what a model writes
        if content and "<|channel|>analysis<|message|>" + content in text:
            content, shown = "", content  # GPT-OSS renders a calling turn's content in the analysis channel
        expected = tuple(
            ExpectedCall(name, args, CALL_IDS[i] if CALL_IDS[i] in text else "") for i, (name, args) in enumerate(kept)
        )
        found.append(
            Output(template, label, text, content if content and content in text else "", shown, expected, notes)
        )
    if not found:
        return [], "the template cannot render tool-call history"
    return found, None


def _reasoning_enabled(tmpl: ChatTemplate) -> bool:
    reasoning = tmpl.analysis.reasoning
    return reasoning.enabled and bool(reasoning.end.strip())


def _text_outputs(template: str) -> list[Output]:
    """Plain content, and reasoning + content where the template has reasoning."""
    tmpl = ChatTemplate.load(template)
    found: list[Output] = []
    variants = [("content", "")]
    if _reasoning_enabled(tmpl):
        variants.append(("reasoning+content", REASONING))
    for label, reasoning in variants:
        message: dict[str, Any] = {"role": "assistant", "content": CONTENT}
        if reasoning:
            message["reasoning_content"] = reasoning
        turn = _turn_text(tmpl, message, reasoning)
        if turn is None or CONTENT not in turn[0]:
            built = _built_from_markers(tmpl, reasoning)
            if built is None:
                continue
            turn = built
        text, shown = turn
        if reasoning and not shown:
            continue  # the template does not show reasoning next to plain content
        text = _cut_stop(text, text.find(CONTENT) + len(CONTENT))
        found.append(Output(template, label, text, CONTENT, shown))
    return found


def _built_from_markers(tmpl: ChatTemplate, reasoning: str) -> tuple[str, str] | None:
    """Reasoning + content written with the analysed markers, for generic templates whose history drops both."""
    analysis = tmpl.analysis
    if analysis.format != GENERIC:
        return None
    content = CONTENT
    if analysis.content.mode is ContentMode.ALWAYS_WRAPPED or (
        reasoning and analysis.content.mode is ContentMode.WRAPPED_WITH_REASONING
    ):
        content = analysis.content.start + CONTENT + analysis.content.end
    if not reasoning:
        return (content, "") if prefill(chat(tmpl.name).generation_prompt, analysis.reasoning) == "" else None
    opened = bool(prefill(chat(tmpl.name).generation_prompt, analysis.reasoning))
    head = "" if opened else analysis.reasoning.start
    return head + reasoning + analysis.reasoning.end + content, reasoning


@functools.cache
def _all(template: str) -> tuple[tuple[Output, ...], str | None]:
    calls, reason = _call_outputs(template) if template in _TOOL_TEMPLATES else ([], "no tool-call format")
    return (*calls, *_text_outputs(template)), reason


_TOOL_TEMPLATES = frozenset(tool_templates())


def outputs(template: str) -> tuple[Output, ...]:
    """Every well-formed output generated for ``template`` (calls, content, reasoning)."""
    return _all(template)[0]


def skip_reasons() -> dict[str, str]:
    """Why a template has no tool-call outputs (only templates that have a tool-call format are listed)."""
    return {t: r for t in sorted(_TOOL_TEMPLATES) if (r := _all(t)[1]) is not None}
