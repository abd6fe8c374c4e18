"""The cases a template is checked on, each *rendered by the template itself*: the model's part of an assistant turn.

A check needs realistic outputs whose correct reading is known without trusting the parser. So each case is an
assistant turn (tool calls, content, reasoning) rendered through the template after a user turn; the model's part
is what follows the prompt, minus the end-of-turn text and stop tokens, and the expected message is what went into
the rendering, never what a parser reads from it. Where the rendered history does not continue the prompt (the
generation prompt opened a reasoning block that history turns drop), the part of the turn header the prompt already
wrote is removed and the open block is closed first, as a model would; the markers written then must be the
template's own (they appear in its source).

Every template is tried for every case of :data:`CASES`, whatever its analysis says: a case the template cannot
render is a *gap* with what was observed (:attr:`CaseSet.gaps`).

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

from ..analysis.diff import common_prefix_len
from ..analysis.formats import GENERIC
from ..analysis.model import ContentMode, TemplateAnalysis, ToolFormatMode
from ..api import ChatTemplate
from ..errors import TemplateError
from ..params import ChatParams
from ..parser.assemble import COMMON_STOPS
from ..parser.reasoning import prefill
from ..template.markup import names_reasoning, paired_closer

__all__ = [
    "CALL_CASES",
    "CALL_CONTENT",
    "CALL_IDS",
    "CASES",
    "CONTENT",
    "FILLER_REASONING",
    "FULL_ARGS",
    "HOSTILE",
    "PADDED",
    "REASONING",
    "REASONING_CASES",
    "TOOLS",
    "USER",
    "WEATHER_PROPS",
    "Case",
    "CaseSet",
    "ExpectedCall",
    "call_message",
    "case_set",
    "json_field_markers",
    "marker_fields",
]

USER: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather?"}]
SYSTEM: dict[str, Any] = {"role": "system", "content": "You are a helpful assistant."}

# A string with what breaks naive parsers: quotes, a line break, tags and closing-tag look-alikes, a backslash,
# non-ASCII letters and an astral-plane emoji.
HOSTILE = 'Pa "ris" <b>x</b> a<b & c\\d\nline two \u6771\u4eac \u00e9t\u00e9 \U0001f30d'
PADDED = " \t spaced out\t "  # the value's own leading/trailing spaces and tabs belong to it
CONTENT = 'Here is the forecast for "Paris": 21 < 25 degrees.\nBring an umbrella \u2614, s\'il vous pla\u00eet.'
REASONING = "First, the user asks about the weather in Paris.\nThe lookup tool needs a city; 2 < 3 holds."
CALL_CONTENT = "Let me check the forecast."
FILLER_REASONING = "Let me call the tool."  # written before a call when the prompt left a reasoning block open

# What a template is checked on; "parallel calls" is two outputs (prefix-sharing names; three calls).
CASES = ("content", "reasoning+content", "one call", "parallel calls", "content+call", "reasoning+call")
CALL_CASES = CASES[2:]
REASONING_CASES = ("reasoning+content", "reasoning+call")

# Stop tokens end generation; they are not part of the output a parser sees.
_STOP_TOKENS = (*COMMON_STOPS, "<|eom_id|>", "<|END_OF_TURN_TOKEN|>", "<seed:eos>", "<|message_sep|>", "<sep>")


def _param(kind: Mapping[str, Any]) -> dict[str, Any]:
    return {**kind, "description": "a parameter"}  # command-r-plus's template reads every description


WEATHER_PROPS: dict[str, Any] = {
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
    _tool("get_weather", WEATHER_PROPS),
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


@dataclass(frozen=True)
class _Variant:
    case: str
    label: str
    calls: _Calls
    content: str = ""
    reasoning: str = ""


# The call sets of the call cases.
CALL_VARIANTS: tuple[_Variant, ...] = (
    _Variant("one call", "one", (("get_weather", FULL_ARGS),)),
    _Variant(
        "parallel calls", "prefix", (("get", {"city": "Zanzibar"}), ("get_weather", {"city_code": "ZNZ", "days": 2}))
    ),
    _Variant(
        "parallel calls",
        "three",
        (("ping", {}), ("get_weather", {"city": "Oslo", "city_code": "OSL"}), ("get", {"city": "Timbuktu"})),
    ),
    _Variant("content+call", "content+call", (("get_weather", {"city": "Reykjavik"}),), content=CALL_CONTENT),
    _Variant("reasoning+call", "reasoning+call", (("get", {"city": "Kathmandu"}),), reasoning=REASONING),
)
CALL_IDS = ("call00001", "call00002", "call00003")  # Mistral templates insist on 9 alphanumerics


@dataclass(frozen=True)
class ExpectedCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""  # the id the output carries ("" when the template writes none of ours)


@dataclass(frozen=True)
class Case:
    """One well-formed output and the message it must read back to."""

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


def marker_fields(analysis: TemplateAnalysis) -> list[str]:
    """Every marker the analysis learned: reasoning and content first, then the tool-call markers."""
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


# A cut of the turn header is only trusted after one of these: never inside a marker both texts happen to start alike.
_BOUNDARY = re.compile(r"[\s>\]:}]")


def _header_cut(header: str, text: str) -> tuple[int, int]:
    """How much of the generation prompt's header (``header``) the rendered turn ``text`` repeats: (characters of
    header covered, characters of text to drop). Usually a common prefix; when the prompt writes a switch before
    the role header (LongCat's `` /think_on ASSISTANT:``), the longest start of ``text`` found inside ``header``."""
    words = header.split()
    spaced = re.match(r"\s*" + r"\s*".join(map(re.escape, words)), text) if words else None
    if spaced and not text.startswith(header):
        # The whole header, spaced otherwise: a template whose indentation leaks into every render writes the
        # prompt's `  <｜Assistant｜>    </think>` as `      <｜Assistant｜></think>` in history (DeepSeek-V3.1, vLLM).
        return len(header), spaced.end()
    shared = common_prefix_len(header, text)
    while shared and shared < len(header) and not _BOUNDARY.fullmatch(text[shared - 1]):
        shared -= 1
    inner = max((k for k in range(3, min(len(header), len(text)) + 1) if text[:k] in header), default=0)
    while inner and not _BOUNDARY.fullmatch(text[inner - 1]):
        inner -= 1
    if inner > shared:
        return header.index(text[:inner]) + inner, inner
    return shared, shared


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


def _after_last_user_turn(prompt: str, full: str) -> str | None:
    """What ``full`` has after the prompt's last user turn and generation prompt, for a template that renders the
    history before that turn otherwise once an assistant turn follows it (Mistral's templates put the tool list
    before the *last* user message); None when ``full`` does not hold that turn as the prompt ends with it."""
    question = USER[-1]["content"]
    at = prompt.rfind(question)
    if at < 0:
        return None
    ending = prompt[at:]
    found = full.rfind(ending)
    return full[found + len(ending) :] if found >= 0 else None


def _cut_stop(text: str, after: int) -> str:
    cuts = [c for c in (text.find(t, max(after, 0)) for t in _STOP_TOKENS) if c >= 0]
    return text[: min(cuts)] if cuts else text


def _find_name(text: str, name: str) -> int:
    """Position of the last whole occurrence of a call name, or -1."""
    hits = [m.start() for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text)]
    return hits[-1] if hits else -1


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


class CaseSet:
    """Every case of :data:`CASES` rendered by one template: :attr:`cases` and, for those it cannot render,
    :attr:`gaps` (case → what was observed). Computed on first use."""

    def __init__(
        self,
        template: ChatTemplate,
        conversation: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        """``conversation`` and ``tools``: the request the turns answer (default: :data:`USER` and :data:`TOOLS`, or
        what of them the template can render)."""
        self.template = template
        self.name = template.name.removesuffix(".jinja")
        if conversation is None:
            self.conversation, self.tools = self._request()
        else:
            self.conversation, self.tools = conversation, tools

    # --- the request ------------------------------------------------------------------------------------------------

    def _request(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """The conversation before the reply, and the tools offered. A user turn and our tools; no tools for a
        template that cannot render them (MiroThinker wants MCP servers); a system message first for one that
        cannot render a user turn alone (ShieldGemma reads its policy from it)."""
        for conversation in (USER, [SYSTEM, *USER]):
            for tools in (TOOLS, None):
                try:
                    self.template.apply(conversation, tools=tools)
                except TemplateError:
                    continue
                return conversation, tools
        return USER, None

    @functools.cached_property
    def params(self) -> ChatParams:
        """The request every case answers (tools offered, reasoning extracted, thinking on, parallel calls); raises
        ``TemplateError`` when the template renders no request at all."""
        return self.template.apply(
            self.conversation, tools=self.tools, reasoning_format="auto", parallel_tool_calls=True, enable_thinking=True
        )

    @property
    def notes(self) -> tuple[str, ...]:
        """What the request needed that a plain one does not have."""
        found = []
        if self.conversation is not USER:
            found.append("rendered after a system message: the template cannot render a user turn alone")
        if self.tools is None:
            found.append("rendered without tools: the template cannot render the request's tools")
        return tuple(found)

    def _render(
        self, messages: Sequence[Mapping[str, Any]], generation: bool, switches: Mapping[str, Any] | None = None
    ) -> ChatParams:
        return self.template.apply(
            messages,
            tools=self.tools,
            reasoning_format="auto",
            add_generation_prompt=generation,
            enable_thinking=True,
            chat_template_kwargs=switches,
        )

    def _history(self, message: Mapping[str, Any]) -> tuple[str, str, str]:
        """The conversation with the turn, without it, and with a plain answer instead. Where thinking on, through
        the template's own switch, breaks its history (Hermes 4 splits every answer at `</think>` when `thinking` is
        on: ``apply()`` falls back to the template's default, with a warning), all three with the template's
        switches at their defaults: the turn as the template writes it otherwise."""
        plain = [*self.conversation, {"role": "assistant", "content": "END_MARK"}]
        conversations = ([*self.conversation, message], self.conversation, plain)
        rendered = [self._render(c, False) for c in conversations]
        toggles = [
            s for s in self.template.analysis.switches if s.kind == "toggle" and s.variable != "enable_thinking"
        ]
        if toggles and not all(r.enable_thinking for r in rendered):
            defaults = {s.variable: s.on if s.default else s.off for s in toggles}
            rendered = [self._render(c, False, defaults) for c in conversations]
        full, base, answer = (r.prompt for r in rendered)
        return full, base, answer

    def _in_source(self, marker: str) -> bool:
        """The template writes ``marker``, or it is the pair of the reasoning opener the template writes, by the
        usual conventions, where no line of the template closes the block (OLMo's thinker opens ``<think>`` and never
        writes ``</think>``; the analysis pairs them, and so does a model trained on it); or the opener of a closer
        it writes, where the model opens the block itself (DeepSeek-R1's first template strips history up to
        ``</think>`` and never writes ``<think>``)."""
        source = self.template.source
        if marker in source:
            return True
        start = self.template.analysis.reasoning.start.strip()
        if start == marker:  # an opener the model writes itself, whose closer the template strips history at (R1)
            end = self.template.analysis.reasoning.end.strip()
            return bool(end) and end in source and names_reasoning(start) and paired_closer(start) == end
        return bool(start) and start in source and names_reasoning(start) and paired_closer(start) == marker

    # --- the model's part of a turn ---------------------------------------------------------------------------------

    def _turn_text(self, message: Mapping[str, Any], reasoning: str, payload: Sequence[str]) -> _Turn | _Gap:
        """The model's part of a rendered assistant turn, and the reasoning it shows. ``payload``: texts that must be
        in the model's part (call names, content), so a turn the template split in two can be told apart."""
        try:
            params = self.params
            full, base, plain = self._history(message)
        except (TemplateError, RecursionError) as error:
            return _Gap(f"rendering the turn raises: {_first_line(error)}")
        analysis = self.template.analysis
        start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
        tail = prefill(params.generation_prompt, analysis.reasoning)
        end_of_turn = (_inserted(base, plain, params.generation_prompt) or "").partition("END_MARK")[2]
        inserted = _inserted(base, full, params.generation_prompt)
        if full.startswith(params.prompt):
            text: str | _Gap = full[len(params.prompt) :]
            if tail and end and end not in tail and end not in text and self._in_source(end):
                # The final turn continues inside the block the prompt opened (Nemotron Nano v2 renders it so): a
                # model writes into the block and closes it before answering.
                text = (reasoning or FILLER_REASONING) + analysis.reasoning.end + text
        elif inserted is not None:
            text = self._after_prompt(inserted, params.generation_prompt, tail, reasoning)
        elif (after := _after_last_user_turn(params.prompt, full)) is not None:
            text = after  # the template moved something before the last user turn (Mistral's tool list)
        else:
            text = _Gap("the rendered conversation is not the prompt's conversation plus a turn")
        if isinstance(text, _Gap):
            return text
        if end_of_turn.strip() and text.endswith(end_of_turn):
            text = text[: -len(end_of_turn)]
        if reasoning and reasoning not in text and analysis.format == GENERIC and start and end:
            if not (self._in_source(start) and self._in_source(end)):
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

    def _after_prompt(self, turn: str, generation_prompt: str, tail: str, reasoning: str) -> str | _Gap:
        """What a model writes after the generation prompt, for a history turn that does not continue the prompt:
        the turn minus the header the prompt already wrote; a block the prompt opened is written into and closed."""
        analysis = self.template.analysis
        start, end = analysis.reasoning.start.strip(), analysis.reasoning.end.strip()
        header = generation_prompt[: len(generation_prompt) - len(tail)]
        covered, dropped = _header_cut(header, turn)
        text, opened = turn[dropped:], header[covered:]
        if text.startswith(opened):
            text = text[len(opened) :]
        elif text.lstrip().startswith(opened.strip()):  # the same opener, spaced otherwise
            text = text.lstrip()[len(opened.strip()) :].lstrip()
        else:  # the prompt opened a block the analysis does not know: close it with the template's own tag
            close = self._closing_tag(opened.strip())
            if close is None:
                return _Gap(f"the generation prompt writes {opened.strip()!r}, which the turn does not continue")
            if close not in text:
                text = (reasoning or FILLER_REASONING) + close + "\n\n" + text
        if tail and end and end not in tail:  # the prompt left a learned block open: write into it, then close it
            if not self._in_source(end):
                return _Gap(f"the learned reasoning end {end!r} is not in the template")
            text = text.lstrip()
            if start and text.startswith(start):
                text = text[len(start) :].lstrip()
            if end not in text:
                text = (reasoning or FILLER_REASONING) + analysis.reasoning.end + text
            elif not reasoning and text.startswith(end):
                text = FILLER_REASONING + text
        return text

    def _closing_tag(self, opener: str) -> str | None:
        """The closer of an opener the prompt wrote and the analysis does not know: its pair by the usual conventions
        (``</x>`` for ``<x>``, ``[/X]`` for ``[X]``, ...), where the template's source has it (EXAONE Deep strips
        history up to ``</thought>``) or the opener's name says reasoning; None otherwise."""
        close = paired_closer(opener)
        return close if close and (close in self.template.source or names_reasoning(opener)) else None

    # --- call cases -------------------------------------------------------------------------------------------------

    def _call_turn(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]], content: str, reasoning: str = ""
    ) -> _Turn | _Gap:
        message = call_message(calls, content, reasoning)
        turn = self._turn_text(message, reasoning, [name for name, _ in calls])
        if isinstance(turn, _Gap):
            return turn
        if not any(_find_name(turn.text, name) >= 0 for name, _ in calls):
            return _Gap("the template renders no assistant tool calls")
        if any(_find_name(turn.text, name) < 0 for name, _ in calls):
            return _Gap("the template renders only some of the calls")
        return _Turn(_cut_stop(turn.text, _find_name(turn.text, calls[-1][0])), turn.reasoning)

    def render_calls(self, calls: Sequence[tuple[str, Mapping[str, Any]]], content: str = "") -> str | None:
        """The template's own text for an assistant turn with these calls (None if it cannot render them)."""
        rendered = self._call_turn(tuple(calls), content)
        return rendered.text if isinstance(rendered, _Turn) else None

    @functools.cached_property
    def unrenderable_args(self) -> tuple[str, ...]:
        """Arguments the template cannot render at all: a call with that argument alone raises, one with a plain
        string does not (Gemma 3n joins values to strings with ``+``)."""
        if isinstance(self._call_turn((("get_weather", {"city": "Oslo"}),), ""), _Gap):
            return ()
        bad = []
        for key, value in FULL_ARGS.items():
            rendered = self._call_turn((("get_weather", {key: value}),), "")
            if isinstance(rendered, _Gap) and rendered.why.startswith("rendering the turn raises"):
                bad.append(key)
        return tuple(bad)

    def _call_cases(self) -> tuple[list[Case], dict[str, str]]:
        dropped = self.unrenderable_args
        found: list[Case] = []
        missing: dict[str, str] = {}
        for variant in CALL_VARIANTS:
            content, reasoning = variant.content, variant.reasoning
            kept = tuple((name, {k: v for k, v in args.items() if k not in dropped}) for name, args in variant.calls)
            notes: tuple[str, ...] = ()
            if kept != variant.calls:
                left = ", ".join(k for k in dropped if k in variant.calls[0][1])
                notes = (f"the template cannot render {left}: left out",)
            rendered = self._call_turn(kept, content, reasoning)
            if isinstance(rendered, _Gap):
                missing.setdefault(variant.case, rendered.why)
                continue
            text, shown = rendered.text, rendered.reasoning
            if content and "<|channel|>analysis<|message|>" + content in text:
                content, shown = "", content  # GPT-OSS renders a calling turn's content in the analysis channel
            elif content and content not in text:
                missing.setdefault(variant.case, "the template drops the content of a turn with calls")
                continue
            elif content and text.index(content) > _find_name(text, kept[0][0]):
                missing.setdefault(variant.case, "the template writes the content after the calls")  # no model does
                continue
            if reasoning and not shown:
                missing.setdefault(variant.case, "the template shows no reasoning in a turn with calls")
                continue
            expected = tuple(
                ExpectedCall(name, args, CALL_IDS[i] if CALL_IDS[i] in text else "")
                for i, (name, args) in enumerate(kept)
            )
            found.append(Case(self.name, variant.label, text, content, shown, expected, notes, variant.case))
        for case in {o.case for o in found}:
            missing.pop(case, None)  # one output of a case is enough (a template that writes no ids, say)
        return found, missing

    # --- text cases -------------------------------------------------------------------------------------------------

    def _text_cases(self) -> tuple[list[Case], dict[str, str]]:
        """Plain content, and reasoning + content."""
        found: list[Case] = []
        missing: dict[str, str] = {}
        for case, reasoning in (("content", ""), ("reasoning+content", REASONING)):
            message: dict[str, Any] = {"role": "assistant", "content": CONTENT}
            if reasoning:
                message |= {"reasoning_content": reasoning, "reasoning": reasoning}  # Solar-Open reads `reasoning`
            turn = self._turn_text(message, reasoning, [CONTENT])
            if isinstance(turn, _Gap) or CONTENT not in turn.text:
                built = self._built_from_markers(reasoning)
                if built is None:
                    missing[case] = turn.why if isinstance(turn, _Gap) else "the template drops the content"
                    continue
                turn = built
            if reasoning and not turn.reasoning:
                missing[case] = (
                    "the template shows no reasoning next to content (and no reasoning markers were learned)"
                )
                continue
            text = _cut_stop(turn.text, turn.text.find(CONTENT) + len(CONTENT))
            found.append(Case(self.name, case, text, CONTENT, turn.reasoning, case=case))
        return found, missing

    def _built_from_markers(self, reasoning: str) -> _Turn | None:
        """Reasoning + content written with the analysed markers, for generic templates whose history drops both.
        The markers must be the template's own: each appears in its source."""
        analysis = self.template.analysis
        if analysis.format != GENERIC:
            return None
        content = CONTENT
        if analysis.content.mode is ContentMode.ALWAYS_WRAPPED or (
            reasoning and analysis.content.mode is ContentMode.WRAPPED_WITH_REASONING
        ):
            content = analysis.content.start + CONTENT + analysis.content.end
        used = [analysis.content.start, analysis.content.end] if content != CONTENT else []
        opened = bool(prefill(self.params.generation_prompt, analysis.reasoning))
        if not reasoning:
            if opened:
                return None
        else:
            if not analysis.reasoning.end.strip():
                return None
            used += [analysis.reasoning.start, analysis.reasoning.end]
        if not all(self._in_source(m.strip()) for m in used):
            return None
        if not reasoning:
            return _Turn(content, "")
        head = "" if opened else analysis.reasoning.start
        return _Turn(head + reasoning + analysis.reasoning.end + content, reasoning)

    # --- all of it --------------------------------------------------------------------------------------------------

    @functools.cached_property
    def _all(self) -> tuple[tuple[Case, ...], dict[str, str]]:
        try:
            _ = self.params  # a template that renders no request renders no case either
        except TemplateError as error:
            return (), dict.fromkeys(CASES, f"the template renders no request: {_first_line(error)}")
        calls, call_gaps = self._call_cases()
        texts, text_gaps = self._text_cases()
        missing = {**text_gaps, **call_gaps}
        return (*calls, *texts), {case: missing[case] for case in CASES if case in missing}

    @property
    def cases(self) -> tuple[Case, ...]:
        """Every well-formed output rendered for the template (calls, content, reasoning)."""
        return self._all[0]

    @property
    def gaps(self) -> dict[str, str]:
        """The cases the template cannot render, each with what was observed."""
        return dict(self._all[1])


def case_set(template: ChatTemplate) -> CaseSet:
    """The cases of ``template`` (a fresh :class:`CaseSet`; it computes its cases on first use)."""
    return CaseSet(template)


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


def _split_turn(text: str, analysis: TemplateAnalysis, end_of_turn: str, payload: Sequence[str]) -> str | _Gap:
    """The turn up to its first end of turn. A template may render a second (empty) turn after the calls, which a
    model never writes; but when the payload itself is split over two turns, no model output has this shape."""
    call_markers = [m.strip() for m in marker_fields(analysis)[4:] if m.strip()]
    # (a headed block's end closes the block, not the turn: `<|end|>` after the answer's block, a call's after it)
    call_markers += [m for m in (analysis.blocks.block_end, analysis.blocks.call_end) if m]
    unmarked = text
    for marker in call_markers:  # the tool-call markers (GigaChat's section starts with the stop)
        unmarked = unmarked.replace(marker, "")
    if not end_of_turn or end_of_turn not in unmarked:
        return text
    first = text.find(end_of_turn)
    while first >= 0 and any(text.startswith(m, first) for m in call_markers):
        first = text.find(end_of_turn, first + 1)
    if first < 0:
        return text
    if all(p in text[:first] for p in payload):
        return text[:first]
    return _Gap("the template splits the turn in two (content and calls in separate turns)")


def json_field_markers(analysis: TemplateAnalysis) -> set[str]:
    """For JSON calls, the quoted member names are structure too."""
    fmt = analysis.tools.format
    if fmt.mode is not ToolFormatMode.JSON_NATIVE:
        return set()
    return {json.dumps(f) for f in (fmt.name_field, fmt.args_field, fmt.id_field) if f}
