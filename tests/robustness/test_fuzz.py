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

import zlib

import pytest

from autoparser import bundled_templates

from ..support.outputs import Output, markers, outputs
from ..support.sample import near_markers, sweep
from .fuzzing import Found, check_mutant, describe, schema_chat
from .mutations import Mutant, cut_damage, deep_inputs, json_answers, mutants, truncations

SEED = 20240611
PER_KIND = 3  # mutants of each kind per output (CI budget: the whole tests/robustness run < 90 s)
CUT_DAMAGE = 2  # damaged-and-cut replies per output
ONE_CHAR = 160  # texts up to this long are also streamed one character per feed
TEMPLATES = bundled_templates()

# Outside CI the long lists below are swept (tests/support/sample.py): of a template's mutants, a seeded third; of
# the cuts of an output, every cut within a character of a marker and a seeded sixth of the others.


def _seed(output: Output) -> int:
    return zlib.crc32(f"{output.template}/{output.label}".encode())


def _swept(template: str, damaged: list[Mutant]) -> list[Mutant]:
    """All of a template's mutants in CI; elsewhere a seeded third of them."""
    return [damaged[i] for i in sweep(range(len(damaged)), seed=zlib.crc32(template.encode()))]


@pytest.mark.parametrize("template", TEMPLATES)
def test_mutated_outputs(template: str) -> None:
    found: list[Found] = []
    damaged = [mutant for output in outputs(template) for mutant in mutants(output, SEED, PER_KIND)]
    for mutant in _swept(template, damaged):
        found += check_mutant(template, mutant)
    assert not found, describe(found)


def _short_outputs(template: str) -> list[Mutant]:
    """Every truncation of the shortest output with calls and of the shortest one with reasoning (swept)."""
    picked = []
    with_calls = [o for o in outputs(template) if o.calls]
    with_reasoning = [o for o in outputs(template) if o.reasoning and not o.calls]
    for group in (with_calls, with_reasoning):
        if group:
            picked.append(min(group, key=lambda o: len(o.text)))
    found = []
    for output in picked:
        near = near_markers(output.text, markers(template), reach=1)
        cuts = set(sweep(range(1, len(output.text)), 6, keep=near, seed=_seed(output)))
        found += [m for m in truncations(output) if len(m.text) in cuts]
    return found


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
    damaged = [mutant for output in outputs(template) for mutant in cut_damage(output, SEED, CUT_DAMAGE)]
    for mutant in _swept(template, damaged):
        found += check_mutant(template, mutant, one_char=len(mutant.text) <= ONE_CHAR // 2, fine=True)
    assert not found, describe(found)


ANSWER_HEAD = 16  # the answer is cut at each of its first characters (its fence, its first brackets), then sampled
ANSWER_STRIDE = 5


@pytest.mark.parametrize("template", TEMPLATES)
def test_json_schema_requests(template: str) -> None:
    """A json_schema request: the JSON answer, bare and in a ```json fence where the template writes its answer,
    cut at its first characters and then every few, and damaged; and the calls the outputs make (a model may call a
    tool all the same), damaged and cut (outside CI: a seeded third of the cuts past the answer's opening, of the
    damaged answers and of the damaged calls). The answer is read before anything else, so its reading must hold
    for whatever follows: a fence cut off, ``[`` that turns out to be ``[TOOL_CALLS]``, a bare-JSON call list."""
    params = schema_chat(template)
    found: list[Found] = []
    damaged_answers: list[Mutant] = []
    for answer in json_answers(template):
        fenced = "json-fenced" in answer.label
        start = answer.text.find(answer.content)
        ends = [
            end
            for end in range(start + 1, len(answer.text))
            if end - start < ANSWER_HEAD or (end - start) % ANSWER_STRIDE == 0
        ]
        if answer.case != "content":
            ends = ends[:ANSWER_HEAD]  # (the same answer after reasoning: its opening only)
        bracket = start + answer.content.index("{") + 1  # the cut just after the answer's first bracket
        # (swept: every cut of the opening, through a fence, to two characters past the first bracket is kept)
        kept = set(sweep(ends, keep=range(start + 1, bracket + 3), seed=_seed(answer)))
        cuts = [mutant for mutant in truncations(answer) if len(mutant.text) in kept]
        for mutant in cuts:
            head = len(mutant.text) - start < ANSWER_HEAD
            found += check_mutant(template, mutant, params=params, one_char=head, fenced_answer=fenced)
        damaged_answers += [*mutants(answer, SEED, 1), *cut_damage(answer, SEED, 2)]
    for mutant in _swept(template, damaged_answers):
        one_char = len(mutant.text) <= ONE_CHAR
        fenced = "json-fenced" in mutant.label
        found += check_mutant(template, mutant, params=params, one_char=one_char, fenced_answer=fenced)
    damaged = [mutant for output in outputs(template) if output.calls for mutant in cut_damage(output, SEED, 1)]
    for mutant in _swept(template, damaged):
        found += check_mutant(template, mutant, params=params, fine=True)
    assert not found, describe(found)
