"""The regular replies: a complete reply that holds no markup at all is read by one regular expression.

Most replies are an answer, or a reasoning block and an answer, with no call and no stray marker. For them the whole
parse (the engine's item loop, the mapping, the scan for leftover markup) comes down to trimming one or two pieces of
text, and the fixed cost of running it is what a short reply pays most for. So a generic parser also gets a
:class:`RegularReply`: every literal that can start structure in it (its text runs' stops, its markers, the well-known
reasoning tags, the leftover markers and tool names the content is scanned for) is represented by one character of
it, the *signal* character; a stretch of text without any signal character cannot hold any of those literals, so
the engine reads it as one run of content (or reasoning) and the scan finds nothing in it. The reply is read here
when it is

* an answer without a signal character, after a generation prompt that leaves nothing to the output; or
* (where the request extracts reasoning) optional whitespace, the reasoning start marker, reasoning text and the end
  marker, then the answer, neither text holding a signal character (the start marker may be the prompt's).

Anything else (``partial`` parses too) goes to the engine. The result is the engine's exactly: ``content`` and
``reasoning_content`` are the same stretches trimmed the same way, with no calls and no warnings;
tests/parser/test_regular_replies.py compares both on every bundled template's own outputs, whole and cut.

Which character of a literal signals it does not matter for correctness (a text without it cannot hold the literal);
the rarest in prose is taken, so that ordinary answers (letters, digits, ``.,;:!?'-()``) keep the short path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.model import TemplateAnalysis
from ..message import ChatMessage
from .leftovers import LeftoverMarkers
from .markers import core
from .reasoning import WELL_KNOWN_BLOCKS, extracts_reasoning, prefill
from .request import ParseRequest

__all__ = ["RegularReply", "regular_reply", "signal_char"]

WHITESPACE = " \t\r\n"  # what the message trims (reading/mapper.py)
_SPACE = "[ \\t\\n\\r\\x0b\\x0c]*"  # what the engine's space() skips (peg/engine.py)
# Characters by how rarely prose holds them, rarest first; a character not listed (a special token's `｜`, `▁`)
# is rarer still.
_BY_RARITY = "<>[]{}|`\\^~@#$%&*+=_/✿\";:()'!?-.,0123456789QJZXKVBPYGFWMUCLDRHSNIOATEqjzxkvbpygfwmucldrhsnioate"
_RANK = {ch: i for i, ch in enumerate(_BY_RARITY)}
_CALL_POSITION = '({"'  # what a tool name needs around it to be a find of the leftover scan
_NOTHING = re.compile(r"(?!)")


def signal_char(literal: str) -> str:
    """The character of ``literal`` prose holds most rarely (the first such; whitespace never, unless all of it)."""
    chars = [ch for ch in literal if not ch.isspace()] or list(literal)
    return min(chars, key=lambda ch: _RANK.get(ch, -1))


@dataclass(frozen=True, slots=True)
class RegularReply:
    """The short path of :func:`regular_reply`: ``plain`` finds a signal character; ``block`` (or None where the
    request extracts no reasoning) reads ``space start space reasoning end space answer`` with neither text holding
    one.

    The declared tools' names are scanned for in call position only (``get_weather(``, ``"get_weather"``,
    ``get_weather {``), so their signal is one of ``({"``; those being common in prose, a reply holding one is looked
    at again (``markup``: the other signals; ``names``: the names themselves) before it is left to the engine."""

    plain: re.Pattern[str]
    block: re.Pattern[str] | None
    markup: re.Pattern[str] | None = None
    names: re.Pattern[str] | None = None

    def read(self, prefill: str, text: str) -> ChatMessage | None:
        """The message the engine would read from ``prefill + text``, or None where the reply is not regular."""
        if not prefill and self._plain(text):
            return ChatMessage("assistant", text.strip(WHITESPACE))
        if self.block is None:
            return None
        match = self.block.fullmatch(prefill + text if prefill else text)
        if match is None or not (self.names is None or self._plain(match[2])):  # (closed reasoning is not scanned)
            return None
        return ChatMessage("assistant", match[2].strip(WHITESPACE), match[1].strip(WHITESPACE))

    def _plain(self, text: str) -> bool:
        if self.plain.search(text) is None:
            return True
        if self.names is None or self.markup is None:
            return False
        return self.markup.search(text) is None and self.names.search(text) is None


def regular_reply(
    analysis: TemplateAnalysis, request: ParseRequest, markup: Iterable[str], leftovers: LeftoverMarkers
) -> RegularReply | None:
    """The short path for a generic parser whose literals that start structure are ``markup`` (None where the
    request adds to a plain reply: a response schema reads a JSON answer, ``tool_choice="required"`` warns)."""
    if request.json_schema is not None or (request.tool_choice == "required" and request.tools):
        return None
    reasoning = analysis.reasoning
    start, end = core(reasoning.start), core(reasoning.end)
    literals = {
        *markup,
        start,
        end,
        *(tag for block in WELL_KNOWN_BLOCKS for tag in block),
        *leftovers.calls,
        *leftovers.words,
        *leftovers.reasoning,
    }
    signals = {signal_char(m) for m in literals if m}
    names = sorted({n for n in leftovers.tool_names if n}, key=lambda n: (-len(n), n))
    if not signals and not names:
        return None
    every = signals | set(_CALL_POSITION if names else "")
    plain = re.compile(_one_of(every))
    free = f"[^{_one_of(every)[1:-1]}]*"
    block = None
    tail = prefill(request.generation_prompt, reasoning)
    if start and end and extracts_reasoning(reasoning, request) and (not tail or tail.lstrip().startswith(start)):
        # (a name's signal may stand in either text; the answer is then looked at again as plain text)
        free = f"[^{_one_of(signals)[1:-1]}]*" if names else free
        block = re.compile(f"{_SPACE}{re.escape(start)}{_SPACE}({free}){re.escape(end)}{_SPACE}({free})")
    if not names:
        return RegularReply(plain, block)
    alternation = re.compile("|".join(map(re.escape, names)))
    return RegularReply(plain, block, re.compile(_one_of(signals)) if signals else _NOTHING, alternation)


def _one_of(chars: Iterable[str]) -> str:
    return "[" + "".join(re.escape(ch) for ch in sorted(chars)) + "]"
