"""Judge a request's grammars on a model output, the way the corpus README (rule 4) describes.

The constrained part of the output is, for a lazy grammar, the text of ``generation_prompt + output`` from the
earliest trigger that fires outside a reasoning block (nothing if no trigger fires), and the whole output (never the
generation prompt) for a grammar applied from the first token (non-lazy, and the ``full_*`` grammars). It is checked
by every engine we have: the strict GBNF recognizer, llguidance loading the GBNF, and llguidance loading the Lark
grammar.
"""

from __future__ import annotations

import re

from autoparser import ChatParams
from autoparser.check.recognizer import accepts, prefix_ok

from . import llg

ENGINES = ("strict-gbnf", "llguidance-gbnf", "llguidance-lark")


def reasoning_spans(chat: ChatParams, text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` inside reasoning blocks (opened by the generation prompt, or by the start tag)."""
    start, end = chat.thinking_start_tag, chat.thinking_end_tag
    if not end:
        return []
    spans = []
    gp = chat.generation_prompt
    opened = gp.rfind(start) if start else -1
    if opened >= 0 and end not in gp[opened:]:
        close = text.find(end, len(gp))
        spans.append((opened, close if close >= 0 else len(text)))
    for match in re.finditer(re.escape(start), text) if start else ():
        close = text.find(end, match.end())
        spans.append((match.start(), close if close >= 0 else len(text)))
    return spans


def trigger_position(chat: ChatParams, text: str) -> int:
    """Where the lazy grammar starts in ``text`` (generation prompt included), or -1 if no trigger fires."""
    spans = reasoning_spans(chat, text)
    best = -1
    for trigger in chat.grammar_triggers:
        if trigger.type == "word":
            found = [m.start() for m in re.finditer(re.escape(trigger.value), text)]
        elif trigger.type == "pattern":
            found = [m.start(1) if m.groups() else m.start() for m in re.finditer(trigger.value, text)]
        else:
            raise AssertionError(f"trigger type {trigger.type!r} is not checked by this suite")
        found = [f for f in found if f >= len(chat.generation_prompt) and not any(a <= f < b for a, b in spans)]
        if found and (best < 0 or found[0] < best):
            best = found[0]
    return best


def output_only_start(chat: ChatParams, output: str) -> int:
    """Where the grammar starts for an engine that searches the output alone (no generation prompt), or -1."""
    found = [m for m in (re.search(t.value, output) for t in chat.grammar_triggers) if m]
    return min((m.start(1) if m.groups() else m.start() for m in found), default=-1)


def constrained_text(chat: ChatParams, output: str) -> str | None:
    """The part of ``generation_prompt + output`` the grammar constrains; None when a lazy grammar never fires."""
    if not chat.grammar_lazy:
        return output
    text = chat.generation_prompt + output
    pos = trigger_position(chat, text)
    return text[pos:] if pos >= 0 else None


def verdicts(chat: ChatParams, output: str, *, partial: bool = False) -> dict[str, bool]:
    """Engine name -> whether it accepts the constrained text (a prefix of it, for ``partial`` outputs).

    A lazy grammar that never fires constrains nothing, which counts as accepting nothing."""
    assert chat.grammar is not None, "the request yields no GBNF grammar"
    assert chat.lark_grammar is not None, "the request yields no Lark grammar"
    text = constrained_text(chat, output)
    if text is None:
        return dict.fromkeys(ENGINES, False)
    return _verdicts(chat.grammar, chat.lark_grammar, text, partial)


def full_verdicts(chat: ChatParams, output: str, *, partial: bool = False) -> dict[str, bool]:
    """Engine name -> whether the whole-output grammars (``full_grammar``, ``full_lark_grammar``) accept
    ``output`` (a prefix of it, for ``partial`` outputs)."""
    assert chat.full_grammar is not None and chat.full_lark_grammar is not None, "no whole-output grammar"
    verdict = _verdicts(chat.full_grammar, chat.full_lark_grammar, output, partial)
    # llguidance takes the Lark grammar. Its GBNF import turns terminal-only rules into greedy lexemes, which in a
    # whole-output grammar (free text, then calls whose optional arguments share a closing tag's prefix) can reject
    # valid text the strict recognizer and the Lark grammar accept (GLM 4.7's optional <arg_key> before
    # </tool_call>; ParserTooComplex on large schemas over a byte tokenizer). GBNF is checked as llama.cpp reads it.
    del verdict["llguidance-gbnf"]
    return verdict


def _verdicts(gbnf: str, lark: str, text: str, partial: bool) -> dict[str, bool]:
    check = llg.prefix_matches if partial else llg.matches
    return {
        "strict-gbnf": (prefix_ok if partial else accepts)(gbnf, text),
        "llguidance-gbnf": check(llg.compile_gbnf(gbnf), text),
        "llguidance-lark": check(llg.compile_lark(lark), text),
    }


def all_accept(chat: ChatParams, output: str, *, partial: bool = False) -> bool:
    return all(verdicts(chat, output, partial=partial).values())


def all_reject(chat: ChatParams, output: str) -> bool:
    return not any(verdicts(chat, output).values())
