"""``ChatTemplate.apply`` refuses what a server must answer with a 400 as :class:`RequestError` naming the field:
schemas that are not JSON Schema (in a tool or ``json_schema``), tool parameters that are not JSON, duplicate tool
names, lone surrogates, nesting past :data:`MAX_DEPTH` (call arguments included)."""

from __future__ import annotations

from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.errors import RequestError
from autoparser.requests import MAX_DEPTH, check_json_data, check_schema

USER = [{"role": "user", "content": "Weather?"}]


def _tool(parameters: Any, name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth - 1):
        value = {"k": value}
    return {"k": value}


@pytest.fixture(scope="module")
def qwen() -> ChatTemplate:
    return ChatTemplate.load("Qwen3.5-4B")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tools": [_tool({"type": "x"})]}, "tools[0].function.parameters.type"),
        (
            {"tools": [_tool({"properties": {"a": {"pattern": "["}}})]},
            "tools[0].function.parameters.properties.a.pattern",
        ),
        (
            {"tools": [_tool({"properties": {"a": {"$ref": "other.json#/a"}}})]},
            "tools[0].function.parameters.properties.a.$ref",
        ),
        ({"tools": [_tool("{not json")]}, "tools[0].function.parameters"),
        ({"tools": [_tool('"a string"')]}, "tools[0].function.parameters"),
        ({"tools": [_tool({}), _tool({})]}, "tools[1].function.name"),
        ({"tools": [{"name": "f", "parameters": {"type": 3}}]}, "tools[0].parameters.type"),
        ({"json_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "json_schema.properties.a.type"),
        ({"json_schema": {"allOf": [{"maximum": "3"}]}}, "json_schema.allOf[0].maximum"),
    ],
)
def test_apply_names_the_schema_keyword(qwen: ChatTemplate, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(RequestError) as caught:
        qwen.apply(USER, **kwargs)
    assert caught.value.field == field


def test_apply_refuses_lone_surrogates_and_deep_data(qwen: ChatTemplate) -> None:
    with pytest.raises(RequestError) as caught:
        qwen.apply([{"role": "user", "content": "a\ud800b"}])
    assert caught.value.field == "messages[0].content"
    with pytest.raises(RequestError) as caught:
        qwen.apply([{"role": "user", "content": "x", "extra": _nested(MAX_DEPTH + 5)}])
    assert caught.value.field.startswith("messages[0].extra")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[" * 500 + "]" * 500}}
    messages = [
        *USER,
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    with pytest.raises(RequestError) as caught:
        qwen.apply(messages, tools=[_tool({})])
    assert caught.value.field.startswith("messages[1].tool_calls[0].function.arguments")
    deeper = {**call, "function": {"name": "f", "arguments": "[" * 100_000 + "]" * 100_000}}
    with pytest.raises(RequestError):
        qwen.apply([*USER, {"role": "assistant", "tool_calls": [deeper]}], tools=[_tool({})])


def test_valid_schemas_and_data_pass(qwen: ChatTemplate) -> None:
    schema = {
        "type": ["object", "null"],
        "$defs": {"item": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1}},
        "properties": {"a": {"$ref": "#/$defs/item"}, "b": {"anyOf": [{"type": "integer", "minimum": 0}, True]}},
        "required": ["a"],
    }
    check_schema(schema, "s")
    check_json_data({"a": ["\U0001f600", _nested(MAX_DEPTH - 2)]}, "x")
    assert qwen.apply(USER, tools=[_tool(schema)]).prompt
    assert qwen.apply(USER, tools=[_tool('{"type": "object"}')]).prompt


def test_check_json_data_walks_any_depth_without_recursion() -> None:
    value: Any = "x"
    for _ in range(200_000):
        value = [value]
    with pytest.raises(RequestError) as caught:
        check_json_data({"a": value}, "body")
    assert caught.value.field.startswith("body.a[0]")
