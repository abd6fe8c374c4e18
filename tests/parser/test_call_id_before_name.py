"""Call ids written before the function name (PRE_FUNC_NAME): Solar Open's
``<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}<|tool_call:end|>``."""

from __future__ import annotations

import json

from autoparser import ChatTemplate
from autoparser.analysis.model import CallIdPosition
from tests.robustness.promises import char_chunks, check_stream, random_chunks

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
    for name in ("get", "get_weather")
]
USER = [{"role": "user", "content": "Weather?"}]


def _params():  # type: ignore[no-untyped-def]
    return ChatTemplate.load("upstage-Solar-Open-100B").apply(USER, tools=TOOLS, parallel_tool_calls=True)


def test_solar_open_analysis() -> None:
    tools = ChatTemplate.load("upstage-Solar-Open-100B").analysis.tools
    assert tools.call_id.position is CallIdPosition.PRE_FUNC_NAME
    assert tools.function.name_prefix.strip() == "<|tool_call:name|>"  # the probe's id is not part of it


def test_ids_and_names_parse_and_stream() -> None:
    text = (
        "<|tool_calls|><|tool_call:begin|>a1B2c3<|tool_call:name|>get<|tool_call:args|>"
        '{"city": "Zanzibar"}<|tool_call:end|><|tool_call:begin|>zz9<|tool_call:name|>get_weather'
        '<|tool_call:args|>{"city": "Oslo", "days": 2}<|tool_call:end|><|calls|>'
    )
    params = _params()
    message = params.parse(text)
    assert not message.warnings
    got = [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls]
    assert got == [("a1B2c3", "get", {"city": "Zanzibar"}), ("zz9", "get_weather", {"city": "Oslo", "days": 2})]
    assert not check_stream(params, char_chunks(text), message)
    assert not check_stream(params, random_chunks(text, 5), message)
    # Cut inside the second id: the first call is whole, the second is not announced with half an id.
    cut = params.parse(text[: text.index("zz9") + 1], partial=True)
    assert [c.name for c in cut.tool_calls] == ["get"]


def test_grammar_requires_an_id_before_the_name() -> None:
    grammar = _params().grammar
    assert grammar is not None
    rule = next(line for line in grammar.splitlines() if line.startswith("tool-get-weather ::="))
    assert rule.index("[a-zA-Z0-9_") < rule.index('"<|tool_call:name|>"') < rule.index('"get_weather"')
