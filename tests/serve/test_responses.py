"""OpenAI's Responses API (``POST /v1/responses``), with the real openai client against the server over HTTP.

Recorded replies of the sampled call-rendering templates come back, created and streamed (the client's own stream
accumulator), as the library parses them: the same reasoning, text, calls and warnings the chat endpoint gives, from
the same prompt. An agent loop fed back as Responses items renders the prompt the chat endpoint renders for the same
conversation. Every body and event validates strictly against the openai package's types, with sequence numbers that
only grow; bad requests are 400s naming the Responses field.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from autoparser import ChatMessage, ChatTemplate, ToolCall
from autoparser.message import ParseWarning
from tests.support.outputs import markers, outputs
from tests.support.sample import sampled

from .double import Script, UpstreamDouble, tokens
from .helpers import check_same, library_params, output_request

QWEN = "Qwen3.5-4B"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
EVENTS = TypeAdapter(ResponseStreamEvent)
# The call outputs each template's replies are drawn from: reasoning before a call, text before a call, three calls
LABELS = ("reasoning+call", "content+call", "three")
TEMPLATES = [t for t in sampled() if any(o.calls for o in outputs(t))]
_keys = itertools.count()


def _key() -> str:
    return f"resp{next(_keys):05d}"


@pytest.fixture(scope="module")
def http(base_url: Any) -> Iterator[httpx2.Client]:
    """A raw HTTP client of the Qwen 3.5 app (one connection for the module's requests)."""
    with httpx2.Client(base_url=base_url(QWEN) + "/", timeout=30) as made:
        yield made


def _ask(key: str, **fields: Any) -> dict[str, Any]:
    return {"model": QWEN, "input": f"Weather in Paris? [{key}]", **fields}


def _flat(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat tool as a Responses function tool."""
    return {"type": "function", **tool["function"]}


def responses_body(chat: dict[str, Any]) -> dict[str, Any]:
    """The Responses request equivalent to the chat request ``chat`` (messages as message items, flat tools)."""
    body: dict[str, Any] = {"model": chat["model"], "input": [dict(m) for m in chat["messages"]]}
    if chat.get("tools"):
        body["tools"] = [_flat(t) for t in chat["tools"]]
    for key in ("parallel_tool_calls", "chat_template_kwargs", "tool_choice"):
        if key in chat:
            body[key] = chat[key]
    return body


def from_response(response: Any) -> ChatMessage:
    """The message a ``Response`` says: its reasoning items' text, its messages' text, its calls (ids: call_id),
    the warnings with a position."""
    reasoning, content, calls = [], [], []
    for item in response.output:
        if item.type == "reasoning":
            reasoning += [part.text for part in item.content or ()]
        elif item.type == "message":
            content += [part.text for part in item.content if part.type == "output_text"]
        elif item.type == "function_call":
            calls.append(ToolCall(item.name, item.arguments, item.call_id))
    extra = response.model_extra or {}
    warnings = tuple(
        ParseWarning(w["position"], w["message"])
        for w in extra.get("autoparser_warnings") or ()
        if w.get("position") is not None
    )
    return ChatMessage("assistant", "".join(content), "".join(reasoning), tuple(calls), warnings)


def _sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each server-sent event."""
    found = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def _checked_events(text: str) -> list[Any]:
    """The stream's events, each validated strictly against the openai types: its ``event:`` name is its type,
    sequence numbers count up from 0."""
    events = []
    for number, (name, data) in enumerate(_sse(text)):
        assert name == data["type"]
        assert data["sequence_number"] == number, (number, data)
        events.append(EVENTS.validate_python(data, strict=True))
    return events


# --- every template's recorded replies -----------------------------------------------------------------------------


def _roundtrip(client: Any, double: UpstreamDouble, template: str, text: str, finish: str = "stop") -> Any:
    """``text`` as the upstream's reply to a Responses request, created then streamed: both say what the library
    reads from it, from the chat endpoint's prompt for the equivalent chat request."""
    key = _key()
    double.script(key, Script(tokens(text, markers(template)), finish=finish))
    chat = output_request(template, key)
    params = library_params(template, chat)
    expected = params.parse(text)
    id_format = ChatTemplate.load(template).analysis.id_format
    body = responses_body(chat)
    extra = {"chat_template_kwargs": body.pop("chat_template_kwargs")}
    api = client(template)

    created = api.responses.create(**body, extra_body=extra)
    check_same(from_response(created), expected, id_format)
    with api.responses.stream(**body, extra_body=extra) as stream:
        events = list(stream)
        final = stream.get_final_response() if finish == "stop" else events[-1].response
    check_same(from_response(final), expected, id_format)
    want = "completed" if finish == "stop" else "incomplete"
    assert created.status == final.status == want
    assert [item.type for item in created.output] == [item.type for item in final.output]
    assert created.usage is not None and created.usage == final.usage

    sent = double.bodies(key, "/completion")
    assert len(sent) == 2 and {b["stream"] for b in sent} == {False, True}
    assert all(params.prompt.endswith(b["prompt"]) and b["prompt"].endswith(params.generation_prompt) for b in sent)
    return created


@pytest.mark.parametrize("template", TEMPLATES)
def test_recorded_replies_of_every_template(template: str, client: Any, double: UpstreamDouble) -> None:
    """One call reply per template (each template's parse is test_replies.py's), its kind taken in turn across the
    templates: reasoning then a call, text then a call, three calls."""
    replies = [o for o in outputs(template) if o.calls]
    label = LABELS[zlib.crc32(template.encode()) % len(LABELS)]
    _roundtrip(client, double, template, next((o for o in replies if o.label == label), replies[0]).text)


# --- shapes --------------------------------------------------------------------------------------------------------

QWEN_THREE = (
    "The user wants three cities.\n</think>\n\n"
    + "\n".join(
        f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>\n</function>\n</tool_call>"
        for city in ("Paris", "Oslo", "Lima")
    )
)


def test_three_calls_in_one_upstream_chunk(http: httpx2.Client, double: UpstreamDouble) -> None:
    """Reasoning, then three calls that arrive in one upstream event: each call its own item, in order, each added,
    its arguments streamed and done, then done; every event validates and the numbers count up; the completed
    response is the created one's."""
    calls = QWEN_THREE.split("</think>\n\n", 1)[1]
    double.script("three-chunk", Script(["The user wants three cities.", "\n</think>\n\n", calls]))
    body = _ask("three-chunk", tools=[WEATHER])
    whole = Response.model_validate(http.post("/responses", json=body).json(), strict=True)
    streamed = http.post("/responses", json={**body, "stream": True})
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    events = _checked_events(streamed.text)
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    final = events[-1].response
    assert [i.type for i in final.output] == [i.type for i in whole.output] == ["reasoning", *["function_call"] * 3]
    assert [json.loads(i.arguments)["city"] for i in final.output[1:]] == ["Paris", "Oslo", "Lima"]
    assert final.output[0].content[0].text == whole.output[0].content[0].text == "The user wants three cities."
    assert len({i.call_id for i in final.output[1:]}) == 3 and len({i.id for i in final.output}) == 4
    assert all(i.status == "completed" for i in final.output)
    assert final.usage == whole.usage and final.usage.input_tokens == 11
    for index, item in enumerate(final.output[1:], 1):
        mine = [e for e in events if getattr(e, "output_index", None) == index]
        assert [e.type for e in mine] == [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
        ]
        assert mine[0].item.id == item.id and mine[0].item.call_id == item.call_id and mine[0].item.arguments == ""
        assert mine[1].delta == mine[2].arguments == item.arguments and mine[3].item == item
    reasoning = [e.type for e in events if getattr(e, "output_index", None) == 0]
    assert reasoning[:2] == ["response.output_item.added", "response.content_part.added"]
    assert set(reasoning[2:-3]) == {"response.reasoning_text.delta"}
    assert reasoning[-3:] == ["response.reasoning_text.done", "response.content_part.done", "response.output_item.done"]


def test_a_whole_response_validates_strictly(http: httpx2.Client, double: UpstreamDouble) -> None:
    """The raw body against openai's ``Response`` in pydantic's strict mode, with what it repeats of the request."""
    double.script("whole", Script(tokens(QWEN_THREE, ["<tool_call>", "</think>"])))
    body = _ask(
        "whole",
        tools=[WEATHER, {"type": "web_search"}],
        tool_choice={"type": "function", "name": "get_weather"},
        instructions="Be brief.",
        max_output_tokens=100,
        temperature=0.5,
        metadata={"run": "7"},
        reasoning={"effort": "high"},
        store=True,
    )
    raw = http.post("/responses", json=body).json()
    response = Response.model_validate(raw, strict=True)
    assert raw["id"].startswith("resp_") and raw["object"] == "response" and raw["status"] == "completed"
    assert raw["store"] is False and raw["error"] is None and raw["incomplete_details"] is None
    assert response.tools[0].name == "get_weather" and len(response.tools) == 1  # the web search tool left out
    assert response.tool_choice.name == "get_weather" and response.instructions == "Be brief."
    assert (response.max_output_tokens, response.temperature, response.metadata) == (100, 0.5, {"run": "7"})
    assert response.reasoning.effort == "high" and response.text.format.type == "text"
    assert response.parallel_tool_calls is True
    assert [i.id[:3] for i in response.output] == ["rs_", "fc_", "fc_", "fc_"]
    assert all(i.call_id.startswith("call_") for i in response.output[1:])
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (11, len(tokens(QWEN_THREE, ["<tool_call>", "</think>"])))
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    note = "tools[1]: 'web_search' tools are not supported (function tools only): left out"
    assert raw["autoparser_warnings"] == [{"message": note, "position": None}]


# --- an agent loop -------------------------------------------------------------------------------------------------

LOOP_TEMPLATES = [
    QWEN,
    "openai-gpt-oss-120b",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "deepseek-ai-DeepSeek-V3.1",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
]


@pytest.mark.parametrize("template", LOOP_TEMPLATES)
def test_an_agent_loop_renders_as_the_chat_endpoint(template: str, client: Any, double: UpstreamDouble) -> None:
    """A call, its result fed back with the reply's items (the reasoning item too), then the answer: the second
    prompt is the one the chat endpoint renders for the same conversation as chat messages."""
    replies = [o for o in outputs(template) if o.calls]
    call = next((o for o in replies if o.label == "reasoning+call"), replies[0])
    key = _key()
    double.script(key, Script(tokens(call.text, markers(template))))
    chat = output_request(template, key)
    body = responses_body(chat)
    extra = {"chat_template_kwargs": body.pop("chat_template_kwargs")}
    api = client(template)
    with api.responses.stream(**body, extra_body=extra) as stream:
        first = stream.get_final_response()
    calls = [i for i in first.output if i.type == "function_call"]
    assert calls
    results = [{"type": "function_call_output", "call_id": c.call_id, "output": f"result of {c.name}"} for c in calls]
    fed_back = [i.model_dump(exclude_none=True) for i in first.output]
    api.responses.create(**{**body, "input": [*body["input"], *fed_back, *results]}, extra_body=extra)

    said = from_response(first)
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": said.content or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in said.tool_calls
        ],
    }
    if said.reasoning_content:
        assistant["reasoning_content"] = said.reasoning_content
    tools = [{"role": "tool", "tool_call_id": c.call_id, "content": f"result of {c.name}"} for c in calls]
    chat_api = client(template)
    chat_api.chat.completions.create(
        model=template,
        messages=[*chat["messages"], assistant, *tools],
        tools=chat["tools"],
        parallel_tool_calls=True,
        extra_body=extra,
    )
    first_prompt, responses_prompt, chat_prompt = [b["prompt"] for b in double.bodies(key, "/completion")]
    assert responses_prompt == chat_prompt
    assert responses_prompt != first_prompt
    assert all(f"result of {c.name}" in responses_prompt for c in calls)


# --- cut off, broken off, refused ----------------------------------------------------------------------------------


def test_a_reply_cut_off_by_the_token_limit_is_incomplete(client: Any, http: Any, double: UpstreamDouble) -> None:
    """The upstream stopped at ``max_output_tokens``: ``incomplete`` with the reason, the call it was cut off in
    ``incomplete`` too (its arguments closed where they stopped), streamed (``response.incomplete``) or not."""
    cut = QWEN_THREE[: QWEN_THREE.index("Oslo") + 2]
    double.script("cut-call", Script(tokens(cut, ["<tool_call>", "</think>"]), finish="length"))
    api = client(QWEN)
    whole = api.responses.create(**_ask("cut-call", tools=[WEATHER], max_output_tokens=40))
    assert whole.status == "incomplete" and whole.incomplete_details.reason == "max_output_tokens"
    assert [(i.type, i.status) for i in whole.output] == [
        ("reasoning", "completed"),
        ("function_call", "completed"),
        ("function_call", "incomplete"),
    ]
    assert json.loads(whole.output[2].arguments) == {"city": "Os"}
    streamed = http.post("/responses", json={**_ask("cut-call", tools=[WEATHER]), "stream": True})
    events = _checked_events(streamed.text)
    assert events[-1].type == "response.incomplete"
    final = events[-1].response
    assert final.incomplete_details.reason == "max_output_tokens"
    assert [(i.type, i.status, getattr(i, "arguments", None)) for i in final.output] == [
        (i.type, i.status, getattr(i, "arguments", None)) for i in whole.output
    ]
    # Cut off in the text: the message is incomplete
    double.script("cut-text", Script(["</think>", "\n\n", "The", " answer", " is"], finish="length"))
    whole = api.responses.create(**_ask("cut-text"))
    assert whole.status == "incomplete" and [(i.type, i.status) for i in whole.output] == [("message", "incomplete")]
    assert whole.output[0].content[0].text == "The answer is"
    with api.responses.stream(**_ask("cut-text")) as stream:
        last = list(stream)[-1]
    assert last.type == "response.incomplete" and last.response.output[0].status == "incomplete"
    assert last.response.usage == whole.usage


@pytest.mark.parametrize("failure", ["drop", "event"])
def test_an_upstream_failing_mid_stream(failure: str, http: Any, client: Any, double: UpstreamDouble) -> None:
    """What was written is sent, then ``response.failed`` with the text so far (the item it broke off in
    ``incomplete``) and an error; the client's accumulator gets the failed response."""
    key = f"mid-{failure}"
    double.script(key, Script(["</think>", "\n\n", "Sunny", " and", " warm", "."], fail_after=4, failure=failure))
    streamed = http.post("/responses", json={**_ask(key), "stream": True})
    assert streamed.status_code == 200
    events = _checked_events(streamed.text)
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.status == "failed" and failed.error.code == "server_error" and failed.error.message
    assert [(i.type, i.status, i.content[0].text) for i in failed.output] == [("message", "incomplete", "Sunny and")]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Sunny and"
    assert failed.error.type == ("upstream_broken" if failure == "drop" else "upstream_error")
    with client(QWEN).responses.stream(**_ask(key)) as stream:
        last = list(stream)[-1]
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            stream.get_final_response()
    assert last.type == "response.failed" and last.response.output[0].content[0].text == "Sunny and"


def test_an_upstream_refusing_before_the_reply(client: Any, double: UpstreamDouble) -> None:
    """An HTTP error in OpenAI's shape, as the chat endpoint answers it (a 429 stays a 429, its Retry-After kept)."""
    double.script("refused", Script(status=429, error="slow down", headers={"Retry-After": "7"}))
    for stream in (False, True):
        with pytest.raises(openai.RateLimitError) as caught:
            client(QWEN).responses.create(**_ask("refused"), stream=stream)
        assert caught.value.status_code == 429 and caught.value.response.headers["retry-after"] == "7"
        assert "slow down" in caught.value.message


# --- the request ---------------------------------------------------------------------------------------------------


def _sent(double: UpstreamDouble, key: str) -> dict[str, Any]:
    bodies = double.bodies(key)
    assert bodies, f"the upstream got no request for {key}"
    return bodies[-1]


def test_fields_reach_the_template_and_the_upstream(client: Any, double: UpstreamDouble) -> None:
    api = client(QWEN)
    api.responses.create(
        **_ask("fields"),
        instructions="Answer in French.",
        max_output_tokens=77,
        temperature=0.25,
        top_p=0.5,
        text={"format": {"type": "json_schema", "name": "w", "schema": NUMBER}},
        extra_body={"seed": 7, "top_k": 5},
    )
    sent = _sent(double, "fields")
    assert (sent["n_predict"], sent["temperature"], sent["top_p"], sent["seed"], sent["top_k"]) == (77, 0.25, 0.5, 7, 5)
    assert sent["prompt"].startswith("<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\n")
    assert "number" in sent["grammar"] and sent["grammar_lazy"] is False
    # tool_choice: required and named shape the grammar as for the chat endpoint
    api.responses.create(**_ask("tc-required"), tools=[WEATHER], tool_choice="required")
    api.responses.create(**_ask("tc-named"), tools=[WEATHER], tool_choice={"type": "function", "name": "get_weather"})
    api.responses.create(**_ask("tc-auto"), tools=[WEATHER])
    assert _sent(double, "tc-required")["grammar_lazy"] is False
    assert "get_weather" in _sent(double, "tc-named")["grammar"]
    assert _sent(double, "tc-auto")["grammar_lazy"] is True
    # the developer role, roles in order, an assistant turn's text parts
    api.responses.create(
        model=QWEN,
        input=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "Hi [roles]"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
            {"role": "user", "content": "Weather?"},
        ],
    )
    prompt = _sent(double, "[roles]")["prompt"]
    assert prompt.index("Be brief.") < prompt.index("Hi [roles]") < prompt.index("Hello!") < prompt.index("Weather?")


def test_reasoning_effort_reaches_the_template(client: Any, double: UpstreamDouble) -> None:
    """``reasoning.effort`` is the chat endpoint's ``reasoning_effort``; without ``reasoning``, the template's
    default."""
    api = client("Qwen-Qwen3-0.6B")
    api.responses.create(**_ask("r-none", model="Qwen-Qwen3-0.6B"), reasoning={"effort": "none"})
    assert _sent(double, "r-none")["prompt"].endswith("<think>\n\n</think>\n\n")
    api.responses.create(**_ask("r-low", model="Qwen-Qwen3-0.6B"), reasoning={"effort": "low"})
    api.responses.create(**_ask("r-default", model="Qwen-Qwen3-0.6B"))
    assert _sent(double, "r-low")["prompt"].endswith("<|im_start|>assistant\n")
    assert _sent(double, "r-default")["prompt"].endswith("<|im_start|>assistant\n")
    client("openai-gpt-oss-120b").responses.create(
        **_ask("r-oss", model="openai-gpt-oss-120b"), reasoning={"effort": "low"}
    )
    assert "Reasoning: low" in _sent(double, "r-oss")["prompt"]


NUMBER = {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}
TEXT = {"type": "input_text", "text": "What is it?"}
IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
BAD_SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "pattern": "(?=x)"}}}
INVALID = [
    ({"input": None}, "input"),
    ({"input": 5}, "input"),
    ({"input": []}, "input"),
    ({"input": ["text"]}, "input[0]"),
    ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input[0].type"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
    ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": 5}]}, "input[0].content"),
    ({"input": [{"role": "user", "content": [{"type": "input_video"}]}]}, "input[0].content[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]}, "input[0].content[0].text"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}, "input[0].content[0]"),
    (
        {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}, IMAGE]}]},
        "input[0].content[1]",
    ),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]}, "input[0].arguments"),
    ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0].output"),
    ({"input": [{"type": "reasoning", "summary": "x"}]}, "input[0].summary"),
    ({"instructions": ["x"]}, "instructions"),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"background": True}, "background"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"max_output_tokens": "many"}, "max_output_tokens"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": "x"}, "top_p"),
    ({"stream": "yes"}, "stream"),
    ({"store": "no"}, "store"),
    ({"metadata": {"a": 1}}, "metadata"),
    ({"include": ["message.output_text.logprobs"]}, "include[0]"),
    ({"tools": {"type": "function"}}, "tools"),
    ({"tools": [{"name": "f"}]}, "tools[0].type"),
    ({"tools": [{"type": "web_search"}, {"type": "function", "description": "no name"}]}, "tools[1].name"),
    (
        {"tools": [{"type": "web_search"}, {"type": "function", "name": "f", "parameters": BAD_SCHEMA}]},
        "tools[1].parameters.properties.city.pattern",
    ),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "name": "other"}}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "web_search_preview"}}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"reasoning": {"summary": "long"}}, "reasoning.summary"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format.type"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": []}}}, "text.format.schema"),
    (
        {"text": {"format": {"type": "json_schema", "name": "x", "schema": BAD_SCHEMA}}},
        "text.format.schema.properties.city.pattern",
    ),
    (
        {"input": [{"type": "function_call_output", "call_id": "c", "output": [TEXT, IMAGE]}]},
        "input[0].output[1]",
    ),
]


@pytest.mark.parametrize(("fields", "param"), INVALID, ids=[p for _, p in INVALID])
def test_invalid_requests_get_a_400_naming_the_field(fields: dict, param: str, http: httpx2.Client) -> None:
    body = {**_ask("invalid"), **fields}
    if body["input"] is None:
        del body["input"]
    response = http.post("/responses", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param, error
    assert error["type"] == "invalid_request_error" and set(error) == {"message", "type", "param", "code"}
    assert error["message"].startswith(param) or param in error["message"], error


def test_a_call_fed_back_with_a_bad_field_names_the_item(client: Any) -> None:
    """What the chat validation refuses deep in a turn is named by the Responses item it came from."""
    history = [
        {"role": "user", "content": "Weather? [bad-args]"},
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Look it up."}]},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": '{"a":' * 99 + "1" + "}" * 99},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client(QWEN).responses.create(model=QWEN, input=history, tools=[WEATHER])
    assert caught.value.param.startswith("input[3].arguments.a.a"), caught.value.body


def test_the_template_refusing_names_the_input(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client("google-gemma-2-2b-it").responses.create(
            model="google-gemma-2-2b-it", instructions="Be brief.", input="Hi"
        )
    assert caught.value.param == "input" and caught.value.code == "template_error"
    assert "System role not supported" in caught.value.message


def test_metrics_count_the_endpoint(client: Any, http: httpx2.Client) -> None:
    client(QWEN).responses.create(**_ask("metrics"))
    text = http.get("../metrics").text
    assert 'autoparser_requests_total{endpoint="/v1/responses",status="200"}' in text


def test_usage_through_an_openai_style_upstream(client: Any, double: UpstreamDouble) -> None:
    """The engine is asked for usage on a stream too: the streamed response has the whole one's."""
    double.script("openai-usage", Script(["</think>", "\n\n", "Sunny", "."], prompt_tokens=5))
    api = client(QWEN, "openai")
    whole = api.responses.create(**_ask("openai-usage"))
    with api.responses.stream(**_ask("openai-usage")) as stream:
        final = stream.get_final_response()
    assert whole.usage is not None and (whole.usage.input_tokens, whole.usage.output_tokens) == (5, 4)
    assert final.usage == whole.usage and final.output_text == whole.output_text == "Sunny."
    sent = double.bodies("openai-usage", "/v1/completions")
    assert sent[-1]["stream_options"] == {"include_usage": True}
