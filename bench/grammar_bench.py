"""Grammar build time per tool-calling template and dialect (GBNF, Lark: each is written on first access), with 1
and with 20 tools (target: < 20 ms with 20 tools), and the cached path (a second ``apply`` with the same request
reuses the grammar). Each number is the median of three cold builds.

Run: python bench/grammar_bench.py [--verbose]
"""

from __future__ import annotations

import argparse
import statistics
import time

from autoparser import ChatTemplate, bundled_templates
from autoparser.build import build_grammar
from autoparser.parser.request import ParseRequest, normalize_tools


def tools(count: int) -> list[dict[str, object]]:
    result = []
    for i in range(count):
        schema = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200},
                "mode": {"type": "string", "enum": ["fast", "exact", "fuzzy"]},
                "limit": {"type": "integer", "minimum": 1},
                "filters": {"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string"}}}},
            },
            "required": ["query"],
        }
        result.append({"type": "function", "function": {"name": f"tool_{i}", "description": "d", "parameters": schema}})
    return result


def build_ms(name: str, count: int, dialect: str) -> float:
    """Median of three cold builds of the request's grammar in ``dialect`` (``gbnf`` or ``lark``)."""
    analysis = ChatTemplate.load(name).analysis
    request = ParseRequest(tools=normalize_tools(tools(count)), parallel_tool_calls=True)
    times = []
    for _ in range(3):
        build_grammar.cache_clear()
        start = time.perf_counter()
        assert getattr(build_grammar(analysis, request), dialect)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def has_tool_grammar(name: str) -> bool:
    request = ParseRequest(tools=normalize_tools(tools(1)))
    return build_grammar(ChatTemplate.load(name).analysis, request).gbnf is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    names = [n for n in bundled_templates() if has_tool_grammar(n)]
    for dialect in ("gbnf", "lark"):
        one = {n: build_ms(n, 1, dialect) for n in names}
        twenty = {n: build_ms(n, 20, dialect) for n in names}
        if args.verbose:
            for n in names:
                print(f"  {dialect}  {one[n]:6.1f} ms  {twenty[n]:6.1f} ms  {n}")
        worst = max(twenty, key=twenty.__getitem__)
        print(f"{dialect}: {len(names)} templates: 1 tool median {statistics.median(one.values()):.1f} ms; 20 tools "
              f"median {statistics.median(twenty.values()):.1f} ms, max {twenty[worst]:.1f} ms [{worst}] (target < 20)")
    analysis = ChatTemplate.load(names[0]).analysis
    request = ParseRequest(tools=normalize_tools(tools(20)))
    assert build_grammar(analysis, request).gbnf
    start = time.perf_counter()
    for _ in range(1000):
        assert build_grammar(analysis, request).gbnf
    print(f"cached: {(time.perf_counter() - start) / 1000 * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
