"""The MiroThinker format (``mirothinker``) on its bundled template: requests with tools, calls as the template's own
``render_tool_call`` macro writes them (one or several per ``<use_mcp_tool>`` block), reasoning and content, the
liberties models take, damaged and cut-off outputs, streaming, and the grammar.

The template cannot render an assistant turn with tool calls under Jinja2 (nor can transformers): its macros read
``tool``, a loop variable of their caller, and it assigns attributes on message dicts. So the calls here are
rendered by the template's own macros, with ``tool`` supplied, and framed as its assistant branch frames a turn:
``<think>\\n`` reasoning ``\\n</think>\\n\\n`` content, then the calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.errors import RequestError, TemplateError
from autoparser.message import ToolCall
from autoparser.template.environment import compile_template, render_bounded
from autoparser.template.limits import RenderLimits

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import check_cut_call, stream_char_by_char
from ..support.ids import as_written
from ..support.sample import near_markers, sweep

TEMPLATE = "MiroThinker"
USER = [{"role": "user", "content": "What is the weather?"}]
HOSTILE = ' Pa "ris" <b>x</b> </arguments> a<b & c\\d\nline two \u6771\u4eac \U0001f30d '


def _tool(name: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return {"type": "function", "function": {"name": name, "description": "A tool", "parameters": parameters}}


TOOLS = [
    _tool(
        "get_weather",
        {
            "city": {"type": "string"},
            "city_code": {"type": "string"},
            "days": {"type": "integer"},
            "temp": {"type": "number"},
            "metric": {"type": "boolean"},
            "note": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object"},
        },
    ),
    _tool("get", {"city": {"type": "string"}}),
    _tool("google_search", {"q": {"type": "string"}}, ("q",)),
    _tool("ping", {}),
]
FULL_ARGS: dict[str, Any] = {
    "city": HOSTILE,
    "city_code": "42",
    "days": 3,
    "temp": -21.5,
    "metric": False,
    "note": None,
    "tags": ["rain", "wind"],
    "options": {"depth": {"levels": [1, False, None, 2.5], "label": "deep"}},
}


def chat(**kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": TOOLS, "reasoning_format": "auto", "parallel_tool_calls": True}
    options.update(kwargs)
    return ChatTemplate.load(TEMPLATE).apply(USER, **options)


def mcp_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """The template's ``render_tool_call`` macro for these calls (``tool``, which the macro reads from its caller's
    loop, is the first call's tool: it only picks the server name)."""
    source = ChatTemplate.load(TEMPLATE).source
    definitions = source[: source.index("{#- ========== MiroThinker System Message")]
    macros = compile_template(definitions + "{{- render_tool_call() }}")
    message = {"tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]}
    tool = {"type": "function", "function": {"name": calls[0][0]}}
    return render_bounded(macros, {"message": message, "tool": tool}, RenderLimits())


def turn(calls: list[tuple[str, dict[str, Any]]], content: str = "", reasoning: str = "") -> str:
    """What the model writes, framed as the template's assistant branch frames a turn."""
    return f"<think>\n{reasoning.strip()}\n</think>\n\n" + content.lstrip("\n") + (mcp_calls(calls) if calls else "")


def calls_of(params: ChatParams, text: str) -> list[tuple[str, Any]]:
    message = params.parse(text)
    assert message.warnings == (), message.warnings
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


# --- requests ----------------------------------------------------------------------------------------------------


def test_apply_with_tools_renders_the_prompt_without_them() -> None:
    params = chat()
    assert params.format == "mirothinker"
    assert len(params.warnings) == 1 and "cannot render a tool list" in params.warnings[0]
    plain = ChatTemplate.load(TEMPLATE).apply(USER)
    assert params.prompt == plain.prompt  # the template's prompt without tools
    assert as_written(params.parse(turn([("get", {"city": "Rome"})]))) == (ToolCall("get", '{"city": "Rome"}'),)
    assert plain.parse(turn([("get", {"city": "Rome"})])).tool_calls == ()  # no tools requested: no calls


def test_the_template_cannot_render_calls() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get", "arguments": '{"city": "Rome"}'}}
    with pytest.raises(TemplateError):
        ChatTemplate.load(TEMPLATE).render([*USER, {"role": "assistant", "content": "", "tool_calls": [call]}])


def test_a_template_that_renders_tools_still_raises_for_bad_tools() -> None:
    """A bad tool (a parameter schema that is no object; a parameter merely without a description gets the default:
    docs/requests.md) raises, naming it, before the template is tried: the tools are not dropped."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": 3}}}}]
    with pytest.raises(RequestError) as caught:
        ChatTemplate.load("CohereForAI-c4ai-command-r-plus-tool_use").apply(USER, tools=tools)  # reads descriptions
    assert caught.value.field == "tools[0].function.parameters.properties.x"


@pytest.mark.parametrize(("thinking", "prefilled"), [(True, False), (False, True)])
def test_generation_prompt(thinking: bool, prefilled: bool) -> None:
    params = chat(enable_thinking=thinking)
    assert params.generation_prompt.endswith("<think>\n\n</think>\n\n") is prefilled
    message = params.parse("The answer." if prefilled else "<think>\nHm.\n</think>\n\nThe answer.")
    assert (message.content, message.reasoning_content) == ("The answer.", "" if prefilled else "Hm.")


def test_reasoning_liberties() -> None:
    call = mcp_calls([("get", {"city": "Rome"})])
    unclosed = chat().parse("<think>\nI need Rome." + call)  # a call ends a block never closed
    assert (unclosed.reasoning_content, unclosed.content, len(unclosed.warnings)) == ("I need Rome.", "", 1)
    assert as_written(unclosed) == (ToolCall("get", '{"city": "Rome"}'),)
    quoted = chat().parse("<think>\nMaybe" + call + "\nNo.\n</think>\n\nRome is sunny.")
    assert (quoted.tool_calls, quoted.content) == ((), "Rome is sunny.")
    again = chat(enable_thinking=False).parse("<think>\nStill.\n</think>\n\nHi.")  # after the prompt's empty block
    assert (again.reasoning_content, again.content, again.warnings) == ("Still.", "Hi.", ())
    for text in ("<think>\nI need Rome." + call, "<think>\nMaybe" + call + "\nNo.\n</think>\n\nRome is sunny."):
        assert check_stream(chat(), char_chunks(text)) == []


# --- the template's own layout parses back -----------------------------------------------------------------------


def test_one_call_with_typed_arguments() -> None:
    text = turn([("get_weather", FULL_ARGS)], content="Let me check.", reasoning="The user asks about Paris.")
    assert "<server_name>generic-extras</server_name>" in text
    message = chat().parse(text)
    assert (message.content, message.reasoning_content) == ("Let me check.", "The user asks about Paris.")
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get_weather", FULL_ARGS)]
    assert message.warnings == ()


def test_parallel_calls_in_one_block_with_prefix_sharing_names() -> None:
    calls = [("get", {"city": "Zanzibar"}), ("get_weather", {"city_code": "ZNZ", "city": "Zanzibar"}), ("ping", {})]
    text = turn(calls, content="Three lookups.")
    assert text.count("<use_mcp_tool>") == 1
    assert calls_of(chat(), text) == calls


def test_one_block_per_call() -> None:
    text = turn([], content="Searching.") + mcp_calls([("google_search", {"q": "a"})]) + mcp_calls([("get", {})])
    assert calls_of(chat(), text) == [("google_search", {"q": "a"}), ("get", {})]


def test_server_name_is_not_part_of_the_call() -> None:
    text = mcp_calls([("google_search", {"q": "Paris"})])
    assert "<server_name>search_and_scrape_webpage</server_name>" in text
    for variant in (text, text.replace("search_and_scrape_webpage", "my-own server"), _drop_server(text)):
        assert calls_of(chat(), variant) == [("google_search", {"q": "Paris"})]


def _drop_server(text: str) -> str:
    start = text.index("<server_name>")
    return text[:start] + text[text.index("</server_name>") + len("</server_name>") :]


@pytest.mark.parametrize(
    "text",
    [
        '<use_mcp_tool><server_name>s</server_name><tool_name>get</tool_name><arguments>{"city": "Rome"}</arguments>'
        "</use_mcp_tool>",
        "<use_mcp_tool>\n\n<server_name> s </server_name>\n<tool_name> get </tool_name>\n<arguments>\n\n"
        '{"city": "Rome"}\n\n</arguments>\n\n</use_mcp_tool>',
        '<use_mcp_tool>\n<tool_name>get</tool_name>\n<arguments>\n{"city": "Rome"}\n</use_mcp_tool>',  # no </arguments>
        '<use_mcp_tool>\n<tool_name>get</tool_name>\n<arguments>\n{"city": "Rome"}\n</arguments>',  # no block end
        '<server_name>s</server_name>\n<tool_name>get</tool_name>\n<arguments>\n{"city": "Rome"}\n</arguments>',
    ],
    ids=["tight", "loose", "no-arguments-end", "no-block-end", "no-block"],
)
def test_liberties(text: str) -> None:
    assert calls_of(chat(), "Sure. " + text) == [("get", {"city": "Rome"})]
    assert chat().parse("Sure. " + text).content == "Sure."


# --- damaged and cut-off outputs ---------------------------------------------------------------------------------


def test_cut_off_call_is_kept_as_far_as_it_got() -> None:
    text = turn([("get_weather", {"city": "Oslo", "days": 3})], content="Checking.")
    cut = text[: text.index('"days"') + 4]
    params = chat()
    final = check_cut_call(params, cut, "get_weather", '{"city": "Oslo", "days": 3}')
    assert final.content == "Checking."
    assert as_written(final) == (ToolCall("get_weather", '{"city": "Oslo"}'),)  # as far as it got, closed
    assert final.tool_calls[0].status == "cut_off"
    assert any('"da' in w.message for w in final.warnings)  # the key cut off is left out, in a warning


def test_arguments_that_are_not_json_are_left_out_with_a_warning() -> None:
    """The call committed at ``<arguments>``: it stays, with what could be read of its arguments (nothing); the
    text that is not JSON, up to ``</arguments>``, is in a warning, not in the content."""
    text = "<use_mcp_tool>\n<tool_name>google_search</tool_name>\n<arguments>\nq: Paris\n</arguments>\n</use_mcp_tool>"
    message = chat().parse(text)
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("google_search", "{}", "repaired")]
    assert message.content == ""
    assert any("q: Paris" in w.message for w in message.warnings)


def test_unknown_tool_stays_content() -> None:
    unknown = mcp_calls([("launch_rocket", {"target": "moon"})])
    known = mcp_calls([("get", {"city": "Rome"})])
    message = chat().parse("Hmm." + unknown + "\nThen" + known)
    assert "launch_rocket" in message.content and "<use_mcp_tool>" in message.content
    assert as_written(message) == (ToolCall("get", '{"city": "Rome"}'),)
    assert message.warnings


def test_tools_disabled_leave_calls_in_content() -> None:
    text = mcp_calls([("get", {"city": "Rome"})])
    for params in (chat(tools=None), chat(tool_choice="none")):
        message = params.parse(text)
        assert (message.content, message.tool_calls) == (text.strip(), ())
        # Never silent: the call markup the parser did not read is named where it stands (docs/parsing.md).
        assert [w.message.split(";")[0] for w in message.warnings] == [
            "call marker '<use_mcp_tool>' did not start a tool call"
        ]


# --- streaming and truncation ------------------------------------------------------------------------------------

REALISTIC = turn(
    [("get_weather", FULL_ARGS), ("get", {"city": "Zanzibar"}), ("ping", {})],
    content="Let me look that up.",
    reasoning="The user wants weather.\nThree calls.",
)
WORDS = ("Zanzibar", "rain", "deep", "look", "Three", "\u6771\u4eac")
MARKERS = ("<use_mcp_tool>", "</use_mcp_tool>", "<server_name>", "</server_name>", "<tool_name>", "</tool_name>",
           "<arguments>", "</arguments>", "<think>", "</think>")


def test_streaming_equals_parse_in_any_chunking() -> None:
    params = chat()
    expected = params.parse(REALISTIC)
    assert len(expected.tool_calls) == 3 and expected.warnings == ()
    streamed = stream_char_by_char(params, REALISTIC)  # every prefix equal to the partial parse
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in expected.tool_calls]
    chunkings = [char_chunks(REALISTIC), *(random_chunks(REALISTIC, seed) for seed in range(4))]
    chunkings += marker_cut_chunkings(REALISTIC, MARKERS)
    for pieces in chunkings:
        assert check_stream(params, pieces, expected) == []


def test_truncation_at_every_position_loses_nothing() -> None:
    """Every cut in CI; elsewhere every cut within two characters of a marker and a seeded tenth of the others."""
    params = chat()
    for end in sweep(range(len(REALISTIC) + 1), 10, keep=near_markers(REALISTIC, MARKERS)):
        text = REALISTIC[:end]
        message, failures = check_parse(params, text, words=WORDS, empty_arg_calls=("ping",))
        assert failures == [], (end, failures)
        assert message is not None
        assert check_stream(params, random_chunks(text, end, 9), message) == [], end


# --- grammar -----------------------------------------------------------------------------------------------------

GRAMMAR_TOOLS = [
    _tool("get_weather", {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}, "days": {"type": "integer"}},
          ("city", "days")),
    _tool("get", {"city": {"type": "string"}}),
]


def grammar_chat(**kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": GRAMMAR_TOOLS}
    options.update(kwargs)
    return ChatTemplate.load(TEMPLATE).apply(USER, **options)


def test_grammar_shape() -> None:
    params = grammar_chat()
    assert params.grammar_lazy
    assert [t.value for t in params.grammar_triggers] == ["<use_mcp_tool>"]
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<think>", "</think>")


def test_grammar_accepts_the_macros_rendering() -> None:
    params = grammar_chat()
    output = turn([("get_weather", {"city": "Paris", "days": 2})], content="Sure.", reasoning="Easy.")
    assert trigger_position(params, params.generation_prompt + output) > 0
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize(
    ("label", "name", "args"),
    [
        ("unknown tool", "launch_rocket", {"city": "Paris", "days": 2}),
        ("missing required", "get_weather", {"city": "Paris"}),
        ("wrong type", "get_weather", {"city": "Paris", "days": "two"}),
        ("enum violation", "get_weather", {"city": "Berlin", "days": 2}),
    ],
)
def test_grammar_rejects_what_the_schema_forbids(label: str, name: str, args: dict[str, Any]) -> None:
    params = grammar_chat(tool_choice="required")
    output = turn([(name, args)])
    assert all_reject(params, output), (label, verdicts(params, output))


def test_grammar_parallel_calls_only_when_enabled() -> None:
    two = turn([("get", {"city": "Rome"}), ("get_weather", {"city": "Tokyo", "days": 1})])
    assert all_reject(grammar_chat(), two), verdicts(grammar_chat(), two)
    assert all_accept(grammar_chat(parallel_tool_calls=True), two)


@pytest.mark.parametrize("thinking", [True, False])
def test_grammar_required(thinking: bool) -> None:
    params = grammar_chat(tool_choice="required", enable_thinking=thinking)
    call = mcp_calls([("get", {"city": "Rome"})])
    good = ("<think>\nHm.\n</think>\n\nSure." if thinking else "Sure.") + call
    assert all_accept(params, good), verdicts(params, good)
    assert all_reject(params, "Sure."), verdicts(params, "Sure.")


def test_grammar_json_schema_answer() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    params = grammar_chat(tools=None, json_schema=schema, reasoning_format="auto")
    for output in ('{"a": 1}', '<think>\nHm.\n</think>\n\n{"a": 1}'):
        assert all_accept(params, output), verdicts(params, output)
        assert params.parse(output).content == '{"a": 1}'
    assert all_reject(params, '{"a": "x"}')
