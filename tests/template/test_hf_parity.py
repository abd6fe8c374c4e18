"""Rendering parity with Hugging Face transformers' own chat-template renderer, on every bundled template.

For each template × conversation × add_generation_prompt × enable_thinking, our output must be
byte-identical to ``transformers.utils.chat_template_utils.render_jinja_template``; when transformers
raises (e.g. a tool_use template rendered without tools), we must raise ``TemplateError`` too.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest

from autoparser.errors import TemplateError
from autoparser.template import JinjaChatTemplate, bundled_templates

render_jinja_template = pytest.importorskip("transformers.utils.chat_template_utils").render_jinja_template

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
CALL = {"id": "call_0001", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}

# Older templates read tools in the flat legacy shape (Command-R+) or a `functions` variable (Firefunction v2).
LEGACY_TOOLS = [
    {
        **tool["function"],
        "parameter_definitions": {"city": {"type": "str", "description": "City name", "required": True}},
    }
    for tool in TOOLS
]
LEGACY_CONTEXT = {"functions": json.dumps([tool["function"] for tool in TOOLS], indent=2), "datetime": "Nov 21 2026"}

CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "plain": ([{"role": "user", "content": "Hey there!"}], None),
    "system": ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <b>é</b>"}], None),
    "tool-call": (
        [
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather", "content": "Sunny, 21°C"},
            {"role": "assistant", "content": "It is sunny."},
        ],
        TOOLS,
    ),
    "reasoning": (
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."},
            {"role": "user", "content": "And 3+3?"},
        ],
        None,
    ),
    "legacy-tools": ([{"role": "user", "content": "Weather in Zürich?"}], LEGACY_TOOLS),
}


def _hf(source: str, messages: list[dict[str, Any]], tools: Any, gen: bool, thinking: bool, **extra: Any) -> str:
    rendered, _ = render_jinja_template(
        conversations=[copy.deepcopy(messages)],
        tools=copy.deepcopy(tools),
        chat_template=source,
        add_generation_prompt=gen,
        bos_token="",
        eos_token="",
        enable_thinking=thinking,
        **extra,
    )
    return rendered[0]


@pytest.mark.parametrize("name", bundled_templates())
def test_rendering_matches_transformers(name: str) -> None:
    tmpl = JinjaChatTemplate.load(name)
    compared = 0
    for conv_name, (messages, tools) in CONVERSATIONS.items():
        for gen in (False, True):
            for thinking in (False, True):
                label = f"{conv_name} gen={gen} thinking={thinking}"
                extra = LEGACY_CONTEXT if conv_name == "legacy-tools" else {}
                try:
                    expected = _hf(tmpl.source, messages, tools, gen, thinking, **extra)
                except Exception as err:  # transformers refused: so must we
                    if "generator is not JSON serializable" in str(err):
                        # Deliberate: `x | map(...) | tojson` is a list for us (templates written for other Jinja
                        # engines expect that); transformers cannot serialise Jinja2's lazy map at all.
                        with contextlib.suppress(TemplateError):  # may still fail later, on other grounds
                            tmpl.render(messages, tools, add_generation_prompt=gen, enable_thinking=thinking, **extra)
                        continue
                    with pytest.raises(TemplateError):
                        tmpl.render(messages, tools, add_generation_prompt=gen, enable_thinking=thinking, **extra)
                    continue
                got = tmpl.render(messages, tools, add_generation_prompt=gen, enable_thinking=thinking, **extra)
                assert got == expected, label
                compared += 1
    assert compared > 0, "transformers rendered nothing for this template"
