"""Recorded replies of every bundled template, replayed token by token by the upstream double, through the server.

Each template's outputs (tests/support/outputs.py: rendered with the template's own markup — content, reasoning,
one call, parallel calls, text before calls) go through ``POST /v1/chat/completions`` with the real openai client,
streamed and not. The server must say exactly what the library says: ``params.parse(text)`` of the request's own
``ChatParams`` (content, reasoning, calls and model-written ids, warnings), and the streamed reply, accumulated as a
client accumulates it, must be the same message. The prompt the upstream got is the request's prompt. Malformed and
cut-off replies, and the OpenAI-style upstream, are covered on a selection of templates.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from autoparser import ChatTemplate
from tests.support.outputs import markers, outputs
from tests.support.sample import sampled

from .double import Script, UpstreamDouble, tokens
from .helpers import accumulate, check_same, from_completion, library_params, output_request

TEMPLATES = [t for t in sampled() if outputs(t)]  # the sample's templates (tests/support/sample.py)
_keys = itertools.count()


def _key() -> str:
    return f"case{next(_keys):05d}"


def _roundtrip(
    client: Any,
    double: UpstreamDouble,
    template: str,
    text: str,
    *,
    kind: str = "llama.cpp",
    finish: str = "stop",
    **fields: Any,
) -> tuple[Any, Any]:
    """Send ``text`` as the upstream's reply, non-streamed then streamed; check both against the library."""
    key = _key()
    double.script(key, Script(tokens(text, markers(template)), finish=finish))
    body = output_request(template, key, **fields)
    params = library_params(template, body)
    expected = params.parse(text)
    id_format = ChatTemplate.load(template).analysis.id_format
    api = client(template, kind)
    request = {k: v for k, v in body.items() if k not in ("chat_template_kwargs",)}
    extra = {"chat_template_kwargs": body["chat_template_kwargs"]}

    completion = api.chat.completions.create(**request, extra_body=extra)
    got = from_completion(completion)
    check_same(got, expected, id_format)
    want_finish = "length" if finish == "length" else "tool_calls" if expected.tool_calls else "stop"
    assert completion.choices[0].finish_reason == want_finish

    chunks = list(api.chat.completions.create(**request, extra_body=extra, stream=True))
    streamed, streamed_finish, _ = accumulate(chunks)
    check_same(streamed, expected, id_format)
    assert streamed_finish == want_finish

    path = "/completion" if kind == "llama.cpp" else "/v1/completions"
    sent = double.bodies(key, path)
    assert len(sent) == 2 and {b["stream"] for b in sent} == {False, True}
    assert all(params.prompt.endswith(b["prompt"]) and b["prompt"].endswith(params.generation_prompt) for b in sent)
    return completion, expected


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_output_of_every_template_through_llama_cpp(template: str, client: Any, double: UpstreamDouble) -> None:
    for output in outputs(template):
        _roundtrip(client, double, template, output.text)


@pytest.mark.parametrize(
    "template",
    [
        "Qwen3.5-4B",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
        "mistralai-Mistral-Nemo-Instruct-2407",
        "openai-gpt-oss-120b",
        "meta-llama-Llama-3.1-8B-Instruct",
        "deepseek-ai-DeepSeek-V3.1",
        "moonshotai-Kimi-K2",
    ],
)
def test_outputs_through_an_openai_style_upstream(template: str, client: Any, double: UpstreamDouble) -> None:
    for output in outputs(template):
        _roundtrip(client, double, template, output.text, kind="openai")


# Templates of different families for the malformed and cut-off replies.
DAMAGED = [
    "Qwen3.5-4B",
    "Qwen3-Coder",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "meta-llama-Llama-3.1-8B-Instruct",
    "deepseek-ai-DeepSeek-V3.1",
    "openai-gpt-oss-120b",
    "GLM-4.7-Flash",
]


@pytest.mark.parametrize("template", DAMAGED)
def test_cut_off_replies_keep_what_was_written(template: str, client: Any, double: UpstreamDouble) -> None:
    """A reply the upstream cut at its token limit (``finish_reason: length``) comes back as the library reads the
    cut text: a partial call, or its text as content with a warning; nothing the model wrote is lost."""
    calls = [o for o in outputs(template) if o.calls]
    assert calls
    for output in calls[:2]:
        text = output.text
        for cut in sorted({len(text) // 3, len(text) // 2, len(text) - 3}):
            _, expected = _roundtrip(client, double, template, text[:cut], finish="length")
            kept = (
                expected.content
                + expected.reasoning_content
                + "".join(c.name + c.arguments for c in expected.tool_calls)
                + "".join(w.message for w in expected.warnings)
            )
            assert kept or not text[:cut].strip()


@pytest.mark.parametrize("template", DAMAGED)
def test_malformed_replies_come_back_as_content_with_warnings(
    template: str, client: Any, double: UpstreamDouble
) -> None:
    """Broken markup (an unknown tool, unbalanced JSON, a call marker with garbage, text after the calls) is kept as
    content or a flagged call, and the warnings reach the client in ``autoparser_warnings``."""
    call = next(o for o in outputs(template) if o.calls)
    name = call.calls[0].name
    broken = [
        call.text.replace(name, "no_such_tool", 1),
        call.text.replace("{", "{{", 1) if "{" in call.text else call.text + "{",
        call.text + "\ntrailing words after the calls",
        call.text[: len(call.text) // 2] + "<<garbage>>" + call.text[len(call.text) // 2 :],
    ]
    warned = 0
    for text in broken:
        completion, expected = _roundtrip(client, double, template, text)
        extra = completion.choices[0].message.model_extra or {}
        assert bool(extra.get("autoparser_warnings")) == bool(expected.warnings)
        warned += bool(expected.warnings)
    assert warned, "no broken reply drew a warning"
