"""The check's report, three ways: a terminal table (``autoparser check``), JSON (``--json``) and the Markdown table of
docs/roundtrip.md (``--markdown``, over many templates)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .cases import CALL_CASES, CASES
from .run import CaseResult, CheckReport, Status

__all__ = ["MARKDOWN_INTRO", "cell", "markdown", "summary", "terminal", "to_json"]


def cell(result: CaseResult) -> str:
    """The table cell: the status, and ``g✗`` where the whole-output grammar refuses what the template writes."""
    return result.status.value + (" g✗" if result.grammar else "")


def _why(result: CaseResult) -> str:
    """The documented reason, else what was observed."""
    if result.status is Status.OK:
        return ""
    return result.reason or result.observed


# --- terminal -------------------------------------------------------------------------------------------------------


def terminal(report: CheckReport) -> RenderableType:
    """What the analysis learned, the case table, the reasons, the verdict and the time it took."""
    parts: list[RenderableType] = [Text(f"autoparser check: {report.template}", style="bold")]
    if report.error:
        parts.append(Text(f"cannot check: {report.error}", style="red"))
        return Group(*parts)
    learned = Table(show_header=False, box=None, pad_edge=False)
    learned.add_column(style="cyan")
    learned.add_column()
    for key, value in report.learned.items():
        learned.add_row(key, Text(value))  # (plain text: markers such as `[TOOL_CALLS]` are no console markup)
    parts += [Text("learned", style="bold"), learned, Text("")]
    cases = Table(title=None)
    cases.add_column("case")
    cases.add_column("", justify="center")
    cases.add_column("why (✗, –) / grammar")
    for result in report.results:
        why = _why(result)
        if result.grammar:
            grammar_why = result.grammar_reason or result.grammar
            why = f"{why}; grammar: {grammar_why}" if why else f"grammar: {grammar_why}"
        style = "green" if result.status is Status.OK else "dim" if result.status is Status.NOT_RENDERED else "red"
        cases.add_row(result.case, Text(cell(result), style=style), Text(why))
    parts.append(cases)
    for note in report.notes:
        parts.append(Text(f"note: {note}"))
    rendered = [r for r in report.results if r.status is not Status.NOT_RENDERED]
    good = [r for r in rendered if r.status is Status.OK]
    verdict = (
        f"{len(good)}/{len(rendered)} rendered cases read back"
        + (f"; {len(report.failures)} fail with no documented template fault" if report.failures else "")
        + f" ({report.seconds:.1f} s)"
    )
    parts.append(Text(verdict, style="green" if report.passed else "red"))
    return Group(*parts)


def to_json(reports: Sequence[CheckReport]) -> str:
    """One report as an object; several as a list."""
    data = [r.to_dict() for r in reports]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2, ensure_ascii=False)


# --- Markdown (docs/roundtrip.md) -----------------------------------------------------------------------------------

MARKDOWN_INTRO = """\
# Round trip: every bundled template reads back its own rendering

This page is `autoparser check --all --markdown`: the release-day check (run it on any template before serving a
model: `autoparser check path/to/model`) over every bundled template.

For each template, an assistant turn is rendered through the template after a user turn, the model's part is cut out
(what follows the generation prompt, without the end-of-turn text), and the parser built by `apply()` for that
request reads it back, with `parse()` and streamed (one character per feed, seeded random pieces, cuts inside every
marker). A case *reads back* when both give exactly what went into the rendering: content, reasoning, call names,
typed arguments, the ids the template writes, and no warnings. The whole-output grammar (`params.full_grammar`, judged
by an exact GBNF recognizer) must accept the same text.

Cases: **content**; **reasoning+content**; **one call** with every argument type (strings with quotes, a line
break, `<`, and leading/trailing spaces and tabs; a negative float, an integer, a boolean, null, an enum, an array,
nested objects), kept however the template writes them (Python `True`/`None` included); **parallel calls** (two
calls whose names and parameters share prefixes, and three calls); **content+call**; **reasoning+call**. Where the
generation prompt opens a reasoning block that history turns drop, the model's part starts inside it and closes it
with the template's own marker, as a model does.

Cells: ✓ parse and stream read back; `parse ✓ stream ✗` parse does, some streaming does not; ✗ parse does not;
– the template cannot render the case; `g✗` after a symbol: the whole-output grammar refuses what the template wrote.
Every ✗, – and g✗ has a reason: a documented fault of the template (`src/autoparser/check/known.py`) or, for a case
that is not rendered, what the check observed. The cases are rendered by `src/autoparser/check/cases.py` and read
back by `src/autoparser/check/readback.py`; `tests/robustness/test_roundtrip.py` fails on a gap without a reason, on
a reason without a gap, and when this file is not what `autoparser check --all --markdown` writes.
"""


def summary(reports: Sequence[CheckReport]) -> list[str]:
    """Templates that read back every case they render, some, or none; case counts; grammar refusals; pending."""
    kinds: Counter[str] = Counter()
    cases: Counter[Status] = Counter()
    for report in reports:
        rendered = [r for r in report.results if r.status is not Status.NOT_RENDERED]
        good = [r for r in rendered if r.status is Status.OK]
        if not rendered:
            kinds["nothing"] += 1
        else:
            kinds["fully" if len(good) == len(rendered) else "partially" if good else "not at all"] += 1
        cases.update(r.status for r in report.results)
    callers = {
        r.template: rendered
        for r in reports
        if (rendered := [c for c in r.results if c.case in CALL_CASES and c.status is not Status.NOT_RENDERED])
    }
    calls_ok = sum(all(c.status is Status.OK for c in rendered) for rendered in callers.values())
    grammar = sum(1 for r in reports for c in r.results if c.grammar)
    pending = {(r.template, c.reason) for r in reports for c in r.results if c.reason.startswith("pending")}
    return [
        f"- {len(reports)} templates: {kinds['fully']} read back every case they render, {kinds['partially']} some "
        f"of them, {kinds['not at all']} none, and {kinds['nothing']} cannot render any case.",
        f"- {sum(cases.values())} cases: {cases[Status.OK]} read back, {cases[Status.STREAM_FAILS]} parse but do not "
        f"stream, {cases[Status.FAILS]} do not parse, {cases[Status.NOT_RENDERED]} cannot be rendered.",
        f"- {len(callers)} templates render tool calls; {calls_ok} of them read back every call case they render.",
        f"- {grammar} rendered cases are refused by their whole-output grammar (each a documented template spelling).",
        f'- {len(pending)} template gaps are pending parser work (reasons starting with "pending:").',
    ]


def _escape(text: str) -> str:
    return text.replace("|", "\\|")  # a pipe ends a table cell, even inside backticks


def _gaps(report: CheckReport) -> str:
    """Each reason once, after the cases it explains."""
    by_reason: dict[str, list[str]] = {}
    for result in report.results:
        if result.status is not Status.OK:
            by_reason.setdefault(_why(result) or "(no reason)", []).append(result.case)
        if result.grammar:
            why = "grammar: " + (result.grammar_reason or result.grammar)
            by_reason.setdefault(why, []).append(result.case)
    return _escape("<br>".join(f"{', '.join(cases)}: {reason}" for reason, cases in by_reason.items()))


def markdown(reports: Sequence[CheckReport]) -> str:
    """docs/roundtrip.md: the introduction, the summary and one row per template."""
    lines = [MARKDOWN_INTRO, "## Summary", "", *summary(reports), "", "## Table", ""]
    lines.append("| template | learned | " + " | ".join(CASES) + " | gaps | notes |")
    lines.append("|---|---|" + "---|" * len(CASES) + "---|---|")
    for report in reports:
        learned = report.learned
        shape = " · ".join(learned.get(k, "") for k in ("format", "calls", "reasoning")) if learned else report.error
        by_case = {r.case: r for r in report.results}
        cells = " | ".join(cell(by_case[c]) if c in by_case else "–" for c in CASES)
        notes = _escape("<br>".join(report.notes))
        lines.append(f"| {report.template} | {_escape(shape)} | {cells} | {_gaps(report)} | {notes} |")
    return "\n".join(lines) + "\n"
