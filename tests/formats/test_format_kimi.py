"""The Kimi K2 format (``kimi-k2``) beyond the corpus: several calls, sloppy markers, fallbacks and streaming; and
its grammar. Two of the three templates cannot render tool-call history (``list.append``), so the shared negative
grammar test skips them: the same checks run here on hand-written calls, for all three templates."""

from __future__ import annotations

from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.message import CallStatus, ToolCall, apply_deltas

from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import WEATHER_TOOL, check_cut_call, function_tool

TEMPLATES = ("Kimi-K2-Thinking", "Kimi-K2-Instruct", "moonshotai-Kimi-K2")

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {"type": "function", "function": {"name": "get_weather_now", "parameters": {"type": "object", "properties": {}}}},
    {
        "type": "function",
        "function": {"name": "python", "parameters": {"type": "object", "properties": {"code": {"type": "string"}}}},
    },
]

SB, SE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CB, AB, CE = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def call(name: str, idx: int, args: str, *, end: bool = True) -> str:
    return f"{CB}functions.{name}:{idx}{AB}{args}{CE if end else ''}"


def chat(template: str = "Kimi-K2-Thinking", **kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": TOOLS, "reasoning_format": "auto", "parallel_tool_calls": True}
    options.update(kwargs)
    return ChatTemplate.load(template).apply([{"role": "user", "content": "Hi"}], **options)


def visible(message: ChatMessage) -> tuple[str, str, tuple[ToolCall, ...]]:
    return message.content, message.reasoning_content, message.tool_calls


REALISTIC = (
    "<think>The user wants the weather in Paris and Tokyo.\nI'll call get_weather twice.</think>"
    "Let me check both cities.\n"
    + SB
    + call("get_weather", 0, '{"city": "Paris"}')
    + call("get_weather", 1, '{"city": "Tokyo"}')
    + call("python", 2, r'{"code": "print(\"<|tool_call_end|>\")\n"}')
    + call("get_weather_now", 3, "{}")
    + SE
)


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_uses_the_format(template: str) -> None:
    assert ChatTemplate.load(template).analysis.format == "kimi-k2"
    assert chat(template).format == "kimi-k2"


@pytest.mark.parametrize("template", TEMPLATES)
def test_parallel_calls_with_reasoning_and_content(template: str) -> None:
    message = chat(template).parse(REALISTIC)
    assert message.reasoning_content == "The user wants the weather in Paris and Tokyo.\nI'll call get_weather twice."
    assert message.content == "Let me check both cities."
    assert message.tool_calls == (
        ToolCall("get_weather", '{"city": "Paris"}', "functions.get_weather:0"),
        ToolCall("get_weather", '{"city": "Tokyo"}', "functions.get_weather:1"),
        ToolCall("python", r'{"code": "print(\"<|tool_call_end|>\")\n"}', "functions.python:2"),
        ToolCall("get_weather_now", "{}", "functions.get_weather_now:3"),
    )
    assert message.warnings == ()


def test_content_only() -> None:
    text = "Paris is sunny today.\nEnjoy <b>your</b> trip!"
    message = chat().parse(text)
    assert visible(message) == (text, "", ())
    assert message.warnings == ()


def test_without_tools_the_markup_is_content() -> None:
    text = "x" + call("get_weather", 0, '{"city": "Paris"}')
    assert visible(chat(tools=None).parse(text)) == (text, "", ())
    assert visible(chat(tool_choice="none").parse(text)) == (text, "", ())


def test_reasoning_format_none_keeps_the_thinking_inline() -> None:
    text = "<think>hmm</think>Answer"
    assert visible(chat(reasoning_format="none").parse(text)) == (text, "", ())


def test_markers_left_out() -> None:
    """No section markers, no call end markers: a call ends where the next begins, or at the end."""
    text = (
        "Checking."
        + call("get_weather", 0, '{"city": "Paris"}', end=False)
        + call("python", 1, '{"code": "1"}', end=False)
    )
    message = chat().parse(text)
    assert message.content == "Checking."
    assert [(c.name, c.arguments, c.id) for c in message.tool_calls] == [
        ("get_weather", '{"city": "Paris"}', "functions.get_weather:0"),
        ("python", '{"code": "1"}', "functions.python:1"),
    ]


def test_calls_inside_an_unclosed_thinking_block() -> None:
    text = "<think>I need the weather" + SB + call("get_weather", 0, '{"city": "Oslo"}') + SE
    message = chat().parse(text)
    assert message.reasoning_content == "I need the weather"
    assert message.content == ""
    assert [c.name for c in message.tool_calls] == ["get_weather"]


def test_whitespace_around_markers_and_text_after_the_section() -> None:
    text = SB + "\n " + CB + " functions.get_weather:7 " + AB + ' {"city": "Rome"} ' + CE + "\n" + SE + "\nDone."
    message = chat().parse(text)
    assert message.tool_calls == (ToolCall("get_weather", '{"city": "Rome"}', "functions.get_weather:7"),)
    assert message.content == "Done."


def test_name_that_prefixes_another_name() -> None:
    text = call("get_weather_now", 0, "{}") + call("get_weather", 1, '{"city": "Lima"}')
    assert [c.name for c in chat().parse(text).tool_calls] == ["get_weather_now", "get_weather"]
    # a name is not reported while it may still grow into a longer one
    assert chat().parse(f"{CB}functions.get_weather", partial=True).tool_calls == ()


def test_empty_arguments_may_be_left_out() -> None:
    message = chat().parse(f"{CB}functions.get_weather_now:0{AB}{CE}")
    assert message.tool_calls == (ToolCall("get_weather_now", "{}", "functions.get_weather_now:0"),)


def test_truncated_call_keeps_the_text() -> None:
    """A call cut off is kept as far as it got, closed into a JSON object, and says it was cut off."""
    text = "Let me look." + SB + call("get_weather", 0, '{"city": "Par', end=False)
    message = check_cut_call(chat(), text, "get_weather", '{"city": "Paris"}')
    assert message.content == "Let me look."
    assert message.tool_calls == (ToolCall("get_weather", '{"city": "Par"}', "functions.get_weather:0"),)
    assert message.tool_calls[0].status is CallStatus.CUT_OFF
    # while streaming the same text is a call in progress: what a stream sent so far (still arriving)
    streaming = chat().parse(text, partial=True)
    assert streaming.content == "Let me look."
    assert streaming.tool_calls == (ToolCall("get_weather", '{"city": "Par', "functions.get_weather:0"),)
    assert streaming.tool_calls[0].status is CallStatus.CUT_OFF


def test_unknown_tool_is_content_with_a_warning() -> None:
    text = "Hi " + SB + call("send_email", 0, '{"to": "a@b.c"}') + SE + " bye"
    message = chat(undeclared_tools="content").parse(text)
    assert message.content == text
    assert message.tool_calls == ()
    assert message.warnings and "did not start a valid tool call" in message.warnings[0].message
    assert message.warnings[0].position == 3


def test_malformed_arguments_keep_the_call_as_far_as_it_got() -> None:
    """The call committed at its head, so it stays (as a stream showed it), repaired: its arguments are what could
    be read (nothing: `{}`), and the rest of the call up to its end marker is left out, in a warning — not content."""
    text = call("get_weather", 0, "city=Paris") + "ok"
    message = check_cut_call(chat(), text, "get_weather", '{"city": "Paris"}')
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("get_weather", "{}", "repaired")]
    assert message.content == "ok"
    assert any("city=Paris" in w.message for w in message.warnings)


def test_stray_thinking_close_after_calls_is_markup() -> None:
    text = "<think>plan" + call("get_weather", 0, '{"city": "Bern"}') + "</think>Answer"
    message = chat().parse(text)
    assert (message.reasoning_content, message.content) == ("plan", "Answer")
    assert len(message.tool_calls) == 1


@pytest.mark.parametrize(
    "text",
    [
        REALISTIC,
        "<think>plan" + call("get_weather", 0, '{"city": "X"}', end=False) + call("python", 1, '{"code": "2"}'),
        "Hi " + SB + call("send_email", 0, "{}") + SE + " bye",
        "a" + SB + call("get_weather", 0, '{"city": "Y"}') + " tail",
    ],
)
def test_streaming_char_by_char_matches_parse(text: str) -> None:
    params = chat()
    stream = params.stream()
    deltas = []
    previous = visible(ChatMessage())
    for i, char in enumerate(text):
        deltas += stream.feed(char)
        current = visible(params.parse(text[: i + 1], partial=True))
        assert visible(apply_deltas(deltas)) == current, f"after {text[: i + 1]!r}"
        # prefix-monotone: nothing shown earlier is taken back
        assert current[0].startswith(previous[0]) and current[1].startswith(previous[1])
        assert len(current[2]) >= len(previous[2])
        for old, new in zip(previous[2], current[2], strict=False):
            assert (new.name, new.id) == (old.name, old.id) and new.arguments.startswith(old.arguments)
        previous = current
    deltas += stream.finish()
    assert visible(apply_deltas(deltas)) == visible(params.parse(text))


# --- grammar ---------------------------------------------------------------------------------------------------------

USER = [{"role": "user", "content": "Weather?"}]
WEATHER_TOOLS = [WEATHER_TOOL, function_tool("get_weather_now")]
PARIS = call("get_weather", 0, '{"city": "Paris", "days": 2}')
TOKYO = call("get_weather", 1, '{"city": "Tokyo", "days": 3}')


def constrained(template: str, tool_choice: str = "auto", **kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": WEATHER_TOOLS, "tool_choice": tool_choice, "reasoning_format": "auto"}
    options.update(kwargs)
    return ChatTemplate.load(template).apply(USER, **options)


@pytest.mark.parametrize("tool_choice", ["auto", "required"])
@pytest.mark.parametrize("template", TEMPLATES)
def test_grammar_accepts_a_valid_call(template: str, tool_choice: str) -> None:
    chat = constrained(template, tool_choice)
    assert chat.grammar is not None and chat.grammar_lazy == (tool_choice == "auto")
    for output in (SB + PARIS + SE, PARIS, call("get_weather_now", 5, "{}")):
        assert all_accept(chat, output), (output, verdicts(chat, output))


@pytest.mark.parametrize(
    ("label", "output"),
    [
        ("unknown tool", SB + call("launch_rocket", 0, '{"city": "Paris", "days": 2}') + SE),
        ("missing required", SB + call("get_weather", 0, '{"city": "Paris"}') + SE),
        ("wrong type", SB + call("get_weather", 0, '{"city": "Paris", "days": "two"}') + SE),
        ("enum violation", SB + call("get_weather", 0, '{"city": "Berlin", "days": 2}') + SE),
        ("unbalanced JSON", SB + call("get_weather", 0, '{"city": "Paris", "days": 2') + SE),
        ("unbalanced JSON, no markers", call("get_weather", 0, '{"city": "Paris", "days": 2', end=False)),
        ("section never closed", SB + PARIS),
        (
            "call end left out inside a section",
            SB + call("get_weather", 0, '{"city": "Paris", "days": 2}', end=False) + SE,
        ),
        ("no index", SB + PARIS.replace(":0", "") + SE),
        ("text after the calls", SB + PARIS + SE + "Done."),
    ],
)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
@pytest.mark.parametrize("template", TEMPLATES)
def test_grammar_rejects_an_invalid_call(template: str, tool_choice: str, label: str, output: str) -> None:
    chat = constrained(template, tool_choice)
    assert all_reject(chat, output), (label, verdicts(chat, output))


@pytest.mark.parametrize("template", TEMPLATES)
def test_triggers_fire_on_calls_not_on_content(template: str) -> None:
    chat = constrained(template)
    gp = chat.generation_prompt
    assert {t.value for t in chat.grammar_triggers} == {SB, CB}
    assert {t.type for t in chat.grammar_triggers} == {"word"}
    assert trigger_position(chat, gp + "Let me check." + SB + PARIS + SE) == len(gp) + len("Let me check.")
    assert trigger_position(chat, gp + "Checking." + PARIS) == len(gp) + len("Checking.")  # no section markers
    plain = "The weather in Paris: call get_weather, or use functions.get_weather:0 <|tool_call_end|> {}."
    assert trigger_position(chat, gp + plain) == -1


@pytest.mark.parametrize("template", TEMPLATES)
def test_calls_inside_an_unclosed_thinking_block_trigger(template: str) -> None:
    """A tool-call marker ends Kimi's reasoning, so no thinking tags are reported: they would mute this trigger."""
    chat = constrained(template)
    assert (chat.thinking_start_tag, chat.thinking_end_tag) == ("", "")
    output = "<think>I need the weather" + SB + PARIS + SE
    assert trigger_position(chat, chat.generation_prompt + output) >= 0
    assert all_accept(chat, output), verdicts(chat, output)
    assert chat.parse(output).tool_calls[0].name == "get_weather"


@pytest.mark.parametrize("template", TEMPLATES)
def test_required_accepts_reasoning_and_content_before_the_call(template: str) -> None:
    chat = constrained(template, "required")
    for output in (
        "<think>The user wants Paris.</think>Let me check." + SB + PARIS + SE,
        "<think>Paris, I think" + PARIS,
        "Checking.\n" + SB + PARIS + SE + "\n",
    ):
        assert all_accept(chat, output), (output, verdicts(chat, output))
    assert all_reject(chat, "<think>No call needed.</think>It is sunny.")


@pytest.mark.parametrize("template", TEMPLATES)
def test_parallel_calls_only_when_enabled(template: str) -> None:
    outputs = (SB + PARIS + TOKYO + SE, PARIS + TOKYO, SB + PARIS + "\n" + call("get_weather_now", 1, "{}") + SE)
    for tool_choice in ("auto", "required"):
        parallel = constrained(template, tool_choice, parallel_tool_calls=True)
        single = constrained(template, tool_choice, parallel_tool_calls=False)
        for output in outputs:
            assert all_accept(parallel, output), (output, verdicts(parallel, output))
            assert all_reject(single, output), (output, verdicts(single, output))


def test_bare_calls_may_drop_their_end_markers() -> None:
    chat = constrained("Kimi-K2-Thinking", parallel_tool_calls=True)
    output = call("get_weather", 0, '{"city": "Paris", "days": 2}', end=False) + call(
        "get_weather_now", 1, "{}", end=False
    )
    assert all_accept(chat, output), verdicts(chat, output)
    assert all_reject(chat, output + SE)  # no section end without a section begin


def test_name_that_prefixes_another_name_in_the_grammar() -> None:
    chat = constrained("Kimi-K2-Instruct", parallel_tool_calls=True)
    output = SB + call("get_weather_now", 0, "{}") + TOKYO + SE
    assert all_accept(chat, output), verdicts(chat, output)
    assert all_reject(chat, SB + call("get_weather_nowish", 0, "{}") + SE)


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_grammar_without_tools_or_with_tool_choice_none(template: str) -> None:
    for chat in (constrained(template, "none"), constrained(template, tools=None)):
        assert chat.grammar is None and not chat.grammar_triggers
        assert CB in chat.preserved_tokens and "functions." not in chat.preserved_tokens


@pytest.mark.parametrize("template", TEMPLATES)
def test_json_schema_answer_may_follow_reasoning(template: str) -> None:
    schema = {"type": "object", "properties": {"temp": {"type": "integer"}}, "required": ["temp"]}
    chat = ChatTemplate.load(template).apply(USER, json_schema=schema, reasoning_format="auto")
    assert chat.grammar is not None and not chat.grammar_lazy
    for output in ('{"temp": 21}', '<think>Warm.</think>\n{"temp": 21}', '```json\n{"temp": 21}\n```'):
        assert all_accept(chat, output), (output, verdicts(chat, output))
    for output in ('{"temp": "warm"}', 'It is {"temp": 21}', '<think>Warm.{"temp": 21}'):
        assert all_reject(chat, output), (output, verdicts(chat, output))
