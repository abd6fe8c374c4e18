"""Tagged argument values come back as the model meant them: typed as the schema says, in either spelling.

Templates print values with Python's ``str()`` (``True``, ``None``, ``{'k': 1}``: Seed-OSS, and Qwen3-Coder /
Qwen3.5 / Nemotron-3 / StepFun for scalars) or with ``tojson`` (GLM, MiniMax-M2, Ling, Spark, DSML). Each template's
own rendering of a call with every JSON type must parse back to the arguments that went in, including strings whose
own spaces and tabs lead or trail (the template's layout line breaks are not part of the value), final and
streamed. Then the spellings models write that their template does not: the other literal style, layout breaks
where the template has none, ``\\r\\n``, a value cut off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.parser.calls.tagged_values import decode_value, json_types, value_tag

from ..robustness.promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks
from ..support.helpers import check_cut_call, function_tool
from ..support.outputs import chat, markers, render_calls

TAGGED = [
    "ByteDance-Seed-OSS",
    "GLM-4.6",
    "GLM-4.7-Flash",
    "GLM-5.2",
    "MiniMax-M2",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "Qwen3-Coder",
    "Qwen3.5-4B",
    "Spark2.5",
    "StepFun3.5-Flash",
    "stepfun-ai-Step-3.5-Flash",
    "inclusionai-ling-3.0-flash",
    "deepseek-ai-DeepSeek-V3.2",
    "deepseek-ai-DeepSeek-V4",
]

# Arguments of the round-trip tool (tests/support/outputs.py: city and city_code strings, days integer, temp number,
# metric boolean, note integer-or-null, unit enum, tags array, options object).
SPACES = {
    "city": "  two spaces ",
    "city_code": "\ttab\t",
    "days": 3,
    "temp": 21.5,
    "metric": True,
    "note": None,
    "unit": "celsius",
    "tags": ["rain", "wind"],
    "options": {"depth": {"levels": [1, False, None, 2.5], "label": "deep"}},
}
OTHERS = {
    "city": " line one\nline two",
    "city_code": "x ",
    "days": -2,
    "temp": 1e-05,
    "metric": False,
    "note": 7,
    "tags": [],
    "options": {"flag": True, "none": None, "quote": 'it\'s "so"'},
}


def _stream_failures(params: ChatParams, text: str, template: str) -> list[str]:
    expected = params.parse(text)
    chunkings = [
        char_chunks(text),
        *(random_chunks(text, seed) for seed in (1, 2)),
        *marker_cut_chunkings(text, markers(template)),
    ]
    return [str(f) for pieces in chunkings for f in check_stream(params, pieces, expected)]


@pytest.mark.parametrize("arguments", [SPACES, OTHERS], ids=["spaces", "others"])
@pytest.mark.parametrize("template", TAGGED)
def test_the_templates_own_rendering_parses_back(template: str, arguments: dict[str, Any]) -> None:
    text = render_calls(template, [("get_weather", arguments)])
    assert text is not None, "the template renders tool calls"
    params = chat(template)
    message = params.parse(text)
    assert not message.warnings, message.warnings
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get_weather", arguments)]
    assert not _stream_failures(params, text, template)


def test_python_and_json_spellings_are_what_the_templates_print() -> None:
    """(What this file is about: the two families really print values differently. A dict or list the request sent
    prints as JSON in every template (autoparser/requests/json_data.py); a scalar as the template spells it.)"""
    seed = render_calls("ByteDance-Seed-OSS", [("get_weather", {"metric": True, "options": {"a": None}})])
    coder = render_calls("Qwen3-Coder", [("get_weather", {"metric": True, "options": {"a": None}})])
    glm = render_calls("GLM-4.6", [("get_weather", {"metric": True, "options": {"a": None}})])
    assert seed is not None and ">True<" in seed and '{"a": null}' in seed
    assert coder is not None and "\nTrue\n" in coder and '{"a": null}' in coder
    assert glm is not None and ">true<" in glm and '{"a": null}' in glm


# --- what models write -------------------------------------------------------------------------------------------

TYPED = {
    "type": "object",
    "properties": {
        "flag": {"type": "boolean"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "maybe": {"type": ["string", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "code": {"type": "string"},
        "config": {"type": "object"},
        "items": {"type": "array", "items": {"type": "integer"}},
        "loose": {},
    },
}
TOOLS = [function_tool("set", TYPED), function_tool("ping")]
USER = [{"role": "user", "content": "go"}]


def _coder() -> ChatParams:
    return ChatTemplate.load("Qwen3-Coder").apply(USER, tools=TOOLS)


def _qwen_call(*params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={name}>\n{value}\n</parameter>\n" for name, value in params)
    return f"<tool_call>\n<function=set>\n{body}</function>\n</tool_call>"


@pytest.mark.parametrize(
    ("name", "written", "value"),
    [
        ("flag", "True", True),
        ("flag", "true", True),
        ("flag", "False", False),
        ("count", "42", 42),
        ("ratio", "2.50", 2.5),
        ("maybe", "None", None),
        ("maybe", "null", None),
        ("maybe", "Nonesuch", "Nonesuch"),
        ("maybe", '"quoted"', '"quoted"'),  # a string parameter keeps its raw text, quotes and all
        ("either", "12", 12),
        ("either", "12 apples", "12 apples"),
        ("either", "1.5", "1.5"),  # not an integer: the string
        ("code", "None", "None"),  # a string is a string, whatever it spells
        ("code", "007", "007"),
        ("config", "{'a': True, 'b': [None, 'x']}", {"a": True, "b": [None, "x"]}),
        ("config", '{"a": true}', {"a": True}),
        ("items", "[1, 2, 3]", [1, 2, 3]),
        ("loose", '{"k": 1}', {"k": 1}),  # no schema: JSON when it is JSON
        ("loose", "True", "True"),  # ... and a string otherwise
        ("flag", "yes", "yes"),  # neither spelling: kept as the text it is
    ],
)
def test_values_are_read_as_the_schema_types_them(name: str, written: str, value: Any) -> None:
    params = _coder()
    text = _qwen_call((name, written))
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("set", {name: value})]
    assert not check_stream(params, char_chunks(text), message)


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("<parameter=code>  Paris </parameter>", "  Paris "),  # no layout at all: every space is the value's
        ("<parameter=code>\n  Paris \n</parameter>", "  Paris "),
        ("<parameter=code>\r\n\tParis\t\r\n</parameter>", "\tParis\t"),
        ("<parameter=code>\n\nParis\n\n</parameter>", "\nParis\n"),  # one break per side is layout
        ("<parameter=code>\n</parameter>", ""),
        ("<parameter=code> </parameter>", " "),
    ],
)
def test_only_the_layout_line_breaks_are_trimmed(written: str, value: str) -> None:
    params = _coder()
    text = f"<tool_call>\n<function=set>\n{written}\n</function>\n</tool_call>"
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("set", {"code": value})]
    assert not check_stream(params, char_chunks(text), message)
    assert not check_stream(params, random_chunks(text, 7), message)


def test_layout_breaks_where_the_template_writes_none() -> None:
    """Seed-OSS's template puts values right between the tags; its models write line breaks around them anyway
    (a corpus case), and those are layout. Spaces stay data."""
    params = ChatTemplate.load("ByteDance-Seed-OSS").apply(USER, tools=TOOLS)
    text = "<seed:tool_call>\n<function=set>\n<parameter=code>\n two \n</parameter>\n<parameter=flag>True</parameter>\n"
    text += "</function>\n</seed:tool_call>"
    message = params.parse(text)
    assert [json.loads(c.arguments) for c in message.tool_calls] == [{"code": " two ", "flag": True}]
    assert not check_stream(params, char_chunks(text), message)


@pytest.mark.parametrize("template", ["GLM-4.6", "MiniMax-M2", "deepseek-ai-DeepSeek-V4"])
def test_python_spellings_in_a_json_template(template: str) -> None:
    """A model of a tojson template that writes Python literals (``True``, ``None``, a Python dict)."""
    # (the call markup alone: with reasoning_format "none" a block the prompt opened does not swallow it)
    params = ChatTemplate.load(template).apply(USER, tools=TOOLS, reasoning_format="none")
    rendered = _call_block(template, {"flag": True, "maybe": None, "config": {"a": None}})
    text = rendered.replace(">true<", ">True<").replace(">null<", ">None<").replace('{"a": null}', "{'a': None}")
    assert text.count("None") == 2 and "True" in text
    message = params.parse(text)
    assert [json.loads(c.arguments) for c in message.tool_calls] == [
        {"flag": True, "maybe": None, "config": {"a": None}}
    ]
    assert not check_stream(params, char_chunks(text), message)


def _call_block(template: str, arguments: dict[str, Any]) -> str:
    """The template's own call markup for a call of ``set`` (rendered with this module's tools), from its first
    call marker to its last."""
    tmpl = ChatTemplate.load(template)
    call = {"id": "call00001", "type": "function", "function": {"name": "set", "arguments": json.dumps(arguments)}}
    turn = {"role": "assistant", "content": "", "tool_calls": [call]}
    full = tmpl.apply([*USER, turn], tools=TOOLS, add_generation_prompt=False).prompt
    fmt = tmpl.analysis.tools.format
    start = (fmt.section_start or fmt.per_call_start).strip()
    end = (fmt.section_end or fmt.per_call_end).strip()
    return full[full.rindex(start) : full.rindex(end) + len(end)]


def test_a_value_cut_off_keeps_the_call_as_far_as_it_got() -> None:
    params = _coder()
    whole = _qwen_call(("count", "42"), ("code", "  abc  "), ("config", "{'a': True}"))
    complete = params.parse(whole).tool_calls[0].arguments
    for cut in (whole.index("abc") + 2, whole.index("{'a'") + 3, whole.index("</function>")):
        message = check_cut_call(params, whole[:cut], "set", complete)
        assert message.tool_calls and message.tool_calls[0].name == "set"
        assert json.loads(complete) == {"count": 42, "code": "  abc  ", "config": {"a": True}}


# --- the decoder alone ---------------------------------------------------------------------------------------------


def test_schema_types() -> None:
    assert json_types({"type": "integer"}) == {"integer"}
    assert json_types({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == {"integer", "null"}
    assert json_types({"enum": [1, "a", None]}) == {"integer", "string", "null"}
    assert json_types({"properties": {}}) == {"object"}
    assert json_types({"anyOf": [{"type": "string"}, {"$ref": "#/x"}]}) is None
    assert json_types({"description": "anything"}) is None
    assert value_tag({"type": "string", "enum": ["a"]}) == "tool-arg-string"
    assert value_tag(None) == "tool-arg-value"


def test_deep_python_literals_convert_without_recursion() -> None:
    deep = "[" * 5000 + "None" + "]" * 5000
    assert decode_value(value_tag({"type": "array"}), deep) == "[" * 5000 + "null" + "]" * 5000
