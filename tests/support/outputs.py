"""Well-formed model outputs for every bundled template, written the way the template itself writes them: the cases of
``autoparser check`` (:mod:`autoparser.check.cases`), by bundled template name and cached, for the round-trip and
robustness tests and the benchmarks.

The expected message of each output is what went into the rendering, never what a parser reads from it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.analysis.formats import GENERIC
from autoparser.check import run
from autoparser.check.cases import (
    CALL_CASES,
    CALL_IDS,
    CALL_VARIANTS,
    CASES,
    CONTENT,
    FILLER_REASONING,
    FULL_ARGS,
    REASONING,
    TOOLS,
    USER,
    WEATHER_PROPS,
    CaseSet,
    ExpectedCall,
    call_message,
)
from autoparser.check.cases import Case as Output

__all__ = [
    "CALL_CASES",
    "CALL_IDS",
    "CASES",
    "CONTENT",
    "FULL_ARGS",
    "REASONING",
    "TOOLS",
    "USER",
    "ExpectedCall",
    "Output",
    "all_outputs",
    "call_marker_cores",
    "call_message",
    "case_set",
    "chat",
    "conversation",
    "gaps",
    "markers",
    "outputs",
    "payload_words",
    "render_calls",
    "request_tools",
    "source_message",
]


@functools.cache
def case_set(template: str) -> CaseSet:
    """The cases of a bundled template (rendered once per process)."""
    return CaseSet(ChatTemplate.load(template))


def chat(template: str) -> ChatParams:
    """The request every output of ``template`` answers (tools offered, reasoning extracted; no tools for a template
    that cannot render any)."""
    return case_set(template).params


def conversation(template: str) -> list[dict[str, Any]]:
    """The conversation every output of ``template`` answers: :data:`USER`, after a system message where the
    template cannot render a user turn alone (ShieldGemma)."""
    return case_set(template).conversation


def request_tools(template: str) -> list[dict[str, Any]] | None:
    """The tools every output's request offers: :data:`TOOLS`, or None where ``apply()`` raises on them."""
    return case_set(template).tools


@functools.cache
def markers(template: str) -> tuple[str, ...]:
    """Every marker string the analysis found (whitespace-trimmed), plus the request's preserved tokens; longest
    first. For JSON calls, the quoted member names are structure too."""
    return run.markers(ChatTemplate.load(template).analysis, chat(template))


def call_marker_cores(template: str) -> tuple[str, ...]:
    """Markers that open a tool call: seeing one in the content means a call did not parse."""
    analysis = ChatTemplate.load(template).analysis
    if analysis.format != GENERIC:
        return ()
    tools = analysis.tools
    found = (tools.format.section_start, tools.format.per_call_start, tools.function.name_prefix)
    return tuple(m.strip() for m in found if len(m.strip()) >= 3)


def payload_words(output: Output) -> frozenset[str]:
    """Words of the output's data (content, reasoning, string arguments) that no marker or name contains: each
    one still in a (damaged) output must survive parsing somewhere."""
    texts = [output.content, output.reasoning]
    for call in output.calls:
        texts.extend(_strings(call.arguments))
    structural = " ".join([*markers(output.template), *(t["function"]["name"] for t in TOOLS), *WEATHER_PROPS])
    words = {w for t in texts for w in re.findall(r"[A-Za-z]{5,}", t)}
    return frozenset(w for w in words if w.lower() not in structural.lower())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def render_calls(template: str, calls: Sequence[tuple[str, Mapping[str, Any]]], content: str = "") -> str | None:
    """The template's own text for an assistant turn with these calls (None if it cannot render them)."""
    return case_set(template).render_calls(calls, content)


def source_message(output: Output, ids: Sequence[str] | None = None, *, objects: bool = True) -> dict[str, Any]:
    """The assistant message a call output was rendered from (its content and reasoning as given to the template,
    before the template moved or dropped them), with ``ids`` instead of the check's ids if given. Where the prompt
    left a reasoning block open and the output writes the filler reasoning into it, that reasoning is the
    message's (the model wrote it)."""
    variant = next(v for v in CALL_VARIANTS if v.label == output.label)
    reasoning = variant.reasoning
    if not reasoning and FILLER_REASONING in output.reasoning:
        reasoning = output.reasoning
    calls = [(call.name, call.arguments) for call in output.calls]
    return call_message(calls, variant.content, reasoning, CALL_IDS if ids is None else ids, objects=objects)


def outputs(template: str) -> tuple[Output, ...]:
    """Every well-formed output generated for ``template`` (calls, content, reasoning)."""
    return case_set(template).cases


def gaps(template: str) -> dict[str, str]:
    """The cases ``template`` cannot render, each with what was observed."""
    return case_set(template).gaps


def all_outputs() -> list[Output]:
    return [o for t in bundled_templates() for o in outputs(t)]
