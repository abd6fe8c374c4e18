"""The vLLM plugin against real vLLM: its parser managers, its ``ChatCompletionRequest``, its per-request
``Parser`` called the way its chat serving calls it, and a tokenizer built here.

The corpus's tool and reasoning cases must come out of the plugin equal to ``parse()`` of the same request (with
reasoning extracted, as a server with a reasoning parser does), complete and streamed token by token.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_VLLM"):  # .ci/run's vLLM step: a missing vLLM is a failure, not a skip
    import vllm  # noqa: F401
else:
    pytest.importorskip("vllm", reason="vLLM is not installed here; .ci/run runs these tests in its own vLLM venv")

from autoparser import ChatMessage, ChatTemplate
from autoparser.integrations import vllm as plugin

from ..support.corpus import CASES
from . import vllm_support as vs

PLUGIN_FILE = Path(plugin.__file__).with_name("vllm_plugin.py")

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
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


# --- corpus --------------------------------------------------------------------------------------------------------


def _selected(case: dict[str, Any]) -> bool:
    params, expect = case["params"], case["expect"]
    involved = params["tools"] or params["reasoning_format"] != "none" or expect["reasoning_content"]
    return bool(involved) and not case["is_partial"]


SELECTED = [case for case in CASES if _selected(case)]


def _case_request(case: dict[str, Any]) -> Any:
    params = case["params"]
    return vs.request_for(
        params["messages"],
        params["tools"] or None,
        params["tool_choice"] if params["tools"] else None,
        parallel_tool_calls=params["parallel_tool_calls"],
        chat_template_kwargs={"enable_thinking": params["enable_thinking"]},
    )


def _expected(case: dict[str, Any]) -> ChatMessage:
    """``parse()`` of the case's output for the same request, reasoning extracted."""
    params = case["params"]
    return (
        ChatTemplate.load(case["template"])
        .apply(
            params["messages"],
            tools=params["tools"] or None,
            tool_choice=params["tool_choice"],
            parallel_tool_calls=params["parallel_tool_calls"],
            reasoning_format="auto",
            enable_thinking=params["enable_thinking"],
        )
        .parse(case["input"])
    )


def _tokenizer(case: dict[str, Any]) -> Any:
    name = case["template"].removesuffix(".jinja")
    texts = tuple(c["input"] for c in CASES if c["template"] == case["template"])
    return vs.tokenizer_for(name, texts)


def _assert_same(reply: vs.Reply, want: ChatMessage, output: str) -> None:
    assert not reply.protocol_errors
    assert reply.reasoning == want.reasoning_content
    assert reply.content == want.content
    assert [(c["name"], c["arguments"]) for c in reply.calls] == [(c.name, c.arguments) for c in want.tool_calls]
    for got, call in zip(reply.calls, want.tool_calls, strict=True):
        assert got["id"], "every call has an id"
        if call.id and call.id in output:  # an id the model wrote is kept (others are generated per reply)
            assert got["id"] == call.id


@pytest.mark.parametrize("case", SELECTED, ids=[c["id"] for c in SELECTED])
def test_corpus_complete(case: dict[str, Any]) -> None:
    reply = vs.complete(_tokenizer(case), _case_request(case), case["input"])
    want = _expected(case)
    for call in reply.calls:  # vLLM gives calls without a model-written id its own when it builds the message
        call["id"] = call["id"] or "vllm-assigned"
    _assert_same(reply, want, case["input"])


@pytest.mark.parametrize("case", SELECTED, ids=[c["id"] for c in SELECTED])
def test_corpus_streamed_token_by_token(case: dict[str, Any]) -> None:
    reply = vs.stream(_tokenizer(case), _case_request(case), case["input"])
    _assert_same(reply, _expected(case), case["input"])


@pytest.mark.parametrize("case", SELECTED, ids=[c["id"] for c in SELECTED])
def test_corpus_streamed_several_tokens_per_step(case: dict[str, Any]) -> None:
    reply = vs.stream(_tokenizer(case), _case_request(case), case["input"], tokens_per_step=(3, 1, 7, 2))
    _assert_same(reply, _expected(case), case["input"])


def test_the_corpus_selection_has_tools_and_reasoning() -> None:
    assert len(SELECTED) > 150
    assert sum(bool(c["expect"]["tool_calls"]) for c in SELECTED) > 60
    assert sum(bool(c["expect"]["reasoning_content"]) for c in SELECTED) > 40


# --- loading -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [str(PLUGIN_FILE), "autoparser.integrations.vllm"])
def test_vllm_loads_the_plugin(spec: str) -> None:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    for registry in (ToolParserManager.tool_parsers, ReasoningParserManager.reasoning_parsers):
        registry.pop("autoparser", None)
    for module in ("autoparser.integrations.vllm", "vllm_plugin"):
        sys.modules.pop(module, None)  # as in a fresh server process
    try:
        ToolParserManager.import_tool_parser(spec)
        ReasoningParserManager.import_reasoning_parser(spec)
        tool_cls = ToolParserManager.get_tool_parser("autoparser")
        reasoning_cls = ReasoningParserManager.get_reasoning_parser("autoparser")
    finally:
        sys.modules["autoparser.integrations.vllm"] = plugin
        plugin.register()
    assert (tool_cls.__module__, tool_cls.__name__) == ("autoparser.integrations.vllm", "AutoparserToolParser")
    assert reasoning_cls.__name__ == "AutoparserReasoningParser"


def test_startup_check_constructs_the_parser_from_the_tokenizer_alone() -> None:
    tokenizer = vs.tokenizer_for("Qwen3.5-4B", ())
    from vllm.parser import ParserManager

    parser_cls = ParserManager.get_parser("autoparser", "autoparser", enable_auto_tools=True, tokenizer=tokenizer)
    assert parser_cls is not None  # get_parser validated it with parser_cls(tokenizer)


# --- behaviour the corpus does not cover -----------------------------------------------------------------------------

QWEN_CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"


def _qwen(*texts: str) -> Any:
    return vs.tokenizer_for("Qwen3.5-4B", (QWEN_CALL, *texts))


def _qwen_params(**kwargs: Any) -> Any:
    return ChatTemplate.load("Qwen3.5-4B").apply(ASK, tools=[WEATHER, TIME], reasoning_format="auto", **kwargs)


@pytest.mark.parametrize("mode", ["complete", "token", "chunks"])
def test_a_call_ends_an_unterminated_reasoning_block(mode: str) -> None:
    # The prompt opened <think>; the model reasons and calls without closing the block.
    text = "I should look this up.\n" + QWEN_CALL
    want = _qwen_params().parse(text)
    assert want.reasoning_content and want.tool_calls  # the liberty, as parse() reads it
    reply = _run(mode, _qwen(text), vs.request_for(ASK, [WEATHER, TIME]), text)
    _assert_same(reply, want, text)


@pytest.mark.parametrize("mode", ["complete", "token", "chunks"])
@pytest.mark.parametrize("cut", [-40, -30, -12, -3])
def test_a_reply_cut_off_inside_a_call(mode: str, cut: int) -> None:
    # The end of the reply closes the call's arguments; vLLM joins that flush into the last step's delta, which
    # must still carry each call once.
    text = "Hm.\n</think>\n\n" + QWEN_CALL[:cut]
    want = _qwen_params().parse(text)
    assert want.tool_calls  # the cut-off call, its arguments closed
    reply = _run(mode, _qwen(text), vs.request_for(ASK, [WEATHER, TIME]), text)
    _assert_same(reply, want, text)


@pytest.mark.parametrize("mode", ["complete", "token", "chunks"])
def test_parallel_calls_with_reasoning_and_an_answer(mode: str) -> None:
    second = QWEN_CALL.replace("get_weather", "get_time").replace("city", "zone").replace("Paris", "Europe/Paris")
    text = "Two lookups.\n</think>\n\nChecking both.\n" + QWEN_CALL + "\n" + second
    want = _qwen_params(parallel_tool_calls=True).parse(text)
    assert len(want.tool_calls) == 2 and want.content == "Checking both."
    reply = _run(mode, _qwen(text), vs.request_for(ASK, [WEATHER, TIME]), text)
    _assert_same(reply, want, text)


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_thinking_off_the_prompt_ends_the_reasoning(mode: str) -> None:
    text = "It is sunny.<"  # a trailing "<" is held back until the end of the reply, then sent
    request = vs.request_for(ASK, [WEATHER], chat_template_kwargs={"enable_thinking": False})
    tokenizer = _qwen(text)
    parser = vs.make_parser(tokenizer, request)
    assert parser.is_reasoning_end(vs.prompt_ids(tokenizer, request))
    reply = _run(mode, tokenizer, request, text)
    assert (reply.content, reply.reasoning, reply.calls) == ("It is sunny.<", "", [])


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_tool_parser_alone_leaves_reasoning_markup_in_the_content(mode: str) -> None:
    text = "Let me see.\n</think>\n\nSure.\n" + QWEN_CALL
    reply = _run(mode, _qwen(text), vs.request_for(ASK, [WEATHER]), text, reasoning=False)
    assert reply.reasoning == ""
    assert reply.content == "Let me see.\n</think>\n\nSure."
    assert [(c["name"], json.loads(c["arguments"])) for c in reply.calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("mode", ["complete", "token", "chunks"])
def test_tool_parser_after_another_reasoning_parser_reads_the_text_it_is_handed(mode: str) -> None:
    # vLLM's own deepseek_r1 parser splits off the reasoning; the tool part reads content and calls from the rest.
    text = "Let me see.\n</think>\n\nSure.\n" + QWEN_CALL + "<"
    reply = _run(mode, _qwen(text), vs.request_for(ASK, [WEATHER]), text, reasoning="deepseek_r1")
    want = _qwen_params().parse(text)
    assert reply.reasoning.strip() == want.reasoning_content
    assert (reply.content, [(c["name"], c["arguments"]) for c in reply.calls]) == (
        want.content,
        [(c.name, c.arguments) for c in want.tool_calls],
    )


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_reasoning_parser_alone_reports_the_content(mode: str) -> None:
    text = "Hmm.\n</think>\n\nIt is sunny in Paris."
    reply = _run(mode, _qwen(text), vs.request_for(ASK), text, tools=False)
    assert (reply.reasoning, reply.content, reply.calls) == ("Hmm.", "It is sunny in Paris.", [])


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_tool_choice_none_reads_no_calls(mode: str) -> None:
    text = "Fine.\n</think>\n\nI would call " + QWEN_CALL
    request = vs.request_for(ASK, [WEATHER], "none")
    want = _qwen_params(tool_choice="none").parse(text)
    assert not want.tool_calls
    _assert_same(_run(mode, _qwen(text), request, text), want, text)


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_parallel_tool_calls_false_is_the_parser_the_request_asked_for(mode: str) -> None:
    second = QWEN_CALL.replace("Paris", "Lyon")
    text = "Two.\n</think>\n\n" + QWEN_CALL + "\n" + second
    request = vs.request_for(ASK, [WEATHER, TIME], parallel_tool_calls=False)
    want = _qwen_params(parallel_tool_calls=False).parse(text)
    _assert_same(_run(mode, _qwen(text), request, text), want, text)


def test_required_and_named_tool_choice_hand_vllm_a_grammar_it_accepts() -> None:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output.backend_guidance import validate_guidance_grammar

    tokenizer = _qwen()
    named = {"type": "function", "function": {"name": "get_time"}}
    for choice, tool in (("required", "get_weather"), (named, "get_time")):
        request = vs.request_for(ASK, [WEATHER, TIME], choice)
        vs.make_parser(tokenizer, request)  # adjusts the request as vLLM's renderer does
        grammar = request.structured_outputs.grammar
        assert grammar and f'"{tool}"' in grammar
        if choice != "required":
            assert "get_weather" not in grammar  # a named function narrows the grammar to it
        params = SamplingParams(structured_outputs=request.structured_outputs)
        validate_guidance_grammar(params)  # raises on a grammar llguidance rejects
        text = "Checking.\n</think>\n\n" + QWEN_CALL.replace("get_weather", tool).replace("city", "zone")
        reply = vs.stream(tokenizer, request, text)
        assert [c["name"] for c in reply.calls] == [tool]


def test_usage_counts_the_reasoning_tokens() -> None:
    text = "Let me think it over.\n</think>\n\nSunny."
    tokenizer = _qwen(text)
    ids = tokenizer.encode(text, add_special_tokens=False)
    parser = vs.make_parser(tokenizer, vs.request_for(ASK))
    end = tokenizer.convert_tokens_to_ids("</think>")
    assert parser.count_reasoning_tokens(ids) == ids.index(end) > 0


def test_special_token_markers_are_kept_by_the_detokenizer() -> None:
    request = vs.request_for(ASK, [WEATHER])
    assert request.skip_special_tokens
    vs.make_parser(_qwen(), request)
    assert not request.skip_special_tokens


@pytest.mark.parametrize("mode", ["complete", "token"])
def test_a_tokenizer_without_a_chat_template_passes_text_through(mode: str) -> None:
    tokenizer = _qwen()
    source = tokenizer.chat_template
    try:
        tokenizer.chat_template = None
        request = vs.request_for(ASK, [WEATHER])
        text = "Just text " + QWEN_CALL
        reply = _run(mode, tokenizer, request, text)
        assert reply.content == text and not reply.calls and not reply.reasoning
    finally:
        tokenizer.chat_template = source


def _run(mode: str, tokenizer: Any, request: Any, text: str, **parts: Any) -> vs.Reply:
    if mode == "complete":
        reply = vs.complete(tokenizer, request, text, **parts)
        for call in reply.calls:
            call["id"] = call["id"] or "vllm-assigned"
        return reply
    steps = (1,) if mode == "token" else (2, 5, 1, 3)
    return vs.stream(tokenizer, request, text, tokens_per_step=steps, **parts)
