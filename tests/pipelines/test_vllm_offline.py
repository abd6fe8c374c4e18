"""vLLM's offline outputs read into messages: real ``vllm.outputs.RequestOutput`` / ``CompletionOutput`` objects (as
``LLM.generate`` and ``LLM.chat`` return them; built here, since the PyPI vLLM runs no model on a CPU-only machine),
holding the bundled templates' own renderings of assistant turns, read as ``ChatParams.parse()`` reads them."""

from __future__ import annotations

import os

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_VLLM"):  # .ci/run's vLLM step: a missing vLLM is a failure, not a skip
    import vllm  # noqa: F401
else:
    pytest.importorskip("vllm", reason="vLLM is not installed here; .ci/run runs these tests in its own vLLM venv")

from vllm.outputs import CompletionOutput, RequestOutput

from autoparser import ChatTemplate
from autoparser.pipelines.vllm_offline import parse_outputs

from ..batch import cases
from ..batch.docs import example
from ..support import outputs


def _output(request_id: str, prompt: str, texts: list[str], reasons: list[str | None]) -> RequestOutput:
    samples = [
        CompletionOutput(index=i, text=text, token_ids=[], cumulative_logprob=None, logprobs=None, finish_reason=reason)
        for i, (text, reason) in enumerate(zip(texts, reasons, strict=True))
    ]
    return RequestOutput(request_id, prompt, None, None, samples, finished=True)


@pytest.mark.parametrize("template", ["Qwen3-Coder", "Qwen3.5-4B", "openai-gpt-oss-120b"])
def test_outputs_read_as_parse_reads_them(template: str) -> None:
    """Prompts rendered for the request (as LLM.generate takes them, as LLM.chat renders them), two samples each:
    the parser comes from the prompt alone, or from the conversation when given; both read as parse() does."""
    params = cases.params(template)
    texts = [row["text"] for row in cases.rows(template)]
    results = [
        _output(f"req-{i}", params.prompt, [text, texts[(i + 1) % len(texts)]], ["stop", "length"])
        for i, text in enumerate(texts)
    ]
    options = {"tools": outputs.request_tools(template), "parallel_tool_calls": True, "enable_thinking": True}
    by_prompt = parse_outputs(results, ChatTemplate.load(template), **options)
    by_messages = parse_outputs(results, template, messages=outputs.conversation(template), **options)
    expected = cases.expected(template)
    keys = [row["id"] for row in cases.rows(template)]
    for i, (got, again) in enumerate(zip(by_prompt, by_messages, strict=True)):
        assert got.request_id == f"req-{i}" and got.prompt == params.prompt
        assert got.finish_reasons == ("stop", "length")
        for parsed in (got, again):
            for message, text in zip(parsed.messages, results[i].outputs, strict=True):
                want = params.parse(text.text).to_openai()
                assert cases.canonical(message.to_openai(), text.text) == cases.canonical(want, text.text)
            assert cases.judged(parsed.messages[0].to_openai()) == expected[keys[i]]
        choice = got.to_openai()["choices"][0]
        assert choice["finish_reason"] == ("tool_calls" if got.messages[0].tool_calls else "stop")
        assert got.to_openai()["choices"][1]["finish_reason"] == "length"


def test_a_conversation_per_output() -> None:
    """``LLM.chat`` with several conversations: one list per output, each read with its own request."""
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    first = [{"role": "user", "content": "Think first."}]
    second = [{"role": "user", "content": "Answer right away."}]
    reply = "Let me think.\n</think>\n\nIt is 4."
    results = [
        _output("a", tmpl.apply(first, enable_thinking=True).prompt, [reply], ["stop"]),
        _output("b", tmpl.apply(second, enable_thinking=False).prompt, [reply], ["stop"]),
    ]
    by_prompt = parse_outputs(results, tmpl)  # thinking read from each prompt's end
    assert by_prompt[0].messages[0].reasoning_content == "Let me think."
    assert by_prompt[0].messages[0].content == "It is 4."
    assert by_prompt[1].messages[0].reasoning_content == ""
    assert by_prompt[1].messages[0] == tmpl.apply(second, enable_thinking=False).parse(reply)
    with pytest.raises(ValueError, match="1 conversations for 2 outputs"):
        parse_outputs(results, tmpl, messages=[first])
    by_messages = parse_outputs(results, tmpl, messages=[first, second], enable_thinking=True)
    assert by_messages[1].messages[0] == tmpl.apply(second, enable_thinking=True).parse(reply)


def test_the_docs_example(capsys: pytest.CaptureFixture[str]) -> None:
    """The page's example over outputs as ``LLM.chat`` returns them (a call, and an answer cut by the length)."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    params = ChatTemplate.load("Qwen3-Coder").apply([{"role": "user", "content": "Weather?"}], tools=tools)
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    results = [_output("0", params.prompt, [call], ["stop"]), _output("1", params.prompt, ["It is sun"], ["length"])]
    exec(example("vllm"), {"outputs": results, "tools": tools})
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("0 (ToolCall(name='get_weather', arguments='{\"city\": \"Paris\"}'") and first.endswith(
        " tool_calls"
    )
    assert second == "1 () length"
