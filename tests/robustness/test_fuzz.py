"""Seeded mutation fuzz over every bundled template: P1 (no crash), P2 (nothing lost) and P3 (the stream ends equal
to parse()) on damaged outputs.

The outputs are the template's own well-formed ones (tests/support/outputs.py); the damage is truncation at every
position of a short output, marker damage, sentinel insertion, hostile unicode, broken JSON, huge nesting and
repeated markers (mutations.py); damage followed by a cut (a glitch, then the max_tokens limit), streamed in pieces
of every size and cut inside every marker; and json_schema requests, whose JSON answer (bare or in a fence) the
parser reads before anything else — the answer cut at every position, damaged, and calls under such a request.
Everything is deterministic; ``bench/fuzz.py`` runs the same checks longer.
"""

from __future__ import annotations

import pytest

from autoparser import bundled_templates

from ..support.outputs import outputs
from .fuzzing import Found, check_mutant, describe, schema_chat
from .mutations import Mutant, cut_damage, deep_inputs, json_answers, mutants, truncations

SEED = 20240611
PER_KIND = 3  # mutants of each kind per output (CI budget: the whole tests/robustness run < 90 s)
CUT_DAMAGE = 2  # damaged-and-cut replies per output
ONE_CHAR = 160  # texts up to this long are also streamed one character per feed
TEMPLATES = bundled_templates()


@pytest.mark.parametrize("template", TEMPLATES)
def test_mutated_outputs(template: str) -> None:
    found: list[Found] = []
    for output in outputs(template):
        for mutant in mutants(output, SEED, PER_KIND):
            found += check_mutant(template, mutant)
    assert not found, describe(found)


def _short_outputs(template: str) -> list[Mutant]:
    """Every truncation of the shortest output with calls and of the shortest one with reasoning."""
    picked = []
    with_calls = [o for o in outputs(template) if o.calls]
    with_reasoning = [o for o in outputs(template) if o.reasoning and not o.calls]
    for group in (with_calls, with_reasoning):
        if group:
            picked.append(min(group, key=lambda o: len(o.text)))
    return [m for o in picked for m in truncations(o)]


@pytest.mark.parametrize("template", TEMPLATES)
def test_truncated_outputs(template: str) -> None:
    found: list[Found] = []
    for mutant in _short_outputs(template):
        found += check_mutant(template, mutant)
    assert not found, describe(found)


@pytest.mark.parametrize("template", TEMPLATES)
def test_huge_nesting(template: str) -> None:
    found: list[Found] = []
    for mutant in deep_inputs(template):
        found += check_mutant(template, mutant, chunks=3)
    assert not found, describe(found)


@pytest.mark.parametrize("template", TEMPLATES)
def test_cut_damaged_outputs(template: str) -> None:
    """Damage, then a cut (inside a marker, a fence, a call body, or anywhere), streamed in seeded random pieces,
    pieces of 1 to 3 characters, pieces cut inside every marker, and one character per feed when short: where a
    stream shows a guess that what follows refutes, it retracts."""
    found: list[Found] = []
    for output in outputs(template):
        for mutant in cut_damage(output, SEED, CUT_DAMAGE):
            found += check_mutant(template, mutant, one_char=len(mutant.text) <= ONE_CHAR // 2, fine=True)
    assert not found, describe(found)


ANSWER_HEAD = 16  # the answer is cut at each of its first characters (its fence, its first brackets), then sampled
ANSWER_STRIDE = 5


@pytest.mark.parametrize("template", TEMPLATES)
def test_json_schema_requests(template: str) -> None:
    """A json_schema request: the JSON answer, bare and in a ```json fence where the template writes its answer,
    cut at its first characters and then every few, and damaged; and the calls the outputs make (a model may call
    a tool all the same), damaged and cut. The answer is read before anything else, so its reading must hold for
    whatever follows: a fence cut off, ``[`` that turns out to be ``[TOOL_CALLS]``, a bare-JSON call list."""
    params = schema_chat(template)
    found: list[Found] = []
    for answer in json_answers(template):
        fenced = "json-fenced" in answer.label
        start = answer.text.find(answer.content)
        cuts = [
            mutant
            for mutant in truncations(answer)
            if len(mutant.text) > start
            and (len(mutant.text) - start < ANSWER_HEAD or (len(mutant.text) - start) % ANSWER_STRIDE == 0)
        ]
        if answer.case != "content":
            cuts = cuts[:ANSWER_HEAD]  # (the same answer after reasoning: its opening only)
        for mutant in cuts:
            head = len(mutant.text) - start < ANSWER_HEAD
            found += check_mutant(template, mutant, params=params, one_char=head, fenced_answer=fenced)
        for mutant in (*mutants(answer, SEED, 1), *cut_damage(answer, SEED, 2)):
            one_char = len(mutant.text) <= ONE_CHAR
            found += check_mutant(template, mutant, params=params, one_char=one_char, fenced_answer=fenced)
    for output in outputs(template):
        if output.calls:
            for mutant in cut_damage(output, SEED, 1):
                found += check_mutant(template, mutant, params=params, fine=True)
    assert not found, describe(found)
