"""Writes docs/roundtrip.md, the round-trip table of every bundled template: ``python -m tests.support.roundtrip_table``
(from the repository root). tests/robustness/test_roundtrip.py checks that the file is current.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from autoparser import ChatTemplate, bundled_templates

from .outputs import CALL_CASES, CASES, outputs
from .roundtrip import CaseResult, Status, case_results

__all__ = ["DOC", "render", "summary"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "roundtrip.md"

_INTRO = """\
# Round trip: every bundled template parses its own rendering

For each bundled template, an assistant turn is rendered through the template after a user turn, the model's part
is cut out (what follows the generation prompt, without the end-of-turn text), and the parser built by `apply()`
for that request reads it back, with `parse()` and streamed (one character per feed, seeded random pieces, cuts
inside every marker). A case *round-trips* when both give back exactly what went into the rendering: content,
reasoning, call names, typed arguments, the ids the template writes, and no warnings.

Cases: **content**; **reasoning+content**; **one call** with every argument type (strings with quotes, a line
break, `<`, and leading/trailing spaces and tabs; a negative float, an integer, a boolean, null, an enum, an array,
nested objects), kept however the template writes them (Python `True`/`None` included); **parallel calls** (two
calls whose names and parameters share prefixes, and three calls); **content+call**; **reasoning+call**. Where the
generation prompt opens a reasoning block that history turns drop, the model's part starts inside it and closes it
with the template's own marker, as a model does.

Cells: ✓ parse and stream round-trip; `parse ✓ stream ✗` parse does, some streaming does not; ✗ parse does not;
– the template cannot render the case. Every ✗ and – has a reason (`tests/support/roundtrip_reasons.py`);
"pending:" marks a parser gap being worked on. The harness is `tests/support/outputs.py` (rendering) and
`tests/support/roundtrip.py` (checking); `tests/robustness/test_roundtrip.py` fails on a gap without a reason, on a
reason without a gap, and when this file is not what `python -m tests.support.roundtrip_table` writes.
"""


def _format(template: str) -> str:
    analysis = ChatTemplate.load(template).analysis
    return f"{analysis.format} · {analysis.tools.format.mode.name} · {analysis.reasoning.mode.name}"


def _cell(result: CaseResult) -> str:
    return result.status.value


def _gaps(results: dict[str, CaseResult]) -> str:
    """Each reason once, after the cases it explains."""
    by_reason: dict[str, list[str]] = {}
    for case, result in results.items():
        if result.status is not Status.OK:
            by_reason.setdefault(result.reason or "(no reason)", []).append(case)
    return _escape("<br>".join(f"{', '.join(cases)}: {reason}" for reason, cases in by_reason.items()))


def _notes(template: str) -> str:
    notes = dict.fromkeys(n for o in outputs(template) for n in o.notes)
    return _escape("<br>".join(notes))


def _escape(text: str) -> str:
    return text.replace("|", "\\|")  # a pipe ends a table cell, even inside backticks


def summary(results: dict[str, dict[str, CaseResult]]) -> list[str]:
    """Templates that round-trip every case they render, some, or none; case counts; the reasons left."""
    kinds: Counter[str] = Counter()
    cases: Counter[Status] = Counter()
    for found in results.values():
        rendered = [r for r in found.values() if r.status is not Status.NOT_RENDERED]
        good = [r for r in rendered if r.status is Status.OK]
        if not rendered:
            kinds["nothing"] += 1
        else:
            kinds["fully" if len(good) == len(rendered) else "partially" if good else "not at all"] += 1
        cases.update(r.status for r in found.values())
    callers = {
        t: [r for r in found.values() if r.case in CALL_CASES and r.status is not Status.NOT_RENDERED]
        for t, found in results.items()
    }
    callers = {t: rendered for t, rendered in callers.items() if rendered}
    calls_ok = sum(all(r.status is Status.OK for r in rendered) for rendered in callers.values())
    pending = {
        (r.template, r.reason) for found in results.values() for r in found.values() if r.reason.startswith("pending")
    }
    return [
        f"- {len(results)} templates: {kinds['fully']} round-trip every case they render, {kinds['partially']} some "
        f"of them, {kinds['not at all']} none, and {kinds['nothing']} cannot render any case.",
        f"- {sum(cases.values())} cases: {cases[Status.OK]} round-trip, {cases[Status.STREAM_FAILS]} parse but do not "
        f"stream, {cases[Status.FAILS]} do not parse, {cases[Status.NOT_RENDERED]} cannot be rendered.",
        f"- {len(callers)} templates render tool calls; {calls_ok} of them round-trip every call case they render.",
        f'- {len(pending)} template gaps are pending parser work (reasons starting with "pending:").',
    ]


def render() -> str:
    results = {t: case_results(t) for t in bundled_templates()}
    lines = [_INTRO, "## Summary", "", *summary(results), "", "## Table", ""]
    lines.append("| template | format · calls · reasoning | " + " | ".join(CASES) + " | gaps | notes |")
    lines.append("|---|---|" + "---|" * len(CASES) + "---|---|")
    for template, found in results.items():
        cells = " | ".join(_cell(found[c]) for c in CASES)
        lines.append(f"| {template} | {_format(template)} | {cells} | {_gaps(found)} | {_notes(template)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
