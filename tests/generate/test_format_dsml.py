"""DeepSeek V3.2 / V4 DSML tool calls (``deepseek-dsml``), beyond the conformance corpus.

Covers both templates (V3.2's ``function_calls`` section, V4's ``tool_calls``), the ``string`` attribute
deciding between raw text and JSON, fallbacks to content, and append-only streaming.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from .helpers import calls_of, stream_char_by_char

V32 = "deepseek-ai-DeepSeek-V3.2"
V4 = "deepseek-ai-DeepSeek-V4"
SECTIONS = {V32: "function_calls", V4: "tool_calls"}
D = "｜DSML｜"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get",  # a prefix of the other name: must not steal its calls
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "options": {"type": "object"}},
            },
        },
    },
]


def chat(template: str = V32, *, thinking: bool = True, tools: list[dict[str, Any]] | None = TOOLS) -> ChatParams:
    return ChatTemplate.load(template).apply(
        [{"role": "user", "content": "What's the weather?"}],
        tools=tools,
        enable_thinking=thinking,
        reasoning_format="deepseek",
    )


def param(name: str, value: str, string: bool) -> str:
    return f'<{D}parameter name="{name}" string="{"true" if string else "false"}">{value}</{D}parameter>\n'


def invoke(name: str, *params: str) -> str:
    return f'<{D}invoke name="{name}">\n' + "".join(params) + f"</{D}invoke>\n"


def section(*calls: str, template: str = V32) -> str:
    tag = SECTIONS[template]
    return f"\n\n<{D}{tag}>\n" + "".join(calls) + f"</{D}{tag}>"


@pytest.mark.parametrize("template", [V32, V4])
def test_format_is_dedicated(template: str) -> None:
    assert chat(template).format == "deepseek-dsml"


@pytest.mark.parametrize("template", [V32, V4])
def test_parallel_calls_with_reasoning_and_content(template: str) -> None:
    text = "Two lookups.</think>Checking both." + section(
        invoke("get_weather", param("city", "Paris", True), param("days", "3", False)),
        invoke("get", param("key", "a<b & c", True), param("options", '{"deep": [1, null]}', False)),
        template=template,
    )
    message = chat(template).parse(text)
    assert message.reasoning_content == "Two lookups."
    assert message.content.strip() == "Checking both."
    assert calls_of(message) == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("get", {"key": "a<b & c", "options": {"deep": [1, None]}}),
    ]
    assert [c.id for c in message.tool_calls] == ["", ""]
    assert not message.warnings


def test_string_attribute_decides_the_value_kind() -> None:
    # string="true" keeps "42" as text even for an integer parameter; string="false" reads JSON, and a value that
    # is not JSON stays a string.
    text = "</think>" + section(invoke("get_weather", param("city", "Oslo\nNorway", False), param("days", "42", True)))
    assert calls_of(chat().parse(text)) == [("get_weather", {"city": "Oslo\nNorway", "days": "42"})]


def test_missing_string_attribute_follows_the_schema() -> None:
    text = (
        f'</think><{D}function_calls>\n<{D}invoke name="get_weather">\n'
        f'<{D}parameter name="city">Lima</{D}parameter>\n<{D}parameter name="days">2</{D}parameter>\n'
        f"</{D}invoke>\n</{D}function_calls>"
    )
    assert calls_of(chat().parse(text)) == [("get_weather", {"city": "Lima", "days": 2})]


def test_call_without_parameters() -> None:
    message = chat().parse("</think>" + section(invoke("get")))
    assert calls_of(message) == [("get", {})]


def test_content_only() -> None:
    text = "Let me think about <b>markup</b> and 1 < 2.</think>It is sunny.\nEnjoy <｜DSML｜ tokens!"
    message = chat().parse(text)
    assert message.reasoning_content == "Let me think about <b>markup</b> and 1 < 2."
    assert message.content == "It is sunny.\nEnjoy <｜DSML｜ tokens!"
    assert message.tool_calls == ()
    assert not message.warnings


def test_without_thinking() -> None:
    params = chat(thinking=False)
    assert params.generation_prompt.endswith("<think></think>")
    message = params.parse("Sure." + section(invoke("get_weather", param("city", "Rome", True))))
    assert (message.reasoning_content, message.content.strip()) == ("", "Sure.")
    assert calls_of(message) == [("get_weather", {"city": "Rome"})]


def test_v4_without_thinking() -> None:
    params = chat(V4, thinking=False)
    assert params.generation_prompt.endswith("</think>")
    message = params.parse("Sure." + section(invoke("get_weather", param("city", "Rome", True)), template=V4))
    assert (message.reasoning_content, message.content.strip()) == ("", "Sure.")
    assert calls_of(message) == [("get_weather", {"city": "Rome"})]


def test_section_tag_is_per_template() -> None:
    # V3.2's section tag means nothing to V4 (it stays content); the invoke inside is still a call.
    text = "</think>" + section(invoke("get_weather", param("city", "Rome", True)), template=V32)
    message = chat(V4).parse(text)
    assert calls_of(message) == [("get_weather", {"city": "Rome"})]  # the invoke itself still counts
    assert f"<{D}function_calls>" in message.content


def test_tools_disabled_keeps_markup_as_content() -> None:
    text = "</think>" + section(invoke("get_weather", param("city", "Rome", True)))
    message = chat(tools=None).parse(text)
    assert message.tool_calls == ()
    assert message.content == text.removeprefix("</think>").lstrip()  # the reasoning end eats the break after it
    assert not message.warnings


@pytest.mark.parametrize("cut", [30, 60, 90, -40, -30, -2])
def test_truncated_call_at_end_is_kept_as_text(cut: int) -> None:
    body = section(invoke("get_weather", param("city", "Tokyo", True), param("days", "5", False)))
    cut_at = cut if cut > 0 else len(body) + cut
    text = "ok</think>Calling." + body[:cut_at]
    message = chat().parse(text)  # partial=False: never raises
    if message.tool_calls:  # cut after </invoke>: the call is whole, only the section end is missing
        assert cut_at >= len(body) - len(f"</{D}function_calls>")
        assert calls_of(message) == [("get_weather", {"city": "Tokyo", "days": 5})]
    else:
        assert message.content == "Calling." + body[:cut_at]
        assert message.warnings


def test_unknown_tool_is_content_with_warning() -> None:
    body = section(invoke("delete_everything", param("path", "/", True)))
    message = chat().parse("</think>Hmm." + body)
    assert message.tool_calls == ()
    assert message.content == "Hmm." + body
    assert message.warnings
    assert "did not start a valid tool call" in message.warnings[0].message


def test_unknown_tool_after_a_valid_call_keeps_the_call() -> None:
    good = invoke("get_weather", param("city", "Rome", True))
    bad = invoke("launch", param("target", "moon", True))
    message = chat().parse("</think>" + section(good, bad))
    assert calls_of(message) == [("get_weather", {"city": "Rome"})]
    assert message.content.startswith(f'<{D}invoke name="launch">')
    assert len(message.warnings) == 1


def test_name_prefix_of_another_tool() -> None:
    text = "</think>" + section(invoke("get", param("key", "k", True)), invoke("get_weather", param("city", "X", True)))
    assert calls_of(chat().parse(text)) == [("get", {"key": "k"}), ("get_weather", {"city": "X"})]


def test_bare_invoke_without_section() -> None:
    text = "</think>Here:\n" + invoke("get_weather", param("city", "Bern", True)) + "Done."
    message = chat().parse(text)
    assert calls_of(message) == [("get_weather", {"city": "Bern"})]
    assert message.content == "Here:\n\nDone."  # the break after </｜DSML｜invoke> is text again


@pytest.mark.parametrize("template", [V32, V4])
def test_streaming_char_by_char_equals_parse(template: str) -> None:
    params = chat(template)
    text = (
        "The user wants weather.\nI'll call </thin tools.</think>Let me check that for you.\n"
        + section(
            invoke("get_weather", param("city", "New York\n  NY", True), param("days", "7", False)),
            invoke("get", param("options", '{"a": [1, 2, {"b": "</x>"}]}', False), param("key", "</｜DSML｜", True)),
            template=template,
        )
        + "\n"
    )
    streamed = stream_char_by_char(params, text)
    final = params.parse(text)
    assert streamed.content == final.content
    assert streamed.reasoning_content == final.reasoning_content
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in final.tool_calls]
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", c.id) for c in streamed.tool_calls)
    assert calls_of(final) == [
        ("get_weather", {"city": "New York\n  NY", "days": 7}),
        ("get", {"options": {"a": [1, 2, {"b": "</x>"}]}, "key": "</｜DSML｜"}),
    ]
    assert final.reasoning_content == "The user wants weather.\nI'll call </thin tools."


def test_streaming_never_reports_half_a_name() -> None:
    params = chat()
    head = f'</think>\n\n<{D}function_calls>\n<{D}invoke name="get'
    assert params.parse(head, partial=True).tool_calls == ()
    assert params.parse(head + '_weather">', partial=True).tool_calls[0].name == "get_weather"
    partial = params.parse(head + f'">\n<{D}parameter name="ke', partial=True)
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get", "{")]
    partial = params.parse(head + f'">\n<{D}parameter name="key" string="true">ab</｜DSML｜para', partial=True)
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get", '{"key": "ab')]


def test_streaming_unknown_tool_and_truncation() -> None:
    params = chat()
    text = "x</think>Hi" + section(invoke("nope", param("a", "1", False)))
    streamed = stream_char_by_char(params, text)
    assert streamed.tool_calls == ()
    assert streamed.content == params.parse(text).content
