"""``check_template``: what a template's analysis learned, and every case it can render read back — the release-day
diagnostic behind ``autoparser check``.

Each case of :data:`~.cases.CASES` the template renders is parsed whole, streamed in several chunkings, and offered
to the request's whole-output grammar (the exact GBNF recognizer, llama.cpp's reading). A case the template cannot
render is "–" with what was observed; a case that does not read back is "✗" with what differed. Either may carry a
documented reason: for the bundled templates, :mod:`.known` says which gaps are the template's own fault.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..analysis.model import TemplateAnalysis, ToolFormatMode
from ..api import ChatTemplate
from ..errors import TemplateError
from ..params import ChatParams
from ..template.chat_template import bundled_templates
from . import known
from .cases import CALL_CASES, CASES, REASONING_CASES, CaseSet, json_field_markers, marker_fields
from .readback import Verdict, read_back
from .recognizer import GbnfSyntaxError, Grammar, accepts

__all__ = [
    "CaseResult",
    "CheckReport",
    "Status",
    "check_template",
    "covered_cases",
    "covering",
    "known_name",
    "markers",
]


class Status(enum.Enum):
    OK = "✓"  # parse and every stream equal the rendering
    STREAM_FAILS = "parse ✓ stream ✗"
    FAILS = "✗"
    NOT_RENDERED = "–"


@dataclass(frozen=True)
class CaseResult:
    """One case of one template: its status, what was observed ("" when it reads back), the documented reason
    ("" when none applies) and, separately, why the whole-output grammar refuses the rendered text ("" when it
    accepts it, or when the request has no whole-output grammar)."""

    template: str
    case: str
    status: Status
    observed: str = ""
    reason: str = ""
    grammar: str = ""
    grammar_reason: str = ""

    @property
    def reads_back(self) -> bool:
        return self.status in (Status.OK, Status.NOT_RENDERED)

    @property
    def explained(self) -> bool:
        """A case that does not read back, or is not rendered, whose reason is documented."""
        return bool(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "status": self.status.name.lower(),
            "symbol": self.status.value,
            "observed": self.observed,
            "reason": self.reason,
            "grammar": self.grammar,
            "grammar_reason": self.grammar_reason,
        }


@dataclass(frozen=True)
class CheckReport:
    """What ``autoparser check`` prints: the analysis summary, every case, the time it took."""

    template: str
    learned: dict[str, str]
    results: tuple[CaseResult, ...]
    seconds: float
    notes: tuple[str, ...] = field(default=())
    error: str = ""  # the template could not be analysed or rendered at all
    # Each rendered output's verdict, by its label ("one", "prefix", "content", ...): what the table sums up.
    verdicts: Mapping[str, Verdict] = field(default_factory=dict, repr=False, compare=False)

    @property
    def failures(self) -> list[CaseResult]:
        """Rendered cases that do not read back with no documented template fault: what makes the check fail."""
        return [r for r in self.results if not r.reads_back and not r.explained]

    @property
    def passed(self) -> bool:
        return not self.error and not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "passed": self.passed,
            "error": self.error,
            "learned": self.learned,
            "cases": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "seconds": round(self.seconds, 3),
        }


# --- what the analysis learned ----------------------------------------------------------------------------------------


def learned(analysis: TemplateAnalysis, params: ChatParams | None) -> dict[str, str]:
    """The analysis in a few lines: format, reasoning (mode, markers, switch), content wrapper, calls (mode and
    markers), end of turn. Empty values are left out."""
    reasoning, content, tools = analysis.reasoning, analysis.content, analysis.tools
    fmt, fn, args = tools.format, tools.function, tools.arguments
    found: dict[str, str] = {"format": analysis.format, "reasoning": reasoning.mode.name}
    if reasoning.start or reasoning.end:
        found["reasoning markers"] = f"{reasoning.start!r} … {reasoning.end!r}"
    switch = getattr(reasoning, "switch", None)
    if switch:
        found["reasoning switch"] = str(switch)
    if content.start or content.end:
        found["content wrapper"] = f"{content.mode.name}: {content.start!r} … {content.end!r}"
    found["calls"] = fmt.mode.name
    call_markers = {
        "section": (fmt.section_start, fmt.section_end),
        "per call": (fmt.per_call_start, fmt.per_call_end),
        "name": (fn.name_prefix, fn.name_suffix),
        "arguments": (args.start, args.end),
        "argument name": (args.name_prefix, args.name_suffix),
        "argument value": (args.value_prefix, args.value_suffix),
    }
    for label, (start, end) in call_markers.items():
        if start or end:
            found[f"call {label}"] = f"{start!r} … {end!r}"
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        found["call fields"] = f"name {fmt.name_field!r}, arguments {fmt.args_field!r}"
    if analysis.end_of_turn:
        found["end of turn"] = ", ".join(repr(m) for m in analysis.end_of_turn)
    if analysis.stop_markers:
        found["stop markers"] = ", ".join(repr(m) for m in analysis.stop_markers)
    if params is not None and params.grammar_triggers:
        found["grammar triggers"] = ", ".join(repr(t.value) for t in params.grammar_triggers)
    return found


def markers(analysis: TemplateAnalysis, params: ChatParams) -> tuple[str, ...]:
    """Every marker string the analysis found (whitespace-trimmed), plus the request's preserved tokens and, for
    JSON calls, the quoted member names; longest first. Streams are cut inside each of them."""
    found = {m.strip() for m in marker_fields(analysis)} | set(params.preserved_tokens) | json_field_markers(analysis)
    return tuple(sorted((m for m in found if len(m) >= 2), key=lambda m: (-len(m), m)))


# --- the whole-output grammar -------------------------------------------------------------------------------------


def _grammar_judge(params: ChatParams) -> Callable[[str], str] | None:
    """text → "" when the whole-output GBNF accepts it, else why not; None when the request has no such grammar."""
    source = params.full_grammar
    if source is None:
        return None
    try:
        grammar = Grammar.parse(source)
    except GbnfSyntaxError as error:
        message = f"the grammar does not parse: {error}"
        return lambda _text: message

    def judge(text: str) -> str:
        return "" if accepts(grammar, text) else "the whole-output grammar refuses the text the template writes"

    return judge


# --- bundled templates and their documented faults ----------------------------------------------------------------


@functools.cache
def _bundled_sources() -> dict[str, str]:
    return {ChatTemplate.load(name).source: name for name in bundled_templates()}


def known_name(template: ChatTemplate) -> str:
    """The bundled template ``template`` is (same source), or "": documented faults apply to it by content, so a
    user's copy of a bundled template gets the same explanations. Where two bundled templates share a source, the
    template's own name decides."""
    own = template.name.removesuffix(".jinja")
    if own in bundled_templates() and ChatTemplate.load(own).source == template.source:
        return own
    return _bundled_sources().get(template.source, "")


_GROUPS: dict[str, tuple[str, ...]] = {known.CALLS: CALL_CASES, known.REASONING: REASONING_CASES, known.ALL: CASES}


def covered_cases(key: str) -> tuple[str, ...]:
    """The cases a key of a :mod:`.known` table stands for."""
    return _GROUPS.get(key, (key,))


def covering(table: Mapping[str, Mapping[str, str]], name: str, case: str) -> str:
    """The reason ``table`` states for ``case`` of ``name`` (the most specific key wins), or ""."""
    entries = table.get(name, {})
    for key in (case, *(g for g in (known.CALLS, known.REASONING) if case in _GROUPS[g]), known.ALL):
        if key in entries:
            return entries[key]
    return ""


# --- the check ----------------------------------------------------------------------------------------------------


def check_template(template: ChatTemplate, cases: CaseSet | None = None) -> CheckReport:
    """Analyse ``template``, render every case (or take ``cases``, already rendered from it), read each back
    (parse, stream, grammar)."""
    started = time.perf_counter()
    name = known_name(template)
    label = name or template.name.removesuffix(".jinja")
    try:
        analysis = template.analysis
        cases = cases or CaseSet(template)
        params = cases.params
        rendered = cases.cases
    except TemplateError as error:
        return CheckReport(label, {}, (), time.perf_counter() - started, error=f"{error}")
    judge = _grammar_judge(params)
    cut = markers(analysis, params)
    verdicts = {c.label: read_back(params, c, cut, judge) for c in rendered}
    results = []
    for case in CASES:
        mine = [verdicts[c.label] for c in rendered if c.case == case]
        results.append(_result(label, name, case, mine, cases.gaps))
    notes = tuple(dict.fromkeys([*cases.notes, *(n for c in rendered for n in c.notes)]))
    elapsed = time.perf_counter() - started
    return CheckReport(label, learned(analysis, params), tuple(results), elapsed, notes, verdicts=verdicts)


def _result(label: str, name: str, case: str, verdicts: list[Verdict], missing: Mapping[str, str]) -> CaseResult:
    if not verdicts:
        observed = missing.get(case, "no output")
        return CaseResult(label, case, Status.NOT_RENDERED, observed, covering(known.NOT_RENDERED, name, case))
    failed = next((v for v in verdicts if not v.reads_back), None)
    grammar = next((v.grammar for v in verdicts if v.grammar), "")
    grammar_reason = covering(known.GRAMMAR, name, case) if grammar else ""
    if failed is None:
        return CaseResult(label, case, Status.OK, grammar=grammar, grammar_reason=grammar_reason)
    status = Status.STREAM_FAILS if all(not v.parse for v in verdicts) else Status.FAILS
    observed = failed.parse or failed.stream
    reason = covering(known.FAILS, name, case)
    return CaseResult(label, case, status, observed, reason, grammar, grammar_reason)
