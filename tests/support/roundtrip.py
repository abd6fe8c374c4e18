"""The round trip of every bundled template: ``autoparser check`` (:func:`autoparser.check.check_template`) of each,
run once per process and shared by the per-output tests, the consistency test and the table generator.
"""

from __future__ import annotations

import functools

from autoparser import ChatTemplate, bundled_templates
from autoparser.check import CaseResult, CheckReport, Status, check_template
from autoparser.check.readback import Verdict
from autoparser.check.run import covered_cases, covering

from .outputs import Output, case_set

__all__ = [
    "CaseResult",
    "Status",
    "Verdict",
    "all_reports",
    "case_results",
    "covered_cases",
    "covering",
    "report",
    "verdict",
]


@functools.cache
def report(template: str) -> CheckReport:
    """The check of a bundled template (its cases rendered once, shared with :mod:`.outputs`)."""
    return check_template(ChatTemplate.load(template), case_set(template))


def verdict(output: Output) -> Verdict:
    """How ``output`` reads back: parse, every chunking's stream, the whole-output grammar."""
    return report(output.template).verdicts[output.label]


def case_results(template: str) -> dict[str, CaseResult]:
    """Every case of ``template`` with its status and reason."""
    return {r.case: r for r in report(template).results}


def all_reports() -> list[CheckReport]:
    return [report(t) for t in bundled_templates()]
