"""Seeded mutation fuzz over every bundled template: P1 (no crash), P2 (nothing lost) and P3 (the stream ends equal
to parse()) on damaged outputs.

The outputs are the template's own well-formed ones (tests/support/outputs.py); the damage is truncation at every
position of a short output, marker damage, sentinel insertion, hostile unicode, broken JSON, huge nesting and
repeated markers (mutations.py). Everything is deterministic; ``bench/fuzz.py`` runs the same checks longer.
"""

from __future__ import annotations

import pytest

from autoparser import bundled_templates

from ..support.outputs import outputs
from .fuzzing import Found, check_mutant, describe
from .mutations import Mutant, deep_inputs, mutants, truncations

SEED = 20240611
PER_KIND = 3  # mutants of each kind per output (CI budget: the whole tests/robustness run < 90 s)
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
