"""``apply()`` takes requests the way serving stacks send them (issue: chat_template_kwargs) and never raises
because the learned markers cannot build a parser (it degrades, with a warning on the params)."""

from __future__ import annotations

import dataclasses

import pytest

from autoparser import ChatTemplate
from autoparser.api import _build
from autoparser.parser.request import ParseRequest, normalize_tools

USER = [{"role": "user", "content": "Hi"}]
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
}


@pytest.mark.parametrize("template", ["Qwen3.5-4B", "Qwen-Qwen3-0.6B", "HuggingFaceTB-SmolLM3-3B"])
@pytest.mark.parametrize("thinking", [True, False])
def test_enable_thinking_in_chat_template_kwargs_equals_the_argument(template: str, thinking: bool) -> None:
    tmpl = ChatTemplate.load(template)
    via_kwargs = tmpl.apply(USER, reasoning_format="auto", chat_template_kwargs={"enable_thinking": thinking})
    via_argument = tmpl.apply(USER, reasoning_format="auto", enable_thinking=thinking)
    assert via_kwargs.prompt == via_argument.prompt
    assert via_kwargs.generation_prompt == via_argument.generation_prompt
    assert via_kwargs.parse("Hello.") == via_argument.parse("Hello.")


def test_kwargs_win_over_the_argument() -> None:
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    params = tmpl.apply(USER, enable_thinking=True, chat_template_kwargs={"enable_thinking": False})
    assert params.prompt == tmpl.apply(USER, enable_thinking=False).prompt


@pytest.mark.parametrize(("thinking", "content", "reasoning"), [(False, "Hello.", ""), (True, "", "Hello.")])
def test_deepseek_v31_thinking_switch_reaches_the_parser(thinking: bool, content: str, reasoning: str) -> None:
    tmpl = ChatTemplate.load("deepseek-ai-DeepSeek-V3.1")
    params = tmpl.apply(USER, reasoning_format="auto", chat_template_kwargs={"thinking": thinking})
    assert params.prompt.endswith(params.generation_prompt)
    assert ("</think>" in params.generation_prompt) is not thinking
    message = params.parse("Hello.")
    assert (message.content, message.reasoning_content) == (content, reasoning)


def test_kwargs_reach_the_prompt() -> None:
    tmpl = ChatTemplate.load("MiniMax-M3")
    on = tmpl.apply(USER, chat_template_kwargs={"thinking_mode": "enabled"}).prompt
    off = tmpl.apply(USER, chat_template_kwargs={"thinking_mode": "disabled"}).prompt
    assert on != off


def _broken(template: str) -> object:
    """The template's analysis with the value and call terminators erased: nothing can end an argument."""
    a = ChatTemplate.load(template).analysis
    tools = a.tools
    return dataclasses.replace(
        a,
        tools=dataclasses.replace(
            tools,
            arguments=dataclasses.replace(tools.arguments, value_suffix="", end=""),
            function=dataclasses.replace(tools.function, close=""),
            format=dataclasses.replace(tools.format, per_call_end="", section_end=""),
        ),
    )


def test_markers_that_cannot_build_a_parser_degrade_with_a_warning() -> None:
    request = ParseRequest(tools=normalize_tools([TOOL]), reasoning_format="auto")
    generated, _grammar, warnings = _build(_broken("Qwen3-Coder"), request)  # type: ignore[arg-type]
    assert len(warnings) == 1 and "tool calls are not parsed" in warnings[0], warnings
    assert not generated.request.tools_enabled
    # The degraded parser still reads the reply: nothing is lost.
    from autoparser.reading.streaming import parse_output

    text = "Sure.\n<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"
    assert parse_output(generated, text).content == text


def test_apply_on_a_well_formed_template_has_no_warnings() -> None:
    assert ChatTemplate.load("Qwen3-Coder").apply(USER, tools=[TOOL]).warnings == ()


def test_reasoning_is_extracted_by_default() -> None:
    message = ChatTemplate.load("Qwen-Qwen3-0.6B").apply(USER).parse("<think>Greet.</think>Hello!")
    assert (message.reasoning_content, message.content) == ("Greet.", "Hello!")


WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def test_named_tool_choice_requires_that_tool() -> None:
    tmpl = ChatTemplate.load("Qwen3-Coder")
    named = tmpl.apply(USER, tools=[TOOL, WEATHER], tool_choice={"type": "function", "function": {"name": "f"}})
    every = tmpl.apply(USER, tools=[TOOL, WEATHER], tool_choice="required")
    assert named.prompt == every.prompt  # the prompt lists every tool, as OpenAI's API does
    assert named.grammar is not None and "get_weather" not in named.grammar and "get_weather" in every.grammar
    assert not named.grammar_lazy
    call = "<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"
    assert [c.name for c in named.parse(call).tool_calls] == ["f"]


@pytest.mark.parametrize(
    "choice",
    [{"type": "function", "function": {"name": "nope"}}, {"type": "function"}, {"type": "other", "function": {}}],
)
def test_bad_named_tool_choice_is_a_clear_error(choice: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        ChatTemplate.load("Qwen3-Coder").apply(USER, tools=[TOOL], tool_choice=choice)
