"""Tool call ids: one reply has one set of ids, never empty, unique within the reply and across replies; ids the
model wrote are kept; ids generated for calls the model wrote without one follow the template's id format
(Mistral's templates raise on anything but 9 alphanumerics, so a reply's ids must render in the next turn)."""

from __future__ import annotations

import json
import re

import pytest

from autoparser import ChatTemplate
from autoparser.message import apply_deltas, new_call_id

from ..support.ids import ID_SHAPES

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
USER = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.parametrize(
    ("template", "fmt"), [("mistralai-Mistral-Nemo-Instruct-2407", "alnum9"), ("Qwen3-Coder", "openai")]
)
def test_id_format_is_learned(template: str, fmt: str) -> None:
    assert ChatTemplate.load(template).analysis.id_format == fmt


def test_new_call_id_formats() -> None:
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", new_call_id())
    assert re.fullmatch(r"[A-Za-z0-9]{9}", new_call_id("alnum9"))
    assert len({new_call_id("alnum9") for _ in range(200)}) == 200


def test_streamed_mistral_ids_render_in_the_next_turn() -> None:
    tmpl = ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407")
    params = tmpl.apply(USER, tools=[TOOL], parallel_tool_calls=True)
    text = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'
    stream = params.stream()
    deltas = [d for ch in text for d in stream.feed(ch)] + stream.finish()
    message = apply_deltas(deltas)
    (call,) = message.tool_calls
    assert re.fullmatch(r"[A-Za-z0-9]{9}", call.id)
    history = [
        *USER,
        message.to_openai(),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp": 21})},
    ]
    assert call.id in tmpl.apply(history, tools=[TOOL]).prompt  # renders (an OpenAI-style id would raise)


TWO_CALLS = {
    "Qwen3-Coder": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n"
    "</tool_call>",
    "mistralai-Mistral-Nemo-Instruct-2407": '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
    '{"name": "get_weather", "arguments": {"city": "Rome"}}]',
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": '<tool_call>\n{"name": "get_weather", '
    '"arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", '
    '"arguments": {"city": "Rome"}}\n</tool_call>',
}


@pytest.mark.parametrize("template", sorted(TWO_CALLS))
def test_parse_gives_every_call_a_fresh_id_in_the_templates_format(template: str) -> None:
    tmpl = ChatTemplate.load(template)
    params = tmpl.apply(USER, tools=[TOOL], parallel_tool_calls=True)
    shape = ID_SHAPES[tmpl.analysis.id_format]
    replies = [params.parse(TWO_CALLS[template]) for _ in range(50)]
    ids = [call.id for reply in replies for call in reply.tool_calls]
    assert len(ids) == 100 and len(set(ids)) == 100  # unique within a reply and across replies
    assert all(shape.fullmatch(i) for i in ids), ids[:4]
    assert all(call.id_generated for reply in replies for call in reply.tool_calls)
    wire = replies[0].to_openai()["tool_calls"]
    assert [c["id"] for c in wire] == [c.id for c in replies[0].tool_calls]  # never "" on the wire
    partial = params.parse(TWO_CALLS[template][:-12], partial=True)
    assert partial.tool_calls and all(shape.fullmatch(c.id) for c in partial.tool_calls)


@pytest.mark.parametrize("template", sorted(TWO_CALLS))
def test_a_streamed_reply_has_one_set_of_ids(template: str) -> None:
    """The deltas, the stream's final message and the next turn's render agree on the reply's ids."""
    tmpl = ChatTemplate.load(template)
    params = tmpl.apply(USER, tools=[TOOL], parallel_tool_calls=True)
    stream = params.stream()
    text = TWO_CALLS[template]
    deltas = [d for i in range(0, len(text), 3) for d in stream.feed(text[i : i + 3])] + stream.finish()
    streamed = apply_deltas(deltas)
    assert [c.id for c in stream.message.tool_calls] == [c.id for c in streamed.tool_calls]
    assert all(c.id_generated for c in stream.message.tool_calls)
    ids = [c.id for c in streamed.tool_calls]
    assert len(set(ids)) == 2 and all(ID_SHAPES[tmpl.analysis.id_format].fullmatch(i) for i in ids)
    history = [*USER, stream.message.to_openai()]
    history += [{"role": "tool", "tool_call_id": i, "content": "21 C"} for i in ids]
    tmpl.apply(history, tools=[TOOL])  # renders (Mistral raises on an id of another format)


def test_ids_the_model_wrote_are_kept() -> None:
    tmpl = ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407")
    params = tmpl.apply(USER, tools=[TOOL], parallel_tool_calls=True)
    text = (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}, '
        '{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    )
    first, second = params.parse(text).tool_calls
    assert (first.id, first.id_generated) == ("abcDEF123", False)
    assert second.id_generated and re.fullmatch(r"[A-Za-z0-9]{9}", second.id)
    stream = params.stream()
    streamed = apply_deltas([d for ch in text for d in stream.feed(ch)] + stream.finish())
    assert streamed.tool_calls[0].id == "abcDEF123" and streamed.tool_calls[1].id != "abcDEF123"
