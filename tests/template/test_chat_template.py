"""JinjaChatTemplate rendering: HF-compatible environment, sandboxing, clear errors, bundled templates.

Byte-parity against transformers' own renderer across all templates is the next step (issue 3).
"""

from __future__ import annotations

import hashlib
from importlib import resources

import pytest

from autoparser.errors import TemplateError
from autoparser.template import JinjaChatTemplate, bundled_templates

USER = [{"role": "user", "content": "Hey"}]


def render(source: str, **kwargs: object) -> str:
    return JinjaChatTemplate(source, name="t.jinja").render(USER, **kwargs)  # type: ignore[arg-type]


def test_all_134_templates_are_bundled() -> None:
    names = bundled_templates()
    assert len(names) == 134 and "Qwen3-Coder" in names
    # the second collection (templates/SOURCES-more.md) is bundled too
    assert {"MiniMax-M3", "openbmb-MiniCPM3-4B", "meta-llama-Llama-4-Scout-17B-16E-Instruct"} <= set(names)
    # and every template the third one lists (templates/SOURCES-wild.md), byte-exact by its checksum prefix
    sources = resources.files("autoparser.templates").joinpath("SOURCES-wild.md").read_text(encoding="utf-8")
    rows = [line.split("|") for line in sources.splitlines() if line.startswith("| ") and ".jinja" in line]
    assert len(rows) == 59
    for row in rows:
        name, digest = row[1].strip().removesuffix(".jinja"), row[7].strip()
        data = resources.files("autoparser.templates").joinpath(f"{name}.jinja").read_bytes()
        assert hashlib.sha256(data).hexdigest().startswith(digest), name
    assert JinjaChatTemplate.load("Qwen3-Coder.jinja").name == "Qwen3-Coder.jinja"
    with pytest.raises(KeyError, match="no bundled template"):
        JinjaChatTemplate.load("nope")


def test_qwen3_coder_generation_prompt() -> None:
    out = JinjaChatTemplate.load("Qwen3-Coder").render(USER, add_generation_prompt=True)
    assert out == "<|im_start|>user\nHey<|im_end|>\n<|im_start|>assistant\n"


def test_enable_thinking_reaches_the_template() -> None:
    tmpl = JinjaChatTemplate.load("Qwen-Qwen3-0.6B")
    off = tmpl.render(USER, add_generation_prompt=True, enable_thinking=False)
    on = tmpl.render(USER, add_generation_prompt=True, enable_thinking=True)
    assert off.endswith("<think>\n\n</think>\n\n") and not on.endswith("</think>\n\n")


def test_trim_and_lstrip_blocks_and_loopcontrols() -> None:
    source = "{% for m in messages %}\n  {% if loop.index > 1 %}{% break %}{% endif %}\n[{{ m.content }}]\n{% endfor %}"
    assert render(source) == "[Hey]\n"


def test_tojson_keeps_order_and_unicode_without_html_escaping() -> None:
    source = (
        "{{ {'z': '<b>é</b>', 'a': 1} | tojson }}|{{ [1] | tojson(indent=2) }}"
        "|{{ {'a': 1} | tojson(separators=(',', ':')) }}"
    )
    assert render(source) == '{"z": "<b>é</b>", "a": 1}|[\n  1\n]|{"a":1}'


def test_generation_block_and_helpers() -> None:
    assert render("{% generation %}x{% endgeneration %}y") == "xy"
    assert len(render("{{ strftime_now('%Y') }}")) == 4
    assert render("{% set ns = namespace(n=1) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{{ dict(a=1)['a'] }}") == "21"


def test_reasoning_is_visible_under_every_name() -> None:
    source = "{% for m in messages %}{{ m.reasoning_content }}/{{ m.thinking }};{% endfor %}"
    out = JinjaChatTemplate(source).render([{"role": "assistant", "content": "", "reasoning": "r"}])
    assert out == "r/r;"


def test_messages_are_not_mutated() -> None:
    messages = [{"role": "assistant", "content": "x", "reasoning_content": "r"}]
    JinjaChatTemplate("{{ messages[0].content }}").render(messages)
    assert messages == [{"role": "assistant", "content": "x", "reasoning_content": "r"}]


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ messages.append(1) }}",
        "{% set ns = namespace(_x=1) %}",
    ],
)
def test_sandbox_blocks_escapes(source: str) -> None:
    with pytest.raises(TemplateError):
        render(source)


def test_errors_name_the_template_and_line() -> None:
    with pytest.raises(TemplateError, match=r"t\.jinja, line 3: .*bad role") as info:
        render("a\nb\n{{ raise_exception('bad role') }}")
    assert info.value.line == 3
    with pytest.raises(TemplateError, match=r"t\.jinja, line 2: syntax error"):
        render("ok\n{% if %}")
    with pytest.raises(TemplateError, match="line 1"):
        render("{{ 1 / 0 }}")
