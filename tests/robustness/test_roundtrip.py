"""Round trip on well-formed output, over every bundled template (issue 11 §4): what a template renders parses back
to what was rendered (content, reasoning, calls with typed arguments, ids, no warnings), and streaming it in any
chunking ends equal to ``parse()`` (P3): one character per feed, seeded random pieces, and cuts inside every marker
the analysis knows.

A case that does not round-trip, or that the template cannot render, needs a stated reason in
``autoparser.check.known``; a reason whose case round-trips is stale. docs/roundtrip.md is the table of it
all and must be what ``autoparser check --all --markdown`` writes. The renders and verdicts are cached, so the
table and the consistency check reuse the per-output evaluations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import bundled_templates
from autoparser.check import known as reasons
from autoparser.check.report import markdown

from ..support.outputs import CASES, Output, outputs
from ..support.roundtrip import Status, all_reports, case_results, covered_cases, covering, verdict
from ..support.sample import sampled

DOC = Path(__file__).resolve().parents[2] / "docs" / "roundtrip.md"

OUTPUTS = [o for t in sampled() for o in outputs(t)]  # the per-output cases: the sample's templates
TEMPLATES = bundled_templates()


@pytest.mark.parametrize("output", [pytest.param(o, id=o.key) for o in OUTPUTS])
def test_output_round_trips(output: Output) -> None:
    """Parse and stream equal the rendering; a known failure is reported as xfail with its reason, never passed."""
    found = verdict(output)
    if found.reads_back:
        return
    reason = covering(reasons.FAILS, output.template, output.case)
    detail = f"parse: {found.parse or 'ok'}; stream: {found.stream or 'ok'}"
    if reason:
        pytest.xfail(f"{reason} ({detail[:300]})")
    pytest.fail(f"{output.key} does not round-trip and autoparser.check.known.FAILS states no reason: {detail}")


def test_every_gap_has_a_reason_and_every_reason_a_gap() -> None:
    problems = []
    explained: set[tuple[str, str, str]] = set()  # (table, template, key) that explain at least one case
    for template in TEMPLATES:
        for case, result in case_results(template).items():
            table, name = (
                (reasons.NOT_RENDERED, "NOT_RENDERED")
                if result.status is Status.NOT_RENDERED
                else (reasons.FAILS, "FAILS")
            )
            if result.grammar:
                if not result.grammar_reason:
                    problems.append(f"{template} {case}: the grammar refuses it with no GRAMMAR reason")
                for key in reasons.GRAMMAR.get(template, {}):
                    if case in covered_cases(key):
                        explained.add(("GRAMMAR", template, key))
            if result.status is Status.OK:
                for other, label in ((reasons.FAILS, "FAILS"), (reasons.NOT_RENDERED, "NOT_RENDERED")):
                    if covering(other, template, case):
                        problems.append(f"{template} {case} round-trips: remove its {label} reason")
                continue
            if not result.reason:
                problems.append(f"{template} {case} {result.status.name} with no {name} reason: {result.observed}")
            for key in table.get(template, {}):
                if case in covered_cases(key):
                    explained.add((name, template, key))
    tables = (("NOT_RENDERED", reasons.NOT_RENDERED), ("FAILS", reasons.FAILS), ("GRAMMAR", reasons.GRAMMAR))
    for name, table in tables:
        for template, entries in table.items():
            if template not in TEMPLATES:
                problems.append(f"{name} names {template!r}, which is not a bundled template")
                continue
            for key in entries:
                if key not in CASES and key not in (reasons.ALL, reasons.CALLS, reasons.REASONING):
                    problems.append(f"{name}[{template!r}] has the unknown key {key!r}")
                elif (name, template, key) not in explained:
                    problems.append(f"{name}[{template!r}][{key!r}] explains no case: remove it")
    assert not problems, "\n".join(problems)


def test_enough_round_trips() -> None:
    """The harness renders what it should: most templates render calls, and most rendered cases round-trip."""
    results = [r for t in TEMPLATES for r in case_results(t).values()]
    with_calls = {r.template for r in results if r.case == "one call" and r.status is not Status.NOT_RENDERED}
    assert len(with_calls) >= 55, sorted(set(TEMPLATES) - with_calls)
    good = sum(r.status is Status.OK for r in results)
    assert good >= 250, good


def test_table_is_current() -> None:
    expected = markdown(all_reports())
    regenerate = "regenerate: autoparser check --all --markdown > docs/roundtrip.md"
    assert DOC.read_text(encoding="utf-8") == expected, regenerate
