"""The regular replies: a complete reply that holds no markup, or only regular calls, is read by a few string scans.

Most replies are an answer, or a reasoning block and an answer, with no call and no stray marker. For them the whole
parse (the engine's item loop, the mapping, the scan for leftover markup) comes down to trimming one or two pieces of
text, and the fixed cost of running it is what a short reply pays most for. So a generic parser also gets a
:class:`RegularReply`: every literal that can start structure in it (its text runs' stops, its markers, the well-known
reasoning tags, the leftover markers and tool names the content is scanned for) is represented by one character of
it, the *signal* character; a stretch of text without any signal character cannot hold any of those literals, so
the engine reads it as one run of content (or reasoning) and the scan finds nothing in it. The reply is read here (one
``in`` test per signal character, a ``partition`` at the end marker: C loops, no engine, no regex) when it is

* an answer without a signal character, after a generation prompt that leaves nothing to the output; or
* (where the request extracts reasoning) optional whitespace, the reasoning start marker, reasoning text and the end
  marker, then the answer, neither text holding a signal character (the start marker may be the prompt's);
* either of those with the answer ending in calls, where the template wraps each JSON call in an opener/closer
  pair, writes an array of them after a section opener, names the tool in markup or writes bare JSON objects
  (:mod:`.regular_calls`: Hermes, Qwen, Mistral, Granite, DeepSeek V3.1, Llama 3), or writes a pythonic call list
  (:mod:`.regular_pythonic`: LFM2), or tags each call's name and arguments (:mod:`.regular_tagged`: Qwen3-Coder,
  GLM): the answer up to the first opener holds no signal character, and the rest is such calls alone, as strict as
  the engine reads them without a warning.

Where the prompt opens the reasoning block (DeepSeek-R1's ``<think>\n``), the reply is the block's inside and is read
as it is, without joining the prompt's part to it.

Anything else (``partial`` parses too) goes to the engine. The result is the engine's exactly: ``content`` and
``reasoning_content`` are the same stretches trimmed the same way, the calls' names, arguments and ids as written
(an id not written generated in the template's format), no warnings; tests/parser/test_regular_replies.py and
test_regular_calls.py compare both on every bundled template's own outputs and variants, whole and cut.

Which character of a literal signals it does not matter for correctness (a text without it cannot hold the literal);
the rarest in prose is taken, so that ordinary answers (letters, digits, ``.,;:!?'-()``) keep the short path. Where
even that character is common (an ``=``, a letter) and the literal holds no whitespace, the literal itself is the
signal: ``in`` finds it as cheaply, and a text without it cannot hold it either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.model import TemplateAnalysis
from ..message import ChatMessage, built_message
from .leftovers import LeftoverMarkers
from .markers import core
from .reasoning import WELL_KNOWN_BLOCKS, extracts_reasoning, prefill
from .regular_calls import RegularCalls, wrapped_calls
from .regular_pythonic import pythonic_calls
from .regular_tagged import regular_tagged_calls
from .request import ParseRequest

__all__ = ["RegularReply", "regular_reply", "signal_char"]

WHITESPACE = " \t\r\n"  # what the message trims (reading/mapper.py)
_SPACE = " \t\n\r\x0b\x0c"  # what the engine's space() skips (peg/engine.py)
# Characters by how rarely prose holds them, rarest first; a character not listed (a special token's `｜`, `▁`)
# is rarer still.
_BY_RARITY = "<>[]{}|`\\^~@#$%&*+=_/✿\";:()'!?-.,0123456789QJZXKVBPYGFWMUCLDRHSNIOATEqjzxkvbpygfwmucldrhsnioate"
_RANK = {ch: i for i, ch in enumerate(_BY_RARITY)}


_COMMON = _RANK["="]  # from here on, prose holds a character too often for it to stand for a literal


def signal_char(literal: str) -> str:
    """The character of ``literal`` prose holds most rarely (the first such; whitespace never, unless all of it)."""
    chars = [ch for ch in literal if not ch.isspace()] or list(literal)
    return min(chars, key=lambda ch: _RANK.get(ch, -1))


def _signal(literal: str) -> str:
    """What stands for ``literal`` in the scans: its rarest character, or the literal itself where even that
    character is common in prose (``=`` of gpt-oss's ``to=functions.``, a letter of FireFunction's ``functools``:
    every answer with an equation or an ``f`` went to the engine) and the literal holds no whitespace (the engine
    then looks for it exactly, and so does ``in``)."""
    char = signal_char(literal)
    if _RANK.get(char, -1) >= _COMMON and len(literal) >= 3 and not any(ch.isspace() for ch in literal):
        return literal
    return char


@dataclass(frozen=True, slots=True)
class RegularReply:
    """The short path of :func:`regular_reply`: a reply is regular when neither its answer nor its reasoning holds a
    character of ``signals``; ``start`` and ``end`` are the reasoning markers where the request extracts reasoning
    (else empty: only an answer is regular).

    The declared tools' ``names`` are scanned for in call position only (``get_weather(``, ``"get_weather"``,
    ``get_weather {``), so their signal is one of ``({"``; those being common in prose, an answer holding one is
    regular unless it also holds a name. A closed reasoning block is not scanned for them."""

    signals: tuple[str, ...]
    start: str = ""
    end: str = ""
    names: tuple[str, ...] = ()
    # The signal characters the end marker does not hold (ASCII ones; the others, which an ASCII text cannot hold),
    # and those it holds (looked for on either side of it).
    outside: tuple[str, ...] = ()
    outside_wide: tuple[str, ...] = ()
    inside: tuple[str, ...] = ()
    # The calls a reply may end with (None: a reply with calls goes to the engine).
    calls: RegularCalls | None = None
    # The prefill that opens the reasoning block (its start marker, then whitespace: DeepSeek-R1's `<think>\n`), if
    # the prompt opens it: the output is then the block's inside, read as it is, without joining the two.
    opened: str | None = None

    def read(self, prefill: str, text: str) -> ChatMessage | None:
        """The message the engine would read from ``prefill + text``, or None where the reply is not regular."""
        start = self.start
        if prefill:
            if prefill == self.opened:
                rest = text  # (what the joined text holds after the start marker, but for whitespace the block trims)
            else:
                body = (prefill + text).lstrip(_SPACE)
                if not start or not body.startswith(start):
                    return None
                rest = body[len(start) :]
        elif start and text.startswith(start):
            rest = text[len(start) :]  # (an answer or calls would start with a signal character)
        else:
            for char in self.signals:
                if char in text:
                    break
            else:
                if not self.names or self._no_names(text):
                    return built_message(text.strip(WHITESPACE))
            if self.calls is not None:
                message = self._with_calls(text, "", WHITESPACE)
                if message is not None:
                    return message
            body = text.lstrip(_SPACE)
            if not start or not body.startswith(start):
                return None
            rest = body[len(start) :]
        reasoning, end, answer = rest.partition(self.end)  # (the first end marker: where the reasoning stops)
        if not end:
            return None
        if self._plain_after(rest, reasoning, answer) and (not self.names or self._no_names(answer)):
            return built_message(answer.lstrip(_SPACE).rstrip(WHITESPACE), reasoning.lstrip(_SPACE).rstrip(WHITESPACE))
        if self.calls is None:
            return None
        for char in self.signals:
            if char in reasoning:
                return None
        return self._with_calls(answer, reasoning.lstrip(_SPACE).rstrip(WHITESPACE), _SPACE)

    def _plain_after(self, rest: str, reasoning: str, answer: str) -> bool:
        """Whether ``rest`` (``reasoning``, the end marker, ``answer``) holds no signal character but the end
        marker's ("in": memchr scans)."""
        for char in self.outside:
            if char in rest:
                return False
        if not rest.isascii():
            for char in self.outside_wide:
                if char in rest:
                    return False
        for char in self.inside:  # noqa: SIM110 (a generator would cost more than the scans on a short reply)
            if char in reasoning or char in answer:
                return False
        return True

    def _with_calls(self, answer: str, reasoning: str, lead: str) -> ChatMessage | None:
        """An answer of plain text then regular calls (:mod:`.regular_calls`), or None."""
        calls = self.calls
        assert calls is not None
        at = calls.find(answer)
        if at < 0:
            return None
        content = answer[:at]
        for char in self.signals:
            if char in content:
                return None
        if self.names and not self._no_names(content):
            return None
        found = calls.read(answer, at)
        if found is None:
            return None
        text = content.lstrip(lead).rstrip(WHITESPACE)
        if text and not text.strip(_SPACE):
            return None  # (only spaces with a \x0b or \x0c: the engine's space() takes them before a call's marker)
        return built_message(text, reasoning, found)

    def _no_names(self, text: str) -> bool:
        if "(" in text or "{" in text or '"' in text:
            for name in self.names:
                if name in text:
                    return False
        return True


def _calls(analysis: TemplateAnalysis, request: ParseRequest) -> RegularCalls | None:
    """The regular calls of the template's format, if any: JSON, pythonic or tagged."""
    found: RegularCalls | None = wrapped_calls(analysis, request) or pythonic_calls(analysis, request)
    return found or regular_tagged_calls(analysis, request)


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
    signals = tuple(sorted({_signal(m) for m in literals if m}, key=lambda ch: (-_RANK.get(ch, -1), ch)))
    names = tuple(sorted({n for n in leftovers.tool_names if n}))
    tail = prefill(request.generation_prompt, reasoning)
    if not (start and end and extracts_reasoning(reasoning, request)) or (tail and not tail.startswith(start)):
        start = end = ""
    lead = tail.lstrip(_SPACE)
    opened = tail if end and lead.startswith(start) and not lead[len(start) :].strip(_SPACE) else None
    return RegularReply(
        signals,
        start,
        end,
        names,
        tuple(ch for ch in signals if ch not in end and ch.isascii()),
        tuple(ch for ch in signals if ch not in end and not ch.isascii()),
        tuple(ch for ch in signals if ch in end),
        _calls(analysis, request),
        opened,
    )
