"""A lazy grammar's trigger never fires on ordinary prose.

An engine applies a lazy grammar from the first place its trigger word appears; from there on the model can only
write a call. A trigger that is an ordinary word (FireFunction's section marker ``functools``) would turn an answer
that mentions it (``import functools``) into a forced call, so a word marker triggers together with the bracket the
template writes after it (``functools[``).
"""

from __future__ import annotations

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import AutoparserError
from autoparser.parser.markers import is_markup, is_word_marker

from ..support.grammar_check import constrained_text, full_verdicts, verdicts
from ..support.helpers import WEATHER_TOOL

USER = [{"role": "user", "content": "Weather?"}]


def _params(name: str) -> ChatTemplate | None:
    try:
        return ChatTemplate.load(name).apply(USER, tools=[WEATHER_TOOL])
    except AutoparserError:
        return None


@pytest.mark.parametrize("name", bundled_templates())
def test_no_trigger_is_a_plain_word(name: str) -> None:
    params = _params(name)
    if params is None or not params.grammar_lazy:
        pytest.skip("no lazy grammar for this template")  # (the assertion below needs one)
    words = [t.value for t in params.grammar_triggers if t.type == "word"]
    assert not [w for w in words if is_word_marker(w.strip()) and not is_markup(w)], words


def test_firefunction_answers_may_mention_its_marker_word() -> None:
    params = _params("fireworks-ai-llama-3-firefunction-v2")
    assert params is not None
    assert [t.value for t in params.grammar_triggers] == ["functools["]
    answer = "Use functools.lru_cache, or functools [the module] in general."
    assert constrained_text(params, answer) is None  # the lazy grammar never switches on
    assert all(full_verdicts(params, answer).values())
    assert params.parse(answer).content == answer
    call = 'functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]'
    assert all(verdicts(params, call).values()) and all(full_verdicts(params, "Checking. " + call).values())
    assert [c.name for c in params.parse(call).tool_calls] == ["get_weather"]
    tag = params.structural_tag
    assert tag is not None and tag["format"]["elements"][0]["triggers"] == ["functools["]


# Where the free text follows an optional reasoning block, it stays a character per lexeme (one lexeme there would
# outrun the block's own first lexeme): llguidance, never backing up, still holds `[To` to `[TOOL_CALLS]`. (After an
# optional lone reasoning end, DeepSeek V3.1's, the end and its whitespace are one lexeme and the text is one too.)
AFTER_OPTIONAL_REASONING = "free text after an optional reasoning block: the Lark grammar refuses the start of a marker"
KNOWN = {"MiniMax-M3", "mistralai-Ministral-3-14B-Reasoning-2512"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.xfail(reason=AFTER_OPTIONAL_REASONING, strict=True)] if n in KNOWN else [])
        for n in bundled_templates()
    ],
)
def test_free_text_may_hold_a_beginning_of_a_trigger(name: str) -> None:
    """An answer may hold the start of a marker and go on (`[To do]` before Mistral's `[TOOL_CALLS]`): the Lark
    grammar agrees with the GBNF there. (llguidance never backs up out of a half-read lexeme: with the marker as
    one lexeme after free text read a character at a time, it refused `Hi fun ok.` before `functools[` and `[To`
    before `[TOOL_CALLS]` on ten templates; the whole-output grammar's free text is now one lexeme where nothing
    optional comes before it, see peg/lowering/lark.py.)"""
    params = _params(name)
    if params is None or not params.grammar_lazy or params.full_grammar is None:
        pytest.skip("no whole-output grammar for a lazy request")  # (the comparison below needs one)
    words = [t.value for t in params.grammar_triggers if t.type == "word"]
    texts = {f"Hi {w[:k]} ok." for w in words for k in {1, 2, len(w) // 2, len(w) - 1} if 0 < k < len(w)}
    disagree = {}
    for text in sorted(texts):
        verdict = full_verdicts(params, text)
        if len(set(verdict.values())) > 1:
            disagree[text] = verdict
    assert not disagree
