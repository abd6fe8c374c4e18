"""Functionary v3.2 (``functionary-v3.2``) grammar: blocks ``>>>RECIPIENT\\n``, where ``all`` is text and a tool
name is a call whose block is its JSON arguments.

The generation prompt ends with the first ``>>>``, so the first recipient starts the output; the triggers fire on a
known tool name followed by a line break (after ``>>>`` or at the start of the output), never on ``>>>`` in text.
The template renders tool-call history, so the shared negative test covers unknown tools, missing arguments, wrong
types, enum violations and unbalanced JSON; this module checks triggers and request shapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from ..support.grammar_check import all_accept, all_reject, output_only_start, trigger_position, verdicts
from ..support.helpers import WEATHER_TOOL, calls_of, function_tool

TEMPLATE = "meetkai-functionary-medium-v3.2"
USER = [{"role": "user", "content": "Weather?"}]
TOOLS = [WEATHER_TOOL, function_tool("get")]
PARIS = {"city": "Paris", "days": 2}
TOKYO = {"city": "Tokyo", "days": 3}


def chat(tool_choice: str = "auto", **kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": TOOLS, "tool_choice": tool_choice}
    options.update(kwargs)
    return ChatTemplate.load(TEMPLATE).apply(USER, **options)


def call(name: str, args: dict[str, Any]) -> str:
    """A call block after its ``>>>``, as the template renders it."""
    return f"{name}\n{json.dumps(args)}"


def test_format_is_dedicated() -> None:
    params = chat()
    assert params.format == "functionary-v3.2"
    assert params.generation_prompt.endswith(">>>")
    assert params.preserved_tokens == (">>>all",)


@pytest.mark.parametrize(
    ("output", "start"),
    [
        (call("get_weather", PARIS), 0),
        (call("get", {}), 0),  # a name that prefixes another name
        ("all\nLet me check.>>>" + call("get_weather", PARIS), len("all\nLet me check.>>>")),
        ("all\nThe shell prompt is >>> here.\n>>>" + call("get", {}), len("all\nThe shell prompt is >>> here.\n>>>")),
    ],
)
def test_trigger_fires_at_the_name_of_a_call(output: str, start: int) -> None:
    params = chat()
    gp = params.generation_prompt
    assert params.grammar_lazy and {t.type for t in params.grammar_triggers} == {"pattern"}
    assert trigger_position(params, gp + output) == len(gp) + start
    assert output_only_start(params, output) == start  # engines without the generation prompt in their buffer
    assert all_accept(params, output), verdicts(params, output)
    assert [name for name, _ in calls_of(params.parse(output))] == [output[start:].split("\n")[0]]


@pytest.mark.parametrize(
    "output",
    [
        "all\nHello, world!",
        "all\nIn Python:\n>>> print(get_weather)\n>>>get_weather(city)",  # REPL prompts in ordinary text
        "all\nCall >>>get_weather with a city.",  # a name not followed by a line break
        "launch_rocket\n{}",  # not one of the request's tools: the grammar could not accept it
    ],
)
def test_trigger_does_not_fire_on_content_or_unknown_recipients(output: str) -> None:
    params = chat()
    assert trigger_position(params, params.generation_prompt + output) == -1
    assert output_only_start(params, output) == -1


@pytest.mark.parametrize(
    ("label", "output"),
    [
        ("missing required", call("get_weather", {"city": "Paris"})),
        ("wrong type", call("get_weather", {"city": "Paris", "days": "two"})),
        ("enum violation", call("get_weather", {"city": "Berlin", "days": 2})),
        ("unbalanced JSON", call("get_weather", PARIS)[:-1]),
        ("text after the call", call("get", {}) + " Done."),
        ("text block after the call", call("get", {}) + ">>>all\nDone."),
    ],
)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_grammar_rejects_an_invalid_call(tool_choice: str, label: str, output: str) -> None:
    params = chat(tool_choice)
    if params.grammar_lazy:
        assert trigger_position(params, params.generation_prompt + output) >= 0, label  # it does constrain
    assert all_reject(params, output), (label, verdicts(params, output))


def test_required_accepts_text_before_the_call() -> None:
    params = chat("required")
    assert not params.grammar_lazy
    for output in (
        call("get_weather", PARIS),
        call("get", {}) + "\n",
        "all\nLet me check.>>>" + call("get_weather", PARIS),
        "all\n>>>" + call("get", {}),
    ):
        assert all_accept(params, output), (output, verdicts(params, output))
    assert all_reject(params, "all\nIt is sunny.")
    assert all_reject(params, "launch_rocket\n{}")


def test_parallel_calls_only_when_enabled() -> None:
    output = call("get_weather", PARIS) + ">>>" + call("get_weather", TOKYO) + ">>>" + call("get", {})
    for tool_choice in ("auto", "required"):
        parallel = chat(tool_choice, parallel_tool_calls=True)
        single = chat(tool_choice, parallel_tool_calls=False)
        assert all_accept(parallel, output), verdicts(parallel, output)
        assert all_reject(single, output), verdicts(single, output)
        assert all_accept(single, call("get_weather", PARIS))


def test_no_grammar_without_tools_or_with_tool_choice_none() -> None:
    for params in (chat("none"), chat(tools=None)):
        assert params.grammar is None and not params.grammar_triggers
        assert (params.thinking_start_tag, params.thinking_end_tag) == ("", "")


@pytest.mark.parametrize("output", ['all\n{"temp": 21}', 'all\n```json\n{"temp": 21}\n```\n'])
def test_json_schema_answer_is_the_text_block(output: str) -> None:
    schema = {"type": "object", "properties": {"temp": {"type": "integer"}}, "required": ["temp"]}
    params = ChatTemplate.load(TEMPLATE).apply(USER, json_schema=schema)
    assert params.grammar is not None and not params.grammar_lazy
    assert all_accept(params, output), verdicts(params, output)
    assert all_reject(params, output.replace("21", '"warm"'))
    assert all_reject(params, output.removeprefix("all\n"))
