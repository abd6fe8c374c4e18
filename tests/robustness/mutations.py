"""Seeded damage to well-formed outputs, the way real models and transports break them.

Every mutant carries what the promise checks need: the sentinels it inserted (each must survive parsing), and
how many calls a parse must still return or warn about. Damage to a marker that *opens* a call (or a reasoning or
content block) may legitimately turn the call into plain text the parser cannot recognise, so there the call
count is not enforced.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from autoparser import ChatTemplate

from ..support.outputs import Output, call_marker_cores, markers, outputs, payload_words, render_calls

__all__ = [
    "DEEP_PLACEHOLDER",
    "Mutant",
    "broken_json",
    "cut_damage",
    "deep_inputs",
    "hostile_unicode",
    "json_answers",
    "marker_damage",
    "mutants",
    "opening_markers",
    "sentinel_insertions",
    "stutters",
    "truncations",
]

# Characters that break byte-level assumptions: NUL, CRLF, a lone surrogate, a combining mark, RTL marks, a BOM.
HOSTILE_CHARS = ("\x00", "\r\n", "\ud800", "\udfff", "\u0301", "\u200f", "\u202e", "\ufeff", "\u2028")
FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in '<>|[]{}"=/:'}  # '<' -> '＜', ...
DEEP_PLACEHOLDER = 987654321


@dataclass(frozen=True)
class Mutant:
    label: str
    text: str
    words: frozenset[str] = frozenset()  # sentinels and payload words that must survive when present
    expected_calls: int | None = None  # fewer calls than this need a warning (None: not enforced)


def opening_markers(template: str) -> tuple[str, ...]:
    """Markers whose damage may hide a call or a block from any parser: call openers, reasoning and content
    markers, and the name member of JSON calls."""
    analysis = ChatTemplate.load(template).analysis
    found = set(call_marker_cores(template))
    found |= {m.strip() for m in (analysis.reasoning.start, analysis.reasoning.end) if m.strip()}
    found |= {m.strip() for m in (analysis.content.start, analysis.content.end) if m.strip()}
    name_field = analysis.tools.format.name_field
    if name_field:
        found.add(f'"{name_field}"')
    return tuple(found)


def _spans(text: str, needles: Sequence[str]) -> list[tuple[int, int, str]]:
    found = []
    for needle in needles:
        at = text.find(needle)
        while at >= 0:
            found.append((at, at + len(needle), needle))
            at = text.find(needle, at + 1)
    return found


class _Context:
    """What the mutators need to know about one output."""

    def __init__(self, output: Output, seed: int) -> None:
        self.output = output
        self.text = output.text
        self.rng = random.Random(f"{seed}:{output.key}")
        self.markers = [m for m in markers(output.template) if m in output.text]
        self.openers = opening_markers(output.template)
        self.enforce = bool(call_marker_cores(output.template))  # without call markers a call may just vanish
        self.words = payload_words(output)
        self.opener_spans = [(a, b) for a, b, _ in _spans(self.text, self.openers)]
        self.counter = 0

    def sentinel(self) -> str:
        self.counter += 1
        letters = "".join(self.rng.choice("bcdfghjkmnpqrstvwxz") for _ in range(3))
        return f"zq{self.counter}{letters}"

    def calls_at(self, position: int) -> int | None:
        """The call count to enforce after damage at ``position`` (None inside an opening marker)."""
        if not self.enforce or any(a <= position < b for a, b in self.opener_spans):
            return None
        return len(self.output.calls)

    def mutant(self, label: str, text: str, at: int, extra: frozenset[str] = frozenset()) -> Mutant:
        return Mutant(f"{self.output.label}/{label}", text, self.words | extra, self.calls_at(at))


def truncations(output: Output) -> Iterator[Mutant]:
    """The output cut at every position (a stream that stopped, a max_tokens limit)."""
    words = payload_words(output)
    for i in range(1, len(output.text)):
        yield Mutant(f"{output.label}/cut@{i}", output.text[:i], words, None)


def marker_damage(ctx: _Context, count: int) -> Iterator[Mutant]:
    """Delete, duplicate or swap the case of one character of a marker; drop or repeat a whole marker."""
    spans = _spans(ctx.text, ctx.markers)
    if not spans:
        return
    for _ in range(count):
        start, end, marker = ctx.rng.choice(spans)
        # Damage to an opener, or to a marker inside one (the fence in Command R+'s "Action:\n```json"), may hide
        # the call: the text must survive, the call need not.
        opener = marker in ctx.openers or any(a <= start < b for a, b in ctx.opener_spans)
        calls = None if opener or not ctx.enforce else len(ctx.output.calls)
        i = ctx.rng.randrange(start, end)
        op = ctx.rng.choice(["delete", "duplicate", "swapcase", "drop", "repeat", "repeat50"])
        text = ctx.text
        if op == "delete":
            text = text[:i] + text[i + 1 :]
        elif op == "duplicate":
            text = text[: i + 1] + text[i:]
        elif op == "swapcase":
            letters = [j for j in range(start, end) if text[j].isalpha()]
            if not letters:
                continue
            j = ctx.rng.choice(letters)
            text = text[:j] + text[j].swapcase() + text[j + 1 :]
        elif op == "drop":
            text = text[:start] + text[end:]
        else:
            times = 50 if op == "repeat50" else 2
            text = text[:start] + marker * times + text[end:]
        yield Mutant(f"{ctx.output.label}/{op}:{marker!r}@{start}", text, ctx.words, calls)


def sentinel_insertions(ctx: _Context, count: int) -> Iterator[Mutant]:
    """A unique alphanumeric word inserted anywhere (inside markers, names, values, between calls)."""
    for _ in range(count):
        at = ctx.rng.randrange(0, len(ctx.text) + 1)
        word = ctx.sentinel()
        yield ctx.mutant(f"sentinel@{at}", ctx.text[:at] + word + ctx.text[at:], at, frozenset({word}))


def hostile_unicode(ctx: _Context, count: int) -> Iterator[Mutant]:
    """NUL, CRLF, lone surrogates, combining and RTL marks (with a sentinel), and fullwidth marker look-alikes."""
    for _ in range(count):
        at = ctx.rng.randrange(0, len(ctx.text) + 1)
        if ctx.rng.random() < 0.3:
            swappable = [j for j in range(len(ctx.text)) if ctx.text[j] in FULLWIDTH]
            if swappable:
                j = ctx.rng.choice(swappable)
                text = ctx.text[:j] + FULLWIDTH[ctx.text[j]] + ctx.text[j + 1 :]
                calls = None if any(a <= j < b for a, b, _ in _spans(ctx.text, ctx.markers)) else ctx.calls_at(j)
                yield Mutant(f"{ctx.output.label}/fullwidth@{j}", text, ctx.words, calls)
                continue
        char = ctx.rng.choice(HOSTILE_CHARS)
        word = ctx.sentinel()
        yield ctx.mutant(f"unicode{char!r}@{at}", ctx.text[:at] + char + word + ctx.text[at:], at, frozenset({word}))


def broken_json(ctx: _Context, count: int) -> Iterator[Mutant]:
    """Drop or duplicate a quote, brace, bracket, comma or colon; ``,,``; a truncated escape ``\\u12``."""
    punct = [j for j, c in enumerate(ctx.text) if c in '"{}[],:']
    if not punct:
        return
    for _ in range(count):
        j = ctx.rng.choice(punct)
        op = ctx.rng.choice(["drop", "duplicate", "double-comma", "cut-escape"])
        text = ctx.text
        if op == "drop":
            text = text[:j] + text[j + 1 :]
        elif op == "duplicate":
            text = text[: j + 1] + text[j:]
        elif op == "double-comma":
            text = text[:j] + ",," + text[j:]
        else:
            word = ctx.sentinel()
            text = text[: j + 1] + word + "\\u12" + text[j + 1 :]
            yield ctx.mutant(f"{op}@{j}", text, j + 1, frozenset({word}))  # inserted after j: maybe inside a marker
            continue
        yield ctx.mutant(f"{op}{ctx.text[j]!r}@{j}", text, j + 1 if op == "duplicate" else j)


def stutters(ctx: _Context, count: int) -> Iterator[Mutant]:
    """A stretch of the output written twice, the way a model stutters: a member (a second ``"id"``), a marker and
    what follows it, part of a value."""
    for _ in range(count):
        start = ctx.rng.randrange(0, max(len(ctx.text) - 1, 1))
        end = min(len(ctx.text), start + ctx.rng.randint(2, 24))
        text = ctx.text[:end] + ctx.text[start:]
        yield ctx.mutant(f"stutter@{start}:{end}", text, start)


def cut_damage(output: Output, seed: int, count: int) -> list[Mutant]:
    """A damaged reply that also stopped short (a glitch, then the max_tokens limit, or the model's own end-of-turn
    token written mid-structure): a seeded mutant of any kind cut at a seeded position — half the time within a
    few characters of a marker (inside it, right after it: where a fence, a call body or a reasoning block has just
    opened), else anywhere — and, one time in three, the template's end-of-turn marker written there; one time in
    three the damage is two (the second on the damaged text). Cut-off and damaged replies are where a stream may
    have shown a guess that the rest refutes."""
    ctx = _Context(output, seed + 1)  # (its own stream of choices: the plain mutants stay as they were)
    kinds = (marker_damage, sentinel_insertions, hostile_unicode, broken_json, stutters)
    stops = [m.strip() for m in ChatTemplate.load(output.template).analysis.end_of_turn if m.strip()]
    found: list[Mutant] = []
    for _ in range(count):
        damaged = next(iter(ctx.rng.choice(kinds)(ctx, 1)), None)
        if damaged is None or len(damaged.text) < 2:
            continue
        if ctx.rng.random() < 1 / 3:  # stacked: damage the damaged text again
            again = _Context(dataclasses.replace(output, text=damaged.text), ctx.rng.randrange(1 << 30))
            second = next(iter(again.rng.choice(kinds)(again, 1)), None)
            if second is not None and len(second.text) >= 2:
                label = damaged.label + "+" + second.label.rsplit("/", 1)[-1]
                damaged = Mutant(label, second.text, damaged.words | second.words, None)
        text = damaged.text
        spans = _spans(text, ctx.markers)
        if spans and ctx.rng.random() < 0.5:
            start, end, _ = ctx.rng.choice(spans)
            at = min(max(ctx.rng.randrange(start + 1, end + 4), 1), len(text) - 1)
        else:
            at = ctx.rng.randrange(1, len(text))
        stop = ctx.rng.choice(stops) if stops and ctx.rng.random() < 1 / 3 else ""
        label = f"{damaged.label}/cut@{at}" + (f"+{stop!r}" if stop else "")
        found.append(Mutant(label, text[:at] + stop, damaged.words, None))
    return found


#: The JSON answer of a json_schema request (docs/requests.md): strings with what breaks naive readers, a nested
#: object and an array; models write it bare or in a ```json fence.
JSON_ANSWER = {"city": 'Pa "ris" <b>', "days": [1, -2.5, True, None], "where": {"tag": "zqanswer"}}
JSON_ANSWER_TEXT = json.dumps(JSON_ANSWER, ensure_ascii=False)


def json_answers(template: str) -> list[Output]:
    """The JSON answer written where the template writes its answer (the content output with the answer in place of
    its content): bare, and in a ```json fence."""
    found = []
    for output in outputs(template):
        if output.case in ("content", "reasoning+content") and output.content in output.text:
            for label, answer in (("bare", JSON_ANSWER_TEXT), ("fenced", f"```json\n{JSON_ANSWER_TEXT}\n```")):
                text = output.text.replace(output.content, answer, 1)
                label = f"{output.label}/json-{label}"
                found.append(dataclasses.replace(output, label=label, text=text, content=answer))
    return found


def mutants(output: Output, seed: int, per_kind: int) -> list[Mutant]:
    """``per_kind`` seeded mutants of each kind (truncations apart: see :func:`truncations`)."""
    ctx = _Context(output, seed)
    found: list[Mutant] = []
    for kind in (marker_damage, sentinel_insertions, hostile_unicode, broken_json):
        found.extend(kind(ctx, per_kind))
    return found


def deep_inputs(template: str, full: bool = False) -> list[Mutant]:
    """Huge nesting: bare (``[`` x 5000, ``{"a":`` chains), and inside a call argument written by the template
    (``[`` x 1500 left open, 1000 deep closed, ``{"a":`` chains, 300-deep dicts in Gemma 4's syntax).

    ``full`` adds the Llama-style ``Sure. {"a":...`` and makes the ``{"a":`` chains 3000 deep; the CI size (1001)
    is still past Python's recursion limit, and keeps today's quadratic JSON-call scan within the test budget."""
    chain = '{"a":' * (3000 if full else 1001)
    found = [
        Mutant("bare[x5000", "[" * 5000),
        Mutant("bare{a:chain", chain),
        Mutant("bare[]x1000", "[" * 1000 + "]" * 1000),
    ]
    if full:
        found.append(Mutant("sure{a:chain", "Sure. " + chain))
    call = render_calls(template, (("get_weather", {"days": DEEP_PLACEHOLDER}),))
    if call is None or str(DEEP_PLACEHOLDER) not in call:
        return found
    head, _, tail = call.partition(str(DEEP_PLACEHOLDER))
    gemma = ChatTemplate.load(template).analysis.format == "gemma4"
    values = {
        "arg[x1500": "[" * 1500,
        "arg[]x1000": "[" * 1000 + "]" * 1000,
        "arg{a:chain": chain,
        "arg{a:1}x300": ("{a:" * 300 + "1" + "}" * 300) if gemma else ('{"a":' * 300 + "1" + "}" * 300),
    }
    found += [Mutant(label, head + value + tail) for label, value in values.items()]
    return found
