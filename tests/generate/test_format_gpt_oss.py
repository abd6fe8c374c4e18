"""GPT-OSS harmony output (``gpt-oss``), beyond the conformance corpus.

Channels decide between reasoning and content, the recipient in the header makes a message a tool call, and
whatever does not parse as a message stays content. Streaming must be append-only character by character.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate

from .helpers import calls_of, stream_char_by_char

TEMPLATE = "openai-gpt-oss-120b"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
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
            "description": "Fetch a key.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        },
    },
]

_CALL_ID = re.compile(r"call_[A-Za-z0-9]{24}")


def chat(*, reasoning_format: str = "auto", tools: list[dict[str, Any]] | None = TOOLS, **kwargs: Any) -> ChatParams:
    return ChatTemplate.load(TEMPLATE).apply(
        [{"role": "user", "content": "What's the weather in Paris?"}],
        tools=tools,
        reasoning_format=reasoning_format,
        **kwargs,
    )


def analysis(text: str) -> str:
    return f"<|channel|>analysis<|message|>{text}<|end|>"


def final(text: str) -> str:
    return f"<|start|>assistant<|channel|>final<|message|>{text}<|return|>"


def call(name: str, args: dict[str, Any], *, start: bool = True) -> str:
    head = "<|start|>assistant" if start else ""
    return f"{head}<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{json.dumps(args)}<|call|>"


def test_format_is_dedicated() -> None:
    assert chat().format == "gpt-oss"


def test_content_only() -> None:
    message = chat().parse("<|channel|>final<|message|>It is sunny in Paris.<|return|>")
    assert message == ChatMessage(content="It is sunny in Paris.")


def test_repeated_generation_prompt_is_a_separator() -> None:
    message = chat().parse("<|start|>assistant" + analysis("a") + final("b"))
    assert (message.reasoning_content, message.content) == ("a", "b")


def test_text_outside_any_message_is_content() -> None:
    assert chat().parse("no harmony markup at all").content == "no harmony markup at all"


def test_reasoning_then_answer() -> None:
    message = chat().parse(analysis("The user asks about weather.") + final("Sunny."))
    assert message.reasoning_content == "The user asks about weather."
    assert message.content == "Sunny."
    assert message.tool_calls == ()


def test_several_calls_each_in_its_own_message() -> None:
    text = (
        analysis("Two lookups.")
        + call("get_weather", {"city": "Paris", "days": 3})
        + call("get", {"key": "units"})
        + call("get_weather", {"city": "Rome"})
    )
    message = chat(parallel_tool_calls=True).parse(text)
    assert message.reasoning_content == "Two lookups."
    assert message.content == ""
    assert calls_of(message) == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("get", {"key": "units"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert not message.warnings


@pytest.mark.parametrize(
    "header",
    [
        " to=functions.get_weather<|channel|>commentary json<|message|>",  # as the template renders it
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        "<|channel|>analysis to=functions.get_weather<|message|>",
        " to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>",
        "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>\n",
    ],
)
def test_recipient_before_or_after_the_channel(header: str) -> None:
    message = chat().parse(header + '{"city": "Paris"}<|call|>')
    assert calls_of(message) == [("get_weather", {"city": "Paris"})]
    assert message.content == message.reasoning_content == ""


def test_template_rendering_of_a_call_parses_back() -> None:
    """The template's own rendering of an assistant tool call, after the generation prompt, is one call."""
    tmpl = ChatTemplate.load(TEMPLATE)
    user = [{"role": "user", "content": "Weather?"}]
    params = tmpl.apply(user, tools=TOOLS)
    arguments = '{"city": "Paris", "days": 2}'
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "id": "c1", "function": {"name": "get_weather", "arguments": arguments}}],
    }
    rendered = tmpl.apply([*user, assistant], tools=TOOLS, add_generation_prompt=False).prompt
    assert rendered.startswith(params.prompt)
    message = params.parse(rendered[len(params.prompt) :])
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", arguments)]
    assert message.content == ""


def test_call_without_end_marker_at_end_of_output() -> None:
    message = chat().parse('<|channel|>commentary to=functions.get <|constrain|>json<|message|>{"key": "a"}')
    assert calls_of(message) == [("get", {"key": "a"})]


@pytest.mark.parametrize("cut", [20, 45, 60, 78, -5, -1])
def test_truncated_call_at_end_is_kept_as_text(cut: int) -> None:
    body = call("get_weather", {"city": "Tokyo", "days": 5}, start=False)
    text = analysis("Looking up.") + "<|start|>assistant" + body[:cut]
    message = chat().parse(text)  # partial=False: never raises
    assert message.reasoning_content == "Looking up."
    assert message.tool_calls == ()
    assert message.content == body[:cut]
    if "to=functions." in body[:cut]:
        assert message.warnings


def test_unknown_tool_is_content_with_warning() -> None:
    body = '<|channel|>commentary to=functions.delete_everything <|constrain|>json<|message|>{"path": "/"}'
    message = chat().parse(analysis("Hmm.") + "<|start|>assistant" + body + "<|call|>")
    assert message.tool_calls == ()
    assert message.reasoning_content == "Hmm."
    assert message.content == body
    assert len(message.warnings) == 1
    assert "did not start a valid tool call" in message.warnings[0].message
    assert message.warnings[0].position == len(analysis("Hmm.") + "<|start|>assistant")


def test_name_extending_a_known_name_is_unknown() -> None:
    message = chat().parse('<|channel|>commentary to=functions.get_time<|message|>{"tz": "CET"}<|call|>')
    assert message.tool_calls == ()
    assert message.warnings


def test_arguments_that_are_not_json_are_content_with_warning() -> None:
    body = "<|channel|>commentary to=functions.get_weather<|message|>city=Paris"
    message = chat().parse(body + "<|call|>")
    assert message.tool_calls == ()
    assert message.content == body
    assert message.warnings


def test_tools_disabled_leaves_calls_as_content() -> None:
    body = '<|channel|>commentary to=functions.get_weather<|message|>{"city": "Paris"}'
    message = chat(tool_choice="none").parse(body + "<|call|>")
    assert message.tool_calls == ()
    assert message.content == body
    assert message.warnings


@pytest.mark.parametrize("recipient", ["python", "container.exec", "browser.search", "assistant"])
def test_messages_to_builtin_recipients_are_dropped(recipient: str) -> None:
    text = (
        analysis("Run it.") + f"<|start|>assistant<|channel|>commentary to={recipient} code<|message|>print(1)<|call|>"
    )
    message = chat().parse(text)
    assert message == ChatMessage(reasoning_content="Run it.")


def test_abandoned_header_is_dropped() -> None:
    text = analysis("x") + "<|start|>assistant<|channel|>commentary to=assistant<|channel|>final<|message|>Done"
    message = chat().parse(text)
    assert (message.reasoning_content, message.content) == ("x", "Done")


def test_reasoning_format_none_keeps_the_analysis_message_inline() -> None:
    text = analysis("Think.") + call("get", {"key": "k"})
    message = chat(reasoning_format="none").parse(text)
    assert message.content == "<|channel|>analysis<|message|>Think.<|end|>"
    assert message.reasoning_content == ""
    assert calls_of(message) == [("get", {"key": "k"})]


def test_commentary_preamble_is_content() -> None:
    text = "<|channel|>commentary<|message|>Let me check.<|end|>" + call("get_weather", {"city": "Oslo"})
    message = chat().parse(text)
    assert message.content == "Let me check."
    assert calls_of(message) == [("get_weather", {"city": "Oslo"})]


def test_structured_final_answer() -> None:
    schema = {"type": "object", "properties": {"temp": {"type": "number"}}}
    params = chat(tools=None, json_schema=schema)
    message = params.parse(
        analysis("JSON please.") + '<|start|>assistant<|channel|>final json<|message|>{"temp": 21.5}'
    )
    assert json.loads(message.content) == {"temp": 21.5}


def test_stray_markers_are_content() -> None:
    text = "<|start|>user<|message|>hi<|end|><|channel|>"
    message = chat().parse(text)
    assert message.content == "<|start|>user<|message|>hi<|channel|>"


def test_partial_name_is_not_reported() -> None:
    params = chat()
    head = "<|channel|>commentary to=functions.get"
    assert params.parse(head, partial=True).tool_calls == ()
    assert params.parse(head + "<|message|>", partial=True).tool_calls == ()
    started = params.parse(head + '<|message|>{"ke', partial=True)
    assert [(c.name, c.arguments) for c in started.tool_calls] == [("get", '{"ke')]
    assert params.parse(head + "_weather<|message|>{", partial=True).tool_calls[0].name == "get_weather"


@pytest.mark.parametrize("reasoning_format", ["auto", "none"])
def test_streaming_char_by_char_equals_parse(reasoning_format: str) -> None:
    params = chat(reasoning_format=reasoning_format, parallel_tool_calls=True)
    text = (
        analysis("The user wants weather.\nI'll call tools.")
        + "<|start|>assistant<|channel|>commentary<|message|>Checking two things.<|end|>"
        + call("get_weather", {"city": "Paris", "days": 2})
        + '<|start|>assistant to=functions.get<|channel|>commentary json<|message|>{"key": "a<b \\"c\\""}<|call|>'
    )
    streamed = stream_char_by_char(params, text)
    parsed = params.parse(text)
    assert streamed.content == parsed.content
    assert streamed.reasoning_content == parsed.reasoning_content
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in parsed.tool_calls]
    assert all(_CALL_ID.fullmatch(c.id) for c in streamed.tool_calls)
    assert calls_of(parsed) == [("get_weather", {"city": "Paris", "days": 2}), ("get", {"key": 'a<b "c"'})]
    if reasoning_format == "auto":
        assert (parsed.reasoning_content, parsed.content) == (
            "The user wants weather.\nI'll call tools.",
            "Checking two things.",
        )
    else:
        assert parsed.content.startswith("<|channel|>analysis<|message|>The user wants weather.")


def test_streaming_unknown_tool_and_builtin_recipient() -> None:
    params = chat()
    text = (
        analysis("hm")
        + "<|start|>assistant to=python<|channel|>commentary<|message|>print(2)<|call|>"
        + "<|start|>assistant<|channel|>commentary to=functions.nope<|message|>{}<|call|>"
    )
    streamed = stream_char_by_char(params, text)
    assert streamed.tool_calls == ()
    assert streamed.content == params.parse(text).content == "<|channel|>commentary to=functions.nope<|message|>{}"
    assert len(streamed.warnings) == 1
