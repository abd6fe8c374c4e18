"""``autoparser serve``'s Responses API end to end: the real openai client's ``responses.create`` and
``responses.stream``, the server, and a real llama.cpp server running the tiny random-weight model of
test_llama_server.py (built by .ci/llama_server.sh, made by tiny_gguf.py; no download), for each format of
test_serve_llama.py:

* ``tool_choice="required"`` and a named tool: one ``function_call`` item of a declared tool whose arguments
  validate against its schema (jsonschema), with a ``call_id``, ``status: "completed"``, no ``autoparser_warnings``;
  the response validates strictly with openai's types; streamed, every event validates too, the sequence numbers
  count up, and the client's accumulator ends with the same call (same seed, no prompt cache);
* ``tool_choice="auto"`` with every marker banned: the plain text comes back as one message, ``incomplete`` at the
  token limit.

.ci/run runs this in its llama.cpp step (AUTOPARSER_REQUIRE_LLAMA=1); elsewhere it is skipped without the binary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from .served_llama import KEY, serve_format  # noqa: E402
from .test_llama_server import FORMATS, MESSAGES, N_PREDICT, SCHEMAS, SEED, TOOLS  # noqa: E402

EVENTS = TypeAdapter(ResponseStreamEvent)
FLAT_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]  # the Responses API's function tools


@pytest.fixture(scope="module", params=sorted(FORMATS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """llama-server with one format's tiny model, ``autoparser serve`` in front of it, and an openai client."""
    name = request.param
    # cache_prompt off: a streamed and a whole reply with the same seed are the same reply
    with serve_format(name, tmp_path_factory.mktemp(name), {"cache_prompt": False}) as (model, url):
        yield name, model, openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=120)


def _valid_calls(output: Any, name: str | None) -> list[tuple[str, dict]]:
    calls = [item for item in output if item.type == "function_call"]
    assert calls, f"no function call: {output}"
    found = []
    for call in calls:
        assert call.call_id and call.id and call.id.startswith("fc_") and call.status == "completed", call
        assert call.name in SCHEMAS and (name is None or call.name == name), call
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, SCHEMAS[call.name])
        found.append((call.name, arguments))
    return found


@pytest.mark.parametrize("tool_choice", ["required", "named"])
def test_constrained_calls_reach_the_client(served: Any, tool_choice: str) -> None:
    name, _model, client = served
    choice: Any = tool_choice
    wanted = None
    if tool_choice == "named":
        choice, wanted = {"type": "function", "name": "set_alarm"}, "set_alarm"
    request = {
        "model": name,
        "input": MESSAGES,
        "tools": FLAT_TOOLS,
        "tool_choice": choice,
        "parallel_tool_calls": False,
        "temperature": 1.0,
        "max_output_tokens": N_PREDICT,
        "extra_body": {"seed": SEED},
    }
    raw = client.responses.with_raw_response.create(**request)
    response = Response.model_validate(json.loads(raw.text), strict=True)
    assert response.status == "completed", response
    assert not (response.model_extra or {}).get("autoparser_warnings"), response
    calls = _valid_calls(response.output, wanted)
    assert len(calls) == 1
    assert response.usage is not None and response.usage.output_tokens > 0

    events = list(client.responses.create(**request, stream=True))
    for number, event in enumerate(events):
        assert event.sequence_number == number
        EVENTS.validate_python(event.model_dump(mode="json", exclude_unset=True), strict=True)
    assert events[-1].type == "response.completed"
    assert _valid_calls(events[-1].response.output, wanted) == calls
    assert any(e.type == "response.function_call_arguments.delta" for e in events)
    with client.responses.stream(**request) as stream:
        final = stream.get_final_response()
    assert _valid_calls(final.output, wanted) == calls


def test_auto_plain_text_comes_back_as_a_message(served: Any) -> None:
    """With every marker, word and end-of-generation token banned, the model writes bytes until its limit: the
    engine took the lazy grammar and its triggers, and the text is one message, cut off at the limit."""
    name, model, client = served
    banned = {str(model.tokens.index(t)): -100 for t in (*model.markers, *model.words, *model.eog)}
    request = {
        "model": name,
        "input": MESSAGES,
        "tools": FLAT_TOOLS,
        "temperature": 1.0,
        "max_output_tokens": 24,
        "extra_body": {"seed": SEED, "logit_bias": banned, "chat_template_kwargs": {"enable_thinking": False}},
    }
    response = client.responses.create(**request)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens", response
    assert [item.type for item in response.output] == ["message"] and response.output_text, response
    assert not (response.model_extra or {}).get("autoparser_warnings"), response
    assert response.usage is not None and response.usage.output_tokens == 24
    events = list(client.responses.create(**request, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.output_text == response.output_text
