"""``autoparser serve`` end to end: the real openai client, the server, and a real llama.cpp server running the
tiny random-weight model of test_llama_server.py (built by .ci/llama_server.sh, made by tiny_gguf.py; no download).

For each format (Qwen3.5 tagged XML, Hermes JSON in ``<tool_call>``, Mistral Nemo ``[TOOL_CALLS][...]``, Ministral
``[TOOL_CALLS]name[ARGS]{...}``, Llama 3.1 bare JSON with a pattern trigger), the server sends llama.cpp what
autoparser produces and the client gets:

* ``tool_choice="required"`` and a named tool: a ``tool_calls`` entry of a declared tool whose arguments validate
  against its schema (jsonschema), with an id, ``finish_reason: "tool_calls"``, no ``autoparser_warnings``; the
  response validates strictly with openai's types; streamed, the chunks validate too and accumulate to the same
  calls (same seed, no prompt cache);
* ``tool_choice="auto"`` with every marker banned (``logit_bias`` through the server): the engine takes the lazy
  grammar and its triggers, and the plain text comes back as content with ``finish_reason: "stop"``.

.ci/run runs this in its llama.cpp step (AUTOPARSER_REQUIRE_LLAMA=1); elsewhere it is skipped without the binary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

from tests.serve.helpers import accumulate  # noqa: E402

from .served_llama import KEY, serve_format  # noqa: E402
from .test_llama_server import FORMATS, MESSAGES, N_PREDICT, SCHEMAS, SEED, TOOLS  # noqa: E402


@pytest.fixture(scope="module", params=sorted(FORMATS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """llama-server with one format's tiny model, ``autoparser serve`` in front of it, and an openai client."""
    name = request.param
    # cache_prompt off: a streamed and a plain reply with the same seed are the same reply
    with serve_format(name, tmp_path_factory.mktemp(name), {"cache_prompt": False}) as (model, url):
        yield name, model, openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=120)


def _valid_calls(calls: Any, name: str | None) -> list[tuple[str, dict]]:
    assert calls, "no tool call"
    found = []
    for call in calls:
        assert call.id and call.type == "function", call
        assert call.function.name in SCHEMAS and (name is None or call.function.name == name), call
        arguments = json.loads(call.function.arguments)
        jsonschema.validate(arguments, SCHEMAS[call.function.name])
        found.append((call.function.name, arguments))
    return found


@pytest.mark.parametrize("tool_choice", ["required", "named"])
def test_constrained_calls_reach_the_client(served: Any, tool_choice: str) -> None:
    name, _model, client = served
    choice: Any = tool_choice
    wanted = None
    if tool_choice == "named":
        choice, wanted = {"type": "function", "function": {"name": "set_alarm"}}, "set_alarm"
    request = {
        "model": name,
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": choice,
        "parallel_tool_calls": False,
        "temperature": 1.0,
        "seed": SEED,
        "max_tokens": N_PREDICT,
    }
    raw = client.chat.completions.with_raw_response.create(**request)
    completion = ChatCompletion.model_validate(json.loads(raw.text), strict=True)
    choice_0 = completion.choices[0]
    assert choice_0.finish_reason == "tool_calls", completion
    assert not (choice_0.message.model_extra or {}).get("autoparser_warnings"), completion
    calls = _valid_calls(choice_0.message.tool_calls, wanted)
    assert len(calls) == 1
    assert completion.usage is not None and completion.usage.completion_tokens > 0

    chunks = [ChatCompletionChunk.model_validate(c.model_dump(), strict=True) for c in
              client.chat.completions.create(**request, stream=True)]  # fmt: skip
    message, finish, _ = accumulate(chunks)
    assert finish == "tool_calls" and not message.warnings
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == calls
    assert len(chunks) > 3


def test_auto_plain_text_comes_back_as_content(served: Any) -> None:
    """With every marker, word and end-of-generation token banned, the model writes bytes until its limit: the
    engine took the lazy grammar and its triggers (a refused request would be a 502), and the text is content."""
    name, model, client = served
    banned = {str(model.tokens.index(t)): -100 for t in (*model.markers, *model.words, *model.eog)}
    request = {
        "model": name,
        "messages": MESSAGES,
        "tools": TOOLS,
        "temperature": 1.0,
        "seed": SEED,
        "max_tokens": 24,
        "logit_bias": banned,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    }
    completion = client.chat.completions.create(**request)
    choice = completion.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls, completion
    assert choice.message.content and not (choice.message.model_extra or {}).get("autoparser_warnings"), completion
    assert completion.usage is not None and completion.usage.completion_tokens == 24
    streamed, finish, _ = accumulate(client.chat.completions.create(**request, stream=True))
    assert finish == "length" and not streamed.tool_calls
    assert streamed.content == choice.message.content
