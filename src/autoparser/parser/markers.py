"""Turning analysed markers into tolerant parsers.

Templates bake whitespace into markers (``"<tool_call>\\n"``); models are sloppier. A marker therefore matches
its non-whitespace core with any whitespace around it, except where whitespace is data (right before a tagged
argument value, whose own leading newline the mapper trims).
"""

from __future__ import annotations

import itertools
import re

from .. import peg as p

__all__ = [
    "FENCE",
    "core",
    "flex",
    "is_fence",
    "is_markup",
    "is_word_marker",
    "language_tag",
    "opener",
    "opener_rest",
    "opener_trigger",
    "tight",
]

FENCE = "```"


def core(marker: str) -> str:
    return marker.strip()


def flex(marker: str) -> p.Parser:
    """``marker`` with optional whitespace around it (just optional whitespace if it is all whitespace)."""
    text = core(marker)
    if not text:
        return p.space()
    return p.space() + p.literal(text) + p.space()


def tight(marker: str) -> p.Parser:
    """``marker`` with optional whitespace before it only (it is followed by data)."""
    text = core(marker)
    if not text:
        return p.eps()
    return p.space() + p.literal(text)


def is_markup(marker: str) -> bool:
    """A marker distinctive enough that the parser reads it as structure wherever it appears (``<tool_call>``,
    ``[TOOL_CALLS]``, ``<function=``, ``<｜tool▁call▁begin｜>function``): it ends a tagged value early, and a
    grammar's free text never holds it. Not ordinary text (``{``, a code fence, ``"name"``)."""
    return len(marker) >= 3 and marker[0] in "<[" and any(c in '>]="|' for c in marker[1:])


_WORD_MARKER = re.compile(r"[A-Za-z_][\w.-]*:?")


def is_word_marker(marker: str) -> bool:
    """A call marker that is a plain word (FireFunction's ``functools``, a prompt's ``toolcall`` or ``CALL:``), not
    markup: it is also a word of the language, so it marks a call only where the call's bracket follows."""
    return _WORD_MARKER.fullmatch(marker) is not None


def is_fence(marker: str) -> bool:
    """A Markdown code fence (```` ``` ```` or ```` ```json ````) used as a section marker (stated in a prompt)."""
    return core(marker).startswith(FENCE)


def opener(marker: str) -> p.Parser:
    """:func:`flex`, except that a code fence may carry any language tag or none (```` ```json ````, ```` ``` ````):
    models tag or untag the fence a prompt showed them. A marker of several words (Command R+'s ``Action:`` line,
    then a ```` ```json ```` fence on the next) is read word by word, with any whitespace between them where a word
    ends or starts with punctuation (``Action: ```json`` on one line, as its prompt documents it), at least one
    space between two letters."""
    words = core(marker).split()
    if not words:
        return p.space()
    found = p.space() + _opener_word(words[0])
    for before, word in itertools.pairwise(words):
        glued = not (before[-1].isalnum() and word[0].isalnum())
        found = found + (p.space() if glued else p.chars("[ \t\r\n]", 1)) + _opener_word(word)
    return found + p.space()


def _opener_word(word: str) -> p.Parser:
    return p.literal(FENCE) + language_tag() if is_fence(word) else p.literal(word)


def opener_rest(marker: str) -> p.Parser | None:
    """What follows the first word of a marker of several words, as :func:`opener` reads it (None: one word)."""
    words = core(marker).split()
    if len(words) < 2:
        return None
    return opener(" ".join(words[1:]))


def opener_trigger(marker: str) -> str:
    """Where :func:`opener` may start in text: the marker's core, or — for a marker of several words whose first is
    a plain word (``Action:``) — that word, since the whitespace after it varies."""
    words = core(marker).split()
    return words[0] if len(words) > 1 and is_word_marker(words[0]) else core(marker)


def language_tag() -> p.Parser:
    """The optional info string after a fence's backticks (``json``, ``python``)."""
    return p.optional(p.chars("[A-Za-z0-9_+-]"))
