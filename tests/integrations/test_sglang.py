"""The SGLang plugin against real SGLang (from PyPI, on a machine without a GPU): its plugin loader and command line,
its parser registries, its ``ReasoningParser`` and ``FunctionCallParser`` called as its chat serving calls them
(``sglang_support``), and its xgrammar grammar backend.

Each bundled template's own outputs (answers, reasoning, calls, parallel calls, text before calls) must come out of
SGLang equal to ``parse()`` of the same request, whole and streamed. What needs a GPU (the engine, and the serving
layer object that needs the engine's tokenizer manager) does not run here: see docs/integrations.md.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_SGLANG"):  # .ci/run's SGLang step: a missing SGLang is a failure, not a skip
    import sglang.srt.function_call.function_call_parser  # noqa: F401
else:
    pytest.importorskip(
        "sglang.srt.function_call.function_call_parser",
        reason="SGLang is not installed here; .ci/run runs these tests in its own SGLang venv",
    )

from autoparser import ChatMessage, ChatTemplate
from autoparser.integrations import sglang as plugin

from ..support.outputs import conversation, outputs, request_tools
from ..support.tokenizer import hf_tokenizer
from . import sglang_support as ss

# Formats: XML parameters after a block the prompt opens (Qwen3.5), JSON in tags (Qwen3), a name in markup with
# JSON arguments and a `thinking` switch (DeepSeek V3.1), [TOOL_CALLS] with ids (Mistral Small 3.2), XML key/value
# pairs (GLM-4.7), bare JSON with no marker (Llama 3.1).
TEMPLATES = [
    "Qwen3.5-4B",
    "Qwen-Qwen3-0.6B",
    "deepseek-ai-DeepSeek-V3.1",
    "Mistral-Small-3.2-24B-Instruct-2506",
    "GLM-4.7-Flash",
    "meta-llama-Llama-3.1-8B-Instruct",
]
THINKING = {"enable_thinking": True}
CASES = [(name, output) for name in TEMPLATES for output in outputs(name)]


def _tokenizer(name: str) -> Any:
    return hf_tokenizer(name, tuple(o.text for o in outputs(name)))


def _request(name: str, **fields: Any) -> Any:
    return ss.request_for(conversation(name), request_tools(name), **{"chat_template_kwargs": THINKING, **fields})


def _expected(name: str, text: str, **apply: Any) -> ChatMessage:
    params = ChatTemplate.load(name).apply(
        conversation(name), tools=request_tools(name), reasoning_format="auto", enable_thinking=True, **apply
    )
    return params.parse(text)


def _assert_same(reply: ss.Reply, want: ChatMessage) -> None:
    assert reply.reasoning == want.reasoning_content
    assert reply.content == want.content
    assert reply.call_list() == [(c.name, json.loads(c.arguments)) for c in want.tool_calls]


def _chunks(text: str, sizes: tuple[int, ...]) -> list[str]:
    pieces, at, step = [], 0, 0
    while at < len(text):
        size = sizes[step % len(sizes)]
        pieces.append(text[at : at + size])
        at, step = at + size, step + 1
    return pieces or [""]


# --- finding the plugin ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model directory SGLang's command line accepts: the tokenizer with its chat template and a config.json
    (no weights: nothing loads them)."""
    directory = tmp_path_factory.mktemp("sglang-model")
    _tokenizer("Qwen3.5-4B").save_pretrained(directory)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "vocab_size": 600}
    config |= {"intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 1}
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def _sglang_serve(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``sglang serve --model-path DIR --tool-call-parser autoparser --reasoning-parser autoparser`` through SGLang's
    command line (``sglang.cli.main``: plugins loaded, serve backend detected, server arguments parsed and checked),
    as in a fresh process: the names unregistered and SGLang's plugins not yet loaded. It stops where SGLang
    launches the server, whose engine needs a GPU, and builds there what the server builds from those arguments
    without an engine: the chat serving layer's reasoning detector, the scheduler's (its reasoning end token ids
    gate grammars) and a tool-call parser."""
    import sglang.cli.serve
    import sglang.launch_server
    import sglang.srt.plugins
    from sglang.cli.main import main
    from sglang.srt.function_call import parser_names
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser import reasoning_parser_names
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    monkeypatch.delitem(FunctionCallParser.ToolCallParserEnum, "autoparser", raising=False)
    monkeypatch.delitem(ReasoningParser.DetectorMap, "autoparser", raising=False)
    for module, names in ((parser_names, "TOOL_CALL_PARSER_NAMES"), (reasoning_parser_names, "REASONING_PARSER_NAMES")):
        monkeypatch.setattr(module, names, [n for n in getattr(module, names) if n != "autoparser"])
    monkeypatch.setattr(sglang.srt.plugins, "_plugins_loaded", False)
    monkeypatch.setattr(sglang.cli.serve, "kill_process_tree", lambda *args, **kwargs: None)  # this test's process
    tokenizer = _tokenizer("Qwen3.5-4B")
    result: dict[str, Any] = {}

    def run_server(server_args: Any) -> None:
        result["args"] = (server_args.tool_call_parser, server_args.reasoning_parser)
        name = server_args.reasoning_parser
        serving = ReasoningParser(model_type=name, stream_reasoning=True, tokenizer=tokenizer)  # OpenAIServingChat
        scheduler = ReasoningParser(model_type=name, stream_reasoning=False, tokenizer=tokenizer)  # Scheduler
        tools = FunctionCallParser([], server_args.tool_call_parser, tokenizer=tokenizer)
        result["detectors"] = [type(p.detector) for p in (serving, scheduler, tools)]
        result["think_end_ids"] = scheduler.detector.get_think_end_token_ids(tokenizer)

    monkeypatch.setattr(sglang.launch_server, "run_server", run_server)
    monkeypatch.setattr(sys, "argv", ["sglang", "serve", "--model-path", str(model_dir), "--tool-call-parser"])
    sys.argv += ["autoparser", "--reasoning-parser", "autoparser"]
    try:
        main()
    except SystemExit as exit:  # argparse refused the command line
        result["exit"] = exit.code
    return result


def test_sglang_serve_finds_both_parsers_through_the_entry_point(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    run = _sglang_serve(model_dir, monkeypatch)
    assert run.get("args") == ("autoparser", "autoparser"), run
    assert run["detectors"] == [plugin.AutoparserReasoningDetector] * 2 + [plugin.AutoparserDetector]
    end_ids = _tokenizer("Qwen3.5-4B").encode("</think>", add_special_tokens=False)
    assert run["think_end_ids"] == end_ids and len(end_ids) == 1  # the model's special token


def test_without_the_plugin_sglang_serve_refuses_the_names(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_PLUGINS", "another-plugin")  # SGLang's allow-list of plugins to load
    assert _sglang_serve(model_dir, monkeypatch) == {"exit": 2}  # argparse: invalid choice 'autoparser'


def test_sglang_plugin_loader_discovers_the_entry_point() -> None:
    from sglang.srt.plugins import GENERAL_PLUGINS_GROUP, load_plugins_by_group

    from autoparser.integrations.entry_points import register_sglang

    found = load_plugins_by_group(GENERAL_PLUGINS_GROUP)
    assert found["autoparser"][0] is register_sglang


def test_both_parsers_are_found_by_name() -> None:
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    plugin.register()
    assert FunctionCallParser.ToolCallParserEnum["autoparser"] is plugin.AutoparserDetector
    assert ReasoningParser.DetectorMap["autoparser"] is plugin.AutoparserReasoningDetector


# --- each template's own outputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "output"), CASES, ids=[f"{n}:{o.label}" for n, o in CASES])
def test_outputs_whole_and_streamed_agree_with_parse(name: str, output: Any) -> None:
    tokenizer, want = _tokenizer(name), _expected(name, output.text)
    _assert_same(ss.complete(_request(name), tokenizer, output.text), want)
    for sizes in ((1,), (3, 1, 7, 2)):
        reply, _ = ss.stream(_request(name), tokenizer, _chunks(output.text, sizes))
        _assert_same(reply, want)


def test_the_cases_cover_calls_reasoning_and_answers() -> None:
    assert sum(bool(o.calls) for _, o in CASES) >= 15
    assert sum(bool(o.reasoning) for _, o in CASES) >= 10
    assert sum(len(o.calls) > 1 for _, o in CASES) >= 4


# --- requests --------------------------------------------------------------------------------------------------------

QWEN = "Qwen3.5-4B"
QWEN_CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"


def test_thinking_off_reads_the_reply_as_the_answer() -> None:
    text = "The weather is fine."
    request = _request(QWEN, chat_template_kwargs={"enable_thinking": False})
    reply = ss.complete(request, _tokenizer(QWEN), text)
    assert (reply.reasoning, reply.content) == ("", text)
    streamed, _ = ss.stream(request, _tokenizer(QWEN), _chunks(text, (2,)))
    assert (streamed.reasoning, streamed.content) == ("", text)


def test_without_tool_parsing_the_reasoning_detector_reports_the_content_with_calls_as_text() -> None:
    text = f"Hmm.\n</think>\n\nLet me check.\n\n{QWEN_CALL}"
    request = _request(QWEN, tool_choice="none")
    want = _expected(QWEN, text, tool_choice="none")
    for reply in (ss.complete(request, _tokenizer(QWEN), text), ss.stream(request, _tokenizer(QWEN), [text])[0]):
        assert (reply.reasoning, reply.content, reply.calls) == (want.reasoning_content, want.content, {})
        assert "<tool_call>" in reply.content


def test_a_call_cut_off_is_reported_incomplete() -> None:
    text = "Hmm.\n</think>\n\n" + QWEN_CALL[:60]
    reply, _ = ss.stream(_request(QWEN), _tokenizer(QWEN), _chunks(text, (4,)))
    assert reply.calls and reply.incomplete == {0}
    assert reply.call_list() == [(c.name, json.loads(c.arguments)) for c in _expected(QWEN, text).tool_calls]


def test_required_and_named_calls_get_a_grammar_sglangs_xgrammar_backend_compiles_and_accepts() -> None:
    from sglang.srt.constrained.xgrammar_backend import XGrammarGrammarBackend
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    tokenizer = _tokenizer(QWEN)
    backend = XGrammarGrammarBackend(tokenizer, vocab_size=len(tokenizer))
    for choice in ("required", ss.named("get_weather")):
        request = _request(QWEN, tool_choice=choice)
        parser = FunctionCallParser(request.tools, "autoparser", tokenizer=tokenizer)
        constraint = parser.get_structure_constraint(request.tool_choice, parallel_tool_calls=True)
        assert constraint is not None and constraint[0] == "structural_tag"
        key = request.to_sampling_params([], {}, tool_call_constraint=constraint)["structural_tag"]
        grammar = backend.dispatch_structural_tag(key)
        assert type(grammar).__name__ == "XGrammarGrammar", grammar
        for token in tokenizer.encode(QWEN_CALL, add_special_tokens=False):
            assert grammar.matcher.accept_token(token), tokenizer.decode([token])
        assert grammar.matcher.is_terminated() or grammar.matcher.accept_token(tokenizer.eos_token_id or 0) is not None
        reply = ss.complete(request, tokenizer, "Hmm.\n</think>\n\n" + QWEN_CALL)  # read in the model's own format
        assert reply.call_list() == [("get_weather", {"city": "Paris"})]


def test_strict_tools_under_auto_get_autoparsers_structural_tag() -> None:
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from xgrammar import StructuralTag

    tools = [{**t, "function": {**t["function"], "strict": True}} for t in request_tools(QWEN) or []]
    request = _request(QWEN, tool_choice="auto")
    request.tools = ss.request_for(conversation(QWEN), tools).tools
    parser = FunctionCallParser(request.tools, "autoparser", tokenizer=_tokenizer(QWEN))
    constraint = parser.get_structure_constraint("auto", parallel_tool_calls=True)
    assert constraint is not None and constraint[0] == "structural_tag"
    params = ChatTemplate.load(QWEN).params_for_prompt("", tools=tools, reasoning_format="none")
    assert params.structural_tag is not None
    assert constraint[1] == StructuralTag.model_validate(params.structural_tag)  # the tag autoparser wrote
