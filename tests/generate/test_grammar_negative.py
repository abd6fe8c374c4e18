"""Grammars reject what a model must not write, on every generic tool-calling template.

The call syntax comes from the template itself (a rendered assistant turn with a tool call). Valid calls must be
accepted; a call to an unknown tool, a missing required argument, a wrong argument type, an enum violation and
unbalanced JSON must be rejected — checked with llguidance and with the strict GBNF recognizer.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.analysis.model import ToolFormatMode

from ..support import llg
from ..support.gbnf_recognizer import accepts
from .helpers import rendered_call

USER = [{"role": "user", "content": "Weather?"}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": SCHEMA}}]


def _render_call(tmpl: ChatTemplate, name: str, arguments: dict[str, Any]) -> str | None:
    return rendered_call(tmpl, USER, TOOLS, name, arguments)


def _templates() -> list[Any]:
    selected = []
    for name in bundled_templates():
        tmpl = ChatTemplate.load(name)
        analysis = tmpl.analysis
        if analysis.format != "generic" or analysis.tools.format.mode is ToolFormatMode.NONE:
            continue
        if _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2}) is not None:
            selected.append(pytest.param(name, id=name))
    return selected


TEMPLATES = _templates()


def _constrained(chat: ChatParams, output: str) -> str:
    text = chat.generation_prompt + output
    if not chat.grammar_lazy:
        return text
    positions = []
    for trigger in chat.grammar_triggers:
        if trigger.type == "word":
            found = text.find(trigger.value, len(chat.generation_prompt))
        else:
            match = re.compile(trigger.value).search(text, len(chat.generation_prompt))
            found = (match.start(1) if match.groups() else match.start()) if match else -1
        if found >= 0:
            positions.append(found)
    return text[min(positions) :] if positions else ""


def _accepted(chat: ChatParams, output: str) -> tuple[bool, bool]:
    text = _constrained(chat, output)
    assert chat.grammar is not None
    if not text:
        return False, False  # the grammar would not even switch on: nothing constrained, nothing accepted
    return accepts(chat.grammar, text), llg.gbnf_accepts(chat.grammar, text)


def test_enough_templates() -> None:
    assert len(TEMPLATES) >= 20


@pytest.mark.parametrize("name", TEMPLATES)
def test_valid_call_is_accepted(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS)
    output = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert output is not None
    assert _accepted(chat, output) == (True, True)


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
    chat = tmpl.apply(USER, tools=TOOLS, tool_choice="required")
    output = _render_call(tmpl, tool, arguments)
    assert output is not None
    assert _accepted(chat, output) == (False, False), label


@pytest.mark.parametrize("name", TEMPLATES)
def test_unbalanced_json_is_rejected(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS, tool_choice="required")
    output = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert output is not None
    if tmpl.analysis.tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED:
        broken = re.sub(r"(?<![0-9])2(?![0-9])", "[2", output, count=1)  # a JSON-valued argument left open
    else:
        last = output.rfind("}")
        broken = output[:last] + output[last + 1 :]  # the arguments object is never closed
    assert broken != output
    assert _accepted(chat, broken) == (False, False)
