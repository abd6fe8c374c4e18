"""Our analysis vs the reference implementation's, on every template it analysed.

Every difference must be listed in tests/data/analysis-deviations.md with the reason ours is right, and every
listed deviation must still occur (so the list cannot go stale).
"""

from __future__ import annotations

import re

import pytest

from autoparser import ChatTemplate

from .golden import DATA, GOLDEN, differences

_ROW = re.compile(r"^\|\s*(?P<template>[^|]+?)\s*\|\s*(?P<field>[a-z_.=A-Z]+)\s*\|")


def _listed_deviations() -> set[tuple[str, str]]:
    rows = set()
    for line in (DATA / "analysis-deviations.md").read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match and match["template"] not in ("template", "---"):
            rows.add((match["template"], match["field"]))
    return rows


LISTED = _listed_deviations()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_analysis_matches_reference_or_deviation_is_explained(name: str) -> None:
    diffs = differences(name, ChatTemplate.load(name).analysis)
    unexplained = {
        field: values for field, values in diffs.items() if (name, field) not in LISTED and ("*", field) not in LISTED
    }
    assert not unexplained, f"unexplained differences (ours, reference): {unexplained}"
    stale = {field for template, field in LISTED if template == name and field not in diffs}
    assert not stale, f"listed deviations that no longer occur: {stale}"


def test_every_listed_deviation_names_a_golden_template() -> None:
    assert LISTED, "the deviation table could not be parsed"
    for template, _field in LISTED:
        assert template == "*" or template in GOLDEN, template
    wildcard_fields = {field for template, field in LISTED if template == "*"}
    for field in wildcard_fields:
        assert any(field in differences(n, ChatTemplate.load(n).analysis) for n in GOLDEN), field
