"""Ids generated for calls the model wrote without one follow the template's id format: Mistral's templates raise
on anything but 9 alphanumerics, so a streamed reply's ids must render in the next turn."""

from __future__ import annotations

import json
import re

import pytest

from autoparser import ChatTemplate
from autoparser.message import apply_deltas, new_call_id

TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
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
