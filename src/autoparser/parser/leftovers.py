"""The markup that, left in a reply's content, means structure was not read: the data behind "never silent".

A parser reads what it learned from the template. A reply written in another family's markup (a Hermes
``<tool_call>`` given to a Mistral parser), or one whose own markup broke in a way the parser did not catch, would
come back as plain content; the client would see text where the model meant a call. So the mapped message's content
is scanned for such markup (:mod:`autoparser.reading.leftovers`), and each find becomes a warning — which
``parse(strict=True)`` raises on. What is scanned for is decided here, once per parser:

* **call markers**: the markers this parser's calls start with (its triggers), the learned function-name prefix
  where it is markup, and :data:`WELL_KNOWN_CALL_MARKERS`, the call markers of every family the bundled templates and
  the serving stacks know. A plain-word marker (FireFunction's ``functools``) counts only with its bracket after it;
  a bare code fence, ``{`` or ``[`` never counts (answers quote code and JSON);
* **reasoning markers**: the learned reasoning opener and closer, unless the request keeps reasoning inline
  (``reasoning_format="none"``: the markers then belong in content);
* **tool names**: the declared tools, for the families without markers: content holding a declared tool in call
  position (``{"name": "get_weather"``, ``get_weather(``, ``get_weather\\n{``) is a call that did not parse.

How a find counts (prose that merely mentions a marker is no find) is the scanner's business.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.model import TemplateAnalysis
from .markers import FENCE, core, is_word_marker
from .request import ParseRequest

__all__ = ["WELL_KNOWN_CALL_MARKERS", "WELL_KNOWN_ONLY", "LeftoverMarkers", "learned_call_marker", "leftover_markers"]

#: Markers that open a tool call (or a section of calls) in the families the bundled templates, their model cards and
#: the serving stacks' parsers show: Hermes/Qwen/GLM, Mistral, Llama 3.1 and 4, functionary, Kimi, DeepSeek (R1, V3,
#: DSML), MiniMax, Seed, LongCat, Cohere, Granite, Nemotron, Apertus, Solar, Gemma, LFM2, FireFunction, GPT-OSS,
#: InternLM, Kimi-K3's open/close tags, Anthropic-style XML. Each is markup no answer writes as text (plain words
#: are given with their bracket).
WELL_KNOWN_CALL_MARKERS: tuple[str, ...] = (
    "<tool_call>",
    "<tool_calls>",
    "<toolcall>",
    "<TOOLCALL>",
    "<|tool_call|>",
    "<|tool_call>",
    "<|tool_calls|>",
    "<|tool_call_start|>",
    "<|tool_call:begin|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<|tool▁calls▁begin|>",
    "<|tool▁call▁begin|>",
    "<｜DSML｜function_calls>",
    "<｜DSML｜tool_calls>",
    "<｜DSML｜invoke",
    "[TOOL_CALLS]",
    "[TOOL_REQUEST]",
    "<|python_tag|>",
    "<|python_start|>",
    "<function=",
    "<function_calls>",
    "<invoke name=",
    "<minimax:tool_call>",
    "<seed:tool_call>",
    "<longcat_tool_call>",
    "<|START_ACTION|>",
    "<|tools_prefix|>",
    "<|function_call|>",
    "<|recipient|>",
    "<|open|>call",
    "<|open|>tools",
    "<|action_start|>",
    "<start_function_call>",
    "<use_mcp_tool>",
    "✿FUNCTION✿",
    "```tool_code",
    "```tool_call",
    "to=functions.",
    "functools[",
)


@dataclass(frozen=True, slots=True)
class LeftoverMarkers:
    """What a reply's content must not hold unread (see the module docstring); hashable, so the scanner built from
    it is cached. ``calls``: literal markers; ``words``: plain-word markers, counted only where a bracket follows;
    ``reasoning``: the learned (opener, closer), ``("", "")`` where reasoning markers are not looked for;
    ``tool_names``: the declared tools."""

    calls: tuple[str, ...] = WELL_KNOWN_CALL_MARKERS
    words: tuple[str, ...] = ()
    reasoning: tuple[str, str] = ("", "")
    tool_names: tuple[str, ...] = ()


WELL_KNOWN_ONLY = LeftoverMarkers()  # what a parser built without an analysis looks for


def leftover_markers(analysis: TemplateAnalysis, request: ParseRequest, triggers: tuple[str, ...]) -> LeftoverMarkers:
    """The markers to look for in the content of replies to ``request`` (``triggers``: the parser's call triggers)."""
    learned = [*triggers, analysis.tools.function.name_prefix]
    calls: set[str] = set(WELL_KNOWN_CALL_MARKERS)
    words: set[str] = set()
    for marker in map(core, learned):
        kind = learned_call_marker(marker)
        if kind == "word":
            words.add(marker)
        elif kind == "call":
            calls.add(marker)
    reasoning = ("", "")
    start, end = core(analysis.reasoning.start), core(analysis.reasoning.end)
    if request.reasoning_format != "none":
        reasoning = (start if _markup(start) else "", end if _markup(end) else "")
    names = tuple(t.name for t in request.tools)  # (with tool_choice "none" too: a call written anyway is news)
    return LeftoverMarkers(tuple(sorted(calls)), tuple(sorted(words)), reasoning, names)


def learned_call_marker(marker: str) -> str:
    """How a call marker learned from the template counts in content: ``"call"`` (markup: anywhere it stands),
    ``"word"`` (a plain word: only with its bracket after it) or ``""`` (not at all: too short to be markup, a code
    fence, or a bracket an answer writes too, as in ``[get_weather(``). A grammar's free text holds no ``"call"``
    marker of its template (:func:`autoparser.grammar.common.markup`)."""
    if len(marker) < 3 or marker.startswith(FENCE) or marker[0] == "{" or (marker[0] == "[" and marker[-1] != "]"):
        return ""
    if is_word_marker(marker):
        return "word"
    return "call" if any(not c.isalnum() and not c.isspace() for c in marker) else ""


def _markup(marker: str) -> bool:
    """A reasoning marker worth looking for: markup (brackets, bars), not a word or a bit of whitespace."""
    return len(marker) >= 3 and any(c in marker for c in "<>[]|｜")
