"""PEG engine benchmark: mean µs per full parse and per partial parse of every 16-character prefix.

Workloads (targets from the issue, mean µs per parse):
  (a) tag("content", until("</think>")) over 20 KB of text   — target < 50 µs
  (b) json() over a 2 KB object                               — target < 300 µs
  (c) a Qwen3-Coder-style tagged tool call of 2 KB            — target < 300 µs

Run: python bench/peg_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from autoparser import peg as p

STEP = 16


def thinking_workload() -> tuple[p.Parser, str]:
    rng = random.Random(1)
    words = ["the", "model", "<", "thinks", "about", "</", "tools", "and", "\n", "answers", "é", "数据"]
    text = ""
    while len(text) < 20_000:
        text += rng.choice(words) + " "
    return p.tag("content", p.until("</think>")), text[:20_000]


def json_workload() -> tuple[p.Parser, str]:
    rng = random.Random(2)
    obj: dict[str, object] = {}
    i = 0
    while len(json.dumps(obj)) < 2_000:
        obj[f"key_{i}"] = rng.choice(
            [rng.randint(-10_000, 10_000), rng.random(), f"value {i} with \"quotes\" and \\n", True, None,
             [1, 2, {"nested": "x"}]]
        )
        i += 1
    return p.tag("tool-args", p.json()), json.dumps(obj)


def tagged_call_workload() -> tuple[p.Parser, str]:
    """A Qwen3-Coder shaped parser and a ~2 KB call with string and JSON parameters."""
    params = {"path": "string", "content": "string", "line": "integer", "options": "object"}

    def arg(name: str, kind: str) -> p.Parser:
        if kind == "string":
            value = p.tag("arg-string-value", p.until("\n</parameter>")) + "\n"
        else:
            value = p.tag("arg-json-value", p.json()) + p.space()
        opener = "<parameter=" + p.tag("arg-name", p.literal(name)) + ">\n"
        return p.tag("arg", opener + value + "</parameter>" + p.space())

    args = p.choice(*(arg(n, k) for n, k in params.items()))
    function = p.tag(
        "tool",
        "<function=" + p.atomic(p.tag("tool-name", p.literal("write_file"))) + ">\n"
        + p.zero_or_more(args) + "</function>\n",
    )
    call = p.trigger_rule("tool-call", "<tool_call>\n" + function + "</tool_call>")
    parser = p.tag("content", p.until("<tool_call>")) + p.zero_or_more(call + p.space()) + p.end()
    body = "def main():\n    print('hello <world>')\n" * 45
    text = (
        "I'll write the file.\n<tool_call>\n<function=write_file>\n"
        f"<parameter=path>\nsrc/app.py\n</parameter>\n<parameter=content>\n{body}\n</parameter>\n"
        '<parameter=line>\n42\n</parameter>\n<parameter=options>\n{"mode": "w", "backup": true}\n</parameter>\n'
        "</function>\n</tool_call>"
    )
    return parser, text


def mean_us(fn: Callable[[], object], repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def bench(name: str, parser: p.Parser, text: str, repeat: int, target: float) -> None:
    compiled = parser.compile()
    assert compiled.parse(text).success, name
    full = mean_us(lambda: compiled.parse(text), repeat)
    cuts = list(range(STEP, len(text), STEP))

    def all_prefixes() -> None:
        for cut in cuts:
            compiled.parse(text[:cut], partial=True)

    partial = mean_us(all_prefixes, max(1, repeat // 20)) / len(cuts)
    verdict = "ok" if full < target and partial < target else "OVER TARGET"
    print(f"{name:<40} {len(text):>7} chars  full {full:8.1f} µs  partial {partial:8.1f} µs"
          f"  (target < {target:.0f} µs: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    bench("(a) content(until('</think>')) 20 KB", *thinking_workload(), args.repeat, 50)
    bench("(b) json() 2 KB object", *json_workload(), args.repeat, 300)
    bench("(c) Qwen3-Coder tagged call 2 KB", *tagged_call_workload(), args.repeat, 300)


if __name__ == "__main__":
    main()
