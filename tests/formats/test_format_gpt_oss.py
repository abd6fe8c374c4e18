"""GPT-OSS harmony output (``gpt-oss``), beyond the conformance corpus.

Channels decide between reasoning and content, the recipient in the header makes a message a tool call, and
whatever does not parse as a message stays content. Streaming must be append-only character by character. The
grammar constrains call messages (triggered by their recipient), whole outputs for tool_choice required and
final JSON answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate

from ..support.grammar_check import (
    all_accept,
    all_reject,
    constrained_text,
    output_only_start,
    trigger_position,
    verdicts,
)
from ..support.helpers import WEATHER_TOOL, calls_of, check_cut_call, function_tool, stream_char_by_char

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
    """Cut before its arguments the call is text; after, it is kept as far as it got (as streamed)."""
    body = call("get_weather", {"city": "Tokyo", "days": 5}, start=False)
    text = analysis("Looking up.") + "<|start|>assistant" + body[:cut]
    message = check_cut_call(chat(), text, "get_weather", '{"city": "Tokyo", "days": 5}')
    assert message.reasoning_content == "Looking up."
    if not message.tool_calls:
        assert message.content == body[:cut]
        if "to=functions." in body[:cut]:
            assert message.warnings


def test_unknown_tool_is_content_with_warning() -> None:
    body = '<|channel|>commentary to=functions.delete_everything <|constrain|>json<|message|>{"path": "/"}'
    message = chat(undeclared_tools="content").parse(analysis("Hmm.") + "<|start|>assistant" + body + "<|call|>")
    assert message.tool_calls == ()
    assert message.reasoning_content == "Hmm."
    assert message.content == body
    assert len(message.warnings) == 1
    assert "did not start a valid tool call" in message.warnings[0].message
    assert message.warnings[0].position == len(analysis("Hmm.") + "<|start|>assistant")


def test_name_extending_a_known_name_is_unknown() -> None:
    text = '<|channel|>commentary to=functions.get_time<|message|>{"tz": "CET"}<|call|>'
    message = chat(undeclared_tools="content").parse(text)
    assert message.tool_calls == ()
    assert message.warnings
    message = chat().parse(text)  # by default a call, with a warning
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_time", '{"tz": "CET"}')]
    assert [w.message for w in message.warnings] == ["tool 'get_time' is not declared in the request"]


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
def test_messages_to_builtin_recipients_are_dropped_with_a_warning(recipient: str) -> None:
    """Nothing the client can run, so not part of the message (as the reference does) — but never silently: a
    warning carries the whole message."""
    dropped = f"<|channel|>commentary to={recipient} code<|message|>print(1)<|call|>"
    message = chat().parse(analysis("Run it.") + "<|start|>assistant" + dropped)
    assert (message.content, message.reasoning_content, message.tool_calls) == ("", "Run it.", ())
    assert len(message.warnings) == 1 and repr(dropped) in message.warnings[0].message


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
    assert [(c.name, c.arguments) for c in started.tool_calls] == [("get", "{")]  # a key comes with its value
    started = params.parse(head + '<|message|>{"key": "v', partial=True)
    assert [(c.name, c.arguments) for c in started.tool_calls] == [("get", '{"key": "v')]
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
    params = chat(undeclared_tools="content")
    text = (
        analysis("hm")
        + "<|start|>assistant to=python<|channel|>commentary<|message|>print(2)<|call|>"
        + "<|start|>assistant<|channel|>commentary to=functions.nope<|message|>{}<|call|>"
    )
    streamed = stream_char_by_char(params, text)
    assert streamed.tool_calls == ()
    assert streamed.content == params.parse(text).content == "<|channel|>commentary to=functions.nope<|message|>{}"
    assert streamed.warnings == params.parse(text).warnings and len(streamed.warnings) == 2  # python; functions.nope


# --- grammar ---------------------------------------------------------------------------------------------------------

WEATHER_TOOLS = [WEATHER_TOOL, function_tool("get")]
PARIS = {"city": "Paris", "days": 2}
TOKYO = {"city": "Tokyo", "days": 3}


def constrained(tool_choice: str = "auto", **kwargs: Any) -> ChatParams:
    return chat(tools=WEATHER_TOOLS, tool_choice=tool_choice, **kwargs)


def role_call(name: str, args: dict[str, Any]) -> str:
    """A call as the template renders it: recipient after the role, `` json`` content type."""
    return f" to=functions.{name}<|channel|>commentary json<|message|>{json.dumps(args)}<|call|>"


@pytest.mark.parametrize(
    ("output", "start"),
    [
        (role_call("get_weather", PARIS), 0),
        (call("get_weather", PARIS, start=False), 0),
        (analysis("Need weather.") + call("get_weather", PARIS), len(analysis("Need weather.") + "<|start|>assistant")),
        (analysis("x") + "<|start|>assistant" + role_call("get", {}), len(analysis("x") + "<|start|>assistant")),
    ],
)
def test_trigger_fires_at_the_recipient_of_a_call(output: str, start: int) -> None:
    params = constrained()
    gp = params.generation_prompt
    assert params.grammar_lazy and {t.type for t in params.grammar_triggers} == {"pattern"}
    assert trigger_position(params, gp + output) == len(gp) + start
    assert output_only_start(params, output) == start  # engines without the generation prompt in their buffer
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize(
    "output",
    [
        "<|channel|>final<|message|>Use to=functions.get_weather to look it up.<|return|>",
        analysis("I could call to=functions.get_weather or <|channel|>commentary to=functions.get") + final("Sunny."),
        "<|channel|>commentary to=python <|constrain|>code<|message|>print(1)<|call|>",  # a built-in tool
        analysis("Run it.") + "<|start|>assistant to=container.exec<|channel|>commentary<|message|>ls<|call|>",
    ],
)
def test_trigger_does_not_fire_on_content_reasoning_or_builtin_tools(output: str) -> None:
    params = constrained()
    assert trigger_position(params, params.generation_prompt + output) == -1
    assert output_only_start(params, output) == -1


def test_thinking_tags_are_the_analysis_message() -> None:
    """The analysis's tags (``<|message|>``/``<|end|>``) would also span final answers and call arguments."""
    params = constrained()
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<|channel|>analysis<|message|>", "<|end|>")
    output = analysis("to=functions.get_weather<|start|>assistant to=functions.get") + call("get_weather", PARIS)
    text = constrained_text(params, output)
    assert text is not None and text.startswith("<|channel|>commentary to=functions.get_weather")


@pytest.mark.parametrize("tool_choice", ["auto", "required"])
@pytest.mark.parametrize(
    "header",
    [
        " to=functions.get_weather<|channel|>commentary json<|message|>",
        " to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>\n",
        "<|channel|>analysis to=functions.get_weather<|message|>",
    ],
)
def test_grammar_accepts_every_header_form(tool_choice: str, header: str) -> None:
    """Also for ``get``, whose name prefixes the other and whose arguments are any object."""
    params = constrained(tool_choice)
    for end in ("<|call|>", ""):  # <|call|> is a stop token: engines may leave it out
        for output in (header + json.dumps(PARIS) + end, header.replace("get_weather", "get") + '{"k": [1]}' + end):
            assert all_accept(params, output), (output, verdicts(params, output))
            assert all_accept(params, analysis("Hm.") + "<|start|>assistant" + output)


@pytest.mark.parametrize(
    ("label", "output"),
    [
        ("unknown tool", role_call("get_time", PARIS)),
        ("name extending a known name", role_call("get_weather_now", PARIS)),
        ("missing required", role_call("get_weather", {"city": "Paris"})),
        ("wrong type", role_call("get_weather", {"city": "Paris", "days": "two"})),
        ("enum violation", role_call("get_weather", {"city": "Berlin", "days": 2})),
        ("unbalanced JSON", role_call("get_weather", PARIS).replace("}<|call|>", "<|call|>")),
        ("content type glued to the name", "<|channel|>commentary to=functions.getjson<|message|>{}<|call|>"),
        ("text after the call", role_call("get", {}) + "Done."),
    ],
)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_grammar_rejects_an_invalid_call(tool_choice: str, label: str, output: str) -> None:
    params = constrained(tool_choice)
    if tool_choice == "auto":
        assert trigger_position(params, params.generation_prompt + output) >= 0, label  # it does constrain
    assert all_reject(params, output), (label, verdicts(params, output))


def test_required_accepts_reasoning_and_preambles_before_the_call() -> None:
    params = constrained("required")
    assert not params.grammar_lazy
    for output in (
        role_call("get_weather", PARIS),
        analysis("The user wants Paris.") + call("get_weather", PARIS),
        analysis("The user wants <|channel|>final.") + call("get", {}),
        "<|channel|>commentary<|message|>Checking.<|end|>" + call("get", {}),
        analysis("a")
        + "<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"
        + "<|start|>assistant"
        + role_call("get", {}),
    ):
        assert all_accept(params, output), (output, verdicts(params, output))
    assert all_reject(params, analysis("No call needed.") + final("It is sunny."))
    assert all_reject(params, "<|channel|>final to=functions.get<|message|>{}")
    assert all_reject(params, final("It is sunny."))


def test_parallel_calls_only_when_enabled() -> None:
    output = (
        call("get_weather", PARIS, start=False)
        + call("get_weather", TOKYO)
        + "<|start|>assistant"
        + role_call("get", {})
    )
    for tool_choice in ("auto", "required"):
        parallel = constrained(tool_choice, parallel_tool_calls=True)
        single = constrained(tool_choice, parallel_tool_calls=False)
        assert all_accept(parallel, output), verdicts(parallel, output)
        assert all_reject(single, output), verdicts(single, output)
        assert all_accept(single, call("get_weather", PARIS, start=False))


def test_no_grammar_without_tools_or_with_tool_choice_none() -> None:
    for params in (constrained("none"), chat(tools=None)):
        assert params.grammar is None and not params.grammar_triggers
        assert "<|channel|>" in params.preserved_tokens and "<|call|>" in params.preserved_tokens
        assert params.thinking_end_tag == "<|end|>"


@pytest.mark.parametrize(
    "output",
    [
        analysis("Invoice as JSON.") + '<|start|>assistant<|channel|>final <|constrain|>json<|message|>{"temp": 21}',
        '<|channel|>final json<|message|>{"temp": 21}<|return|>',
        '<|channel|>final<|message|> {"temp": 21}',
    ],
)
def test_json_schema_answer_is_the_final_message(output: str) -> None:
    schema = {"type": "object", "properties": {"temp": {"type": "integer"}}, "required": ["temp"]}
    params = chat(tools=None, json_schema=schema)
    assert params.grammar is not None and not params.grammar_lazy
    assert all_accept(params, output), verdicts(params, output)
    assert all_reject(params, output.replace("21", '"warm"'))
    assert all_reject(params, output.replace("final", "commentary"))
