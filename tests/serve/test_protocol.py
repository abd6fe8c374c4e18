"""The OpenAI protocol, with the real openai client against the server over HTTP.

Every response and chunk validates strictly with the openai package's pydantic types; the client's own stream
accumulator (``client.chat.completions.stream``) rebuilds the message of the non-streamed call; invalid requests get
OpenAI-format 400s naming the field; request fields reach the template and the upstream as documented.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.model import Model

from tests.support.outputs import markers, outputs

from .double import Script, UpstreamDouble, tokens
from .helpers import accumulate, from_completion

QWEN = "Qwen3.5-4B"
JSON = {"content-type": "application/json"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
QWEN_REPLY = (
    "The user wants the weather.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=get_weather>\n"
    "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"
)


def _ask(key: str, **fields: Any) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Weather in Paris? [{key}]"}], **fields}


def _sse_data(response: httpx2.Response) -> list[dict[str, Any]]:
    events = []
    for block in response.text.split("\n\n"):
        if block.startswith("data: ") and block != "data: [DONE]":
            events.append(json.loads(block[len("data: ") :]))
    return events


# --- shapes --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("template", ["Qwen3.5-4B", "mistralai-Mistral-Nemo-Instruct-2407", "openai-gpt-oss-120b"])
def test_every_response_and_chunk_validates_strictly(template: str, double: UpstreamDouble, base_url: Any) -> None:
    """Raw bodies (not the client's lenient parse) against openai's types in pydantic's strict mode; the last data
    event is ``[DONE]``; with ``include_usage`` every chunk has ``usage: null`` but the last, which has no choices."""
    http = httpx2.Client(base_url=base_url(template), timeout=30)
    for i, output in enumerate(outputs(template)):
        key = f"strict-{template}-{i}"
        double.script(key, Script(tokens(output.text, markers(template))))
        body = _ask(key, model=template, tools=[WEATHER], parallel_tool_calls=True)
        response = http.post("/chat/completions", json=body)
        assert response.status_code == 200
        completion = ChatCompletion.model_validate(response.json(), strict=True)
        assert completion.object == "chat.completion" and completion.usage is not None

        streamed = http.post(
            "/chat/completions", json={**body, "stream": True, "stream_options": {"include_usage": True}}
        )
        assert streamed.status_code == 200
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.text.endswith("data: [DONE]\n\n")
        events = _sse_data(streamed)
        chunks = [ChatCompletionChunk.model_validate(e, strict=True) for e in events]
        assert all(c.id == chunks[0].id and c.object == "chat.completion.chunk" for c in chunks)
        assert all("usage" in e and e["usage"] is None for e in events[:-1])
        assert chunks[-1].choices == [] and chunks[-1].usage == completion.usage
        assert chunks[0].choices[0].delta.role == "assistant"
        message, finish, _ = accumulate(chunks)
        assert finish == completion.choices[0].finish_reason
        assert message.content == (completion.choices[0].message.content or "")


def test_the_clients_stream_accumulator_rebuilds_the_non_streamed_message(client: Any, double: UpstreamDouble) -> None:
    double.script("accumulate", Script(tokens(QWEN_REPLY, ["<tool_call>", "</think>"])))
    api = client(QWEN)
    body = _ask("accumulate", tools=[WEATHER])
    completion = api.chat.completions.create(**body)
    with api.chat.completions.stream(**body) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    whole, rebuilt = completion.choices[0], final.choices[0]
    assert rebuilt.finish_reason == whole.finish_reason == "tool_calls"
    assert rebuilt.message.content == whole.message.content == "Let me look."
    assert (rebuilt.message.model_extra or {}).get("reasoning_content") == "The user wants the weather."
    assert (whole.message.model_extra or {}).get("reasoning_content") == "The user wants the weather."
    assert (
        [(c.function.name, json.loads(c.function.arguments)) for c in rebuilt.message.tool_calls]
        == [(c.function.name, json.loads(c.function.arguments)) for c in whole.message.tool_calls]
        == [("get_weather", {"city": "Paris", "days": 2})]
    )
    assert all(c.id.startswith("call_") and c.type == "function" for c in rebuilt.message.tool_calls)


def test_models_and_health(client: Any, base_url: Any) -> None:
    listed = client(QWEN).models.list()
    assert [m.id for m in listed.data] == [QWEN]
    Model.model_validate(listed.data[0].model_dump(), strict=True)
    health = httpx2.get(base_url(QWEN).removesuffix("/v1") + "/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_unknown_routes_answer_in_openai_format(base_url: Any) -> None:
    response = httpx2.get(base_url(QWEN) + "/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
    response = httpx2.get(base_url(QWEN) + "/chat/completions")
    assert response.status_code == 405 and "error" in response.json()


# --- invalid requests ----------------------------------------------------------------------------------------------

INVALID = [
    ({"messages": None}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"content": "no role"}]}, "messages[0].role"),
    ({"messages": ["text"]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"n": 2}, "n"),
    ({"temperature": 3}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": -0.5}, "top_p"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_completion_tokens": "many"}, "max_completion_tokens"),
    ({"stop": [1, 2]}, "stop"),
    ({"seed": 1.5}, "seed"),
    ({"stream": "yes"}, "stream"),
    ({"tools": {"type": "function"}}, "tools"),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools[0].function.name"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "other"}}}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"response_format": {"type": "yaml"}}, "response_format.type"),
    (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": []}}},
        "response_format.json_schema.schema",
    ),
    ({"chat_template_kwargs": {"tools": []}}, "chat_template_kwargs.tools"),
    ({"chat_template_kwargs": {"enable_thinking": "no"}}, "chat_template_kwargs.enable_thinking"),
    ({"chat_template_kwargs": []}, "chat_template_kwargs"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"logprobs": True}, "logprobs"),
    ({"functions": [{"name": "f"}]}, "functions"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ({"logit_bias": {"hello": 5}}, "logit_bias"),
    ({"logit_bias": {"12": 500}}, "logit_bias"),
]


@pytest.mark.parametrize(("fields", "param"), INVALID, ids=[p for _, p in INVALID])
def test_invalid_requests_get_a_400_naming_the_field(fields: dict, param: str, client: Any) -> None:
    body = {**_ask("invalid"), **fields}
    if body["messages"] is None:
        del body["messages"]
    model, messages = body.pop("model"), body.pop("messages", None)
    with pytest.raises(openai.BadRequestError) as caught:
        client(QWEN).chat.completions.create(
            model=model, messages=messages, extra_body=body
        ) if messages is not None else client(QWEN).post(
            "/chat/completions", body={"model": model, **body}, cast_to=ChatCompletion
        )
    error = caught.value
    assert error.status_code == 400
    assert error.param == param, error.body
    assert error.type == "invalid_request_error"
    assert isinstance(error.body, dict) and set(error.body) == {"message", "type", "param", "code"}
    assert param.split(".")[0].split("[")[0] in error.message


def test_content_the_template_cannot_show_is_a_400_naming_the_part(client: Any) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    with pytest.raises(openai.BadRequestError) as caught:
        client("NousResearch-Hermes-3-Llama-3.1-8B-tool_use").chat.completions.create(
            model="NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            messages=[{"role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}],
        )
    assert caught.value.param == "messages[0].content[1]"


def test_a_request_the_template_refuses_is_a_400_with_its_reason(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client("google-gemma-2-2b-it").chat.completions.create(
            model="google-gemma-2-2b-it",
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        )
    assert caught.value.param == "messages" and caught.value.code == "template_error"
    assert "System role not supported" in caught.value.message


def test_a_body_that_is_not_json(base_url: Any) -> None:
    response = httpx2.post(base_url(QWEN) + "/chat/completions", content=b"{not json", headers=JSON, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_json"
    response = httpx2.post(base_url(QWEN) + "/chat/completions", json=[1, 2], timeout=30)
    assert response.status_code == 400 and "JSON object" in response.json()["error"]["message"]


# --- what reaches the template and the upstream -------------------------------------------------------------------


def _sent(double: UpstreamDouble, key: str) -> dict[str, Any]:
    bodies = double.bodies(key)
    assert bodies, f"the upstream got no request for {key}"
    return bodies[-1]


def test_sampling_fields_reach_llama_cpp(client: Any, double: UpstreamDouble) -> None:
    client(QWEN).chat.completions.create(
        **_ask("sampling"),
        max_tokens=50,
        max_completion_tokens=77,
        temperature=0.25,
        top_p=0.5,
        seed=7,
        stop=["STOP", "END"],
        frequency_penalty=0.5,
        presence_penalty=-0.5,
        logit_bias={"12": -100, "7": 2.5},
    )
    sent = _sent(double, "sampling")
    assert sent["logit_bias"] == {"12": -100.0, "7": 2.5}
    assert sent["n_predict"] == 77  # max_completion_tokens wins, as in OpenAI's API
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.25, 0.5, 7)
    assert (sent["frequency_penalty"], sent["presence_penalty"]) == (0.5, -0.5)
    # the client's, then the template's end of turn (not the next turn's <|im_start|>: a grammar may allow it in
    # reasoning, and a stop would cut the reply there; it is preserved instead, so it is not dropped from the text)
    assert sent["stop"] == ["STOP", "END", "<|im_end|>"]
    assert sent["stream"] is False
    client(QWEN).chat.completions.create(**_ask("defaults"))
    sent = _sent(double, "defaults")
    assert not {"n_predict", "temperature", "top_p", "seed"} & set(sent)


def test_tool_choice_shapes_the_grammar(client: Any, double: UpstreamDouble) -> None:
    api = client(QWEN)
    cases = {
        "choice-auto": {"tools": [WEATHER]},
        "choice-required": {"tools": [WEATHER], "tool_choice": "required"},
        "choice-named": {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        "choice-none": {"tools": [WEATHER], "tool_choice": "none"},
        "choice-schema": {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "w",
                    "schema": {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]},
                },
            }
        },
        "choice-object": {"response_format": {"type": "json_object"}},
    }
    for key, fields in cases.items():
        api.chat.completions.create(**_ask(key), **fields)
    auto = _sent(double, "choice-auto")
    assert auto["grammar_lazy"] is True
    assert auto["grammar_triggers"] == [{"type": 1, "value": "<tool_call>"}]
    assert auto["reasoning_budget_start_tag"] == "<think>" and auto["reasoning_budget_end_tags"] == ["</think>"]
    assert auto["reasoning_budget_tokens"] == -1 and auto["generation_prompt"].endswith("<think>\n")
    for key in ("choice-required", "choice-named", "choice-schema", "choice-object"):
        sent = _sent(double, key)
        assert sent["grammar_lazy"] is False and "grammar_triggers" not in sent, key
        assert "reasoning_budget_start_tag" not in sent and "grammar_type" not in sent
    assert "get_weather" in _sent(double, "choice-named")["grammar"]
    assert "number" in _sent(double, "choice-schema")["grammar"]
    assert "grammar" not in _sent(double, "choice-none")
    assert _sent(double, "choice-none")["preserved_tokens"]  # markers still come back as text
    assert auto["preserved_tokens"][-2:] == ["<|im_end|>", "<|im_start|>"]  # so are the stop markers


def test_no_stop_at_markers_the_reply_itself_uses(client: Any, double: UpstreamDouble) -> None:
    """gpt-oss ends a message inside its turn with ``<|end|>`` and starts the next with ``<|start|>``: stopping at
    them would cut the answer after the analysis channel. Markers the reply's markup uses are no stops."""
    client("openai-gpt-oss-120b").chat.completions.create(
        **_ask("oss-stops", model="openai-gpt-oss-120b"), stop=["<|end|>"]
    )
    assert _sent(double, "oss-stops")["stop"] == ["<|end|>"]  # only the client's own
    client("google-gemma-4-31B-it").chat.completions.create(**_ask("gemma-stops", model="google-gemma-4-31B-it"))
    assert "stop" not in _sent(double, "gemma-stops")  # <turn|> is its markup (and its EOS)


def test_reasoning_effort_reaches_templates_that_read_it(client: Any, double: UpstreamDouble) -> None:
    # Qwen3 reads enable_thinking: "none" turns thinking off, any other effort on (as vLLM does)
    client("Qwen-Qwen3-0.6B").chat.completions.create(
        **_ask("effort-none", model="Qwen-Qwen3-0.6B"), reasoning_effort="none"
    )
    assert _sent(double, "effort-none")["prompt"].endswith("<think>\n\n</think>\n\n")
    client("Qwen-Qwen3-0.6B").chat.completions.create(
        **_ask("effort-low", model="Qwen-Qwen3-0.6B"), reasoning_effort="low"
    )
    assert _sent(double, "effort-low")["prompt"].endswith("<|im_start|>assistant\n")
    # an explicit enable_thinking wins over the effort
    client("Qwen-Qwen3-0.6B").chat.completions.create(
        **_ask("effort-kw", model="Qwen-Qwen3-0.6B"),
        reasoning_effort="high",
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    assert _sent(double, "effort-kw")["prompt"].endswith("</think>\n\n")
    # gpt-oss reads reasoning_effort itself
    client("openai-gpt-oss-120b").chat.completions.create(
        **_ask("effort-oss", model="openai-gpt-oss-120b"), reasoning_effort="low"
    )
    assert "Reasoning: low" in _sent(double, "effort-oss")["prompt"]


def test_chat_template_kwargs_reach_the_template(client: Any, double: UpstreamDouble) -> None:
    client("meta-llama-Llama-3.1-8B-Instruct").chat.completions.create(
        **_ask("kwargs-date", model="meta-llama-Llama-3.1-8B-Instruct"),
        extra_body={"chat_template_kwargs": {"date_string": "01 Jan 2031"}},
    )
    assert "Today Date: 01 Jan 2031" in _sent(double, "kwargs-date")["prompt"]


def test_length_and_usage(client: Any, double: UpstreamDouble) -> None:
    double.script("length", Script(["The", " answer", " is"], finish="length", prompt_tokens=21))
    completion = client(QWEN).chat.completions.create(**_ask("length"), max_tokens=3)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (21, 3)
    chunks = list(
        client(QWEN).chat.completions.create(
            **_ask("length"), max_tokens=3, stream=True, stream_options={"include_usage": True}
        )
    )
    message, finish, usage = accumulate(chunks)
    assert finish == "length" and usage == completion.usage
    assert message.reasoning_content == completion.choices[0].message.model_extra["reasoning_content"]


def test_messages_as_clients_send_them(client: Any, double: UpstreamDouble) -> None:
    """Text parts, null content next to calls, arguments as JSON text, tool results, the developer role: the
    request normalisation renders them (docs/requests.md)."""
    history = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris? [history]"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_01A",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01A", "content": [{"type": "text", "text": "21 C, sunny"}]},
    ]
    double.script("[history]", Script(["</think>", "\n\n", "It", " is", " sunny", "."]))
    completion = client(QWEN).chat.completions.create(model=QWEN, messages=history, tools=[WEATHER])
    assert from_completion(completion).content == "It is sunny."
    prompt = _sent(double, "[history]")["prompt"]
    assert "Be brief." in prompt and "21 C, sunny" in prompt and "<parameter=city>\nParis" in prompt
