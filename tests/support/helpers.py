"""Shared test helpers: streaming a text with the append-only check, and the call text a template writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.message import apply_deltas

# Stop tokens end generation; they are not part of the output a parser sees.
STOP_TOKENS = (
    "<|eom_id|>",
    "<|eot_id|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|im_end|>",
    "<｜end▁of▁sentence｜>",
    "</s>",
    "<seed:eos>",
    "<|message_sep|>",
    "<sep>",
    "<|end|>",
)


# The tool of the grammar tests: a required enum-constrained string and a required integer (with descriptions:
# command-r-plus's template reads them).
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo"], "description": "City"},
        "days": {"type": "integer", "description": "Days"},
    },
    "required": ["city", "days"],
}


def function_tool(name: str, parameters: Mapping[str, Any] | None = None, description: str = "d") -> dict[str, Any]:
    """An OpenAI tool entry; no parameters means an object schema without properties."""
    schema = dict(parameters) if parameters is not None else {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


WEATHER_TOOL = function_tool("get_weather", WEATHER_SCHEMA)


def calls_of(message: ChatMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


def stream_char_by_char(params: ChatParams, text: str) -> ChatMessage:
    """Feed one character at a time; every accumulated message must equal the partial parse of that prefix."""
    stream = params.stream()
    deltas = []
    for i, char in enumerate(text):
        deltas += stream.feed(char)
        accumulated = apply_deltas(deltas)
        current = params.parse(text[: i + 1], partial=True)
        assert accumulated.content == current.content, text[: i + 1]
        assert accumulated.reasoning_content == current.reasoning_content, text[: i + 1]
        got = [(c.name, c.arguments) for c in accumulated.tool_calls]
        assert got == [(c.name, c.arguments) for c in current.tool_calls], text[: i + 1]
    deltas += stream.finish()
    return apply_deltas(deltas)


def rendered_call(
    tmpl: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    name: str,
    arguments: Mapping[str, Any],
    call_id: str = "call_1",
) -> str | None:
    """What the model writes for this call, per the template: the rendered assistant turn minus the prompt, the
    end-of-turn text and stop tokens. None when the template cannot render tool-call history."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    try:
        prompt = tmpl.apply(messages, tools=tools, enable_thinking=True, parallel_tool_calls=False).prompt
        full = tmpl.apply(
            [*messages, {"role": "assistant", "content": "", "tool_calls": [call]}],
            tools=tools,
            add_generation_prompt=False,
            enable_thinking=True,
            parallel_tool_calls=False,
        ).prompt
        plain = tmpl.apply(
            [*messages, {"role": "assistant", "content": "END_MARK"}],
            tools=tools,
            add_generation_prompt=False,
            enable_thinking=True,
            parallel_tool_calls=False,
        ).prompt
    except Exception:  # templates that cannot render tool history are left out
        return None
    if not full.startswith(prompt):
        return None
    text = full[len(prompt) :]
    end_of_turn = plain[plain.index("END_MARK") + len("END_MARK") :] if "END_MARK" in plain else ""
    if end_of_turn.strip() and text.endswith(end_of_turn):
        text = text[: -len(end_of_turn)]
    values = [str(v) for v in arguments.values()]
    after = max((text.rfind(v) for v in values), default=0)
    cuts = [c for c in (text.find(t, max(after, 0)) for t in STOP_TOKENS) if c >= 0]
    if cuts:
        text = text[: min(cuts)]
    return text if name in text and all(v in text for v in values) else None


def same_message(a: ChatMessage, b: ChatMessage) -> bool:
    """Equal content, reasoning and (name, arguments, status) of every call (stream ids are generated, so not
    compared)."""
    calls_a = [(c.name, c.arguments, str(c.status)) for c in a.tool_calls]
    return (a.content, a.reasoning_content, calls_a) == (
        b.content,
        b.reasoning_content,
        [(c.name, c.arguments, str(c.status)) for c in b.tool_calls],
    )


def closed_prefix(arguments: str, complete: str) -> bool:
    """Whether ``arguments`` are a prefix of ``complete`` followed only by closers (quotes and brackets): what a
    call cut off or broken comes back with."""
    return any(
        complete.startswith(arguments[:k]) and all(c in '"]}' for c in arguments[k:])
        for k in range(len(arguments), -1, -1)
    )


def check_cut_call(params: ChatParams, text: str, name: str, complete_arguments: str) -> ChatMessage:
    """An output whose last call is cut off or malformed: parse() never raises, the stream (char by char, every
    prefix equal to the partial parse) ends equal to it, and the call is either kept as far as it got — its
    arguments valid JSON, a prefix of the complete call's closed, with a status other than complete and a
    warning — or, if it never committed, left as text (the caller checks that)."""
    message = params.parse(text)
    streamed = stream_char_by_char(params, text)
    assert same_message(streamed, message), (streamed, message)
    calls = [c for c in message.tool_calls if c.name == name]
    for call in calls:
        assert isinstance(json.loads(call.arguments), dict), call
        if call.arguments != complete_arguments:
            assert closed_prefix(call.arguments, complete_arguments), call
            assert call.status != "complete", call
            assert message.warnings
    return message
