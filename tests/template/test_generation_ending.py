"""One render per request where the generation prompt is a known ending: ``apply()`` renders the prompt with the
generation prompt and takes the one without it as that less the ending seen before for the same values of the
variables the template's final ``{% if add_generation_prompt %}`` block reads (:func:`.scan.generation_tail`).
The prompts must be the two renders' exactly, and the scan must refuse every template whose ending could depend on
anything else."""

from __future__ import annotations

from typing import Any

import jinja2
import pytest

import autoparser.api
from autoparser import ChatTemplate
from autoparser.cache import clear_caches
from autoparser.errors import AutoparserError
from autoparser.template import JinjaChatTemplate
from autoparser.template.environment import generation_variables, make_environment
from autoparser.template.scan import generation_tail, walk_tree
from tests.support.sample import sampled

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CONVERSATIONS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
    ],
    [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": "A greeting."},
        {"role": "user", "content": "Bye"},
    ],
]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"enable_thinking": True},
    {"enable_thinking": False},
    {"tools": [TOOL]},
    {"tools": [TOOL], "enable_thinking": False},
    {"reasoning_effort": "high"},
    {"add_generation_prompt": False},
]


def _tail(source: str) -> tuple[str, ...] | None:
    tree = jinja2.parser.Parser(make_environment(), source).parse()
    return generation_tail(tree, walk_tree(tree))


def _prompts(template: ChatTemplate, messages: list[dict[str, Any]], options: dict[str, Any]) -> tuple[str, str]:
    try:
        params = template.apply(messages, **options)
    except AutoparserError as err:
        return ("error", str(err))
    return params.prompt, params.generation_prompt


@pytest.mark.parametrize("name", sampled())
def test_one_render_gives_the_two_renders_prompts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    template = ChatTemplate.load(name)
    cases = [(messages, options) for messages in CONVERSATIONS for options in OPTIONS]
    clear_caches()
    first = [_prompts(template, m, o) for m, o in cases]  # (the endings seen)
    renders = 0
    render = JinjaChatTemplate.render

    def counted(*args: Any, **kwargs: Any) -> str:
        nonlocal renders
        renders += 1
        return render(*args, **kwargs)

    monkeypatch.setattr(JinjaChatTemplate, "render", counted)
    again = [_prompts(template, m, o) for m, o in cases]  # (one render each, where the template allows)
    single = renders
    monkeypatch.setattr(autoparser.api, "generation_variables", lambda source: None)
    clear_caches()
    renders = 0
    both = [_prompts(template, m, o) for m, o in cases]
    assert again == first == both
    if generation_variables(template.source) is not None and any(p != "error" for p, _ in both):
        assert single < renders  # the single render was taken


@pytest.mark.parametrize(
    "name",
    ["Qwen3.5-4B", "Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407"],
)
def test_well_known_templates_render_once(name: str) -> None:
    assert generation_variables(ChatTemplate.load(name).source) is not None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{% for m in messages %}{{ m.content }}{% endfor %}", ()),
        ("{{ messages[0].content }}{% if add_generation_prompt %}<a>{% endif %}", ()),
        ("{{ messages[0].content }}{%- if add_generation_prompt %}<a>{% if t %}<t>{% endif %}{% endif %}\n", ("t",)),
        ("{% if add_generation_prompt %}{{ bos_token ~ (x | default('y')) }}{% endif %}", ("bos_token", "x")),
    ],
)
def test_endings_that_depend_on_plain_variables(source: str, expected: tuple[str, ...]) -> None:
    assert _tail(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        # reads the conversation, or what the template computed from it
        "{% if add_generation_prompt %}{{ messages[-1].role }}{% endif %}",
        "{% set ns = namespace(x=1) %}{% if add_generation_prompt %}{{ ns.x }}{% endif %}",
        "{% set t = messages | length %}{% if add_generation_prompt %}{{ t }}{% endif %}",
        "{% for m in messages %}{% endfor %}{% if add_generation_prompt %}{{ tools }}{% endif %}",
        # a call: a macro, a global that reads the clock
        "{% macro f() %}x{% endmacro %}{% if add_generation_prompt %}{{ f() }}{% endif %}",
        "{% if add_generation_prompt %}{{ strftime_now('%d') }}{% endif %}",
        # not the last statement, not alone, read elsewhere, an else branch, inside a loop
        "{% if add_generation_prompt %}<a>{% endif %}{{ messages[0].content }}",
        "{% if add_generation_prompt and x %}<a>{% endif %}",
        "{% if add_generation_prompt %}<a>{% endif %}{% if add_generation_prompt %}<b>{% endif %}",
        "{% if add_generation_prompt %}<a>{% else %}<b>{% endif %}",
        "{% for m in messages %}{% if add_generation_prompt %}<a>{% endif %}{% endfor %}",
        "{% set add_generation_prompt = true %}{% if add_generation_prompt %}<a>{% endif %}",
    ],
)
def test_endings_that_may_depend_on_more_are_refused(source: str) -> None:
    assert _tail(source) is None


def test_each_value_of_a_read_variable_has_its_own_ending() -> None:
    # Each ending but the first is another one with something before it: a stale ending would still match the end
    # of the prompt, and give a wrong prompt without it (and a wrong generation prompt)
    source = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}"
        "{% if mode is sameas true %}T1{% elif mode %}{{ mode }}{% endif %}<assistant>{% endif %}"
    )
    template = ChatTemplate(source, name="modes.jinja")
    messages = [{"role": "user", "content": "Hi"}]
    clear_caches()
    for _ in range(2):  # the second round takes the endings the first saw
        seen = {
            repr(mode): template.apply(messages, chat_template_kwargs={} if mode is None else {"mode": mode})
            for mode in (None, 1, True, "x", 1.0)
        }
        # (True == 1 == 1.0, with the same hash, but each renders its own way: the endings are keyed by type too)
        assert {key: params.generation_prompt for key, params in seen.items()} == {
            "None": "<assistant>",
            "1": "1<assistant>",
            "True": "T1<assistant>",
            "'x'": "x<assistant>",
            "1.0": "1.0<assistant>",
        }
        assert [params.prompt for params in seen.values()] == [
            f"<user>Hi{ending}<assistant>" for ending in ("", "1", "T1", "x", "1.0")
        ]
