"""The round trip of every bundled template: each rendered output (tests/support/outputs.py) parsed back, final and
streamed, to the message that went into the rendering; and per template and case, whether it round-trips, is not
rendered, or fails, with the stated reason from :mod:`roundtrip_reasons`.

Verdicts are cached per output, so the per-output tests, the consistency test and the table generator share one
evaluation per process.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from autoparser import ChatMessage, bundled_templates

from ..robustness.promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks
from . import roundtrip_reasons as reasons
from .outputs import CASES, Output, chat, gaps, markers, outputs

__all__ = ["CaseResult", "Status", "Verdict", "case_results", "covering", "verdict"]

_GROUPS: dict[str, tuple[str, ...]] = {
    reasons.ALL: CASES,
    reasons.CALLS: CASES[2:],
    reasons.REASONING: ("reasoning+content", "reasoning+call"),
}


@dataclass(frozen=True)
class Verdict:
    """What differs from the rendering: ``parse`` for ``parse()``, ``stream`` for the chunkings whose stream does
    not end equal to ``parse()`` (both "" when the output round-trips)."""

    parse: str = ""
    stream: str = ""

    @property
    def ok(self) -> bool:
        return not self.parse and not self.stream


class Status(enum.Enum):
    OK = "✓"  # parse and every streaming equal the rendering
    STREAM_FAILS = "parse ✓ stream ✗"
    FAILS = "✗"
    NOT_RENDERED = "–"


@dataclass(frozen=True)
class CaseResult:
    template: str
    case: str
    status: Status
    observed: str  # the gap the harness saw, or the first failure ("" when OK)
    reason: str  # the stated reason ("" when none applies)


def _typed(value: Any) -> str:
    """JSON with sorted keys: ``True`` and ``1``, ``3`` and ``3.0`` stay different."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _parse_difference(output: Output, message: ChatMessage) -> str:
    found = []
    if message.warnings:
        found.append(f"warnings {[w.message for w in message.warnings]}")
    if message.content != output.content.strip():
        found.append(f"content {message.content[:160]!r}")
    if message.reasoning_content != output.reasoning:
        found.append(f"reasoning {message.reasoning_content[:160]!r}")
    found += _call_differences(message, output)
    for call, expected in zip(message.tool_calls, output.calls, strict=False):
        if expected.id and call.id and call.id != expected.id:
            found.append(f"id {call.id!r} instead of {expected.id!r}")
    return "; ".join(found)


def _call_differences(message: ChatMessage, output: Output) -> list[str]:
    """What differs in the calls: their names, or the arguments that came back otherwise (typed)."""
    names = [c.name for c in message.tool_calls]
    if names != [c.name for c in output.calls]:
        return [f"calls {names} instead of {[c.name for c in output.calls]}"]
    found = []
    for call, expected in zip(message.tool_calls, output.calls, strict=True):
        try:
            got = json.loads(call.arguments)
        except ValueError:
            found.append(f"{call.name} arguments not JSON: {call.arguments[:120]!r}")
            continue
        if not isinstance(got, dict):
            found.append(f"{call.name} arguments {call.arguments[:120]!r}")
            continue
        for key in sorted(set(got) | set(expected.arguments)):
            if key not in got or key not in expected.arguments or _typed(got[key]) != _typed(expected.arguments[key]):
                want = _typed(expected.arguments[key]) if key in expected.arguments else "(absent)"
                have = _typed(got[key]) if key in got else "(absent)"
                found.append(f"{call.name}.{key} = {have[:80]} instead of {want[:80]}")
    return found


def _chunkings(output: Output) -> Iterator[tuple[str, list[str]]]:
    yield "1 char", char_chunks(output.text)
    for seed in (1, 2, 3):
        yield f"random {seed}", random_chunks(output.text, seed)
    for i, pieces in enumerate(marker_cut_chunkings(output.text, markers(output.template))):
        yield f"marker cut {i}", pieces


_VERDICTS: dict[str, Verdict] = {}


def verdict(output: Output) -> Verdict:
    """Parse ``output`` and stream it in every chunking (cached per output)."""
    if output.key not in _VERDICTS:
        _VERDICTS[output.key] = _evaluate(output)
    return _VERDICTS[output.key]


def _evaluate(output: Output) -> Verdict:
    params = chat(output.template)
    try:
        message = params.parse(output.text)
    except Exception as error:  # a crash is a failure to report, not to propagate
        return Verdict(parse=f"parse() raised {type(error).__name__}: {error}")
    streams = []
    for label, pieces in _chunkings(output):
        found = check_stream(params, pieces, message)
        if found:
            streams.append(f"{label}: {found[0]}")
    return Verdict(_parse_difference(output, message), "; ".join(streams[:3]))


def covering(table: Mapping[str, Mapping[str, str]], template: str, case: str) -> str:
    """The reason ``table`` states for ``case`` of ``template`` (the most specific key wins), or ""."""
    entries = table.get(template, {})
    for key in (case, *(g for g in (reasons.CALLS, reasons.REASONING) if case in _GROUPS[g]), reasons.ALL):
        if key in entries:
            return entries[key]
    return ""


def covered_cases(key: str) -> tuple[str, ...]:
    """The cases a reasons key stands for."""
    return _GROUPS.get(key, (key,))


def case_results(template: str) -> dict[str, CaseResult]:
    """Every case of ``template`` with its status and reason."""
    found = {}
    missing = gaps(template)
    for case in CASES:
        mine = [o for o in outputs(template) if o.case == case]
        if not mine:
            status, observed = Status.NOT_RENDERED, missing.get(case, "no output")
            reason = covering(reasons.NOT_RENDERED, template, case)
        else:
            verdicts = [verdict(o) for o in mine]
            failed = next((v for v in verdicts if not v.ok), None)
            if failed is None:
                status, observed = Status.OK, ""
            else:
                status = Status.STREAM_FAILS if all(not v.parse for v in verdicts) else Status.FAILS
                observed = failed.parse or failed.stream
            reason = covering(reasons.FAILS, template, case) if status is not Status.OK else ""
        found[case] = CaseResult(template, case, status, observed, reason)
    return found


def all_results() -> list[CaseResult]:
    return [r for t in bundled_templates() for r in case_results(t).values()]
