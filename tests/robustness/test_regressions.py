"""One test per known reproducer of a broken promise, written against the semantics being built: a call exists once
no continuation can remove it (then it stays, with the argument text read so far and a warning if it breaks);
before that, malformed call text is content with a warning; nothing is ever dropped or silently repaired.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.analysis.formats import GENERIC
from autoparser.analysis.model import ToolFormatMode
from autoparser.message import MessageDelta, apply_deltas

from ..support.helpers import WEATHER_TOOL, function_tool
from ..support.outputs import chat, render_calls
from ..support.sample import sampled
from .fuzzing import schema_chat
from .mutations import DEEP_PLACEHOLDER
from .promises import char_chunks, check_parse, check_stream, kept_text, random_chunks

USER = [{"role": "user", "content": "What is the weather?"}]
WEATHER = function_tool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)


def _apply(template: str, tools: list[dict[str, Any]]) -> ChatParams:
    return ChatTemplate.load(template).apply(USER, tools=tools, reasoning_format="auto")


def _stream(params: ChatParams, pieces: list[str]) -> tuple[ChatMessage, list[MessageDelta]]:
    stream = params.stream()
    deltas: list[MessageDelta] = []
    for piece in pieces:
        deltas += stream.feed(piece)
    deltas += stream.finish()
    return apply_deltas(deltas), deltas


def _assert_stream_equals_parse(params: ChatParams, text: str) -> None:
    failures = [str(f) for f in check_stream(params, char_chunks(text))]
    for seed in range(3):
        failures += [str(f) for f in check_stream(params, random_chunks(text, seed))]
    assert not failures, failures


# --- a. prefix-sharing parameter names on every generic tagged template --------------------------------------------

TAGGED = [
    "Qwen3-Coder",
    "Qwen3.5-4B",
    "GLM-4.6",
    "GLM-4.7-Flash",
    "GLM-5.2",
    "ByteDance-Seed-OSS",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "StepFun3.5-Flash",
    "stepfun-ai-Step-3.5-Flash",
    "MiniMax-M2",
]


@pytest.mark.parametrize("template", TAGGED)
def test_a_prefix_sharing_parameter_names(template: str) -> None:
    analysis = ChatTemplate.load(template).analysis
    assert analysis.format == GENERIC and analysis.tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED
    text = render_calls(template, [("get_weather", {"city_code": "ZNZ"})])
    assert text is not None and "ZNZ" in text
    params = chat(template)  # get_weather has both `city` and `city_code`
    parsed = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("get_weather", {"city_code": "ZNZ"})]
    streamed, deltas = _stream(params, char_chunks(text))
    arguments = ""
    for delta in deltas:
        for part in delta.tool_calls:
            arguments += part.arguments
            assert '"city": ' not in arguments, arguments
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in parsed.tool_calls]


def test_a_qwen3_coder_literal() -> None:
    text = "<tool_call>\n<function=get_weather>\n<parameter=city_code>\nZNZ\n</parameter>\n</function>\n</tool_call>"
    assert render_calls("Qwen3-Coder", [("get_weather", {"city_code": "ZNZ"})]) == text


# --- b. Mistral-Nemo, well-formed parallel calls with ids ----------------------------------------------------------


def test_b_mistral_nemo_parallel_calls_stream() -> None:
    params = _apply("mistralai-Mistral-Nemo-Instruct-2407", [WEATHER])
    text = (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}, '
        '{"name": "get_weather", "arguments": {"city": "Zanzibar"}, "id": "bcdefghij"}]'
    )
    parsed = params.parse(text)
    assert [(c.name, json.loads(c.arguments), c.id) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "abcdefghi"),
        ("get_weather", {"city": "Zanzibar"}, "bcdefghij"),
    ]
    streamed, _ = _stream(params, char_chunks(text))
    assert [(c.name, c.arguments, c.id) for c in streamed.tool_calls] == [
        (c.name, c.arguments, c.id) for c in parsed.tool_calls
    ]
    _assert_stream_equals_parse(params, text)


# --- c. Qwen3-Coder: a call header abandoned for another call ------------------------------------------------------


def test_c_abandoned_call_header_is_content() -> None:
    params = _apply("Qwen3-Coder", [WEATHER, function_tool("ping")])
    text = "<tool_call>\n<function=get_weather>\n<tool_call>\n<function=ping>\n</function>\n</tool_call>"
    parsed = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("ping", {})]
    assert "<function=get_weather>" in parsed.content
    assert parsed.warnings
    _assert_stream_equals_parse(params, text)


# --- d. JSON-array sections: broken arrays, stream equals parse, warnings in output coordinates ---------------------

ARRAY_TEMPLATES = ["CohereForAI-c4ai-command-r7b-12-2024-tool_use", "Cohere2MoE", "NVIDIA-Nemotron-Nano-v2"]


def _broken_arrays(template: str) -> list[str]:
    fmt = ChatTemplate.load(template).analysis.tools.format
    assert fmt.tools_array_wrapped and fmt.section_start
    marker, name, args = fmt.section_start.strip(), fmt.name_field, fmt.args_field
    call = f'{{"{name}": "get_weather", "{args}": {{"city": "Zanzibar"}}}}'
    bodies = [
        '[{"":1}',
        '[{"zqkeep":1}]',
        "[" + call,
        "[" + call + ",",
        "[" + call + ",, " + call + "]",
        f'[{{"{name}": "get_weather", "{args}": {{"city": "Zanz',
        f'[{{"{name}"',
        "[}",
        "[1, 2",
        "[" + call + "] trailing zqtail",
    ]
    outputs = [marker + body for body in bodies]
    reasoning = ChatTemplate.load(template).analysis.reasoning
    if reasoning.end.strip():  # also after a closed reasoning block (the prompt may have opened it)
        outputs += ["Thinking zqthink." + reasoning.end.strip() + marker + body for body in bodies[:4]]
    return outputs


@pytest.mark.parametrize("template", ARRAY_TEMPLATES)
def test_d_broken_json_arrays(template: str) -> None:
    params = chat(template)
    for text in _broken_arrays(template):
        parsed = params.parse(text)
        for warning in parsed.warnings:
            assert 0 <= warning.position <= len(text), (text, warning)
        kept = kept_text(parsed)
        for word in ("zqkeep", "zqtail", "zqthink", "Zanzibar", "Zanz"):
            assert word not in text or word in kept, (text, word, parsed)
        _assert_stream_equals_parse(params, text)


# --- e. silent loss ------------------------------------------------------------------------------------------------


def _json_native() -> list[str]:
    found = []
    for name in sampled():  # the sample's templates (tests/support/sample.py)
        analysis = ChatTemplate.load(name).analysis
        fmt = analysis.tools.format
        if analysis.format == GENERIC and fmt.mode is ToolFormatMode.JSON_NATIVE and fmt.args_field:
            found.append(name)
    return found


JSON_NATIVE = _json_native()


def _zanzibar_call(template: str) -> str:
    text = render_calls(template, [("get_weather", {"city": "Zanzibar"})])
    if text is None:
        pytest.skip("the template cannot render tool-call history")
    return text


def _damaged_keys(key: str) -> list[str]:
    swapped = key[:-3] + key[-2] + key[-3] + key[-1] if len(key) > 3 else key + "x"
    return [key.capitalize(), key + " ", swapped]


@pytest.mark.parametrize("template", JSON_NATIVE)
def test_e_damaged_arguments_key_is_not_an_empty_call(template: str) -> None:
    args = ChatTemplate.load(template).analysis.tools.format.args_field
    text = _zanzibar_call(template)
    assert f'"{args}"' in text
    for damaged in _damaged_keys(args):
        broken = text.replace(f'"{args}"', f'"{damaged}"', 1)
        parsed = chat(template).parse(broken)
        assert not [c for c in parsed.tool_calls if json.loads(c.arguments or "null") == {}], (damaged, parsed)
        # The call committed at its name (a stream announced it): its arguments are read from the damaged member,
        # with a warning, rather than lost.
        assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("get_weather", {"city": "Zanzibar"})]
        assert parsed.warnings and damaged in parsed.warnings[0].message, (damaged, parsed)


@pytest.mark.parametrize("template", JSON_NATIVE)
def test_e_unknown_member_keeps_the_call_with_a_warning(template: str) -> None:
    name = ChatTemplate.load(template).analysis.tools.format.name_field
    text = _zanzibar_call(template)
    head = f'"{name}": "get_weather"'
    assert head in text
    parsed = chat(template).parse(text.replace(head, head + ', "extra": 1', 1))
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("get_weather", {"city": "Zanzibar"})]
    assert parsed.warnings
    ordinary = chat(template).parse(text.replace(head, head + ', "type": "function", "index": 0', 1))
    assert [(c.name, json.loads(c.arguments)) for c in ordinary.tool_calls] == [("get_weather", {"city": "Zanzibar"})]
    assert not ordinary.warnings, ordinary.warnings


GPT_OSS_OTHER_RECIPIENTS = [
    ' to=browser.search<|channel|>commentary json<|message|>{"query": "Zanzibar"}<|call|>',
    "<|channel|>analysis<|message|>Search first.<|end|>"
    '<|start|>assistant to=browser.search<|channel|>commentary json<|message|>{"query": "Zanzibar"}<|call|>',
    '<|channel|>commentary to=python<|message|>print("Zanzibar")<|call|>',
]


@pytest.mark.parametrize("text", GPT_OSS_OTHER_RECIPIENTS)
def test_e_gpt_oss_message_to_another_recipient_is_not_lost_silently(text: str) -> None:
    """Left out of the message, as the reference (and the corpus) do, but a warning carries its whole text."""
    params = _apply("openai-gpt-oss-120b", [WEATHER])
    parsed = params.parse(text)
    assert not parsed.tool_calls
    assert "Zanzibar" not in parsed.content, parsed
    assert any("Zanzibar" in w.message for w in parsed.warnings), parsed


def test_e_gemma4_deep_dict_arguments_keep_the_reasoning() -> None:
    params = _apply("google-gemma-4-31B-it", [WEATHER_TOOL])
    deep = "{a:" * 200 + "1" + "}" * 200
    text = "<|channel>thought\nI will call it.<channel|><|tool_call>call:get_weather{city:" + deep + "}<tool_call|>"
    parsed = params.parse(text)
    assert parsed.reasoning_content == "I will call it.", parsed
    assert "I will call it." not in parsed.content
    if not parsed.tool_calls:
        assert "call:get_weather" in parsed.content and parsed.warnings, parsed


# --- f. crashes ----------------------------------------------------------------------------------------------------


def _tagged_templates() -> list[str]:
    return [
        t
        for t in sampled()  # the sample's templates (tests/support/sample.py)
        if ChatTemplate.load(t).analysis.tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED
    ]


@pytest.mark.parametrize("template", _tagged_templates())
def test_f_deeply_nested_tagged_value_does_not_crash(template: str) -> None:
    call = render_calls(template, [("get_weather", {"days": DEEP_PLACEHOLDER})])
    if call is None:
        pytest.skip("the template cannot render tool-call history")
    text = call.replace(str(DEEP_PLACEHOLDER), "[" * 1000 + "]" * 1000)
    params = chat(template)
    params.parse(text)
    _stream(params, [text[i : i + 97] for i in range(0, len(text), 97)])


GEMMA_CUT_ESCAPES = [
    '<|tool_call>call:get_weather{city:"\\u12}<tool_call|>',
    '<|tool_call>call:get_weather{city:<|"|>Par"\\u12<|"|>}<tool_call|>',
    '<|tool_call>call:get_weather{city:{a:"\\u12}}<tool_call|>',
    '<|tool_call>call:get_weather{city:["\\u12',
    '<|tool_call>call:get_weather{city:"\\u12',
]


@pytest.mark.parametrize("text", GEMMA_CUT_ESCAPES)
def test_f_gemma4_cut_escape_does_not_crash(text: str) -> None:
    params = _apply("google-gemma-4-31B-it", [WEATHER_TOOL])
    params.parse(text)
    _stream(params, char_chunks(text))


# --- g. the stream never retracts (issue 24, item 4): the shrunk cases of a seeded fuzz run ------------------------

_TWO_IDS = '[TOOL_CALLS][{"name": "ping", "arguments": {}, "id": 1, "id": "c"}]'
_SCOUT_CUT = (
    '<|python_start|>><|python_end|>{"name": "get_weather", "parameters": {"city": "Pa \\"ris\\" <b>x</b> a<b & '
    'c\\\\d\\nline two 東京 été 🌍", "city_code": "PAR", "days": 3, "temp": -21.5, "metric": t'
)
RETRACTIONS = [
    # A fence the answer of a json_schema request hid, cut off: it came back as text in front of what was shown.
    ("mistralai-Ministral-3-14B-Reasoning-2512", True, "[THINK][/THINK]```json{"),
    # `[` shown as the start of a JSON answer, then `[TOOL_CALLS]`.
    ("mistralai-Ministral-3-14B-Reasoning-2512", True, '[THINK]x[/THINK][TOOL_CALLS]get[ARGS]{"city": "Oslo"}'),
    # A bare-JSON call list shown as a JSON answer, then cut off: calls.
    ("Apertus-8B-Instruct", True, '[{"ping": {'),
    # A long call broken far from its start: a stream's parse, which skips what it settled, recorded the failure
    # elsewhere (or not at all) and recovered the call at another place than parse() does.
    ("MiniMax-M3", False, '<invoke name="get_weather">minimax[>[<city>Zanzibar]<]ays>]<]min[e~['),
    ("meta-llama-Llama-4-Scout-17B-16E-Instruct", False, _SCOUT_CUT),
    ("meta-llama-Llama-4-Scout-17B-16E-Instruct", True, _SCOUT_CUT),
    # Two ids in one call: a stream announced the call with the first, complete one; the parse kept the last.
    ("mistralai-Mistral-Nemo-Instruct-2407", False, _TWO_IDS),
    # The rest of a broken call ran up to the fence inside `Action:\n```json` while that marker was still arriving.
    ("CohereForAI-c4ai-command-r-plus-tool_use", False, '{"tool_name":"get_weather","parameters":Action:\n```json'),
    # A json_schema answer that broke off at a call told the calls' guards their objects were malformed JSON.
    ("ollama-cogito-3b", True, '[{"name": "ping", "arguments": {}}, {"name": "get_weather"arguments": {"ci'),
]


@pytest.mark.parametrize(("template", "schema", "text"), RETRACTIONS)
def test_g_the_stream_never_retracts(template: str, schema: bool, text: str) -> None:
    params = schema_chat(template) if schema else chat(template)
    for end in range(max(1, len(text) - 24), len(text) + 1):  # (the cuts before its end too)
        _assert_stream_equals_parse(params, text[:end])


# --- a fence retagged by the model (fuzz seed 20261128) ---------------------------------------------------------------


@pytest.mark.parametrize("tag", ["json", "python", "zq7rwh", ""])
def test_a_retagged_fence_still_opens_the_calls_and_its_tag_is_markup(tag: str) -> None:
    """Command R+'s prompt shows its calls in a ```json fence; models retag it (```python) or drop the tag. The call
    is read either way, and the tag is fence markup, not lost text; the promise checker knows that much and no more
    (the marker word before the fence, also markup, is what it would report as lost if a test asked for it)."""
    params = chat("CohereForAI-c4ai-command-r-plus-tool_use")
    text = f'Action:```{tag}\n[{{"tool_name": "get_weather", "parameters": {{"city": "Paris"}}}}]\n```'
    message, failures = check_parse(params, text, words=[tag, "Paris"] if tag else ["Paris"], expected_calls=1)
    assert not failures, failures
    assert message is not None
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get_weather", {"city": "Paris"})]
    _, failures = check_parse(params, text, words=["Action"])
    assert [f.promise for f in failures] == ["P2"]


# --- a call object with two name members (fuzz seed 20261129) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "reply"),
    [
        (
            "Cohere2MoE",
            '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get", "tool_name": "get_weather", '
            '"parameters": {"city": "Oslo"}}]<|END_ACTION|>',
        ),
        (
            "Qwen-Qwen2.5-7B-Instruct",
            '<tool_call>\n{"name": "get", "name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        ),
    ],
)
def test_a_second_name_member_is_noted_and_the_first_kept(template: str, reply: str) -> None:
    """A stream announces a call with its first name; the whole reply must say the same, and say what it left out."""
    params = chat(template)
    message = params.parse(reply)
    assert [c.name for c in message.tool_calls] == ["get"]
    assert any("second name 'get_weather'" in w.message for w in message.warnings), message.warnings
    _assert_stream_equals_parse(params, reply)
