"""OpenAI chat requests the way real clients send them, shared by the request-side tests (main and vLLM environments).

The base conversation is an ordinary agent exchange in OpenAI's wire format: a system message, a user message made
of two text parts, an assistant turn with reasoning and two parallel calls (``content: null``, JSON-string
``arguments``, client-made ids), two tool results (one as text parts), the answer and a follow-up question. One tool
has no ``description``, the other no ``parameters`` (both optional in OpenAI's API).

:data:`VARIANTS` are the shapes the tests render on every bundled template. Each is built fresh on every call
(templates and normalisation must never see — or mutate — a shared object).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FOREIGN_IDS", "REQUEST_TEXTS", "VARIANTS", "Variant", "base_messages", "base_tools", "variant"]

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "description": "Days ahead"},
    },
    "required": ["city"],
}


def base_tools() -> list[dict[str, Any]]:
    """``get_weather`` without a description, ``ping`` without parameters."""
    return [
        {"type": "function", "function": {"name": "get_weather", "parameters": copy.deepcopy(WEATHER_SCHEMA)}},
        {"type": "function", "function": {"name": "ping", "description": "Check the service is up."}},
    ]


def complete_tools() -> list[dict[str, Any]]:
    """The same tools with every optional field given, in the order OpenAI's documentation (and vLLM's own dump)
    writes them: name, description, parameters."""
    return [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather forecast for a city.",
                "parameters": copy.deepcopy(WEATHER_SCHEMA),
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ping",
                "description": "Check the service is up.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


def _call(call_id: str, city: str) -> dict[str, Any]:
    arguments = f'{{"city": "{city}", "days": 2}}'
    return {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def base_messages() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a weather assistant."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Paris and Tokyo"},
                {"type": "text", "text": "for the next 2 days?"},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Two cities, so two calls.",
            "tool_calls": [_call("call_p4r1s", "Paris"), _call("call_t0ky0", "Tokyo")],
        },
        {"role": "tool", "tool_call_id": "call_p4r1s", "content": "sunny, 24C"},
        {"role": "tool", "tool_call_id": "call_t0ky0", "content": [{"type": "text", "text": "light rain, 18C"}]},
        {"role": "assistant", "content": "Paris: sunny, 24C. Tokyo: light rain, 18C."},
        {"role": "user", "content": "Thanks! And Berlin tomorrow?"},
    ]


# Texts every faithful prompt of the base conversation holds (the variants keep them, unless they drop the turn).
REQUEST_TEXTS = (
    "Weather in Paris and Tokyo",
    "for the next 2 days?",
    "sunny, 24C",
    "light rain, 18C",
    "Paris: sunny, 24C. Tokyo: light rain, 18C.",
    "Thanks! And Berlin tomorrow?",
)

# Ids other systems make: Anthropic's, a UUID, and OpenAI's long form.
FOREIGN_IDS = ("toolu_01A09q90qw90lq917835lq9", "5f0c3a4e-2b1d-4c8e-9a7f-1e2d3c4b5a69")


@dataclass(frozen=True)
class Variant:
    """A named request shape: ``build()`` returns fresh ``(messages, tools)``."""

    name: str
    build: Callable[[], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
    description: str


def _full() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return base_messages(), base_tools()


def _single_call() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = base_messages()
    messages[1]["content"] = [{"type": "text", "text": "Weather in Paris for the next 2 days?"}]
    messages[2]["tool_calls"] = messages[2]["tool_calls"][:1]
    messages[2]["reasoning_content"] = "One city, one call."
    del messages[4]
    messages[4]["content"] = "Paris: sunny, 24C."
    return messages, base_tools()


def _no_reasoning() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = base_messages()
    del messages[2]["reasoning_content"]
    return messages, base_tools()


def _reasoning_field() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """vLLM's newer name for past reasoning."""
    messages = base_messages()
    messages[2]["reasoning"] = messages[2].pop("reasoning_content")
    return messages, base_tools()


# A whole 1x1 PNG: servers decode image parts when they parse the messages (vLLM rejects a truncated one).
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _image_parts() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = base_messages()
    messages[1]["content"].insert(
        1, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_1X1}}
    )
    return messages, base_tools()


def _complete_tools() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return base_messages(), complete_tools()


def _foreign_ids() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = base_messages()
    for call, result, new in zip(messages[2]["tool_calls"], messages[3:5], FOREIGN_IDS, strict=True):
        call["id"] = result["tool_call_id"] = new
    return messages, base_tools()


def _developer() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages = base_messages()
    messages[0]["role"] = "developer"
    return messages, base_tools()


def _content_with_calls() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Text before the calls, as parts (some templates print a turn-with-calls' content as a string)."""
    messages = base_messages()
    messages[2]["content"] = [{"type": "text", "text": "Let me check both cities."}]
    return messages, base_tools()


def _plain() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """No liberties at all: string contents, complete tools, no reasoning (the shape every template documents)."""
    messages = base_messages()
    messages[1]["content"] = "Weather in Paris and Tokyo\nfor the next 2 days?"
    messages[2]["content"] = ""
    del messages[2]["reasoning_content"]
    messages[4]["content"] = "light rain, 18C"
    return messages, complete_tools()


VARIANTS: tuple[Variant, ...] = (
    Variant("full", _full, "the conversation above: text parts, null content, two calls, reasoning, sparse tools"),
    Variant("single_call", _single_call, "one call and one tool result"),
    Variant("no_reasoning", _no_reasoning, "no reasoning on the assistant turn"),
    Variant("reasoning_field", _reasoning_field, "past reasoning under vLLM's newer name `reasoning`"),
    Variant("image_parts", _image_parts, "an image part between the user's text parts"),
    Variant("complete_tools", _complete_tools, "every tool with a description and parameters"),
    Variant("foreign_ids", _foreign_ids, "call ids made by another system (Anthropic's, a UUID)"),
    Variant("developer", _developer, "the `developer` role instead of `system`"),
    Variant("content_with_calls", _content_with_calls, "text parts before the calls in the same turn"),
    Variant("plain", _plain, "string contents, complete tools, no reasoning"),
)


def variant(name: str) -> Variant:
    return next(v for v in VARIANTS if v.name == name)
