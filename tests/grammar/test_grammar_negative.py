"""Grammars reject what a model must not write, on every tool-calling template.

The call syntax comes from the template itself (a rendered assistant turn with a tool call). Valid calls must be
accepted; a call to an unknown tool, a missing required argument, a wrong argument type, an enum violation and
unbalanced JSON must be rejected — checked with llguidance (GBNF and Lark) and with the strict GBNF recognizer.
Formats whose tool-call history cannot be rendered have the same checks in their own test module.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.analysis.formats import GENERIC
from autoparser.analysis.model import ToolFormatMode
from autoparser.check.cases import CaseSet

from ..support.grammar_check import all_accept, all_reject, verdicts
from ..support.helpers import WEATHER_SCHEMA, WEATHER_TOOL, function_tool, rendered_call
from ..support.sample import sampled

USER = [{"role": "user", "content": "Weather?"}]
CALL_ID = "call00001"  # Mistral templates insist on 9 alphanumerics
TOOLS = [WEATHER_TOOL]


def _render_call(tmpl: ChatTemplate, name: str, arguments: dict[str, Any]) -> str | None:
    """What the model writes for this call: the template's own rendering of it (see ``rendered_call``), or, where
    the rendered history does not continue the prompt, what ``autoparser check`` cuts out of the rendered turn (the
    header the prompt wrote left out, a reasoning block it opened closed first); for command-r-plus (its
    instructions follow the whole history), the call as its template writes it."""
    if tmpl.name.startswith("CohereForAI-c4ai-command-r-plus"):
        parameters = json.dumps(arguments, indent=4).replace("\n", "\n        ")
        call_object = f'{{\n        "tool_name": "{name}",\n        "parameters": {parameters}\n    }}'
        return f"\nAction:\n```json\n[\n    {call_object}\n]```"
    output = rendered_call(tmpl, USER, TOOLS, name, arguments, call_id=CALL_ID)
    if output is not None:
        return output
    # The check's own rendering of the turn: the header the prompt wrote cut off, a block it opened closed first.
    text = CaseSet(tmpl, USER, TOOLS).render_calls([(name, arguments)])
    if text is None:
        return None
    values = [json.dumps(v) if not isinstance(v, str) else v for v in arguments.values()]
    return text if name in text and all(v in text for v in values) else None


@functools.cache
def _writes_calls(name: str) -> bool:
    """Whether the template has tool calls and its tool-call history renders (its call syntax is then known)."""
    tmpl = ChatTemplate.load(name)
    analysis = tmpl.analysis
    if analysis.format == GENERIC and analysis.tools.format.mode is ToolFormatMode.NONE:
        return False
    return _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2}) is not None


def _templates(names: Iterable[str]) -> list[Any]:
    """The templates of ``names`` with tool calls whose tool-call history renders."""
    return [pytest.param(name, id=name) for name in names if _writes_calls(name)]


TEMPLATES = _templates(sampled())  # the per-template cases (the sample's templates: tests/support/sample.py)


def test_enough_templates() -> None:
    assert len(_templates(bundled_templates())) >= 20


@pytest.mark.parametrize("name", TEMPLATES)
def test_valid_call_is_accepted(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False)
    output = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert output is not None
    assert all_accept(chat, output), verdicts(chat, output)


@pytest.mark.parametrize(
    ("label", "tool", "arguments"),
    [
        ("unknown tool", "launch_rocket", {"city": "Paris", "days": 2}),
        ("missing required", "get_weather", {"city": "Paris"}),
        ("wrong type", "get_weather", {"city": "Paris", "days": "two"}),
        ("enum violation", "get_weather", {"city": "Berlin", "days": 2}),
    ],
)
@pytest.mark.parametrize("name", TEMPLATES)
def test_invalid_call_is_rejected(name: str, label: str, tool: str, arguments: dict[str, Any]) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    output = _render_call(tmpl, tool, arguments)
    assert output is not None
    assert all_reject(chat, output), (label, verdicts(chat, output))


@pytest.mark.parametrize("name", TEMPLATES)
def test_unbalanced_json_is_rejected(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    output = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert output is not None
    if tmpl.analysis.tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED:
        broken = re.sub(r"(?<![0-9])2(?![0-9])", "[2", output, count=1)  # a JSON-valued argument left open
    else:
        last = output.rfind("}")
        broken = output[:last] + output[last + 1 :]  # the arguments object is never closed
    assert broken != output
    assert all_reject(chat, broken), verdicts(chat, broken)


@pytest.mark.parametrize("name", ["Qwen3.5-4B", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "moonshotai-Kimi-K2"])
def test_tools_whose_names_sanitize_alike_stay_apart(name: str) -> None:
    """``do_it`` and ``do-it`` are different tools even where rule names allow only one spelling."""
    tmpl = ChatTemplate.load(name)
    tools = [function_tool(n, WEATHER_SCHEMA) for n in ("do_it", "do-it")]
    chat = tmpl.apply(USER, tools=tools, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    for tool in ("do_it", "do-it"):
        output = rendered_call(tmpl, USER, tools, tool, {"city": "Paris", "days": 2})
        assert output is not None
        assert all_accept(chat, output), verdicts(chat, output)
    output = rendered_call(tmpl, USER, tools, "do_it", {"city": "Paris", "days": 2})
    assert output is not None
    assert all_reject(chat, output.replace("do_it", "do.it")), "a name neither tool has"


def _reasoning_templates() -> list[Any]:
    return [
        t
        for t in TEMPLATES
        if ChatTemplate.load(t.values[0]).analysis.format == GENERIC
        and ChatTemplate.load(t.values[0]).analysis.reasoning.end.strip()
    ]


@pytest.mark.parametrize("name", _reasoning_templates())
def test_required_grammar_accepts_reasoning_that_mentions_the_trigger(name: str) -> None:
    """With tool_choice required the output may reason first, and reasoning may quote the call marker."""
    tmpl = ChatTemplate.load(name)
    reasoning = tmpl.analysis.reasoning
    start, end = reasoning.start.strip(), reasoning.end.strip()
    words = [
        t.value
        for t in tmpl.apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False).grammar_triggers
        if t.type == "word"
    ]
    chat = tmpl.apply(USER, tools=TOOLS, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    call = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert call is not None
    if start and call.lstrip().startswith(start):  # the template renders an (empty) reasoning block of its own
        call = call[call.index(end) + len(end) :].lstrip()
    if end and end in call:  # the rendered turn closes the block the prompt opened: the thought below does
        call = call[call.index(end) + len(end) :].lstrip()
    opened = bool(start) and chat.generation_prompt.rstrip().endswith(start)
    thought = ("" if opened else start) + f"I could write {words[0] if words else '{'} now." + end + "\n"
    if start or opened:
        assert all_accept(chat, thought + call), verdicts(chat, thought + call)
        return
    # Reasoning with only an end marker (Apriel 1.5's "[BEGIN FINAL RESPONSE]") is unmarked text until that end:
    # llguidance's greedy lexemes end it at the quoted trigger (see tests/support/llg.py), so the strict
    # recognizer judges the quote; llguidance must still take reasoning that does not quote the trigger.
    assert verdicts(chat, thought + call)["strict-gbnf"]
    plain = "I could call a tool now." + end + "\n"
    assert all_accept(chat, plain + call), verdicts(chat, plain + call)


@pytest.mark.parametrize("name", ["Qwen3-Coder", "Qwen3.5-4B", "deepseek-ai-DeepSeek-V3.2"])
def test_a_tool_named_like_a_grammar_rule_and_mixed_schemas(name: str) -> None:
    """A tool called ``call`` and a parameter that is a string or an integer (``anyOf``) build and work."""
    tmpl = ChatTemplate.load(name)
    schema = {
        "type": "object",
        "properties": {"to": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}]}},
        "required": ["to"],
    }
    tools = [function_tool("call", schema)]
    chat = tmpl.apply(USER, tools=tools, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    for good in ("Alice", 42):
        output = rendered_call(tmpl, USER, tools, "call", {"to": good})
        assert output is not None
        assert all_accept(chat, output), verdicts(chat, output)
    output = rendered_call(tmpl, USER, tools, "call", {"to": "Bartholomew"})
    assert output is not None
    assert all_reject(chat, output), "a string longer than maxLength"
