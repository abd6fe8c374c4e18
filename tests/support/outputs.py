"""Well-formed model outputs for every bundled template, written the way the template itself writes them.

The round-trip and robustness tests and the benchmarks need realistic outputs whose correct parse is known without
trusting the parser. So each output is *rendered*: an assistant turn (tool calls, content, reasoning) is rendered
through the template after the user's turn, and the model's part is what follows the prompt, minus the end-of-turn
text and stop tokens. The expected message is what went into the rendering, never what a parser reads from it.
Where the rendered history does not continue the prompt (the generation prompt opened a reasoning block that history
turns drop), the part of the turn header the prompt already wrote is removed and the open block is closed first, as
a model would; the markers written then must be the template's own (they appear in its source).

Every template is tried for every case of :data:`CASES`, whatever its analysis says: a case the template cannot
render is a *gap* (:func:`gaps`) with what was observed, and the round-trip table needs a stated reason for it.

Tools share name and parameter prefixes (``get`` / ``get_weather``, ``city`` / ``city_code``) and cover every JSON
type: the call of case "one call" carries them all (strings with quotes, a line break, ``<`` and padding spaces and
tabs; an integer, a float, a boolean, null, an enum, an array, nested objects). Values are kept however the template
writes them (Python ``True``/``None`` included): the parser must read them back typed. Only an argument the template
cannot render at all (Gemma 3n concatenates values as strings, so numbers raise) is left out, with a note.
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
from autoparser.parser.reasoning import prefill
from autoparser.template.markup import names_reasoning, paired_closer

from .helpers import STOP_TOKENS

__all__ = [
    "CALL_CASES",
    "CASES",
    "CONTENT",
    "HOSTILE",
    "REASONING",
    "TOOLS",
    "USER",
    "ExpectedCall",
    "Output",
    "all_outputs",
    "call_marker_cores",
    "call_message",
    "chat",
    "gaps",
    "markers",
    "outputs",
    "payload_words",
    "render_calls",
    "request_tools",
    "source_message",
]

USER: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather?"}]

# A string with what breaks naive parsers: quotes, a line break, tags and closing-tag look-alikes, a backslash,
# non-ASCII letters and an astral-plane emoji.
HOSTILE = 'Pa "ris" <b>x</b> a<b & c\\d\nline two \u6771\u4eac \u00e9t\u00e9 \U0001f30d'
PADDED = " \t spaced out\t "  # the value's own leading/trailing spaces and tabs belong to it
CONTENT = 'Here is the forecast for "Paris": 21 < 25 degrees.\nBring an umbrella \u2614, s\'il vous pla\u00eet.'
REASONING = "First, the user asks about the weather in Paris.\nThe lookup tool needs a city; 2 < 3 holds."
CALL_CONTENT = "Let me check the forecast."
FILLER_REASONING = "Let me call the tool."  # written before a call when the prompt left a reasoning block open

# What a template is asked to round-trip; "parallel calls" is two outputs (prefix-sharing names; three calls).
CASES = ("content", "reasoning+content", "one call", "parallel calls", "content+call", "reasoning+call")
CALL_CASES = CASES[2:]


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
    "remark": _param({"type": "string"}),
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
    "temp": -21.5,
    "metric": True,
    "note": None,
    "unit": "celsius",
    "tags": ["rain", "wind"],
    "options": {"depth": {"levels": [1, False, None, 2.5], "label": "deep"}, "empty": {}},
    "remark": PADDED,
}

_Calls = tuple[tuple[str, dict[str, Any]], ...]

# The call sets of the call cases: (case, label, calls, content, reasoning).
_CALL_VARIANTS: tuple[tuple[str, str, _Calls, str, str], ...] = (
    ("one call", "one", (("get_weather", FULL_ARGS),), "", ""),
    (
        "parallel calls",
        "prefix",
        (("get", {"city": "Zanzibar"}), ("get_weather", {"city_code": "ZNZ", "days": 2})),
        "",
        "",
    ),
    (
        "parallel calls",
        "three",
        (("ping", {}), ("get_weather", {"city": "Oslo", "city_code": "OSL"}), ("get", {"city": "Timbuktu"})),
        "",
        "",
    ),
    ("content+call", "content+call", (("get_weather", {"city": "Reykjavik"}),), CALL_CONTENT, ""),
    ("reasoning+call", "reasoning+call", (("get", {"city": "Kathmandu"}),), "", REASONING),
)
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
    case: str = ""  # one of CASES

    @property
    def key(self) -> str:
        return f"{self.template}:{self.label}"


@dataclass(frozen=True)
class _Turn:
    text: str
    reasoning: str  # the reasoning the text shows ("" if none)


@dataclass(frozen=True)
class _Gap:
    why: str


@functools.cache
def chat(template: str) -> ChatParams:
    """The request every output of ``template`` answers (tools offered, reasoning extracted; no tools for a
    template that cannot render any, such as MiroThinker)."""
    return ChatTemplate.load(template).apply(
        USER, tools=_tools(template), reasoning_format="auto", parallel_tool_calls=True, enable_thinking=True
    )


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


@functools.cache
def _tools(template: str) -> list[dict[str, Any]] | None:
    """The tools offered: ours, or none for a template that cannot render them (MiroThinker wants MCP servers)."""
    try:
        ChatTemplate.load(template).apply(USER, tools=TOOLS)
    except TemplateError:
        return None
    return TOOLS


def request_tools(template: str) -> list[dict[str, Any]] | None:
    """The tools every output's request offers: :data:`TOOLS`, or None where ``apply()`` raises on them (no bundled
    template today: ``apply()`` renders MiroThinker's prompt without the tools it cannot render, with a warning)."""
    return _tools(template)


def _render(
    tmpl: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    generation: bool,
    switches: Mapping[str, Any] | None = None,
) -> ChatParams:
    tools = _tools(tmpl.name)
    return tmpl.apply(
        messages,
        tools=tools,
        reasoning_format="auto",
        add_generation_prompt=generation,
        enable_thinking=True,
        chat_template_kwargs=switches,
    )


def _history(tmpl: ChatTemplate, message: Mapping[str, Any]) -> tuple[str, str, str]:
    """The conversation with the turn, without it, and with a plain answer instead. Where thinking on, through the
    template's own switch, breaks its history (Hermes 4 splits every answer at `</think>` when `thinking` is on:
    ``apply()`` falls back to the template's default, with a warning), all three with the template's switches at
    their defaults: the turn as the template writes it otherwise."""

    def three(switches: Mapping[str, Any] | None = None) -> list[ChatParams]:
        plain = [*USER, {"role": "assistant", "content": "END_MARK"}]
        return [_render(tmpl, c, False, switches) for c in ([*USER, message], USER, plain)]

    rendered = three()
    toggles = [s for s in tmpl.analysis.switches if s.kind == "toggle" and s.variable != "enable_thinking"]
    if toggles and not all(r.enable_thinking for r in rendered):
        rendered = three({s.variable: s.on if s.default else s.off for s in toggles})
    full, base, answer = (r.prompt for r in rendered)
    return full, base, answer


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


# A cut of the turn header is only trusted after one of these: never inside a marker both texts happen to start alike.
_BOUNDARY = re.compile(r"[\s>\]:}]")


def _header_cut(header: str, text: str) -> tuple[int, int]:
    """How much of the generation prompt's header (``header``) the rendered turn ``text`` repeats: (characters of
    header covered, characters of text to drop). Usually a common prefix; when the prompt writes a switch before
    the role header (LongCat's `` /think_on ASSISTANT:``), the longest start of ``text`` found inside ``header``."""
    shared = common_prefix_len(header, text)
    while shared and shared < len(header) and not _BOUNDARY.fullmatch(text[shared - 1]):
        shared -= 1
    inner = max((k for k in range(3, min(len(header), len(text)) + 1) if text[:k] in header), default=0)
    while inner and not _BOUNDARY.fullmatch(text[inner - 1]):
        inner -= 1
    if inner > shared:
        return header.index(text[:inner]) + inner, inner
    return shared, shared


def _turn_text(tmpl: ChatTemplate, message: Mapping[str, Any], reasoning: str, payload: Sequence[str]) -> _Turn | _Gap:
    """The model's part of a rendered assistant turn, and the reasoning it shows. ``payload``: texts that must be in
    the model's part (call names, content), so a turn the template split in two can be told apart."""
    try:
        params = chat(tmpl.name)
        full, base, plain = _history(tmpl, message)
    except (TemplateError, RecursionError) as error:
        return _Gap(f"rendering the turn raises: {_first_line(error)}")
    analysis = tmpl.analysis
    start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
    tail = prefill(params.generation_prompt, analysis.reasoning)
    end_of_turn = (_inserted(base, plain, params.generation_prompt) or "").partition("END_MARK")[2]
    inserted = _inserted(base, full, params.generation_prompt)
    if full.startswith(params.prompt):
        text: str | _Gap = full[len(params.prompt) :]
        if tail and end and end not in tail and end not in text and _in_source(tmpl, end):
            # The final turn continues inside the block the prompt opened (Nemotron Nano v2 renders it so): a model
            # writes into the block and closes it before answering.
            text = (reasoning or FILLER_REASONING) + analysis.reasoning.end + text
    elif inserted is not None:
        text = _after_prompt(tmpl, inserted, params.generation_prompt, tail, reasoning)
    else:
        text = _Gap("the rendered conversation is not the prompt's conversation plus a turn")
    if isinstance(text, _Gap):
        return text
    if end_of_turn.strip() and text.endswith(end_of_turn):
        text = text[: -len(end_of_turn)]
    if reasoning and reasoning not in text and analysis.format == GENERIC and start and end:
        if not (_in_source(tmpl, start) and _in_source(tmpl, end)):
            return _Gap(f"the learned reasoning markers {start!r}/{end!r} are not in the template")
        text = _inject_reasoning(text, analysis, reasoning, bool(tail))
    text = _split_turn(text, analysis, end_of_turn.strip(), payload)
    if isinstance(text, _Gap):
        return text
    shown = reasoning if reasoning and reasoning in text else ""
    if not shown and FILLER_REASONING in text:
        shown = FILLER_REASONING
    if tail and start and start in tail:  # the prompt's part of the block is reasoning too (Apriel's preamble)
        shown = (tail[tail.index(start) + len(start) :] + shown).strip()
    return _Turn(text, shown)


def _after_prompt(tmpl: ChatTemplate, turn: str, generation_prompt: str, tail: str, reasoning: str) -> str | _Gap:
    """What a model writes after the generation prompt, for a history turn that does not continue the prompt: the
    turn minus the header the prompt already wrote; a block the prompt opened is written into and closed first."""
    analysis = tmpl.analysis
    start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
    header = generation_prompt[: len(generation_prompt) - len(tail)]
    covered, dropped = _header_cut(header, turn)
    if header.strip() and not turn.startswith(header) and turn.lstrip().startswith(header.strip()):
        # The template leaks its own indentation around the header, differently in the prompt and in a history turn
        # (vLLM's DeepSeek-V3.1 template): the same header, spaced otherwise.
        covered, dropped = len(header), len(turn) - len(turn.lstrip()) + len(header.strip())
    text, opened = turn[dropped:], header[covered:]
    if text.startswith(opened):
        text = text[len(opened) :]
    elif text.lstrip().startswith(opened.strip()):  # the same opener, spaced otherwise
        text = text.lstrip()[len(opened.strip()) :].lstrip()
    else:  # the prompt opened a block the analysis does not know: close it with the template's own tag
        close = _closing_tag(tmpl, opened.strip())
        if close is None:
            return _Gap(f"the generation prompt writes {opened.strip()!r}, which the turn does not continue")
        if close not in text:
            text = (reasoning or FILLER_REASONING) + close + "\n\n" + text
    if tail and end and end not in tail:  # the prompt left a learned block open: write into it, then close it
        if not _in_source(tmpl, end):
            return _Gap(f"the learned reasoning end {end!r} is not in the template")
        text = text.lstrip()
        if start and text.startswith(start):
            text = text[len(start) :].lstrip()
        if end not in text:
            text = (reasoning or FILLER_REASONING) + analysis.reasoning.end + text
        elif not reasoning and text.startswith(end):
            text = FILLER_REASONING + text
    return text


def _inserted(base: str, full: str, header: str) -> str | None:
    """The text ``full`` adds to ``base``: what follows it, or what is inserted before a tail the template writes
    after the last message (command-r-plus closes with its tool instructions). Where the turn and the tail start
    alike, the insertion starts with the generation prompt's ``header``. None if ``full`` is no insertion."""
    if full.startswith(base):
        return full[len(base) :]
    start = common_prefix_len(base, full)
    while start and not _BOUNDARY.fullmatch(base[start - 1]):
        start -= 1
    rest = base[start:]
    if not full.endswith(rest):
        return None
    turn = full[start : len(full) - len(rest)]
    shared = next((k for k in range(len(header), 0, -1) if turn.endswith(header[:k])), 0)
    if shared and base[:start].endswith(header[:shared]):  # the same header token on both sides: the turn's own
        turn = header[:shared] + turn[:-shared]
    return turn


def _split_turn(text: str, analysis: TemplateAnalysis, end_of_turn: str, payload: Sequence[str]) -> str | _Gap:
    """The turn up to its first end of turn. A template may render a second (empty) turn after the calls, which a
    model never writes; but when the payload itself is split over two turns, no model output has this shape."""
    unmarked = text
    for marker in _marker_fields(analysis)[4:]:  # the tool-call markers (GigaChat's section starts with the stop)
        if marker.strip():
            unmarked = unmarked.replace(marker.strip(), "")
    if not end_of_turn or end_of_turn not in unmarked:
        return text
    first = text.find(end_of_turn)
    while first >= 0 and any(m.strip() and text.startswith(m.strip(), first) for m in _marker_fields(analysis)[4:]):
        first = text.find(end_of_turn, first + 1)
    if first < 0:
        return text
    if all(p in text[:first] for p in payload):
        return text[:first]
    return _Gap("the template splits the turn in two (content and calls in separate turns)")


def _in_source(tmpl: ChatTemplate, marker: str) -> bool:
    """The template writes ``marker``, or it is the pair of the reasoning opener the template writes, by the usual
    conventions, where no line of the template closes the block (OLMo's thinker opens ``<think>`` and never writes
    ``</think>``; the analysis pairs them, and so does a model trained on it)."""
    if marker in tmpl.source:
        return True
    start = tmpl.analysis.reasoning.start.strip()
    return bool(start) and start in tmpl.source and names_reasoning(start) and paired_closer(start) == marker


def _closing_tag(tmpl: ChatTemplate, opener: str) -> str | None:
    """The closer of an opener the prompt wrote and the analysis does not know: its pair by the usual conventions
    (``</x>`` for ``<x>``, ``[/X]`` for ``[X]``, ...), where the template's source has it (EXAONE Deep strips history up
    to ``</thought>``) or the opener's name says reasoning; None otherwise."""
    close = paired_closer(opener)
    return close if close and (close in tmpl.source or names_reasoning(opener)) else None


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


def call_message(
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    content: str = "",
    reasoning: str = "",
    ids: Sequence[str] = CALL_IDS,
    *,
    objects: bool = False,
) -> dict[str, Any]:
    """The assistant message with these calls that outputs are rendered from: arguments as JSON text (as OpenAI
    clients send them) or, with ``objects``, as dicts (as transformers' templates read them); reasoning under both
    ``reasoning_content`` and ``reasoning`` (Solar-Open reads the latter)."""
    wire = [
        {
            "id": ids[i],
            "type": "function",
            "function": {"name": name, "arguments": dict(args) if objects else json.dumps(args)},
        }
        for i, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": wire}
    if reasoning:
        message |= {"reasoning_content": reasoning, "reasoning": reasoning}
    return message


def source_message(output: Output, ids: Sequence[str] | None = None, *, objects: bool = True) -> dict[str, Any]:
    """The assistant message a call output was rendered from (its content and reasoning as given to the template,
    before the template moved or dropped them), with ``ids`` instead of :data:`CALL_IDS` if given. Where the prompt
    left a reasoning block open and the output writes the filler reasoning into it, that reasoning is the
    message's (the model wrote it)."""
    _, _, _, content, reasoning = next(v for v in _CALL_VARIANTS if v[1] == output.label)
    if not reasoning and FILLER_REASONING in output.reasoning:
        reasoning = output.reasoning
    calls = [(call.name, call.arguments) for call in output.calls]
    return call_message(calls, content, reasoning, CALL_IDS if ids is None else ids, objects=objects)


def _call_turn(
    tmpl: ChatTemplate, calls: Sequence[tuple[str, Mapping[str, Any]]], content: str, reasoning: str = ""
) -> _Turn | _Gap:
    message = call_message(calls, content, reasoning)
    turn = _turn_text(tmpl, message, reasoning, [name for name, _ in calls])
    if isinstance(turn, _Gap):
        return turn
    if not any(_find_name(turn.text, name) >= 0 for name, _ in calls):
        return _Gap("the template renders no assistant tool calls")
    if any(_find_name(turn.text, name) < 0 for name, _ in calls):
        return _Gap("the template renders only some of the calls")
    return _Turn(_cut_stop(turn.text, _find_name(turn.text, calls[-1][0])), turn.reasoning)


def render_calls(template: str, calls: Sequence[tuple[str, dict[str, Any]]], content: str = "") -> str | None:
    """The template's own text for an assistant turn with these calls (None if it cannot render them)."""
    rendered = _call_turn(ChatTemplate.load(template), tuple(calls), content)
    return rendered.text if isinstance(rendered, _Turn) else None


def _find_name(text: str, name: str) -> int:
    """Position of the last whole occurrence of a call name, or -1."""
    hits = [m.start() for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text)]
    return hits[-1] if hits else -1


@functools.cache
def _unrenderable_args(template: str) -> tuple[str, ...]:
    """Arguments the template cannot render at all: a call with that argument alone raises, one with a plain
    string does not (Gemma 3n joins values to strings with ``+``)."""
    tmpl = ChatTemplate.load(template)
    if isinstance(_call_turn(tmpl, (("get_weather", {"city": "Oslo"}),), ""), _Gap):
        return ()
    bad = []
    for key, value in FULL_ARGS.items():
        rendered = _call_turn(tmpl, (("get_weather", {key: value}),), "")
        if isinstance(rendered, _Gap) and rendered.why.startswith("rendering the turn raises"):
            bad.append(key)
    return tuple(bad)


def _call_outputs(template: str) -> tuple[list[Output], dict[str, str]]:
    tmpl = ChatTemplate.load(template)
    dropped = _unrenderable_args(template)
    found: list[Output] = []
    missing: dict[str, str] = {}
    for case, label, calls, content, reasoning in _CALL_VARIANTS:
        kept = tuple((name, {k: v for k, v in args.items() if k not in dropped}) for name, args in calls)
        notes = ()
        if kept != calls:
            notes = (f"the template cannot render {', '.join(k for k in dropped if k in calls[0][1])}: left out",)
        rendered = _call_turn(tmpl, kept, content, reasoning)
        if isinstance(rendered, _Gap):
            missing.setdefault(case, rendered.why)
            continue
        text, shown = rendered.text, rendered.reasoning
        if content and "<|channel|>analysis<|message|>" + content in text:
            content, shown = "", content  # GPT-OSS renders a calling turn's content in the analysis channel
        elif content and content not in text:
            missing.setdefault(case, "the template drops the content of a turn with calls")
            continue
        elif content and text.index(content) > _find_name(text, kept[0][0]):
            missing.setdefault(case, "the template writes the content after the calls")  # no model writes that
            continue
        if reasoning and not shown:
            missing.setdefault(case, "the template shows no reasoning in a turn with calls")
            continue
        expected = tuple(
            ExpectedCall(name, args, CALL_IDS[i] if CALL_IDS[i] in text else "") for i, (name, args) in enumerate(kept)
        )
        found.append(Output(template, label, text, content, shown, expected, notes, case))
    for case in {o.case for o in found}:
        missing.pop(case, None)  # one output of a case is enough (a template that writes no ids, say)
    return found, missing


def _text_outputs(template: str) -> tuple[list[Output], dict[str, str]]:
    """Plain content, and reasoning + content."""
    tmpl = ChatTemplate.load(template)
    found: list[Output] = []
    missing: dict[str, str] = {}
    for case, reasoning in (("content", ""), ("reasoning+content", REASONING)):
        message: dict[str, Any] = {"role": "assistant", "content": CONTENT}
        if reasoning:
            message |= {"reasoning_content": reasoning, "reasoning": reasoning}  # Solar-Open reads `reasoning`
        turn = _turn_text(tmpl, message, reasoning, [CONTENT])
        if isinstance(turn, _Gap) or CONTENT not in turn.text:
            built = _built_from_markers(tmpl, reasoning)
            if built is None:
                missing[case] = turn.why if isinstance(turn, _Gap) else "the template drops the content"
                continue
            turn = built
        if reasoning and not turn.reasoning:
            missing[case] = "the template shows no reasoning next to content (and no reasoning markers were learned)"
            continue
        text = _cut_stop(turn.text, turn.text.find(CONTENT) + len(CONTENT))
        found.append(Output(template, case, text, CONTENT, turn.reasoning, case=case))
    return found, missing


def _built_from_markers(tmpl: ChatTemplate, reasoning: str) -> _Turn | None:
    """Reasoning + content written with the analysed markers, for generic templates whose history drops both. The
    markers must be the template's own: each appears in its source."""
    analysis = tmpl.analysis
    if analysis.format != GENERIC:
        return None
    content = CONTENT
    if analysis.content.mode is ContentMode.ALWAYS_WRAPPED or (
        reasoning and analysis.content.mode is ContentMode.WRAPPED_WITH_REASONING
    ):
        content = analysis.content.start + CONTENT + analysis.content.end
    used = [analysis.content.start, analysis.content.end] if content != CONTENT else []
    if not reasoning:
        if prefill(chat(tmpl.name).generation_prompt, analysis.reasoning) != "":
            return None
    else:
        if not analysis.reasoning.end.strip():
            return None
        used += [analysis.reasoning.start, analysis.reasoning.end]
    if not all(_in_source(tmpl, m.strip()) for m in used):
        return None
    if not reasoning:
        return _Turn(content, "")
    opened = bool(prefill(chat(tmpl.name).generation_prompt, analysis.reasoning))
    head = "" if opened else analysis.reasoning.start
    return _Turn(head + reasoning + analysis.reasoning.end + content, reasoning)


@functools.cache
def _all(template: str) -> tuple[tuple[Output, ...], tuple[tuple[str, str], ...]]:
    calls, call_gaps = _call_outputs(template)
    texts, text_gaps = _text_outputs(template)
    missing = {**text_gaps, **call_gaps}
    return (*calls, *texts), tuple((case, missing[case]) for case in CASES if case in missing)


def outputs(template: str) -> tuple[Output, ...]:
    """Every well-formed output generated for ``template`` (calls, content, reasoning)."""
    return _all(template)[0]


def gaps(template: str) -> dict[str, str]:
    """The cases ``template`` cannot render, each with what was observed."""
    return dict(_all(template)[1])


def all_outputs() -> list[Output]:
    return [o for t in bundled_templates() for o in outputs(t)]
