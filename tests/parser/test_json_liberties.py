"""Liberties models take with JSON tool calls and their wrappers, on real templates (docs/parsing.md).

Each output starts from what the template itself renders for a call (its markers, its whitespace); the call objects
in it are then rewritten the way models write them. The expected calls are the ones that went into the rendering.
Normal variants (another family's envelope, keys in any order, one object or a list) parse without a warning;
repairs (a marker a detokenizer dropped, an unusual key for the arguments) parse with one. Every output is also
streamed (one character at a time, random chunks, chunks cutting every marker) and cut at every length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.ids import generated_ids_ok
from ..support.outputs import chat, markers, render_calls

PARIS = ("get_weather", {"city": "Paris", "days": 2})
ROME = ("get", {"city": "Rome"})
WORDS = ("Paris", "Rome")

# One call object per wrapper (`<tool_call>\n{...}\n</tool_call>`), in several families' spellings.
PER_CALL = [
    "Qwen-Qwen2.5-7B-Instruct",
    "Qwen-Qwen3-0.6B",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "NousResearch-Hermes-4-14B",
    "ibm-granite-granite-4.0",
    "LGAI-EXAONE-K-EXAONE-236B-A23B",
    "meituan-longcat-LongCat-Flash-Chat",
]
# A JSON array of calls inside a section (`<TOOLCALL>[...]</TOOLCALL>`, `[TOOL_CALLS][...]`, ...).
SECTION_ARRAY = [
    "NVIDIA-Nemotron-Nano-v2",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "unsloth-Apriel-1.5",
    "fireworks-ai-llama-3-firefunction-v2",
]
# Bare JSON objects, no markers (Llama 3.x).
BARE = ["meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct", "meta-llama-Llama-3.3-70B-Instruct"]
WITH_IDS = ["mistralai-Mistral-Nemo-Instruct-2407", "CohereForAI-c4ai-command-r7b-12-2024-tool_use"]
ENVELOPES = PER_CALL + SECTION_ARRAY + BARE + ["meta-llama-Llama-4-Scout-17B-16E-Instruct"]
# `<special>NAME<special>{json}`: Mistral's `[TOOL_CALLS]NAME[ARGS]{...}`, DeepSeek V3.1's tool tokens.
NAME_THEN_JSON = [
    "mistralai-Ministral-3-14B-Reasoning-2512",
    "unsloth-mistral-Devstral-Small-2507",
    "Mistral-Small-3.2-24B-Instruct-2506",
    "deepseek-ai-DeepSeek-V3.1",
]

_DECODER = json.JSONDecoder()


# --- building outputs from the template's own rendering -------------------------------------------------------------


def _fields(template: str) -> tuple[str, str]:
    fmt = ChatTemplate.load(template).analysis.tools.format
    return fmt.name_field, fmt.args_field


def _call_spans(text: str) -> list[tuple[int, int]]:
    """Where the rendered call objects are (outermost JSON objects naming one of the tools)."""
    spans, at = [], text.find("{")
    while at >= 0:
        try:
            value, end = _DECODER.raw_decode(text, at)
        except ValueError:
            value, end = None, at + 1
        names = {PARIS[0], ROME[0]}
        if isinstance(value, dict) and (names & set(map(str, value.values())) or names & set(value)):
            spans.append((at, end))
        else:
            end = at + 1
        at = text.find("{", end)
    return spans


def _rendered(template: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    text = render_calls(template, calls)
    assert text is not None, template
    assert len(_call_spans(text)) == len(calls), text
    return text


def _outside(template: str) -> str:
    """The content of the template's own rendering of a call: the text the renderer left outside the call markup
    (LongCat's turn header), which a variant of the call must leave as it is."""
    text = _rendered(template, [PARIS])
    found = chat(template).parse(text)
    assert _calls(found) == [PARIS] and not found.warnings, found
    return found.content


def _as_text(template: str, lead: str, text: str) -> str:
    """The content expected for ``lead + text`` when ``text`` is read as plain text: what the parse makes of a
    plain word in its place (so whatever the template's rendering leaves around the calls stays as it is)."""
    parsed = chat(template).parse(lead + "Zqxword")
    assert "Zqxword" in parsed.content, parsed
    return parsed.content.replace("Zqxword", text.strip())


def _rewrite(template: str, objects: list[str], *, two: bool | None = None) -> str:
    """The template's rendering of len(objects) calls, each call object replaced by the given text."""
    calls = [PARIS, ROME][: len(objects)] if two is None else ([PARIS, ROME] if two else [PARIS])
    text = _rendered(template, calls)
    for (start, end), obj in reversed(list(zip(_call_spans(text), objects, strict=True))):
        text = text[:start] + obj + text[end:]
    return text


def _envelope(template: str, call: tuple[str, dict[str, Any]], *, args_key: str = "", name_key: str = "") -> str:
    name_field, args_field = _fields(template)
    name, args = call
    return json.dumps({name_key or name_field: name, args_key or args_field: args})


def _arguments_last(template: str, call: tuple[str, dict[str, Any]]) -> str:
    name_field, args_field = _fields(template)
    return json.dumps({args_field: call[1], name_field: call[0]})


def _list_span(text: str) -> tuple[int, int]:
    """The JSON array around the calls of an array-wrapped rendering."""
    spans = _call_spans(text)
    start = text.rindex("[", 0, spans[0][0])
    end = text.index("]", spans[-1][1]) + 1
    return start, end


# --- checks -------------------------------------------------------------------------------------------------------


def _calls(message: ChatMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


def _check(
    params: ChatParams,
    text: str,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    warned: str | None = None,
    content: str = "",
    markers_of: str = "",
) -> ChatMessage:
    """Parse ``text``: exactly ``calls``, ``content``, and no warning (``warned``: a warning containing it). Then
    the stream under several chunkings ends equal to the parse, and every cut of the output keeps its words.
    ``markers_of``: also cut every marker of that template."""
    parsed, failures = check_parse(params, text, words=WORDS)
    assert not failures and parsed is not None, failures
    assert _calls(parsed) == [(n, a) for n, a in calls], (text, parsed)
    assert parsed.content == content.strip(), (text, parsed)
    if warned is None:
        assert not parsed.warnings, (text, parsed.warnings)
    else:
        assert any(warned in w.message for w in parsed.warnings), (text, parsed.warnings)
    chunkings = [char_chunks(text)] + [random_chunks(text, seed) for seed in range(3)]
    if markers_of:
        chunkings += marker_cut_chunkings(text, markers(markers_of))
    for pieces in chunkings:
        failed = check_stream(params, pieces, parsed)
        assert not failed, (text, pieces, [str(f) for f in failed])
    _check_cuts(params, text)
    return parsed


def _check_cuts(params: ChatParams, text: str) -> None:
    """Every prefix: no crash, no word lost, and (for some) the stream of the prefix ends equal to its parse."""
    for cut in range(len(text)):
        prefix = text[:cut]
        parsed, failures = check_parse(params, prefix, words=WORDS)
        assert not failures and parsed is not None, (prefix, failures)
        if cut % 5 == 0:
            failed = check_stream(params, char_chunks(prefix), parsed)
            assert not failed, (prefix, [str(f) for f in failed])


# --- 1. the arguments and name under other keys ---------------------------------------------------------------------


@pytest.mark.parametrize("template", ENVELOPES)
def test_arguments_under_the_other_common_key(template: str) -> None:
    """"parameters" where the template writes "arguments" and the reverse: the same call, no warning."""
    args_field = _fields(template)[1]
    other = "parameters" if args_field == "arguments" else "arguments"
    text = _rewrite(template, [_envelope(template, PARIS, args_key=other)])
    _check(chat(template), text, [PARIS], markers_of=template, content=_outside(template))


@pytest.mark.parametrize("template", PER_CALL[:3] + SECTION_ARRAY[:2] + BARE[:1])
@pytest.mark.parametrize("key", ["args", "input", "params"])
def test_arguments_under_a_rarer_key_are_read_with_a_warning(template: str, key: str) -> None:
    text = _rewrite(template, [_envelope(template, PARIS, args_key=key)])
    _check(chat(template), text, [PARIS], warned=repr(key), content=_outside(template))


@pytest.mark.parametrize("template", ["Qwen-Qwen2.5-7B-Instruct", "CohereForAI-c4ai-command-r7b-12-2024-tool_use"])
def test_name_under_the_other_common_key(template: str) -> None:
    other = "name" if _fields(template)[0] == "tool_name" else "tool_name"
    text = _rewrite(template, [_envelope(template, PARIS, name_key=other)])
    _check(chat(template), text, [PARIS], content=_outside(template))


@pytest.mark.parametrize("template", PER_CALL[:2] + SECTION_ARRAY[:2] + BARE[:1])
def test_a_rarer_key_does_not_take_the_place_of_other_members(template: str) -> None:
    """Arguments under "input" next to an unknown member: the arguments come from "input", the other is warned."""
    name_field, _ = _fields(template)
    obj = json.dumps({name_field: PARIS[0], "input": PARIS[1], "verbose": True})
    parsed = _check(chat(template), _rewrite(template, [obj]), [PARIS], warned="'input'", content=_outside(template))
    assert any("'verbose'" in w.message and "ignored" in w.message for w in parsed.warnings), parsed.warnings


# --- 2. members in any order, ids, OpenAI's nested object -----------------------------------------------------------


@pytest.mark.parametrize("template", ENVELOPES)
def test_name_after_the_arguments(template: str) -> None:
    text = _rewrite(template, [_arguments_last(template, PARIS)])
    _check(chat(template), text, [PARIS], markers_of=template, content=_outside(template))


@pytest.mark.parametrize("template", PER_CALL[:3] + SECTION_ARRAY[:3] + BARE[:1])
def test_openai_nested_function_object(template: str) -> None:
    obj = {"id": "call_1", "type": "function", "function": {"name": PARIS[0], "arguments": json.dumps(PARIS[1])}}
    text = _rewrite(template, [json.dumps(obj)])
    _check(chat(template), text, [PARIS], content=_outside(template))


def _with_id(template: str, first: bool, call_id: str) -> str:
    fmt = ChatTemplate.load(template).analysis.tools.format
    id_key = fmt.id_field or fmt.gen_id_field
    members = [(fmt.name_field, PARIS[0]), (fmt.args_field, PARIS[1])]
    members.insert(0 if first else 2, (id_key, call_id))
    return _rewrite(template, [json.dumps(dict(members))])


@pytest.mark.parametrize("template", WITH_IDS)
@pytest.mark.parametrize("first", [True, False])
def test_id_before_or_after_the_arguments(template: str, first: bool) -> None:
    params = chat(template)
    parsed = _check(params, _with_id(template, first, "abcdefghi"), [PARIS], content=_outside(template))
    if first or ChatTemplate.load(template).analysis.tools.format.id_field:
        assert parsed.tool_calls[0].id == "abcdefghi"
    # (an id written after the arguments where the template writes it first comes too late for a stream, which
    # announced the call with its own id; the parse then does not report the model's id either: see _check)


@pytest.mark.parametrize("template", WITH_IDS)
def test_missing_optional_id(template: str) -> None:
    text = _rewrite(template, [_envelope(template, PARIS)])
    parsed = _check(chat(template), text, [PARIS], content=_outside(template))
    assert parsed.tool_calls[0].id_generated and generated_ids_ok(parsed, template), parsed.tool_calls


# --- 3. one object or a list ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("template", [*SECTION_ARRAY, "meta-llama-Llama-4-Scout-17B-16E-Instruct"])
def test_objects_where_the_template_writes_a_list(template: str) -> None:
    params = chat(template)
    one = _rendered(template, [PARIS])
    if ChatTemplate.load(template).analysis.tools.format.tools_array_wrapped:
        start, end = _list_span(one)
        inner = one[start + 1 : end - 1].strip()
        _check(params, one[:start] + inner + one[end:], [PARIS], markers_of=template, content=_outside(template))
        two = _rendered(template, [PARIS, ROME])
        start, end = _list_span(two)
        for sep in (", ", "\n", ""):
            objects = sep.join(two[a:b] for a, b in _call_spans(two))
            _check(params, two[:start] + objects + two[end:], [PARIS, ROME], content=_outside(template))
    else:  # Llama 4 writes objects one after another: an array of them works too
        two = _rendered(template, [PARIS, ROME])
        start, end = _call_spans(two)[0][0], _call_spans(two)[-1][1]
        listed = "[" + ", ".join(two[a:b] for a, b in _call_spans(two)) + "]"
        _check(params, two[:start] + listed + two[end:], [PARIS, ROME], content=_outside(template))


@pytest.mark.parametrize("template", SECTION_ARRAY)
def test_an_object_without_a_name_is_no_call(template: str) -> None:
    """In the shape the template does not write, an object is a call only if it opens with its name: a JSON answer
    in the section's place is not turned into a nameless call."""
    params = chat(template)
    one = _rendered(template, [PARIS])
    start, end = _list_span(one)
    for obj in ('{"city": "Paris"}', '{"arguments": {"city": "Paris"}}'):
        text = one[:start] + obj + one[end:]
        parsed, failures = check_parse(params, text, words=WORDS)
        assert not failures and parsed is not None and not parsed.tool_calls, parsed
        assert obj in parsed.content, parsed
        assert not any("without a known name" in w.message for w in parsed.warnings), parsed.warnings
        assert not check_stream(params, char_chunks(text), parsed)


@pytest.mark.parametrize("template", PER_CALL)
def test_a_list_or_several_objects_in_one_wrapper(template: str) -> None:
    params = chat(template)
    one = _rendered(template, [PARIS])
    start, end = _call_spans(one)[0]
    objects = [_envelope(template, PARIS), _envelope(template, ROME)]
    for inner in ("[" + ", ".join(objects) + "]", "\n".join(objects), ", ".join(objects)):
        _check(params, one[:start] + inner + one[end:], [PARIS, ROME], markers_of=template, content=_outside(template))


@pytest.mark.parametrize("template", BARE)
@pytest.mark.parametrize(
    "joined",
    [
        "{a}; {b}",
        "{a};{b}",
        "{a}\n{b}",
        "{a}{b}",
        "{a}, {b}",
        "<|python_tag|>{a}",
        "<|python_tag|>{a}<|python_tag|>{b}",
        "<|python_tag|>{a}; <|python_tag|>{b}",
        "<|python_tag|>{a}\n<|python_tag|>{b}",
        "[{a}, {b}]",
        "<|python_tag|>[{a}, {b}]",
    ],
)
def test_llama_separators_and_python_tags_are_consumed(template: str, joined: str) -> None:
    """No residue: what separates or opens bare calls is not left in the content."""
    a, b = _envelope(template, PARIS), _envelope(template, ROME)
    text = joined.replace("{a}", a).replace("{b}", b)
    calls = [PARIS, ROME] if "{b}" in joined else [PARIS]
    _check(chat(template), text, calls)


@pytest.mark.parametrize("template", BARE)
def test_llama_text_around_calls(template: str) -> None:
    params = chat(template)
    a = _envelope(template, PARIS)
    _check(params, "Checking. " + a, [PARIS], content="Checking.")
    # a special token or brackets that start no call are text
    for text in ("Use <|python_tag|> for code", "<|python_tag|>print(1)", "[1, 2] and {3}", "x <| y |> z"):
        parsed, failures = check_parse(params, text)
        assert not failures and parsed is not None and parsed.content == text and not parsed.tool_calls, parsed
        assert not check_stream(params, char_chunks(text), parsed)


# --- 4. markers a detokenizer dropped ------------------------------------------------------------------------------


def _opener(template: str) -> str:
    """The marker that opens the calls (a section's, or else each call's)."""
    fmt = ChatTemplate.load(template).analysis.tools.format
    return (fmt.section_start or fmt.per_call_start).strip()


@pytest.mark.parametrize("template", PER_CALL + SECTION_ARRAY)
def test_call_body_without_its_opener(template: str) -> None:
    """The opening marker dropped (the closer kept or dropped too): read, with a warning naming the marker."""
    params = chat(template)
    opener = _opener(template)
    fmt = ChatTemplate.load(template).analysis.tools.format
    closer = (fmt.section_end or fmt.per_call_end).strip()
    for calls in ([PARIS], [PARIS, ROME]):
        rendered = _rendered(template, calls)
        variants = [rendered.replace(opener, "")]
        if closer:
            variants.append(variants[0].replace(closer, ""))
        for text in variants:
            _check(params, text, calls, warned=repr(opener), content=_outside(template))
        # after some text of the answer
        before = rendered.index(opener)
        text = rendered[:before] + "Checking.\n" + rendered[before:].replace(opener, "")
        _check(params, text, calls, warned=repr(opener), content=_as_text(template, rendered[:before], "Checking."))


# What Hermes-style models write around a call instead of `<tool_call>`: other tags, Markdown fences, both.
WRAPPERS = [
    "<tool>\n  {call}\n</tool>",
    "<tools>\n  {call}\n</tools>",
    "<response>\n  {call}\n</response>",
    "<json>\n  {call}\n</json>",
    "<JSON>\n  {call}\n</JSON>",
    "<xml>\n  {call}\n</xml>",
    "```json\n  {call}\n```",
    "```xml\n<response>\n    {call}\n</response>\n```",
    "```\n{call}\n```",
    "```json\n\n    <function_call> {call} \n    </function_call> \n```",
    "{call}",
]


@pytest.mark.parametrize("template", PER_CALL[:4])
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_call_body_in_another_wrapper(template: str, wrapper: str) -> None:
    """The wrapper is consumed with the call (nothing of it left in the content); the missing marker is warned."""
    params = chat(template)
    call = json.dumps({"name": PARIS[0], "arguments": PARIS[1]}, indent=2 if "xml>" in wrapper else None)
    lead = _rendered(template, [PARIS]).split(_opener(template))[0]  # e.g. a reasoning block the prompt opened
    text = lead + wrapper.replace("{call}", call)
    _check(params, text, [PARIS], warned=repr(_opener(template)), content=_outside(template))
    sure = _as_text(template, lead, "Sure.")
    _check(params, lead + "Sure.\n" + text[len(lead) :], [PARIS], warned="marker", content=sure)


@pytest.mark.parametrize("template", PER_CALL[:4])
def test_function_tag_syntax_in_a_json_format(template: str) -> None:
    """`<function=NAME>{…}</function>` (the tag syntax Hermes-style models fall back to): read, with a warning."""
    params = chat(template)
    lead = _rendered(template, [PARIS]).split(_opener(template))[0]
    args = json.dumps(PARIS[1])
    for text in (f"<function={PARIS[0]}>{args}</function>", f'<function name="{PARIS[0]}">\n{args}\n</function>'):
        _check(params, lead + text, [PARIS], warned=repr(_opener(template)), content=_outside(template))


@pytest.mark.parametrize("template", PER_CALL[:3] + SECTION_ARRAY[:2])
@pytest.mark.parametrize(
    "text",
    [
        "Use <b>bold</b> or <tool> tags, and ```python\nprint({'a': [1]})\n```",
        "```json\n{\"name\": \"Bob\"}\n```",
        "<tool>not a call</tool> and <function> tags",
        "<tool>not a call</tool> <function=unknown>{}</function> <function=get_weather>no json</function>",
    ],
)
def test_wrappers_around_no_call_stay_content(template: str, text: str) -> None:
    """Tags that are no call marker are text; a call marker of another family (`<function=`, functionary's and
    Qwen3-Coder's) that did not start a call is text too, with a warning naming it where it first stands."""
    params = chat(template)
    lead = _rendered(template, [PARIS]).split(_opener(template))[0]
    parsed, failures = check_parse(params, lead + text, words=WORDS)
    assert not failures and parsed is not None, failures
    assert not parsed.tool_calls and parsed.content == _as_text(template, lead, text), parsed
    if "<function=" in text:
        expected = [(len(lead) + text.index("<function="), "call marker '<function=' did not start a tool call")]
        assert [(w.position, w.message.split(";")[0]) for w in parsed.warnings] == expected, parsed.warnings
    else:
        assert not parsed.warnings, parsed.warnings
    for pieces in (char_chunks(lead + text), random_chunks(lead + text, 4)):
        assert not check_stream(params, pieces, parsed)


@pytest.mark.parametrize("template", PER_CALL[:3] + SECTION_ARRAY[:3])
@pytest.mark.parametrize(
    "text",
    [
        'Here is a record: {"name": "Bob", "age": 3}.',
        'The call would be {"name": "get_weather"} but I will not make it.',
        'A list [1, 2, {"a": [3]}] and {"x": {"y": 1}}',
        '{"arguments": {"city": "Paris"}, "name": "get_weather"}',  # not opening with the name: undecided too long
        '{"name": "get_weather_forecast", "arguments": {}}',
        '{"name": "get_weather", "note": "no arguments member"}',
        '[{"name": "get_weather"}]',
    ],
)
def test_json_text_that_is_not_a_call_body_stays_content(template: str, text: str) -> None:
    """Without its marker, a call body is read only when it opens with a declared tool's name member followed by
    its arguments member; anything else is text, without a warning."""
    params = chat(template)
    parsed, failures = check_parse(params, text, words=WORDS)
    assert not failures and parsed is not None, failures
    assert not parsed.tool_calls and parsed.content == text and not parsed.warnings, parsed
    for pieces in (char_chunks(text), random_chunks(text, 1)):
        assert not check_stream(params, pieces, parsed)


def _name_then_json(template: str) -> tuple[str, str, str, str]:
    """The template's rendering of the call PARIS as (text before its markers, its markers up to the name, its
    markers between name and arguments, what follows the arguments)."""
    text = render_calls(template, [PARIS])
    assert text is not None
    args = json.dumps(PARIS[1])
    assert args in text, text
    head, _, tail = text.partition(args)
    name_at = head.rindex(PARIS[0])
    opener = ChatTemplate.load(template).analysis.tools.format
    first_marker = min(head.find(m.strip()) for m in (opener.section_start, opener.per_call_start) if m.strip())
    return head[:first_marker], head[first_marker:name_at], head[name_at + len(PARIS[0]) :], tail


@pytest.mark.parametrize("template", NAME_THEN_JSON)
def test_name_then_json_without_its_special_tokens(template: str) -> None:
    params = chat(template)
    lead, opener, between, closer = _name_then_json(template)
    args = json.dumps(PARIS[1])
    per_call = ChatTemplate.load(template).analysis.tools.format.per_call_start.strip()
    just_before_args = re.findall(r"\[[A-Z_]+\]|<｜[^｜]+｜>", between)[-1]
    cases = {
        f"{PARIS[0]}{args}": f"{per_call!r} and {just_before_args!r}",  # every special token dropped
        f"{opener}{PARIS[0]}{args}{closer}": repr(just_before_args),  # only the one before the arguments
    }
    if between.startswith("["):  # Mistral: `get_weather[ARGS]{...}` without `[TOOL_CALLS]`
        cases[f"{PARIS[0]}{between}{args}"] = repr(per_call)
    for text, lacking in cases.items():
        _check(params, lead + text, [PARIS], warned=lacking)
        _check(params, f"{lead}Let me check.\n{text}", [PARIS], warned=lacking, content="Let me check.")


@pytest.mark.parametrize("template", NAME_THEN_JSON)
@pytest.mark.parametrize(
    "text",
    [
        "I will use get_weather to look it up.",
        'get_weather {"city": "Paris"}',  # a space: not what a detokenizer leaves
        'forecast: get_weather{"city": "Par',  # cut off before the arguments are complete
        "get_weather{city: Paris}",
        "get_weather_v2{}",
    ],
)
def test_name_then_json_lookalikes_stay_content(template: str, text: str) -> None:
    params = chat(template)
    lead = _name_then_json(template)[0]
    parsed, failures = check_parse(params, lead + text, words=WORDS)
    assert not failures and parsed is not None, failures
    assert not parsed.tool_calls and parsed.content == text, parsed
    for pieces in (char_chunks(lead + text), random_chunks(lead + text, 2)):
        assert not check_stream(params, pieces, parsed)


@pytest.mark.parametrize("template", NAME_THEN_JSON[:3])
def test_mistral_json_envelope_after_tool_calls(template: str) -> None:
    """`[TOOL_CALLS][{"name": ..., "arguments": ...}]`, the envelope of Mistral's earlier models: no warning."""
    params = chat(template)
    a = json.dumps({"name": PARIS[0], "arguments": PARIS[1]})
    b = json.dumps({"name": ROME[0], "arguments": ROME[1]})
    _check(params, f"[TOOL_CALLS][{a}, {b}]", [PARIS, ROME], markers_of=template)
    _check(params, f"[TOOL_CALLS] {a}", [PARIS])


def test_llama4_calls_inside_the_python_token_pair() -> None:
    template = "meta-llama-Llama-4-Scout-17B-16E-Instruct"
    params = chat(template)
    a, b = _envelope(template, PARIS), _envelope(template, ROME)
    _check(params, f"<|python_start|>{a}<|python_end|>", [PARIS])
    _check(params, f"<|python_start|>{a}{b}<|python_end|>", [PARIS, ROME])
    _check(params, a, [PARIS], warned="'<|python_start|><|python_end|>'")
    # the template's own layout with an answer: its text inside the pair, the calls after it
    _check(params, f"<|python_start|>Let me check.<|python_end|>{a}{b}", [PARIS, ROME], content="Let me check.")
    # the pair around text alone is no call: the marker is reported, nothing is lost
    parsed, failures = check_parse(params, "<|python_start|>Just text<|python_end|>", words=["Just"])
    assert not failures and parsed is not None and not parsed.tool_calls and parsed.warnings, parsed


# --- 5. issue 10's rule still holds for every variant ---------------------------------------------------------------

_DAMAGED: list[Callable[[str], str]] = [str.capitalize, lambda k: k[:3] + " " + k[3:], lambda k: k + " "]


@pytest.mark.parametrize("template", PER_CALL[:2] + SECTION_ARRAY[:2] + BARE[:1])
@pytest.mark.parametrize("damage", range(len(_DAMAGED)))
def test_damaged_alias_key_is_not_an_empty_call(template: str, damage: int) -> None:
    args_field = _fields(template)[1]
    other = "parameters" if args_field == "arguments" else "arguments"
    key = _DAMAGED[damage](other)
    text = _rewrite(template, [_envelope(template, PARIS, args_key=key)])
    _check(chat(template), text, [PARIS], warned=repr(key), content=_outside(template))


# --- 6. the JSON envelope where the template writes another call syntax --------------------------------------------

TAGGED_WRAPPERS = ["Qwen3-Coder", "Qwen3.5-4B", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "GLM-4.6", "ByteDance-Seed-OSS"]


@pytest.mark.parametrize("template", TAGGED_WRAPPERS)
def test_json_envelope_in_a_tagged_call_wrapper(template: str) -> None:
    """`<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` from a model whose template writes tagged
    arguments: a complete call in a known envelope, read without a warning (and the wrapper consumed)."""
    params = chat(template)
    rendered = render_calls(template, [PARIS])
    assert rendered is not None
    fmt = ChatTemplate.load(template).analysis.tools.format
    start, end = fmt.per_call_start.strip(), fmt.per_call_end.strip()
    lead = rendered[: rendered.index(start)]  # e.g. the end of a reasoning block the prompt opened
    objects = [json.dumps({"name": n, "arguments": a}) for n, a in (PARIS, ROME)]
    _check(params, f"{lead}{start}\n{objects[0]}\n{end}", [PARIS], markers_of=template)
    _check(params, f"{lead}{start}\n{objects[0]}\n{end}\n{start}\n{objects[1]}\n{end}", [PARIS, ROME])
    _check(params, f"{lead}{start}\n[{objects[0]}, {objects[1]}]\n{end}", [PARIS, ROME])
