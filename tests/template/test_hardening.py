"""Hostile templates: every failure is a TemplateError naming the template (and line), and nothing hangs.

Templates come from model hubs and are untrusted. Each test below is one way a template used to escape as a raw
Python exception, or to hang, and checks that it now fails fast with a ``TemplateError``. Time limits that should
fire are set small so the suite stays quick; the others are generous. No test asserts how long anything took (a
loaded machine would fail it): a bounded render is checked by the limit it reports (``RenderLimitError.limit``);
bench/limits_bench.py times them.
"""

from __future__ import annotations

import concurrent.futures
import types
from typing import Any

import pytest
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from autoparser import ChatTemplate
from autoparser.errors import RenderLimitError, TemplateDecodeError, TemplateError
from autoparser.template import DEFAULT_LIMITS, JinjaChatTemplate, RenderLimits, bundled_templates, probing
from autoparser.template.environment import GenerationBlock, compile_template
from autoparser.template.probing import ProbeRenderer

USER = [{"role": "user", "content": "Hey"}]
# Tests that expect a render to time out set a small limit (RenderLimits(timeout=0.2)); the others render under a
# generous one, so that a slow machine cannot turn the error they expect into a timeout.
LIMITS = RenderLimits(timeout=30.0, max_output=100_000)

NESTED_RANGES = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
# 10^8 silent iterations (seconds of work, far past a 0.3 s limit, on any machine): a render that returns instead
# of raising says the limit failed, where NESTED_RANGES (10^10) would hang the test.
LONG_BUT_FINITE = "{% for i in range(100000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"


def template(source: str, limits: RenderLimits = LIMITS) -> JinjaChatTemplate:
    return JinjaChatTemplate(source, name="hostile.jinja", limits=limits)


def failure(source: str, limits: RenderLimits = LIMITS, **context: Any) -> TemplateError:
    """Render ``source`` and return the TemplateError it raised (it must raise one)."""
    with pytest.raises(TemplateError) as info:
        template(source, limits).render(USER, **context)
    assert info.value.template == "hostile.jinja"
    assert str(info.value).startswith("template hostile.jinja")
    return info.value


# 1. Runaway recursion.


def test_recursive_macro_is_a_template_error_with_its_line() -> None:
    err = failure("{% macro f(n) %}\n{{ f(n + 1) }}\n{% endmacro %}\n{{ f(0) }}")
    assert not isinstance(err, RenderLimitError)
    assert "recursion" in err.reason
    assert err.line == 2


def test_exponential_recursion_hits_the_time_limit() -> None:
    source = "{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}\n{{ f(0) }}"
    err = failure(source, RenderLimits(timeout=0.2))
    assert isinstance(err, RenderLimitError) and err.limit == "timeout"
    assert err.line == 1


# 2. Huge numeric arguments: the sandbox caps range() with an OverflowError, which used to escape as is.


@pytest.mark.parametrize(
    "source",
    ["\n{{ range(10**9) | length }}", "\n{% for i in range(10**9) %}{% endfor %}", "\n{{ 2 ** 100000000 }}"],
)
def test_huge_numbers_are_template_errors(source: str) -> None:
    err = failure(source)
    assert "OverflowError" in err.reason
    assert err.line == 2


@pytest.mark.parametrize("source", ["{{ [1] | slice(10**9) | list }}", "{{ [1] | batch(10**9, 0) | list }}"])
def test_item_counts_taken_from_numbers_are_capped_like_range(source: str) -> None:
    assert "MAX_RANGE" in failure(source).reason


# 3. Nesting too deep to compile: Jinja's parser and code generator recurse, Python caps indentation and loops.


def _nested(open_: str, close: str, depth: int, middle: str = "x") -> str:
    return open_ * depth + middle + close * depth


@pytest.mark.parametrize(
    "source",
    [
        _nested("{% if true %}\n", "{% endif %}", 200),  # IndentationError from Python's compiler
        _nested("{% if true %}\n", "{% endif %}", 2000),  # RecursionError in Jinja's parser
        _nested("{% for i in [1] %}\n", "{% endfor %}", 25),  # "too many statically nested blocks"
        "{{ " + _nested("(", ")", 300, "1") + " }}",  # RecursionError in Jinja's expression parser
        "{{ 1" + "\n+ 1" * 1000 + " }}",  # RecursionError in Jinja's code generator (a left-deep tree)
    ],
    ids=["if-200", "if-2000", "for-25", "parens-300", "plus-1000"],
)
def test_nesting_too_deep_to_compile_is_a_syntax_error_with_a_line(source: str) -> None:
    tmpl = template(source)
    with pytest.raises(TemplateError, match="too deeply nested to compile") as info:
        tmpl.check_syntax()
    assert info.value.template == "hostile.jinja"
    assert info.value.line is not None and 1 <= info.value.line <= source.count("\n") + 1
    assert "too deeply nested" in failure(source).reason  # rendering reports it the same way


def test_nesting_error_points_at_the_deepest_line() -> None:
    source = _nested("{% if true %}\n", "{% endif %}", 200)
    err = failure(source)
    assert err.line is not None and err.line > 100


# 4. Memory: operations that turn a number into a huge allocation are refused before they allocate.


@pytest.mark.parametrize(
    "source",
    [
        "\n{{ 'x' * 10**10 }}",
        "\n{{ 10**10 * 'x' }}",
        "\n{{ [0] * 10**10 }}",
        "\n{{ 'x'.center(10**10) }}",
        "\n{{ 'x'.zfill(10**10) }}",
        "\n{{ 'x' | center(10**10) }}",
        "\n{{ ('a\\n' * 100) | indent(10**8) }}",
    ],
)
def test_huge_allocations_are_refused_before_they_happen(source: str) -> None:
    err = failure(source, DEFAULT_LIMITS)
    assert isinstance(err, RenderLimitError) and err.limit == "max_output"
    assert err.line == 2
    assert "max_output" in err.reason  # says how to raise it


@pytest.mark.parametrize(
    "source",
    [
        # doubling a string through {% set %}, a namespace, a macro argument, and a macro's reused output
        "{% set s = 'x' * 1000 %}" + "{% set s = s ~ s %}" * 8,
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}{{ d('x', 60) }}",
        "{% macro d(n) %}{% if n %}{% for i in [1, 2] %}{{ d(n - 1) }}{% endfor %}{% else %}{{ 'x' * 1000 }}{% endif %}"
        "{% endmacro %}{% set s = d(40) %}",
        "{% with s = 'x' * 60000 %}{% with t = s ~ s %}{% endwith %}{% endwith %}",
        "{% set s = 'x' * 60000 %}{% set t %}{{ s }}{{ s }}{% endset %}",
    ],
    ids=["set", "namespace", "macro-argument", "macro-output", "with", "set-block"],
)
def test_values_cannot_grow_past_the_size_limit(source: str) -> None:
    err = failure(source, RenderLimits(timeout=10, max_output=100_000))
    assert isinstance(err, RenderLimitError) and err.limit == "max_output"
    assert err.line == 1


# 5. Template files that are not UTF-8, or do not exist.


def test_non_utf8_file_is_a_template_error_naming_file_and_line(tmp_path: Any) -> None:
    path = tmp_path / "latin1.jinja"
    path.write_bytes("{{ messages[0].content }}\nCaf\u00e9\n".encode("latin-1"))
    with pytest.raises(TemplateError, match=r"latin1\.jinja, line 2: not valid UTF-8") as info:
        JinjaChatTemplate.from_file(path)
    err = info.value
    assert isinstance(err, TemplateDecodeError) and err.template == "latin1.jinja" and err.line == 2
    # Still a UnicodeDecodeError for callers that handled the old exception (the CLI does).
    assert isinstance(err, UnicodeDecodeError) and err.start == 29 and err.encoding == "utf-8"


def test_missing_file_is_an_os_error(tmp_path: Any) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.jinja"):
        JinjaChatTemplate.from_file(tmp_path / "missing.jinja")


# 6. Render time and output size are bounded.


@pytest.mark.parametrize(
    "source",
    [
        NESTED_RANGES,
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # no output at all
        "{% set r = range(100000) | list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}",
        "{% set r = range(1000) | list %}{% for i in r %}{% for j in r %}{% for k in r %}{% endfor %}{% endfor %}"
        "{% endfor %}",  # nested small loops
        "{% for i in range(100000) | map('string') %}{% for j in range(100000) | select %}{% endfor %}{% endfor %}",
        "{% macro m() %}" + NESTED_RANGES + "{% endmacro %}{{ m() }}",  # output captured by a macro
    ],
    ids=["output", "silent", "list", "small-loops", "generators", "macro"],
)
def test_runaway_loops_hit_the_time_limit(source: str) -> None:
    err = failure("\n" + source, RenderLimits(timeout=0.2))
    assert isinstance(err, RenderLimitError) and err.limit == "timeout"
    assert err.line == 2
    assert "0.2 s" in err.reason and "RenderLimits(timeout=" in err.reason


def test_output_is_bounded() -> None:
    err = failure("\n" + NESTED_RANGES, RenderLimits(timeout=None, max_output=50_000))
    assert isinstance(err, RenderLimitError) and err.limit == "max_output"
    assert err.line == 2
    assert "the rendered text" in err.reason


def test_limits_are_configurable() -> None:
    assert RenderLimits(timeout=30.0, max_output=64 * 1024 * 1024, analysis_timeout=5.0) == DEFAULT_LIMITS
    assert JinjaChatTemplate("x").limits is DEFAULT_LIMITS
    source = "{% for i in range(5000) %}ab{% endfor %}"
    assert len(template(source, RenderLimits(max_output=10_000)).render(USER)) == 10_000
    assert failure(source, RenderLimits(max_output=9_999)).limit == "max_output"  # type: ignore[attr-defined]
    assert len(template(source, RenderLimits(timeout=None, max_output=None)).render(USER)) == 10_000
    tmpl = template(source, RenderLimits(max_output=10))
    tmpl.limits = RenderLimits()  # a plain attribute
    assert tmpl.render(USER).startswith("abab")
    assert JinjaChatTemplate.load("Qwen3-Coder", limits=LIMITS).limits is LIMITS
    with pytest.raises(ValueError, match="timeout"):
        RenderLimits(timeout=0)
    with pytest.raises(ValueError, match="max_output"):
        RenderLimits(max_output=-1)
    with pytest.raises(ValueError, match="analysis_timeout"):
        RenderLimits(analysis_timeout=0.0)


@pytest.mark.parametrize("name", bundled_templates())
def test_bundled_templates_render_far_below_the_default_limits(name: str) -> None:
    """Far below the size limit; their render times are in bench/limits_bench.py."""
    tmpl = JinjaChatTemplate.load(name, limits=RenderLimits(timeout=None, max_output=20_000))
    try:
        tmpl.render(USER, add_generation_prompt=True)
    except RenderLimitError:
        raise
    except TemplateError:
        pass  # some templates insist on other inputs; only the limits matter here


def test_limits_work_off_the_main_thread_and_per_render() -> None:
    """No signals: a worker thread can be stopped, and concurrent renders keep their own budgets."""
    hostile = template(LONG_BUT_FINITE, RenderLimits(timeout=0.3))
    normal = JinjaChatTemplate.load("Qwen3-Coder")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        slow = pool.submit(hostile.render, USER)
        fine = [pool.submit(normal.render, USER) for _ in range(20)]
        with pytest.raises(RenderLimitError) as info:
            slow.result()
        assert info.value.limit == "timeout"
        assert all(f.result().startswith("<|im_start|>user") for f in fine)


# Anything else a template raises is a TemplateError too — except KeyboardInterrupt and SystemExit.


class _Boom(Exception):
    pass


class _Gadget:
    def boom(self) -> None:
        raise _Boom("kaboom")

    def interrupt(self) -> None:
        raise KeyboardInterrupt


def test_any_exception_becomes_a_template_error() -> None:
    err = failure("ok\n{{ gadget.boom() }}", gadget=_Gadget())
    assert err.reason == "_Boom: kaboom" and err.line == 2
    assert isinstance(err.__cause__, _Boom)


def test_keyboard_interrupt_is_not_swallowed() -> None:
    with pytest.raises(KeyboardInterrupt):
        template("{{ gadget.interrupt() }}").render(USER, gadget=_Gadget())


def test_sandbox_security_errors_stay_template_errors() -> None:
    err = failure("\n{{ ''.__class__.__mro__[1].__subclasses__() }}")
    assert not isinstance(err, RenderLimitError) and err.line == 2


# Analysis renders a template many times: a hostile template must end it quickly, not once per render.


@pytest.mark.parametrize(
    ("limits", "exceeded"),
    [
        (RenderLimits(analysis_timeout=0.3), "analysis_timeout"),  # the default timeout is longer than the budget
        (RenderLimits(timeout=0.2, analysis_timeout=None), "timeout"),  # each probe render is bounded too
    ],
)
def test_analysis_of_a_hostile_template_raises_instead_of_hanging(limits: RenderLimits, exceeded: str) -> None:
    with pytest.raises(RenderLimitError) as info:
        _ = ChatTemplate(NESTED_RANGES, name="hostile.jinja", limits=limits).analysis
    assert info.value.template == "hostile.jinja" and info.value.limit == exceeded
    assert f"RenderLimits({exceeded}=" in info.value.reason


def test_analysis_renders_share_one_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A template that is merely slow on every probe cannot make analysis take one timeout per render: the budget
    is counted from the renderer's creation (on a clock the test moves, not the machine's)."""
    now = [1000.0]
    monkeypatch.setattr(probing, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    probe = ProbeRenderer(template("{{ messages[0].content }}", RenderLimits(analysis_timeout=5.0)))
    assert probe.render(USER) == "Hey"
    now[0] += 4.0  # earlier renders used most of the budget: the next one still runs
    assert probe.render([{"role": "user", "content": "second"}]) == "second"
    now[0] += 1.5  # and then all of it
    with pytest.raises(RenderLimitError, match=r"analysis took longer than its time limit of 5 s") as info:
        probe.render([{"role": "user", "content": "other"}])
    assert info.value.limit == "analysis_timeout"
    assert probe.render(USER) == "Hey"  # a memoized probe costs nothing and still answers


# The guards must not change what a template renders.

EQUIVALENCE = [
    "{% for m in messages %}{{ loop.index }}{{ m.role }}{% if loop.last %}!{% endif %}{% endfor %}",
    "{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }}{{ ',' if not loop.last }}{% endfor %}",
    "{% for x in [3, 1, 2] | sort if x > 1 %}{{ x }}{% else %}none{% endfor %}",
    "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}{% for c in 'abc' %}{{ c }}{% endfor %}",
    "{% for n in [{'c': [{'c': []}]}] recursive %}<{{ loop(n.c) }}>{% endfor %}",
    "{% for x in range(3000) %}{% if x % 1000 == 0 %}{{ x }}{% endif %}{% endfor %}",
    "{% set a, b = 1, 2 %}{% set s = 'x' ~ a %}{% set t %}[{{ s }}]{% endset %}{% set u | upper %}q{% endset %}"
    "{{ a }}{{ b }}{{ s }}{{ t }}{{ u }}",
    "{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
    "{% macro m(a, b='d') %}{{ a }}{{ b }}{{ caller() if caller }}{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}"
    "{% call m(4) %}in{% endcall %}{% call(x) m(5) %}{{ x }}{% endcall %}",
    "{% with a = 1, b = 'two' %}{{ a }}{{ b }}{% endwith %}",
    "{% macro m(x) %}{% set x = x ~ 'a' %}{{ x }}{% endmacro %}{{ m('b') }}"
    "{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, a=2) }}",
    "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}"
    "{% endfor %}{% set j = ['a', 'b'] | join('-') %}{{ j }}",
    "{{ '-' * 3 }}{{ 3 * 'ab' }}{{ [1] * 2 }}{{ 2 ** 10 }}{{ 2 * 3 }}{{ 1.5 * 2 }}",
    "{{ 'x'.center(5) }}|{{ 'x' | center(5) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a'.ljust(3) }}|",
    "{{ [1, 2, 3] | batch(2) | list }}{{ [1, 2, 3] | slice(2) | list }}{{ 'ab'.zfill(4) }}",
    "{{ messages | map(attribute='role') | join(',') }}{{ messages[0].content.upper() }}{{ 'a b'.split() }}",
    "{% filter upper %}up{% endfilter %}{{ range(3) }}{{ 'a{}c'.format('b') }}",
]


def _plain_environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols]
    )


@pytest.mark.parametrize("source", EQUIVALENCE)
def test_guards_do_not_change_the_output(source: str) -> None:
    context = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    expected = _plain_environment().from_string(source).render(context)
    assert JinjaChatTemplate(source).render_context(context) == expected
    assert compile_template(source).render(context) == expected  # outside a bounded render too
