"""Linear-time benchmark (P4): parse and char-by-char streaming cost as outputs grow, for every bundled template.

Each shape is built from the template's own syntax where it has one (tests/support/outputs.py renders the calls):

* ``many_calls``  a no-argument ``ping`` call repeated;
* ``nested_args`` one call whose argument holds large nested JSON of numbers and booleans;
* ``big_array``   one call whose argument holds a huge array of numbers;
* ``long_string`` one call whose string argument is long (quotes, escapes, line breaks, non-ASCII), written as the
  template writes strings: Python literals in pythonic calls, JSON strings in JSON arguments, raw text in tags;
* ``markers``     the call-start marker repeated with junk after it;
* ``raw_brackets`` ``[`` x N;  ``raw_objects`` ``{"a":`` x N;  ``sure_objects`` ``Sure. `` + ``{"a":`` x N;
* ``end_markers`` the template's end-of-turn markers repeated after a short answer (each used to look ahead over
  the rest of the run: quadratic);
* ``content``     long plain content;  ``reasoning`` a long reasoning block then an answer (reasoning templates).

Reported per template and shape: ``parse()`` ms at 10 KB / 100 KB / 1 MB with the growth ratio between 10x sizes,
and streaming one character per feed (total ms, µs per feed) at 10 KB / 100 KB (1 MB with ``--stream-1mb``; other
sizes with ``--stream-sizes``, and pieces of several characters, as a server receives tokens, with ``--feed 1-4``:
the µs are then per character). A flat µs-per-feed and a growth ratio near 10 mean linear (the ratio is normalised
to a 10x size step). Targets, enforced by ``--check`` (exit 1): parse of 1 MB < 1 s,
streaming 100 KB < 1 s, growth ratio <= 15. Every measurement runs under a time budget (SIGALRM); once a size
exceeds it, bigger sizes of that shape are reported as "> budget" (and miss their target) without running.

Run: python bench/linear_bench.py [--quick] [--check] [--templates A,B] [--shapes X,Y] [--budget S] [--stream-1mb]
     [--stream-sizes N,N] [--feed N|MIN-MAX]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package: shared output generators

from tests.robustness.mutations import DEEP_PLACEHOLDER
from tests.support.outputs import CONTENT, REASONING, call_marker_cores, chat, outputs, render_calls

from autoparser import ChatTemplate, bundled_templates

PARSE_SIZES = (10_000, 100_000, 1_000_000)
STREAM_SIZES = (10_000, 100_000)
PARSE_LIMIT_S = 1.0  # parse of 1 MB
STREAM_LIMIT_S = 1.0  # streaming 100 KB one character per feed
GROWTH_LIMIT = 15.0


class _Budget(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _Budget


CRASHES: list[str] = []


def _timed(fn: Callable[[], object], budget: float, what: str) -> float | None:
    """Seconds ``fn`` took, or None if it ran past ``budget`` or raised (a crash is recorded in CRASHES)."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    start = time.perf_counter()
    try:
        fn()
    except _Budget:
        return None
    except Exception as error:
        CRASHES.append(f"{what}: {type(error).__name__}: {str(error)[:100]}")
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.perf_counter() - start


# --- shapes --------------------------------------------------------------------------------------------------------


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _with_argument(template: str, value: Callable[[int], str]) -> Callable[[int], str] | None:
    """One call whose ``days`` argument is replaced by ``value(size)`` (None if the template cannot render it)."""
    call = render_calls(template, [("get_weather", {"days": DEEP_PLACEHOLDER})])
    if call is None or str(DEEP_PLACEHOLDER) not in call:
        return None
    head, _, tail = call.partition(str(DEEP_PLACEHOLDER))
    return lambda size: head + value(max(size - len(head) - len(tail), 2)) + tail


def _nested_json(size: int) -> str:
    """An object holding many 40-deep nested objects of numbers and booleans (deep, and as large as asked)."""
    leaf = {"n": 12345, "ok": True, "list": [1, 2.5, False, {"deep": [True, 7]}]}
    nested: object = leaf
    for level in range(40):
        nested = {f"k{level}": nested, "v": level, "b": level % 2 == 0}
    unit = json.dumps(nested)
    count = max(size // (len(unit) + 8), 1)
    return "{" + ", ".join(f'"i{i}": {unit}' for i in range(count)) + "}"


def _number_array(size: int) -> str:
    body = ", ".join(str(i % 1000) for i in range(size // 4 + 1))
    return "[" + body[: max(size - 2, 0)].rstrip(", ") + "]"


# A long string argument's repeated piece: quotes, a backslash, a line break, non-ASCII text and brackets, escaped
# as the template escapes them (where the template writes them so that they do not read back, a plain piece).
_RICH_PIECE = 'Say "hi" to Zo\u00eb \u2014 it\'s 5\\6 (ok), [x]\n'
_PLAIN_PIECE = "The quick brown fox \u2014 Zo\u00eb, 5 < 6; (ok) "
_START, _END = "QQSTART", "QQEND"


def _long_string(template: str) -> Callable[[int], str] | None:
    """One call whose ``location`` string argument is about ``size`` characters of the template's own spelling."""
    params = chat(template)
    for piece in (_RICH_PIECE, _PLAIN_PIECE):
        call = render_calls(template, [("get_weather", {"location": _START + piece + _END})])
        if call is None or _START not in call or _END not in call:
            return None
        head, _, rest = call.partition(_START)
        written, _, tail = rest.partition(_END)

        def repeated(count: int, head: str = head, written: str = written, tail: str = tail) -> str:
            return head + _START + written * count + _END + tail

        found = params.parse(repeated(4)).tool_calls
        if found and json.loads(found[0].arguments).get("location") == _START + piece * 4 + _END:
            return functools.partial(_sized, repeated, len(repeated(0)), len(written))
    return None


def _sized(repeated: Callable[[int], str], fixed: int, unit: int, size: int) -> str:
    """``repeated(count)`` about ``size`` characters long (``fixed`` of them around ``count`` units of ``unit``)."""
    return repeated(max((size - fixed) // unit, 1))


def _many_calls(template: str) -> Callable[[int], str] | None:
    call = render_calls(template, [("ping", {})])
    return None if call is None else (lambda size: _repeat(call + "\n", size))


def _markers(template: str) -> Callable[[int], str] | None:
    cores = call_marker_cores(template) or tuple(t for t in chat(template).preserved_tokens if len(t) > 2)
    if not cores:
        return None
    return lambda size: _repeat(cores[0] + " junk {x ", size)


def _end_markers(template: str) -> Callable[[int], str] | None:
    markers = ChatTemplate.load(template).analysis.end_of_turn
    if not markers:
        return None
    return lambda size: ("Hi. " + _repeat(markers[0].strip() + " ", size))[:size] + "x"


def _reasoning(template: str) -> Callable[[int], str] | None:
    found = [o for o in outputs(template) if o.label == "reasoning+content"]
    if not found:
        return None
    head, _, tail = found[0].text.partition(REASONING)
    return lambda size: head + _repeat(REASONING + "\n", size - len(head) - len(tail)) + tail


SHAPES: dict[str, Callable[[str], Callable[[int], str] | None]] = {
    "many_calls": _many_calls,
    "nested_args": lambda t: _with_argument(t, _nested_json),
    "big_array": lambda t: _with_argument(t, _number_array),
    "long_string": _long_string,
    "markers": _markers,
    "raw_brackets": lambda t: lambda size: "[" * size,
    "raw_objects": lambda t: lambda size: _repeat('{"a":', size),
    "sure_objects": lambda t: lambda size: "Sure. " + _repeat('{"a":', size - 6),
    "end_markers": _end_markers,
    "content": lambda t: lambda size: _repeat(CONTENT + "\n", size),
    "reasoning": _reasoning,
}


# --- measuring -----------------------------------------------------------------------------------------------------


@dataclass
class Row:
    template: str
    shape: str
    parse_s: dict[int, float | None] = field(default_factory=dict)  # None: over budget
    stream_s: dict[int, float | None] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)


def _stream(template: str, text: str, feed: tuple[int, int] = (1, 1)) -> None:
    """Stream ``text`` in pieces of ``feed[0]`` to ``feed[1]`` characters (seeded: the same pieces every run)."""
    stream = chat(template).stream()
    if feed == (1, 1):
        for char in text:
            stream.feed(char)
    else:
        rng = random.Random(len(text))
        at = 0
        while at < len(text):
            step = rng.randint(*feed)
            stream.feed(text[at : at + step])
            at += step
    stream.finish()


def _series(sizes: tuple[int, ...], run: Callable[[int], float | None]) -> dict[int, float | None]:
    found: dict[int, float | None] = {}
    for size in sizes:
        if found and list(found.values())[-1] is None:
            found[size] = None  # the smaller size already ran past the budget
            continue
        found[size] = _best(run, size)
    return found


def _growth(series: dict[int, float | None]) -> float | None:
    sizes = sorted(series)
    ratios = []
    for small, big in itertools.pairwise(sizes):
        a, b = series[small], series[big]
        if b is not None and b < 0.005:
            continue  # below 5 ms the ratio is timer noise
        if a is None or b is None:
            if b is None and a is not None:
                return float("inf")
            continue
        ratios.append(b / max(a, 1e-6) * (10 * small / big))  # normalised to a 10x size step
    return max(ratios) if ratios else None


def _best(run: Callable[[int], float | None], size: int) -> float | None:
    """The fastest of up to three runs (one when a run takes 0.1 s or more, or goes past the budget)."""
    best = run(size)
    for _ in range(2):
        if best is None or best >= 0.1:
            break
        again = run(size)
        best = best if again is None else min(best, again)
    return best


def measure(template: str, shape: str, make: Callable[[int], str], args: argparse.Namespace) -> Row:
    row = Row(template, shape)
    params = chat(template)
    params.parse(make(100))  # build and warm the parser outside the measurement
    row.parse_s = _series(
        args.parse_sizes,
        lambda n: _timed(functools.partial(params.parse, make(n)), args.budget, f"{template} {shape} parse {n}"),
    )
    row.stream_s = _series(
        args.stream_sizes,
        lambda n: _timed(
            functools.partial(_stream, template, make(n), args.feed), args.budget, f"{template} {shape} stream {n}"
        ),
    )
    if None in row.parse_s.values() or None in row.stream_s.values():
        row.misses.append("over the time budget")
    slow_feeds = [n for n, s in row.stream_s.items() if s is not None and s / n > STREAM_LIMIT_S / 100_000]
    if slow_feeds:
        row.misses.append(f"stream > {STREAM_LIMIT_S / 100_000 * 1e6:.0f} µs/feed at {slow_feeds[0] // 1000}K")
    big = max(args.parse_sizes)
    if big >= 1_000_000 and (row.parse_s[big] is None or row.parse_s[big] > PARSE_LIMIT_S):
        row.misses.append("parse 1 MB >= 1 s")
    hundred = row.stream_s.get(100_000, 0.0)
    if 100_000 in row.stream_s and (hundred is None or hundred > STREAM_LIMIT_S):
        row.misses.append("stream 100 KB >= 1 s")
    for label, series in (("parse", row.parse_s), ("stream", row.stream_s)):
        growth = _growth(series)
        if growth is not None and growth > GROWTH_LIMIT:
            row.misses.append(f"{label} growth {growth:.0f} > {GROWTH_LIMIT:.0f}")
    return row


def _ms(value: float | None) -> str:
    return "> budget" if value is None else f"{value * 1000:9.1f}"


def report(row: Row) -> str:
    parse = " ".join(f"{n // 1000}K:{_ms(s)}" for n, s in row.parse_s.items())
    stream = " ".join(
        f"{n // 1000}K:{_ms(s)} ({'-' if s is None else f'{s / n * 1e6:.1f}'} µs/feed)" for n, s in row.stream_s.items()
    )
    growth = _growth(row.parse_s)
    sgrowth = _growth(row.stream_s)
    flags = f"  MISS: {'; '.join(row.misses)}" if row.misses else ""
    g = "-" if growth is None else f"{growth:.1f}"
    sg = "-" if sgrowth is None else f"{sgrowth:.1f}"
    return f"{row.template:46} {row.shape:12} parse ms {parse} x{g} | stream ms {stream} x{sg}{flags}"


def _cost(row: Row) -> tuple[int, float]:
    """Over-budget measurements first (the smaller the size that ran over, the worse), then the slowest time."""
    values = [*row.parse_s.values(), *row.stream_s.values()]
    return values.count(None), max((v for v in values if v is not None), default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", help="comma-separated template names (substrings match)")
    parser.add_argument("--shapes", help=f"comma-separated shapes of {', '.join(SHAPES)}")
    parser.add_argument("--quick", action="store_true", help="parse 10 KB / 100 KB, stream 10 KB only")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds per measurement (default 5)")
    parser.add_argument("--stream-1mb", action="store_true", help="also stream 1 MB one character per feed")
    parser.add_argument("--stream-sizes", help="comma-separated sizes to stream instead (e.g. 16000,128000,1000000)")
    parser.add_argument("--feed", default="1", help="characters per feed: N, or MIN-MAX drawn seeded (default 1)")
    args = parser.parse_args()
    args.parse_sizes = PARSE_SIZES[:2] if args.quick else PARSE_SIZES
    if args.stream_sizes:
        args.stream_sizes = tuple(int(size) for size in args.stream_sizes.split(","))
    else:
        args.stream_sizes = (
            STREAM_SIZES[:1] if args.quick else (*STREAM_SIZES, 1_000_000) if args.stream_1mb else STREAM_SIZES
        )
    low, _, high = args.feed.partition("-")
    args.feed = (int(low), int(high or low))
    wanted = [s.strip() for s in args.templates.split(",")] if args.templates else None
    shapes = [s.strip() for s in args.shapes.split(",")] if args.shapes else list(SHAPES)
    rows: list[Row] = []
    for template in bundled_templates():
        if wanted and not any(w in template for w in wanted):
            continue
        for shape in shapes:
            make = SHAPES[shape](template)
            if make is None:
                continue
            row = measure(template, shape, make, args)
            rows.append(row)
            print(report(row), flush=True)
    if not rows:
        print("nothing measured")
        return 0
    print("\nslowest:")
    for row in sorted(rows, key=_cost, reverse=True)[:10]:
        print("  " + report(row))
    missed = [r for r in rows if r.misses]
    print(f"\n{len(missed)} of {len(rows)} template/shape pairs miss a target")
    for crash in CRASHES:
        print("  crash: " + crash)
    return 1 if args.check and (missed or CRASHES) else 0


if __name__ == "__main__":
    sys.exit(main())
