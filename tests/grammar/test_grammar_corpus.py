"""Grammar check of the conformance corpus (corpus README rule 4), for every format.

For every case whose request yields a grammar and whose expected message has tool calls or a response format:
the constrained part of ``generation_prompt + output`` — from the earliest trigger outside a reasoning block for a
lazy grammar, all of it otherwise — must be accepted by the GBNF grammar, checked with llguidance and with the
strict GBNF recognizer, and the Lark grammar, checked with llguidance (prefix checks for partial outputs). Lazy
grammars with expected tool calls must trigger.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..support.corpus import CASES, apply_case
from ..support.grammar_check import full_verdicts, trigger_position, verdicts


def _constrained(case: dict[str, Any]) -> bool:
    return bool(case["expect"]["tool_calls"] or case["params"]["json_schema"])


CASES_WITH_GRAMMAR = [pytest.param(c, id=c["id"]) for c in CASES if _constrained(c)]


@pytest.mark.parametrize("case", CASES_WITH_GRAMMAR)
def test_grammar_accepts_the_expected_output(case: dict[str, Any]) -> None:
    _, chat = apply_case(case)
    assert chat.grammar is not None
    if chat.grammar_lazy:
        assert trigger_position(chat, chat.generation_prompt + case["input"]) >= 0, "the lazy grammar never triggers"
    result = verdicts(chat, case["input"], partial=case["is_partial"])
    assert all(result.values()), result


LAZY_CASES = [
    pytest.param(c, id=c["id"])
    for c in CASES
    if c["expect"]["tool_calls"] and c["params"]["tool_choice"] == "auto" and not c["params"]["json_schema"]
]


@pytest.mark.parametrize("case", LAZY_CASES)
def test_whole_output_grammar_accepts_the_expected_output(case: dict[str, Any]) -> None:
    """For engines without lazy triggers: the whole output, reasoning and text before the calls included, is in
    the language of ``full_grammar`` / ``full_lark_grammar`` (never the generation prompt)."""
    _, chat = apply_case(case)
    assert chat.grammar_lazy and chat.full_grammar is not None
    result = full_verdicts(chat, case["input"], partial=case["is_partial"])
    assert all(result.values()), result
