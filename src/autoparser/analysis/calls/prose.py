"""Formats stated only in the template's prose (phase P): markers and call shapes read from instruction text.

Differential analysis learns what a template *renders*. Some templates render neither tool calls nor reasoning,
but state the syntax in the instructions they inject (:mod:`.instructions` isolates that text). This phase reads
those statements and fills the analysis parts the renders left empty, never overriding what a render showed:

* **markers**: ``<name>``/``</name>``, ``<|name_start|>``/``<|name_end|>``, ``[NAME]``/``[/NAME]``,
  ``[BEGIN NAME]``/``[END NAME]`` pairs and single ``<|name|>`` tokens, classified by their name: *think*,
  *thought*, *reasoning* mark reasoning; *response*, *answer*, *solution* the answer; *tool call* /
  *function call* the calls;
* **call shape**: an example call object (``{"name": ..., "arguments": ...}``, its key names), whether it sits in
  a JSON list, and which marker pair or code fence encloses it, or which *word* is written right before it: glued to
  its bracket (``toolcall[{"name": ...}]``), or on the same line where another sentence names the word as a marker
  ("prefix function calls with toolcall marker", "start with the keyword CALLS"); without an example, a call marker
  whose sentence says "JSON" (and "list" or "array").

Which parts came from prose is recorded in ``TemplateAnalysis.prose``. Phrase-style syntaxes with no marker at all
("Enable deep thinking subroutine.") cannot be read this way; they are data in :mod:`..workarounds`.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace

from .. import needles
from ..model import (
    ContentAnalysis,
    ContentMode,
    ReasoningAnalysis,
    ReasoningMode,
    ToolFormat,
    ToolFormatMode,
    ToolsAnalysis,
)
from ..workarounds import Draft
from .instructions import Instructions

__all__ = [
    "Marker",
    "StatedPair",
    "apply_prose",
    "prose_can_fill",
    "read_content_and_reasoning",
    "read_markers",
    "read_tool_format",
    "stated_word",
]

# <|name|>, <name>, </name>, [NAME], [/NAME], [BEGIN NAME]: names are identifiers (spaces only inside brackets).
_TOKEN = re.compile(r"<\|[A-Za-z][\w:.-]{0,40}\|>|</?[A-Za-z][\w:.-]{0,40}>|\[/?[A-Z][A-Z_ ]{0,40}\]")
_SPECIAL_AFFIX = re.compile(r"^(?:(?P<pre>start|begin|end)_)?(?P<name>.+?)(?:_(?P<post>start|begin|end))?$", re.I)
_BRACKET_AFFIX = re.compile(r"^(?P<affix>BEGIN|END)(?: OF)? (?P<name>.+)$")
_WORDS = re.compile(r"[a-z0-9]+")
_REASONING_WORDS = frozenset({"think", "thinking", "thought", "thoughts", "reasoning"})
_ANSWER_WORDS = frozenset({"response", "answer", "solution"})
_TOOL_WORDS = frozenset({"tool", "tools", "function", "functions"})
_CALL = re.compile(r"(?:tool|function)_?calls?$")
_TALKS_REASONING = re.compile(r"\b(?:reason|reasoning|think|thinking|thought|thoughts)\b", re.I)
_EXAMPLE_CALL = re.compile(r"""\{\s*["'](?P<key>\w*name)["']\s*:""")
_ARGS_KEY = re.compile(r"""["'](?P<key>arguments|parameters|args|params)["']\s*:""")
_FENCE = re.compile(r"```(?P<lang>[A-Za-z_]*)")
_SENTENCE_END = re.compile(r"[.:\n]\s")
# A word written right before an example call's bracket (``toolcall[{...}]``, ``CALLS [{...}]``, ``CALL: {...}``).
_WORD_BEFORE = re.compile(r"(?:^|(?<=[\s(\"'`]))(?P<word>[A-Za-z_][\w.-]*:?)(?P<gap>[ \t]*)\Z")
# What a sentence says when it names a marker word ("prefix function calls with toolcall marker").
_NAMES_A_MARKER = re.compile(
    r"\b(?:marker|prefix(?:ed)?|token|keyword|tag|word|begin(?:s|ning)?|start(?:s|ing)?|precede[ds]?|followed)\b", re.I
)
# Words of the sentence that introduces an example (never a marker; written in capitals, `CALL:` may be one).
_PROSE_WORDS = frozenset(
    {
        *("a", "an", "and", "array", "as", "at", "be", "below", "e.g", "eg", "example", "following", "format"),
        *("formatted", "here", "is", "json", "like", "list", "object", "of", "or", "output", "reply", "respond"),
        *("return", "this", "then", "to", "use", "with", "write"),
    }
)
# A marker that is a plain word (``callfn``, ``CALL:``), not markup (the parser's notion: parser/markers.py).
_PLAIN_WORD = re.compile(r"[A-Za-z_][\w.-]*:?")
_EXAMPLE_REACH = 400  # how far after an example's name key its arguments key may come
_SENTENCE_REACH = 300  # how far a sentence around a marker may extend each way


@dataclass(frozen=True, slots=True)
class Marker:
    """A marker token in instruction text: ``role`` is "open", "close" or "single"; ``key`` its normalized name."""

    text: str
    start: int
    end: int
    role: str
    key: str

    @property
    def words(self) -> list[str]:
        return _WORDS.findall(self.key)


@dataclass(frozen=True, slots=True)
class StatedPair:
    """An opening and a closing marker of the same name; ``close`` is None for a single token."""

    open: Marker
    close: Marker | None
    kind: str  # "reasoning", "answer", "call" or "other"


def _marker(match: re.Match[str]) -> Marker:
    text = match.group()
    start, end = match.span()
    if text.startswith("<|"):
        inner = _SPECIAL_AFFIX.match(text[2:-2])
        assert inner is not None  # the pattern matches any non-empty name
        affix = (inner["pre"] or inner["post"] or "").lower()
        role = "single" if not affix else "close" if affix == "end" else "open"
        return Marker(text, start, end, role, inner["name"].lower())
    if text.startswith("</"):
        return Marker(text, start, end, "close", text[2:-1].lower())
    if text.startswith("<"):
        return Marker(text, start, end, "open", text[1:-1].lower())
    if text.startswith("[/"):
        return Marker(text, start, end, "close", text[2:-1].lower())
    bracketed = _BRACKET_AFFIX.match(text[1:-1])
    if bracketed:
        role = "close" if bracketed["affix"] == "END" else "open"
        return Marker(text, start, end, role, bracketed["name"].lower())
    return Marker(text, start, end, "open", text[1:-1].lower())


def _kind(marker: Marker) -> str:
    words = marker.words
    if not words or len(words) > 3:
        return "other"
    if _CALL.search("_".join(words)) or _CALL.search("".join(words)):
        return "call"
    if words[-1] in _REASONING_WORDS and len(words) <= 2:
        return "reasoning"
    if words[-1] in _ANSWER_WORDS and not _TOOL_WORDS.intersection(words):
        return "answer"
    return "other"


def read_markers(text: str) -> list[StatedPair]:
    """Marker pairs (an opener and the next closer of the same name and bracket style) and single tokens."""
    pairs: list[StatedPair] = []
    pending: dict[tuple[str, str], deque[Marker]] = {}
    for match in _TOKEN.finditer(text):
        marker = _marker(match)
        if marker.role == "single":
            pairs.append(StatedPair(marker, None, _kind(marker)))
        elif marker.role == "open":
            pending.setdefault((marker.key, _style(marker)), deque()).append(marker)
        else:
            openers = pending.get((marker.key, _style(marker)))
            if openers:
                opener = openers.popleft()
                pairs.append(StatedPair(opener, marker, _kind(opener)))
    pairs.sort(key=lambda pair: pair.open.start)
    return pairs


def _style(marker: Marker) -> str:
    """``<|``, ``<`` or ``[``: an opener pairs only with a closer of its own bracket style."""
    return marker.text[:2] if marker.text.startswith("<|") else marker.text[0]


def _first(pairs: list[StatedPair], kind: str, *, closed: bool = True) -> StatedPair | None:
    return next((p for p in pairs if p.kind == kind and (p.close is not None or not closed)), None)


def read_content_and_reasoning(texts: list[str]) -> tuple[ReasoningAnalysis, ContentAnalysis] | None:
    """Reasoning (and answer) markers stated in the first of ``texts`` that states any.

    A stated answer pair without a reasoning pair, in text that asks for reasoning first ("present your reasoning
    step by step ... then the final solution in [BEGIN FINAL RESPONSE] ... [END FINAL RESPONSE]"), makes the
    answer's opening marker the end of the reasoning.
    """
    for text in texts:
        pairs = read_markers(text)
        reasoning, answer = _first(pairs, "reasoning"), _first(pairs, "answer")
        if reasoning is not None and reasoning.close is not None:
            found = ReasoningAnalysis(ReasoningMode.TAG_BASED, reasoning.open.text, reasoning.close.text)
            if answer is not None and answer.close is not None:
                content = ContentAnalysis(ContentMode.WRAPPED_WITH_REASONING, answer.open.text, answer.close.text)
                return found, content
            return found, ContentAnalysis()
        if answer is not None and answer.close is not None and _TALKS_REASONING.search(text[: answer.open.start]):
            found = ReasoningAnalysis(ReasoningMode.TAG_BASED, "", answer.open.text)
            return found, ContentAnalysis(ContentMode.END_DELIMITED, "", answer.close.text)
    return None


@dataclass(frozen=True, slots=True)
class _Example:
    """A call object stated as an example: where it starts, whether a list holds it, its key names."""

    start: int
    in_list: bool
    name_key: str
    args_key: str


def _example(text: str) -> _Example | None:
    """The first call object stated as an example; the declared tools (named by the probe's needles) are not."""
    for match in _EXAMPLE_CALL.finditer(text):
        value = text[match.end() : match.end() + len(needles.FUN_SECOND) + 8]
        if needles.FUN_FIRST in value or needles.FUN_SECOND in value:
            continue
        args = _ARGS_KEY.search(text, match.end(), match.end() + _EXAMPLE_REACH)
        before = text[: match.start()].rstrip()
        return _Example(match.start(), before.endswith("["), match["key"], args["key"] if args else "arguments")
    return None


def _word_before(text: str, example: _Example) -> str:
    """The word written right before the example's bracket, when it is a call marker: glued to the bracket
    (``toolcall[{"name": ...}]``), or separated by spaces where another sentence names it as a marker ("prefix function
    calls with toolcall marker", "start your reply with the keyword CALLS"). "" otherwise (``formatted as [...]``)."""
    opening = text.rfind("[", 0, example.start) if example.in_list else example.start
    match = _WORD_BEFORE.search(text, 0, opening)
    if match is None:
        return ""
    word = match["word"]
    bare = word.rstrip(":")
    if bare.lower() in _PROSE_WORDS and not bare.isupper():
        return ""
    if not match["gap"]:
        return word
    for other in re.finditer(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", text):
        if other.start() == match.start():
            continue
        if _NAMES_A_MARKER.search(_sentence(text, other.start(), other.end())):
            return word
    return ""


def _fence_around(text: str, pos: int) -> str | None:
    """The opening fence (with its language tag) of the code block holding ``pos``, if any."""
    fences = list(_FENCE.finditer(text))
    for opening, closing in zip(fences[::2], fences[1::2], strict=False):
        if opening.end() <= pos < closing.start():
            return opening.group()
    return None


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence around ``text[start:end]`` (to the previous and the next sentence end, at most
    ``_SENTENCE_REACH`` characters each way, so reading many markers stays linear)."""
    low = max(0, start - _SENTENCE_REACH)
    before = [m.end() for m in _SENTENCE_END.finditer(text, low, start)]
    after = _SENTENCE_END.search(text, end, end + _SENTENCE_REACH)
    return text[before[-1] if before else low : after.start() if after else min(len(text), end + _SENTENCE_REACH)]


def read_tool_format(text: str) -> ToolFormat | None:
    """The JSON call format stated in tool instructions, or None if they state none."""
    pairs = [p for p in read_markers(text) if p.kind == "call"]
    example = _example(text)
    if example is not None:
        enclosing = [(p.open, p.close) for p in pairs if p.close and p.open.end <= example.start < p.close.start]
        before = [p.open for p in pairs if p.close is None and p.open.end <= example.start]
        fence = _fence_around(text, example.start)
        start = end = ""
        if enclosing:
            start, end = enclosing[-1][0].text, enclosing[-1][1].text
        elif before:
            start = before[-1].text
        elif fence is not None:
            start, end = fence, "```"
        else:
            start = _word_before(text, example)
        return _json_format(start, end, example.in_list, example.name_key, example.args_key)
    for pair in pairs:
        sentence = _sentence(text, pair.open.start, (pair.close or pair.open).end).lower()
        if "json" in sentence:
            in_list = "list" in sentence or "array" in sentence
            end = pair.close.text if pair.close else ""
            return _json_format(pair.open.text, end, in_list, "name", "arguments")
    return None


def _json_format(start: str, end: str, in_list: bool, name_key: str, args_key: str) -> ToolFormat:
    """Markers around a list of calls wrap the section; around one call object, each call."""
    if in_list or not start:
        section = {"section_start": start, "section_end": end}
    else:
        section = {"per_call_start": start, "per_call_end": end}
    return ToolFormat(
        ToolFormatMode.JSON_NATIVE,
        tools_array_wrapped=in_list,
        name_field=name_key,
        args_field=args_key,
        parameter_order=(name_key, args_key),
        **section,
    )


def _reasoning_empty(draft: Draft) -> bool:
    return not draft.reasoning.enabled and not draft.reasoning.end and draft.content.mode is ContentMode.PLAIN


def _unmarked_json(fmt: ToolFormat) -> bool:
    """JSON calls the renders show without any marker before them (a bare object or list)."""
    return fmt.mode is ToolFormatMode.JSON_NATIVE and not (fmt.section_start.strip() or fmt.per_call_start.strip())


def prose_can_fill(draft: Draft) -> bool:
    """Whether any part prose could fill is still empty (otherwise the instructions need not be rendered)."""
    fmt = draft.tools.format
    return _reasoning_empty(draft) or fmt.mode is ToolFormatMode.NONE or _unmarked_json(fmt)


def stated_word(text: str) -> str:
    """The marker word the tool instructions ``text`` prescribe before the calls (``callfn`` of "begin the call list
    with the word callfn ... as callfn[{…}]"), or "" (none, or a marker that is not a plain word)."""
    stated = read_tool_format(text)
    if stated is None:
        return ""
    word = stated.section_start.strip() or stated.per_call_start.strip()
    return word if _PLAIN_WORD.fullmatch(word) else ""


def apply_prose(instructions: Instructions, draft: Draft) -> list[str]:
    """Fill the parts of ``draft`` that the renders left empty from what the instructions state; the names of the
    parts filled ("reasoning", "content", "tools")."""
    learned: list[str] = []
    if _reasoning_empty(draft):
        texts = [instructions.thinking, instructions.tools, instructions.prompt]
        stated = read_content_and_reasoning([t for t in texts if t])
        if stated is not None:
            draft.reasoning, content = stated
            learned.append("reasoning")
            if content.mode is not ContentMode.PLAIN:
                draft.content = content
                learned.append("content")
    if draft.tools.format.mode is ToolFormatMode.NONE and instructions.tools:
        fmt = read_tool_format(instructions.tools)
        if fmt is not None:
            draft.tools = ToolsAnalysis(fmt)
            learned.append("tools")
    elif _unmarked_json(draft.tools.format) and instructions.tools:
        # The renders write the calls bare, the instructions prescribe a word before them: models write either.
        word = stated_word(instructions.tools)
        if word:
            draft.tools = replace(draft.tools, format=replace(draft.tools.format, stated_word=word))
            learned.append("tool marker word")
    return learned
