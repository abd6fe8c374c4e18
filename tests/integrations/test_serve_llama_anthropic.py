"""``autoparser serve``'s Messages API end to end: the real anthropic client, the server, and a real llama.cpp server
running the tiny random-weight model of test_llama_server.py (built by .ci/llama_server.sh, made by tiny_gguf.py;
no download), for each of its formats.

* ``tool_choice`` ``any`` and a named ``tool`` (parallel calls off): one ``tool_use`` block of a declared tool whose
  ``input`` validates against its schema (jsonschema), a ``toolu_`` id, ``stop_reason: "tool_use"``, no
  ``autoparser_warnings``; the message validates strictly with anthropic's types; streamed, the client's
  accumulator gives the same call (a fixed seed through ``--upstream-extra``, no prompt cache);
* ``count_tokens`` asks llama.cpp's ``/tokenize`` and counts what its ``/completion`` evaluates for the same
  request (the reply's ``input_tokens``).

.ci/run runs this in its llama.cpp step (AUTOPARSER_REQUIRE_LLAMA=1); elsewhere it is skipped without the binary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
jsonschema = pytest.importorskip("jsonschema")

from anthropic.types import Message  # noqa: E402

from .served_llama import KEY, serve_format  # noqa: E402
from .test_llama_server import FORMATS, MESSAGES, N_PREDICT, SCHEMAS, SEED, TOOLS  # noqa: E402

# The chat tools as Anthropic declares them
ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]


@pytest.fixture(scope="module", params=sorted(FORMATS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """llama-server with one format's tiny model, ``autoparser serve`` in front of it, and an anthropic client."""
    name = request.param
    # Anthropic's API has no seed: the server sends one with every request, and no prompt cache, so a streamed and a
    # plain reply are the same reply; clients send the key as x-api-key
    with serve_format(name, tmp_path_factory.mktemp(name), {"cache_prompt": False, "seed": SEED}) as (_model, url):
        yield name, anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, timeout=120)


def _valid_calls(message: Message, name: str | None) -> list[tuple[str, dict]]:
    calls = [b for b in message.content if b.type == "tool_use"]
    assert calls, f"no tool call: {message}"
    found = []
    for call in calls:
        assert call.id.startswith("toolu_"), call
        assert call.name in SCHEMAS and (name is None or call.name == name), call
        jsonschema.validate(call.input, SCHEMAS[call.name])
        found.append((call.name, call.input))
    return found


@pytest.mark.parametrize("tool_choice", ["any", "tool"])
def test_constrained_calls_reach_the_client(served: Any, tool_choice: str) -> None:
    name, client = served
    choice: dict[str, Any] = {"type": tool_choice, "disable_parallel_tool_use": True}
    wanted = None
    if tool_choice == "tool":
        choice["name"] = wanted = "set_alarm"
    request = {
        "model": name,
        "messages": MESSAGES,
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": choice,
        "max_tokens": N_PREDICT,
        "extra_body": {"temperature": 1.0},
    }
    raw = client.messages.with_raw_response.create(**request)
    message = Message.model_validate(json.loads(raw.http_response.text), strict=True)
    assert message.stop_reason == "tool_use", message
    assert not (message.model_extra or {}).get("autoparser_warnings"), message
    calls = _valid_calls(message, wanted)
    assert len(calls) == 1
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0

    with client.messages.stream(**request) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "tool_use" and not (streamed.model_extra or {}).get("autoparser_warnings")
    assert _valid_calls(streamed, wanted) == calls
    assert streamed.usage.input_tokens == message.usage.input_tokens


def test_count_tokens_counts_what_llama_cpp_evaluates(served: Any) -> None:
    name, client = served
    request = {"model": name, "messages": MESSAGES, "tools": ANTHROPIC_TOOLS}
    counted = client.messages.count_tokens(**request)
    message = client.messages.create(**request, max_tokens=4, tool_choice={"type": "any"})
    assert counted.input_tokens == message.usage.input_tokens > 0
