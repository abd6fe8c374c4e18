"""What of a serving stack's request shapes the parser (integrations/shape.py), on plain objects with the fields
vLLM's and SGLang's requests share."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from autoparser import ChatTemplate
from autoparser.integrations.shape import generation_prompt, reply_params, request_shape, template_kwargs

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}


class Model:
    """A pydantic-like value: shape.py reads ``model_dump(exclude_none=True)``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if v is not None or not exclude_none}


def test_a_named_tool_choice_requires_that_tool_only() -> None:
    choice = Model({"type": "function", "function": {"name": "get_time"}})
    request = SimpleNamespace(tools=[Model(WEATHER), Model(TIME)], tool_choice=choice, parallel_tool_calls=False)
    assert request_shape(request) == {"tools": [TIME], "tool_choice": "required", "parallel_tool_calls": False}


def test_without_a_request_the_tools_decide_the_choice() -> None:
    assert request_shape(None, [WEATHER])["tool_choice"] == "auto"
    assert request_shape(None) == {"tools": [], "tool_choice": "none", "parallel_tool_calls": True}


def test_template_kwargs_keep_the_switches_only() -> None:
    kwargs = template_kwargs({"enable_thinking": False, "tools": [], "x": None}, {"reasoning_effort": "low"})
    assert kwargs == {"enable_thinking": False, "reasoning_effort": "low"}


def test_the_reply_parser_follows_the_thinking_switch() -> None:
    template = ChatTemplate.load("Qwen3.5-4B")
    shape = request_shape(None, [WEATHER])
    off = reply_params(template, shape, {"enable_thinking": False})
    assert off.generation_prompt == generation_prompt(template, {"enable_thinking": False})
    assert off.parse("The answer.").content == "The answer."
    on = reply_params(template, shape, {})
    assert on.parse("Hmm.\n</think>\n\nThe answer.").reasoning_content == "Hmm."
    after = reply_params(template, shape, {}, content_only=True)
    assert after.parse("The answer.").content == "The answer."
