"""Never hand a client something it cannot use (issue 19 §3), on every bundled template that writes tool calls.

* A call the parser committed to stays a call (a stream announced it), and whatever happened to it its arguments
  are a JSON object that ``json.loads`` reads, without duplicate keys; ``ToolCall.status`` says whether they are
  complete, cut off or repaired. The rest of a broken call is left out with a warning: the text of one call is never
  split between the call and the content.
* Two arguments with one name: the first wins, with a warning (a stream sent the first before the second came).
* A value cut off is typed by its schema (``3`` of an integer parameter is ``3``, not ``"3"``), in parse() and
  in the stream.

The calls are the templates' own renderings (helpers.rendered_call); the property tests cut every output of
tests/support/outputs.py at every position and damage it with tests/robustness/mutations.py.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable
from typing import Any

import pytest

from autoparser import CallStatus, ChatTemplate, MessageDelta, ToolCall, ToolCallDelta, bundled_templates, merge_deltas
from autoparser.message import apply_deltas
from autoparser.parser.reasoning import prefill

from ..robustness.mutations import mutants, truncations
from ..robustness.promises import argument_failures, check_parse, check_stream, kept_text, random_chunks
from ..support.grammar_check import all_accept, all_reject
from ..support.helpers import closed_prefix, function_tool, rendered_call, same_message, stream_char_by_char
from ..support.outputs import Output, chat, markers, outputs
from ..support.sample import near_markers, sampled, sweep

USER = [{"role": "user", "content": "What is the weather?"}]
PAYLOAD = "Zanzibar"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL = function_tool("get_weather", CITY, "Weather lookup")


@functools.cache
def _renders_call(name: str) -> bool:
    return rendered_call(ChatTemplate.load(name), USER, [TOOL], "get_weather", {"city": PAYLOAD}) is not None


def _call_templates(names: Iterable[str]) -> list[str]:
    """The templates of ``names`` that render a call of TOOL whose text holds its arguments."""
    return [name for name in names if _renders_call(name)]


# The per-template cases: the sample's templates (tests/support/sample.py); the count below takes them all.
CALL_TEMPLATES = _call_templates(sampled())


def _chat(name: str) -> Any:
    return ChatTemplate.load(name).apply(USER, tools=[TOOL], reasoning_format="auto")


def _rendered(name: str, arguments: dict[str, Any]) -> str:
    text = rendered_call(ChatTemplate.load(name), USER, [TOOL], "get_weather", arguments)
    assert text is not None
    return text


def test_enough_templates() -> None:
    call_templates = _call_templates(bundled_templates())
    assert len(call_templates) >= 45, call_templates


# --- the issue's example -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GigaChat3-10B-A1.8B", "GigaChat3.1-10B-A1.8B"])
def test_invalid_json_arguments_give_a_repaired_call_and_no_split_text(name: str) -> None:
    """`{invalid json}` after a committed name (the issue's GigaChat 3 example): the call stays, with the arguments
    that could be read (none: ``{}``), repaired; the text of the call from where it broke to its closing brace is
    in a warning, not in the content."""
    text = _rendered(name, {"city": PAYLOAD}).replace('{"city": "Zanzibar"}', "{invalid json}")
    params = ChatTemplate.load(name).apply(USER, tools=[TOOL])
    message = params.parse(text)
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("get_weather", "{}", "repaired")]
    assert message.content == ""
    assert any("invalid json}}" in w.message for w in message.warnings)
    streamed = stream_char_by_char(params, text)
    assert same_message(streamed, message)
    assert check_stream(params, list(text), message) == []


# --- one rule for every format: cut off, malformed -------------------------------------------------------------------


@pytest.mark.parametrize("name", CALL_TEMPLATES)
def test_a_call_cut_off_inside_a_value_is_closed_and_cut_off(name: str) -> None:
    """The output ends inside the string value: the call keeps what arrived, closed into JSON, in every format
    (JSON envelopes, tagged arguments, pythonic calls, Gemma's and MiniMax-M3's syntaxes)."""
    call = _rendered(name, {"city": PAYLOAD})
    params = _chat(name)
    cut = call[: call.index(PAYLOAD) + 4]
    message = params.parse(cut)
    found = [(c.name, _compact(c.arguments), c.status) for c in message.tool_calls]
    assert found == [("get_weather", '{"city": "Zanz"}', "cut_off")]
    assert message.warnings
    assert same_message(stream_char_by_char(params, cut), message)


def _compact(arguments: str) -> str:
    """The arguments in one spelling (a template that indents its JSON, such as Granite's, gets them indented)."""
    return json.dumps(json.loads(arguments), ensure_ascii=False)


@pytest.mark.parametrize("name", CALL_TEMPLATES)
def test_a_complete_call_is_complete(name: str) -> None:
    message = _chat(name).parse(_rendered(name, {"city": PAYLOAD}))
    assert [(_compact(c.arguments), c.status) for c in message.tool_calls] == [('{"city": "Zanzibar"}', "complete")]


@pytest.mark.parametrize("name", CALL_TEMPLATES)
def test_damage_inside_a_call_repairs_it_without_splitting_its_text(name: str) -> None:
    """A character no syntax allows right after the value's opening (``\\x01`` is not even a JSON token): where the
    call committed before it, the call stays, repaired, and the rest of the call is not content."""
    call = _rendered(name, {"city": PAYLOAD})
    at = call.index(PAYLOAD)
    damaged = call[:at] + "\\x" + call[at:]  # an invalid JSON escape; text in other syntaxes
    params = _chat(name)
    message = params.parse(damaged)
    assert argument_failures(message) == []
    for found in message.tool_calls:
        assert found.status in ("complete", "repaired"), found
        if found.status == "repaired":
            assert PAYLOAD not in message.content  # the rest of the call went to a warning, with the payload
            assert PAYLOAD in kept_text(message)
    assert same_message(stream_char_by_char(params, damaged), message)


# --- property tests over every template's outputs -------------------------------------------------------------------

CALL_OUTPUTS = [o for t in sampled() for o in outputs(t) if o.calls]  # (the sample's templates)


def _seed(output: Output) -> int:
    return zlib.crc32(f"{output.template}/{output.label}".encode())


def _swept_cuts(output: Output) -> set[int]:
    """The cuts (prefix lengths) of ``output`` the truncation sweep checks: every cut within a character of a marker of
    the template (before it, inside it at either end, after it), and of the others a seeded half in CI, a seeded
    tenth elsewhere."""
    near = near_markers(output.text, markers(output.template), reach=1)
    return set(sweep(range(1, len(output.text)), 10, keep=near, seed=_seed(output), ci_share=2))


@pytest.mark.parametrize("template", sorted({o.template for o in CALL_OUTPUTS}))
def test_every_truncation_gives_usable_calls(template: str) -> None:
    """Every call output cut at every position: every call's arguments are a JSON object without duplicate keys,
    a call that is not complete comes with a warning, and a cut-off call's arguments are a prefix of the complete
    ones, closed. The stream ends equal to parse() (every 7th cut, random chunks). The cuts of :func:`_swept_cuts`."""
    params = chat(template)
    problems = []
    for output in (o for o in CALL_OUTPUTS if o.template == template):
        complete = [c.arguments for c in params.parse(output.text).tool_calls]
        cuts = _swept_cuts(output)
        for mutant in (m for m in truncations(output) if len(m.text) in cuts):
            message = params.parse(mutant.text)
            failures = argument_failures(message)
            for index, found in enumerate(message.tool_calls):
                same = index < len(complete) and found.name == output.calls[index].name
                if found.status == "cut_off" and same and not closed_prefix(found.arguments, complete[index]):
                    failures.append(f"{found.arguments!r} is not a closed prefix of {complete[index]!r}")
            if len(mutant.text) % 7 == 0:
                failures += check_stream(params, random_chunks(mutant.text, len(mutant.text)), message)
            problems += [f"{mutant.label}: {f}" for f in failures]
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("template", sorted({o.template for o in CALL_OUTPUTS}))
def test_every_damage_gives_usable_calls(template: str) -> None:
    """Seeded damage (marker damage, sentinels, hostile characters, broken JSON; another seed than the fuzz test,
    more mutants): P4, every call usable, and the promises of the fuzz test. Every mutant in CI; elsewhere a seeded
    third of them."""
    params = chat(template)
    problems = []
    damaged = [mutant for output in CALL_OUTPUTS if output.template == template for mutant in mutants(output, 19, 6)]
    for mutant in (damaged[i] for i in sweep(range(len(damaged)), seed=zlib.crc32(template.encode()))):
        message, failures = check_parse(params, mutant.text, words=mutant.words)
        if message is not None:
            failures += check_stream(params, random_chunks(mutant.text, 19), message)
        problems += [f"{mutant.label}: {f}" for f in failures]
    assert not problems, "\n".join(problems[:10])


# --- duplicate keys ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CALL_TEMPLATES)
def test_a_repeated_argument_keeps_the_first_with_a_warning(name: str) -> None:
    """The template renders a call with a second argument, renamed to the first one's name afterwards: every format
    returns the first value, the second in a warning, and the stream agrees."""
    text = _rendered(name, {"city": PAYLOAD, "zzdup": "Timbuktu"}).replace("zzdup", "city")
    params = _chat(name)
    message = params.parse(text)
    assert [(_compact(c.arguments), c.status) for c in message.tool_calls] == [('{"city": "Zanzibar"}', "repaired")]
    assert any("Timbuktu" in w.message for w in message.warnings)
    assert argument_failures(message) == []
    assert same_message(stream_char_by_char(params, text), message)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("Qwen-Qwen2.5-7B-Instruct", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "A", "o": '
         '{"k": 1, "k": {"x": [1]}}, "city": "B"}}\n</tool_call>'),
        ("meta-llama-Llama-3.1-8B-Instruct", '{"name": "get_weather", "parameters": {"o": {"k": 1, "k": 2}}}'),
        ("Qwen3.5-4B", "<tool_call>\n<function=get_weather>\n<parameter=o>\n{\"k\": 1, \"k\": 2}\n</parameter>\n"
         "</function>\n</tool_call>"),
    ],
)
def test_duplicate_keys_at_any_depth(name: str, call: str) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "o": {"type": "object"}}}
    params = ChatTemplate.load(name).apply(USER, tools=[function_tool("get_weather", schema)])
    message = params.parse(call)
    assert argument_failures(message) == []
    assert [c.status for c in message.tool_calls] == ["repaired"]
    arguments = json.loads(message.tool_calls[0].arguments)
    assert arguments["o"]["k"] == 1
    assert arguments.get("city", "A") == "A"
    assert sum("duplicate" in w.message for w in message.warnings) >= 1
    assert same_message(stream_char_by_char(params, call), message)


def test_issue_example_qwen_optional_parameter_twice() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "limit": {"type": "integer"}, "lang": {"type": "string"}},
        "required": ["city"],
    }
    params = ChatTemplate.load("Qwen3.5-4B").apply(USER, tools=[function_tool("get_weather", schema)])
    params_of = "".join(
        f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in (("city", "Paris"), ("lang", "fr"), ("lang", "en"))
    )
    text = f"<tool_call>\n<function=get_weather>\n{params_of}</function>\n</tool_call>"
    message = params.parse(text)
    assert [(c.arguments, c.status) for c in message.tool_calls] == [('{"city": "Paris", "lang": "fr"}', "repaired")]
    assert any("duplicate argument 'lang'" in w.message and "'en'" in w.message for w in message.warnings)


# --- types of cut-off values --------------------------------------------------------------------------------------

DAYS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}


@pytest.mark.parametrize("name", ["GLM-4.7-Flash", "GLM-4.6", "Qwen3.5-4B", "Qwen3-Coder", "deepseek-ai-DeepSeek-V3.2"])
def test_a_cut_off_integer_is_an_integer_in_parse_and_stream(name: str) -> None:
    """``…3`` at the end of the output, an integer parameter: 3 in parse() and in what the stream sent; the key is
    not sent before its value (a stream holds a non-string value until it is complete, and its key with it)."""
    tmpl = ChatTemplate.load(name)
    tools = [function_tool("get_weather", DAYS)]
    params = tmpl.apply(USER, tools=tools, reasoning_format="auto", enable_thinking=True)
    text = _turn(tmpl, tools, params.generation_prompt, {"city": "Paris", "days": 35})
    cut = text[: text.index("35") + 1]
    message = params.parse(cut)
    assert [(c.arguments, c.status) for c in message.tool_calls] == [('{"city": "Paris", "days": 3}', "cut_off")]
    stream = params.stream()
    deltas = [d for piece in cut for d in stream.feed(piece)]
    assert not any('"days"' in part.arguments for d in deltas for part in d.tool_calls)  # not before its value
    deltas += stream.finish()
    assert apply_deltas(deltas).tool_calls[0].arguments == '{"city": "Paris", "days": 3}'
    assert '"3"' not in "".join(part.arguments for d in deltas for part in d.tool_calls)
    partial = params.parse(cut, partial=True)
    assert [c.arguments for c in partial.tool_calls] == ['{"city": "Paris"']


def _turn(tmpl: ChatTemplate, tools: list[dict[str, Any]], header: str, arguments: dict[str, Any]) -> str:
    """What the model writes for a call, from the template's rendering of the assistant turn after the prompt's
    generation ``header`` (where the history turn does not continue the prompt: GLM-4.7's prompt opens ``<think>``
    and its history turns write only ``</think>``)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(arguments)}}
    base = tmpl.apply(USER, tools=tools, add_generation_prompt=False, enable_thinking=True).prompt
    turn = {"role": "assistant", "content": "", "tool_calls": [call]}
    full = tmpl.apply([*USER, turn], tools=tools, add_generation_prompt=False, enable_thinking=True).prompt
    plain = tmpl.apply(
        [*USER, {"role": "assistant", "content": "END_MARK"}], tools=tools, add_generation_prompt=False
    ).prompt
    assert full.startswith(base)
    text = full[len(base) :]
    shared = next(k for k in range(min(len(header), len(text)), -1, -1) if text[:k] == header[:k])
    while shared and text[shared - 1] not in ">\n":  # (never inside a marker: `<` of `<think>` / `</think>`)
        shared -= 1
    text = text[shared:]
    end_of_turn = plain.partition("END_MARK")[2]  # what the template writes after an answer
    if end_of_turn.strip() and text.endswith(end_of_turn):
        text = text[: -len(end_of_turn)]
    reasoning = tmpl.analysis.reasoning
    if prefill(header, reasoning) and reasoning.end.strip() not in text:
        text = reasoning.end.strip() + "\n" + text  # the prompt opened a block (MiniMax-M2): a model closes it
    return text


def test_a_cut_off_value_that_is_no_value_of_its_type_is_left_out() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "opts": {"type": "object"}}}
    params = ChatTemplate.load("Qwen3-Coder").apply(USER, tools=[function_tool("get_weather", schema)])
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=opts>\n{'a"
    message = params.parse(text)
    assert [(c.arguments, c.status) for c in message.tool_calls] == [('{"city": "Rome"}', "cut_off")]
    assert any("{'a" in w.message for w in message.warnings)


# --- the status flag -------------------------------------------------------------------------------------------------


def test_status_is_not_part_of_the_wire_forms() -> None:
    call = ToolCall("f", '{"a": 1}', "call_1", status=CallStatus.CUT_OFF)
    assert "status" not in json.dumps(call.to_openai()) and "cut_off" not in json.dumps(call.to_openai())
    assert call.to_hf() == ToolCall("f", '{"a": 1}', "call_1").to_hf()
    assert CallStatus.CUT_OFF == "cut_off" and call == ToolCall("f", '{"a": 1}', "call_1")  # (not in equality)
    only_status = MessageDelta(tool_calls=(ToolCallDelta(0, status=CallStatus.REPAIRED),))
    assert only_status.to_openai() == {}  # nothing to send on the wire


STATUS_TEMPLATES = ["Qwen3.5-4B", "Qwen-Qwen2.5-7B-Instruct", "google-gemma-4-31B-it", "moonshotai-Kimi-K2"]


@pytest.mark.parametrize("name", STATUS_TEMPLATES)
def test_the_stream_sends_each_status_once_with_the_last_fragment(name: str) -> None:
    full = _rendered(name, {"city": PAYLOAD})
    for text, status in ((full, "complete"), (full[: full.index(PAYLOAD) + 4], "cut_off")):
        params = _chat(name)
        stream = params.stream()
        deltas = [d for piece in text for d in stream.feed(piece)] + stream.finish()
        parts = [p for d in deltas for p in d.tool_calls]
        with_status = [i for i, p in enumerate(parts) if p.status is not None]
        assert len(with_status) == 1 and parts[with_status[0]].status == status
        assert not any(p.arguments for p in parts[with_status[0] + 1 :])  # nothing after it
        assert merge_deltas(deltas).tool_calls[0].status == status
        assert apply_deltas(deltas).tool_calls[0].status == status
        assert stream.message.tool_calls[0].status == status == params.parse(text).tool_calls[0].status


def test_calls_still_arriving_are_cut_off_so_far() -> None:
    params = _chat("Qwen3.5-4B")
    text = _rendered("Qwen3.5-4B", {"city": PAYLOAD})
    partial = params.parse(text[: text.index(PAYLOAD) + 4], partial=True)
    assert [(c.arguments, c.status) for c in partial.tool_calls] == [('{"city": "Zanz', "cut_off")]
    stream = params.stream()
    for piece in text[: text.index(PAYLOAD) + 4]:
        stream.feed(piece)
    assert stream.message.tool_calls[0].status == "cut_off"


# --- grammars: a parameter at most once ------------------------------------------------------------------------------


def _tagged_templates(names: Iterable[str]) -> list[str]:
    """Generic templates of ``names`` whose calls hold tagged arguments (their grammar builds the optional
    parameters)."""
    return [
        name
        for name in names
        if ChatTemplate.load(name).analysis.format == "generic"
        and ChatTemplate.load(name).analysis.tools.format.mode.name == "TAG_WITH_TAGGED"
    ]


TAGGED = _tagged_templates(sampled())  # (the sample's templates)


def _optional_tool(count: int) -> dict[str, Any]:
    properties = {"city": {"type": "string"}, **{f"opt{i}": {"type": "integer"} for i in range(count)}}
    return function_tool("get_weather", {"type": "object", "properties": properties, "required": ["city"]})


def _grammar_case(name: str, count: int, arguments: dict[str, Any]) -> tuple[Any, str]:
    tmpl = ChatTemplate.load(name)
    tools = [_optional_tool(count)]
    params = tmpl.apply(USER, tools=tools, reasoning_format="auto", enable_thinking=True)
    return params, _turn(tmpl, tools, params.generation_prompt, arguments)


def test_enough_tagged_templates() -> None:
    tagged = _tagged_templates(bundled_templates())
    assert {"Qwen3.5-4B", "GLM-4.7-Flash", "Qwen3-Coder"} <= set(tagged), tagged


@pytest.mark.parametrize("name", TAGGED)
def test_the_grammar_allows_no_parameter_twice(name: str) -> None:
    """Qwen3.5's and GLM's grammars used to allow ``(limit | lang)*``: now an optional parameter comes at most
    once (and the parser keeps the first where a model writes one twice anyway)."""
    params, once = _grammar_case(name, 2, {"city": "Paris", "opt0": 1, "zzdup": 2})
    assert not all_accept(params, once)  # (zzdup is not a parameter: the grammar is strict)
    twice = once.replace("zzdup", "opt0")
    assert all_reject(params, twice)
    assert all_accept(params, _grammar_case(name, 2, {"city": "Paris", "opt0": 1, "opt1": 2})[1])
    message = params.parse(twice)
    assert json.loads(message.tool_calls[0].arguments) == {"city": "Paris", "opt0": 1}


@pytest.mark.parametrize("name", TAGGED)
def test_up_to_five_optional_parameters_in_any_order(name: str) -> None:
    """llama.cpp's own tests write optional parameters in any order: with up to five, the grammar has a rule per
    set of parameters already written, so every order is allowed, none twice."""
    params, shuffled = _grammar_case(name, 5, {"city": "Paris", "opt3": 3, "opt0": 0, "opt4": 4, "opt1": 1})
    assert all_accept(params, shuffled)
    assert len((params.grammar or "").splitlines()) < 200


@pytest.mark.parametrize("name", TAGGED)
def test_more_optional_parameters_follow_the_schema_order(name: str) -> None:
    """With more than five optional parameters the grammar stays linear: they come in the schema's order."""
    params, ordered = _grammar_case(name, 7, {"city": "Paris", "opt1": 1, "opt5": 5, "opt6": 6})
    assert all_accept(params, ordered)
    _, reversed_ = _grammar_case(name, 7, {"city": "Paris", "opt5": 5, "opt1": 1})
    assert all_reject(params, reversed_)
    grammar = params.grammar or ""
    assert grammar.count("opt6") <= 3, grammar  # each parameter written once (not once per subset)
