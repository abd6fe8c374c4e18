"""Reading a rendered case back: ``parse()`` of the whole output, the stream of it in several chunkings, and the
whole-output grammar on it.

A case *reads back* when both the parse and every stream give exactly what went into the rendering — content,
reasoning, call names, typed arguments (``True`` and ``1``, ``3`` and ``3.0`` stay different), the ids the template
writes — with no warnings. Streams are compared with the parse after ``finish()`` and must follow the delta protocol
(each call's name and id once, in its first delta; indices in order). The chunkings are one character per feed,
seeded random pieces, and cuts inside every marker the analysis learned: where a streaming parser holds text back or
commits too early.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..message import ChatMessage, MessageDelta, apply_deltas
from ..params import ChatParams
from .cases import Case

__all__ = [
    "Verdict",
    "char_chunks",
    "chunkings",
    "compare_messages",
    "delta_protocol",
    "marker_cut_chunkings",
    "random_chunks",
    "read_back",
    "stream_message",
]


@dataclass(frozen=True)
class Verdict:
    """What differs from the rendering: ``parse`` for ``parse()``, ``stream`` for the chunkings whose stream does not
    end equal to ``parse()``, ``grammar`` when the whole-output grammar refuses the text (each "" when it holds;
    ``grammar`` is also "" when the request has no whole-output grammar)."""

    parse: str = ""
    stream: str = ""
    grammar: str = ""

    @property
    def reads_back(self) -> bool:
        return not self.parse and not self.stream

    @property
    def ok(self) -> bool:
        return self.reads_back and not self.grammar


# --- chunkings ------------------------------------------------------------------------------------------------------


def char_chunks(text: str) -> list[str]:
    return list(text)


def random_chunks(text: str, seed: int, largest: int = 12) -> list[str]:
    """Pieces of 1 to ``largest`` characters, the same for the same seed."""
    rng = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        size = rng.randint(1, largest)
        pieces.append(text[at : at + size])
        at += size
    return pieces


def marker_cut_chunkings(text: str, markers: Sequence[str]) -> list[list[str]]:
    """Chunkings that cut every marker occurrence of ``text``: after its first character, in its middle, and before
    its last character (one chunking per cut offset)."""
    spans = []
    for marker in markers:
        at = text.find(marker)
        while at >= 0:
            spans.append((at, len(marker)))
            at = text.find(marker, at + 1)
    found: list[list[str]] = []
    for pick in (lambda n: 1, lambda n: n // 2, lambda n: n - 1):
        cuts = sorted({at + pick(n) for at, n in spans if n >= 2} | {0, len(text)})
        pieces = [text[a:b] for a, b in itertools.pairwise(cuts) if b > a]
        if len(pieces) > 1 and pieces not in found:
            found.append(pieces)
    return found


def chunkings(text: str, markers: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """Every chunking a case is streamed in, labelled."""
    yield "1 char", char_chunks(text)
    for seed in (1, 2, 3):
        yield f"random {seed}", random_chunks(text, seed)
    for i, pieces in enumerate(marker_cut_chunkings(text, markers)):
        yield f"marker cut {i}", pieces


# --- streams --------------------------------------------------------------------------------------------------------


def stream_message(params: ChatParams, pieces: Sequence[str]) -> tuple[list[MessageDelta], ChatMessage]:
    """Feed ``pieces`` to a fresh stream and finish it: the deltas, and the message they add up to."""
    stream = params.stream()
    deltas: list[MessageDelta] = []
    for piece in pieces:
        deltas += stream.feed(piece)
    deltas += stream.finish()
    return deltas, apply_deltas(deltas)


def delta_protocol(deltas: Sequence[MessageDelta]) -> list[str]:
    """Each call index gets its id and name in its first delta and never again; indices arrive in order."""
    problems: list[str] = []
    seen: set[int] = set()
    for delta in deltas:
        for part in delta.tool_calls:
            if part.index not in seen:
                if part.index != len(seen):
                    problems.append(f"call index {part.index} arrived after {len(seen)} calls")
                if part.name is None or part.id is None:
                    problems.append(f"call {part.index}'s first delta lacks its name or id")
                seen.add(part.index)
            elif part.name is not None or part.id is not None:
                problems.append(f"call {part.index} got a name/id again: {part.name!r} {part.id!r}")
    return problems


def compare_messages(got: ChatMessage, want: ChatMessage) -> list[str]:
    """How a streamed message differs from the parse: content, reasoning, calls (name, arguments, status), the ids
    the model wrote, warnings."""
    problems = []
    if got.content != want.content:
        problems.append(f"content {got.content!r:.200} != parse {want.content!r:.200}")
    if got.reasoning_content != want.reasoning_content:
        problems.append(f"reasoning {got.reasoning_content!r:.200} != parse {want.reasoning_content!r:.200}")
    got_calls = [(c.name, c.arguments, str(c.status)) for c in got.tool_calls]
    want_calls = [(c.name, c.arguments, str(c.status)) for c in want.tool_calls]
    if got_calls != want_calls:
        problems.append(f"calls {got_calls!r:.300} != parse {want_calls!r:.300}")
    for index, (mine, theirs) in enumerate(zip(got.tool_calls, want.tool_calls, strict=False)):
        if not theirs.id_generated and mine.id != theirs.id:
            problems.append(f"call {index} id {mine.id!r} != parse {theirs.id!r}")
    got_warnings = sorted((w.position, w.message) for w in got.warnings)
    want_warnings = sorted((w.position, w.message) for w in want.warnings)
    if got_warnings != want_warnings:
        problems.append(f"warnings {got_warnings!r:.300} != parse {want_warnings!r:.300}")
    return problems


# --- one case -------------------------------------------------------------------------------------------------------


def _typed(value: Any) -> str:
    """JSON with sorted keys: ``True`` and ``1``, ``3`` and ``3.0`` stay different."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _call_differences(message: ChatMessage, case: Case) -> list[str]:
    """What differs in the calls: their names, or the arguments that came back otherwise (typed)."""
    names = [c.name for c in message.tool_calls]
    if names != [c.name for c in case.calls]:
        return [f"calls {names} instead of {[c.name for c in case.calls]}"]
    found = []
    for call, expected in zip(message.tool_calls, case.calls, strict=True):
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
        if expected.id and call.id and call.id != expected.id:
            found.append(f"id {call.id!r} instead of {expected.id!r}")
    return found


def parse_difference(case: Case, message: ChatMessage) -> str:
    """How ``message`` differs from what went into the rendering ("" when it does not)."""
    found = []
    if message.warnings:
        found.append(f"warnings {[w.message for w in message.warnings]}")
    if message.content != case.content.strip():
        found.append(f"content {message.content[:160]!r}")
    if message.reasoning_content != case.reasoning:
        found.append(f"reasoning {message.reasoning_content[:160]!r}")
    found += _call_differences(message, case)
    return "; ".join(found)


def read_back(params: ChatParams, case: Case, markers: Sequence[str], grammar: Any = None) -> Verdict:
    """Parse ``case`` and stream it in every chunking; ``grammar`` (a callable text → reason, "" when accepted) judges
    the text with the request's whole-output grammar."""
    try:
        message = params.parse(case.text)
    except Exception as error:  # a crash is a finding to report, not to propagate
        return Verdict(parse=f"parse() raised {type(error).__name__}: {error}")
    streams = []
    for label, pieces in chunkings(case.text, markers):
        try:
            deltas, streamed = stream_message(params, pieces)
        except Exception as error:
            streams.append(f"{label}: the stream raised {type(error).__name__}: {error}")
            continue
        found = delta_protocol(deltas) + compare_messages(streamed, message)
        if found:
            streams.append(f"{label}: {found[0]}")
    verdict_grammar = grammar(case.text) if grammar is not None else ""
    return Verdict(parse_difference(case, message), "; ".join(streams[:3]), verdict_grammar)
