"""Grammar check of the conformance corpus (corpus README rule 4), for the generic formats.

For every case whose request yields a grammar and whose expected message has tool calls or a response format:
the constrained part of ``generation_prompt + output`` — from the earliest trigger outside a reasoning block for a
lazy grammar, all of it otherwise — must be accepted by the GBNF grammar, checked with llguidance and with the
strict GBNF recognizer (a prefix check for partial outputs). Lazy grammars with expected tool calls must trigger.
Dedicated formats have no grammar yet.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from ..support import llg
from ..support.gbnf_recognizer import accepts, prefix_ok
from .corpus import CASES, apply_case


def _constrained(case: dict[str, Any]) -> bool:
    return bool(case["expect"]["tool_calls"] or case["params"]["json_schema"])


def _generic(case: dict[str, Any]) -> bool:
    return ChatTemplate.load(case["template"]).analysis.format == "generic"


GENERIC_CASES = [pytest.param(c, id=c["id"]) for c in CASES if _constrained(c) and _generic(c)]
DEDICATED_CASES = [pytest.param(c, id=c["id"]) for c in CASES if _constrained(c) and not _generic(c)]


def _reasoning_spans(chat: ChatParams, text: str) -> list[tuple[int, int]]:
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


def _trigger_position(chat: ChatParams, text: str) -> int:
    spans = _reasoning_spans(chat, text)
    best = -1
    for trigger in chat.grammar_triggers:
        if trigger.type == "word":
            found = [m.start() for m in re.finditer(re.escape(trigger.value), text)]
        else:
            found = [m.start(1) if m.groups() else m.start() for m in re.finditer(trigger.value, text)]
        found = [f for f in found if f >= len(chat.generation_prompt) and not any(a <= f < b for a, b in spans)]
        if found and (best < 0 or found[0] < best):
            best = found[0]
    return best


@pytest.mark.parametrize("case", DEDICATED_CASES)
def test_dedicated_formats_have_no_grammar_yet(case: dict[str, Any]) -> None:
    # Documented gap (docs/grammars.md): these formats report no grammar rather than a wrong one.
    _, chat = apply_case(case)
    assert chat.grammar is None and not chat.grammar_triggers


@pytest.mark.parametrize("case", GENERIC_CASES)
def test_grammar_accepts_the_expected_output(case: dict[str, Any]) -> None:
    _, chat = apply_case(case)
    assert chat.grammar is not None
    text = chat.generation_prompt + case["input"]
    if chat.grammar_lazy:
        pos = _trigger_position(chat, text)
        assert pos >= 0, "the lazy grammar never triggers"
        text = text[pos:]
    if case["is_partial"]:
        assert prefix_ok(chat.grammar, text)
        return
    assert accepts(chat.grammar, text), "strict GBNF recognizer rejects the output"
    assert llg.gbnf_accepts(chat.grammar, text), "llguidance rejects the output"
