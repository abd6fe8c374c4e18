"""Render-limit benchmark: how long a hostile template takes to fail once its time limit is reached.

tests/template/test_hardening.py checks *which* limit a hostile render reports (``RenderLimitError.limit``), never
how long it took; this prints the time. Per hostile shape: the limit reported, the best and worst of ``--repeat``
renders in milliseconds, and the overshoot past the time limit (how late the cooperative deadline check fired).
The analysis row times ``ChatTemplate.analysis`` of a hostile template against ``analysis_timeout``; the last rows
are the slowest bundled templates' one-message renders, far below the default ``timeout``. Nothing is asserted.

Run: python bench/limits_bench.py [--timeout S] [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable

from autoparser import ChatTemplate
from autoparser.errors import RenderLimitError, TemplateError
from autoparser.template import DEFAULT_LIMITS, JinjaChatTemplate, RenderLimits, bundled_templates

NESTED = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
SHAPES = {
    "nested loops, output": NESTED,
    "nested loops, silent": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "nested small loops": "{% set r = range(1000) | list %}{% for i in r %}{% for j in r %}{% for k in r %}"
    "{% endfor %}{% endfor %}{% endfor %}",
    "generators": "{% for i in range(100000) | map('string') %}{% for j in range(100000) | select %}{% endfor %}"
    "{% endfor %}",
    "exponential macro": "{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}"
    "{{ f(0) }}",
    "macro-captured output": "{% macro m() %}" + NESTED + "{% endmacro %}{{ m() }}",
}
USER = [{"role": "user", "content": "Hey"}]


def timed(fn: Callable[[], object], repeat: int) -> tuple[str, float, float]:
    """(the limit reported, best ms, worst ms) over ``repeat`` calls of ``fn``, which must raise a limit."""
    times: list[float] = []
    limit = "none"
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            fn()
        except RenderLimitError as err:
            limit = err.limit
        except TemplateError as err:
            limit = f"error: {err.reason[:30]}"
        times.append(time.perf_counter() - start)
    return limit, min(times) * 1e3, max(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=0.2, help="RenderLimits timeout and analysis_timeout (s)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    limit_ms = args.timeout * 1e3
    print(f"{'hostile template':<24} {'limit':<17} {'best ms':>9} {'worst ms':>9} {'overshoot ms':>13}")
    for name, source in SHAPES.items():
        tmpl = JinjaChatTemplate(source, name=name, limits=RenderLimits(timeout=args.timeout))
        limit, best, worst = timed(lambda tmpl=tmpl: tmpl.render(USER), args.repeat)
        print(f"{name:<24} {limit:<17} {best:9.1f} {worst:9.1f} {worst - limit_ms:13.1f}")
    analysis_limits = RenderLimits(analysis_timeout=args.timeout)
    limit, best, worst = timed(
        lambda: ChatTemplate(NESTED, name="hostile", limits=analysis_limits).analysis, args.repeat
    )
    print(f"{'analysis of nested loops':<24} {limit:<17} {best:9.1f} {worst:9.1f} {worst - limit_ms:13.1f}")
    renders = {name: bundled_render_ms(name, args.repeat) for name in bundled_templates()}
    print(f"\nslowest bundled renders (one message; default timeout {DEFAULT_LIMITS.timeout:g} s)   best ms")
    for name in sorted(renders, key=renders.__getitem__, reverse=True)[:5]:
        print(f"  {name:<60} {renders[name]:9.2f}")


def bundled_render_ms(name: str, repeat: int) -> float:
    tmpl = JinjaChatTemplate.load(name)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.suppress(TemplateError):  # some templates insist on other inputs
            tmpl.render(USER, add_generation_prompt=True)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


if __name__ == "__main__":
    main()
