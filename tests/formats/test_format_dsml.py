"""DeepSeek V3.2 / V4 DSML tool calls (``deepseek-dsml``), beyond the conformance corpus.

Covers both templates (V3.2's ``function_calls`` section, V4's ``tool_calls``), the ``string`` attribute
deciding between raw text and JSON, fallbacks to content, append-only streaming, and the grammars (checked with
every engine of ``tests/support/grammar_check.py``): the trigger, value kinds per schema, parallel calls,
``tool_choice="required"`` and ``json_schema`` shapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.grammar.spec import Trigger

from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import calls_of, check_cut_call, stream_char_by_char
from ..support.ids import generated_ids_ok, model_ids

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


def chat(
    template: str = V32, *, thinking: bool = True, tools: list[dict[str, Any]] | None = TOOLS, undeclared: str = "call"
) -> ChatParams:
    return ChatTemplate.load(template).apply(
        [{"role": "user", "content": "What's the weather?"}],
        tools=tools,
        enable_thinking=thinking,
        reasoning_format="deepseek",
        undeclared_tools=undeclared,
        parallel_tool_calls=False,
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
    assert model_ids(message) == ["", ""] and generated_ids_ok(message, template)
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


@pytest.mark.parametrize("template", [V32, V4])
def test_a_json_value_whose_strings_hold_the_markup_is_read_as_json(template: str) -> None:
    """A ``string="false"`` value is JSON: its strings may hold a parameter's start tag or the invoke's end tag (the
    grammar's JSON allows them), and the value ends at its end tag once the JSON is complete, not at the markup inside
    it (that reading is for a value whose end tag was dropped, which still holds)."""
    options = {"note": f'<{D}parameter name="key">', "end": f"</{D}invoke></{D}{SECTIONS[template]}>"}
    value = json.dumps(options, ensure_ascii=False)
    invoked = invoke("get", param("options", value, False), param("key", "k", True))
    text = "</think>" + section(invoked, template=template)
    message = chat(template).parse(text)
    assert calls_of(message) == [("get", {"options": options, "key": "k"})]
    assert message.tool_calls[0].status.value == "complete" and not message.warnings
    assert calls_of(stream_char_by_char(chat(template), text)) == calls_of(message)
    dropped = "</think>" + section(
        invoke("get", param("options", '{"a": 1}', False).replace(f"</{D}parameter>", ""), param("key", "k", True)),
        template=template,
    )
    message = chat(template).parse(dropped)
    assert calls_of(message) == [("get", {"options": {"a": 1}, "key": "k"})]
    assert message.tool_calls[0].status.value == "repaired" and message.warnings


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
    # Never silent: the call markup the parser did not read is named where it stands (docs/parsing.md).
    assert message.warnings and all("did not start a tool call" in w.message for w in message.warnings)
    assert message.warnings[0].position == text.index(f"<{D}function_calls>")


@pytest.mark.parametrize("cut", [30, 60, 90, 120, -40, -30, -2])
def test_truncated_call_keeps_its_text(cut: int) -> None:
    """Cut before its first parameter the call is text; after, it is kept as far as it got (as streamed)."""
    body = section(invoke("get_weather", param("city", "Tokyo", True), param("days", "5", False)))
    cut_at = cut if cut > 0 else len(body) + cut
    text = "ok</think>Calling." + body[:cut_at]
    message = check_cut_call(chat(), text, "get_weather", '{"city": "Tokyo", "days": 5}')
    if not message.tool_calls:
        assert message.content == "Calling." + body[:cut_at]
    elif cut_at >= len(body) - len(f"</{D}function_calls>"):  # cut after </invoke>: only the section end is missing
        assert calls_of(message) == [("get_weather", {"city": "Tokyo", "days": 5})]


def test_unknown_tool_is_content_with_warning() -> None:
    body = section(invoke("delete_everything", param("path", "/", True)))
    message = chat(undeclared="content").parse("</think>Hmm." + body)
    assert message.tool_calls == ()
    assert message.content == "Hmm." + body
    assert message.warnings
    assert "did not start a valid tool call" in message.warnings[0].message


def test_unknown_tool_after_a_valid_call_keeps_the_call() -> None:
    good = invoke("get_weather", param("city", "Rome", True))
    bad = invoke("launch", param("target", "moon", True))
    message = chat(undeclared="content").parse("</think>" + section(good, bad))
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
    assert params.parse(head + '_weather">', partial=True).tool_calls == ()  # not committed yet
    partial = params.parse(head + f'">\n<{D}parameter name="ke', partial=True)
    assert partial.tool_calls == ()  # announced at its first parameter's name
    partial = params.parse(head + f'">\n<{D}parameter name="key"', partial=True)
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get", "{")]  # the key comes with its value
    partial = params.parse(head + f'">\n<{D}parameter name="key" string="true">ab</｜DSML｜para', partial=True)
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get", '{"key": "ab')]


def test_streaming_unknown_tool_and_truncation() -> None:
    params = chat(undeclared="content")
    text = "x</think>Hi" + section(invoke("nope", param("a", "1", False)))
    streamed = stream_char_by_char(params, text)
    assert streamed.tool_calls == ()
    assert streamed.content == params.parse(text).content


# --- grammars ------------------------------------------------------------------------------------------------------

GRAMMAR_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Paris", "Tokyo"]},
                    "nights": {"type": "integer", "minimum": 1},
                    "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                    "note": {"type": "string", "maxLength": 5},
                    "guests": {"type": ["integer", "string"]},
                    "when": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
                    "tier": {"enum": ["gold", "basic"]},
                    "extra": {"description": "anything"},
                },
                "required": ["city", "nights"],
            },
        },
    },
    {"type": "function", "function": {"name": "log", "parameters": {"type": "object"}}},
]


def grammar_chat(template: str = V32, *, tools: list[dict[str, Any]] | None = GRAMMAR_TOOLS, **kw: Any) -> ChatParams:
    return ChatTemplate.load(template).apply(
        [{"role": "user", "content": "Book it."}],
        tools=tools,
        reasoning_format="deepseek",
        **{"enable_thinking": True, "parallel_tool_calls": False, **kw},
    )


def book(*params: str) -> str:
    return invoke("book", param("city", "Paris", True), param("nights", "2", False), *params)


@pytest.mark.parametrize("template", [V32, V4])
def test_grammar_trigger_fires_on_a_call_only(template: str) -> None:
    params = grammar_chat(template)
    start = f"<{D}{SECTIONS[template]}>"
    assert params.grammar_lazy
    assert params.grammar_triggers == (Trigger("word", start),)
    assert params.preserved_tokens == (D, "<think>", "</think>")
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<think>", "</think>")
    gp = params.generation_prompt
    plain = "I could call a tool.</think>It is sunny; <b>no</b> tools, 1 < 2, and <｜DSML｜ is just text."
    assert trigger_position(params, gp + plain) == -1
    call = "Let me book.</think>Booking." + section(book(), template=template)
    assert trigger_position(params, gp + call) == len(gp + call) - len(section(book(), template=template)) + 2
    assert all_accept(params, call), verdicts(params, call)
    # A section written while reasoning does not fire; the grammar starts at the real one.
    musing = f"Maybe {start}?</think>" + section(book(), template=template)
    assert trigger_position(params, gp + musing) == (gp + musing).rindex(start)
    assert all_accept(params, musing), verdicts(params, musing)


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("optional parameters", book(param("code", "CDG", True), param("note", "quiet", True))),
        ("integer or string", book(param("guests", "3", False))),
        ("integer or string as text", book(param("guests", "three", True))),
        ("anyOf: the string branch as text", book(param("when", "now", True))),
        ("anyOf: the null branch as JSON", book(param("when", "null", False))),
        ("untyped string enum", book(param("tier", "gold", True))),
        ("untyped as text", book(param("extra", "a <b> c", True))),
        ("untyped as JSON", book(param("extra", '{"k": [1, "x"]}', False))),
        ("no properties: any parameter", invoke("log", param("level", "5", False), param("msg", "hi", True))),
        ("no properties: no parameter", invoke("log")),
    ],
)
def test_grammar_accepts_values_of_the_schema(label: str, call: str) -> None:
    params = grammar_chat(tool_choice="required")
    output = "Ok.</think>" + section(call)
    assert all_accept(params, output), (label, verdicts(params, output))


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("unknown tool", invoke("launch", param("city", "Paris", True))),
        ("unknown parameter", book(param("pets", "1", False))),
        ("missing required", invoke("book", param("city", "Paris", True))),
        ("required out of schema order", invoke("book", param("nights", "2", False), param("city", "Paris", True))),
        ("enum violation", invoke("book", param("city", "Berlin", True), param("nights", "2", False))),
        ("integer as text", invoke("book", param("city", "Paris", True), param("nights", "2", True))),
        ("string as JSON", invoke("book", param("city", '"Paris"', False), param("nights", "2", False))),
        ("minimum", invoke("book", param("city", "Paris", True), param("nights", "0", False))),
        ("pattern", book(param("code", "cdg", True))),
        ("maxLength", book(param("note", "too long", True))),
        ("a string alternative is text, not JSON", book(param("guests", '"three"', False))),
        ("anyOf: the string branch's maxLength", book(param("when", "later", True))),
        ("anyOf: no branch takes the text as JSON", book(param("when", '"now"', False))),
        ("untyped string enum as JSON", book(param("tier", '"gold"', False))),
        ("unclosed JSON", book(param("extra", '{"k": 1', False))),
        ("no string attribute", invoke("book", f'<{D}parameter name="city">Paris</{D}parameter>\n')),
        ("unclosed invoke", book().removesuffix(f"</{D}invoke>\n")),
    ],
)
def test_grammar_rejects_what_the_schema_forbids(label: str, call: str) -> None:
    params = grammar_chat(tool_choice="required")
    output = "Ok.</think>" + section(call)
    assert all_reject(params, output), (label, verdicts(params, output))


@pytest.mark.parametrize("template", [V32, V4])
def test_grammar_parallel_calls_only_when_enabled(template: str) -> None:
    two = "</think>" + section(book(), invoke("log"), template=template)
    one = "</think>" + section(book(), template=template)
    serial, parallel = grammar_chat(template), grammar_chat(template, parallel_tool_calls=True)
    assert all_accept(serial, one) and all_accept(parallel, one)
    assert all_reject(serial, two), verdicts(serial, two)
    assert all_accept(parallel, two), verdicts(parallel, two)


@pytest.mark.parametrize("template", [V32, V4])
def test_grammar_required_with_thinking(template: str) -> None:
    params = grammar_chat(template, tool_choice="required")
    assert not params.grammar_lazy and params.grammar_triggers == ()
    call = section(book(), template=template)
    for output in ("Thinking it over.</think>Booking now." + call, "</think>" + call, "Hmm.</think>" + call + "\n"):
        assert all_accept(params, output), (output, verdicts(params, output))
    for output in ("Thinking.</think>I will not call anything.", call, "Hmm.</think>" + call + "Done."):
        assert all_reject(params, output), (output, verdicts(params, output))  # no call / reasoning never closed


@pytest.mark.parametrize("template", [V32, V4])
def test_grammar_required_without_thinking(template: str) -> None:
    params = grammar_chat(template, tool_choice="required", enable_thinking=False)
    call = section(book(), template=template)
    assert params.generation_prompt.endswith("</think>")
    for output in ("Booking now." + call, call):
        assert all_accept(params, output), (output, verdicts(params, output))
    assert all_reject(params, "No call."), verdicts(params, "No call.")


def test_grammar_section_tag_is_per_template() -> None:
    params = grammar_chat(V4, tool_choice="required")
    output = "</think>" + section(book(), template=V32)
    assert all_reject(params, output), verdicts(params, output)


@pytest.mark.parametrize("template", [V32, V4])
def test_no_grammar_without_tools_or_with_tool_choice_none(template: str) -> None:
    for params in (grammar_chat(template, tools=None), grammar_chat(template, tool_choice="none")):
        assert params.grammar is None and params.grammar_triggers == ()
        assert params.preserved_tokens == (D, "<think>", "</think>")


@pytest.mark.parametrize("template", [V32, V4])
@pytest.mark.parametrize("thinking", [True, False])
def test_grammar_json_schema_after_reasoning(template: str, thinking: bool) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    params = grammar_chat(template, tools=None, json_schema=schema, enable_thinking=thinking)
    head = "Six times seven.</think>\n\n" if thinking else "\n"
    assert not params.grammar_lazy
    for output in (head + '{"answer": 42}', head + '```json\n{"answer": 42}\n```'):
        assert all_accept(params, output), (output, verdicts(params, output))
    for output in (head + '{"answer": "42"}', head + "42 is the answer."):
        assert all_reject(params, output), (output, verdicts(params, output))
    if thinking:
        assert all_reject(params, '{"answer": 42}')  # the reasoning block the prompt opened must be closed first
