"""Calls to tools the request does not declare: calls with a warning by default, content on request.

For every tool-calling template, the call text is the template's own rendering of a call to ``launch_rocket``
while the request declares only ``get_weather``. By default the parse returns that call, its arguments read
without a schema, with a warning naming the tool; ``undeclared_tools="content"`` keeps the text as content, with a
warning. Either way the stream ends equal to the parse, and the grammar (constrained decoding) still allows only
the declared tools. Names that share a prefix with a declared one are reported only once complete.

Left out: the LFM2 family, MiniCPM3 and Gemma 3n (Python-call syntax, parsed by the pythonic work of the same
issue), MiroThinker and MiniMax-M3 (dedicated formats without a parser yet).
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates, cli
from autoparser.analysis.formats import GENERIC
from autoparser.analysis.model import ToolFormatMode

from ..robustness.promises import char_chunks, check_stream, random_chunks
from ..support.grammar_check import all_accept, all_reject
from ..support.helpers import function_tool, rendered_call
from ..support.sample import sampled

USER = [{"role": "user", "content": "What is the weather?"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DECLARED = [function_tool("get_weather", SCHEMA)]
ELSEWHERE = {
    "LFM2-8B-A1B",
    "LFM2.5-Instruct",
    "hfjs-LiquidAI-LFM2.5-VL-450M",
    "openbmb-MiniCPM3-4B",
    "google-ai-edge-LiteRT-LM-Gemma3n",
    "MiroThinker",
    "MiniMax-M3",
}


@functools.cache
def _undeclared_call(name: str) -> str | None:
    """The template's own rendering of a call to ``launch_rocket``, or None (no tool calls, or left out above)."""
    tmpl = ChatTemplate.load(name)
    analysis = tmpl.analysis
    if name in ELSEWHERE or (analysis.tools.format.mode is ToolFormatMode.NONE and analysis.format == GENERIC):
        return None
    return rendered_call(tmpl, USER, [function_tool("launch_rocket", SCHEMA)], "launch_rocket", {"city": "Zanzibar"})


def _templates(names: Iterable[str]) -> list[Any]:
    return [pytest.param(name, text, id=name) for name in names if (text := _undeclared_call(name)) is not None]


CASES = _templates(sampled())  # the per-template cases: the sample's templates (tests/support/sample.py)


def _chat(name: str, **kwargs: Any) -> ChatParams:
    return ChatTemplate.load(name).apply(
        USER,
        tools=DECLARED,
        reasoning_format="auto",
        **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs},
    )


def test_every_tool_format_is_covered() -> None:
    names = {case.values[0] for case in _templates(bundled_templates())}
    assert len(names) >= 40
    assert {"openai-gpt-oss-120b", "moonshotai-Kimi-K2", "deepseek-ai-DeepSeek-V4", "google-gemma-4-31B-it"} <= names
    assert {"meetkai-functionary-medium-v3.2", "Qwen3-Coder", "meta-llama-Llama-3.1-8B-Instruct"} <= names


@pytest.mark.parametrize(("name", "text"), CASES)
def test_an_undeclared_call_is_a_call_with_a_warning(name: str, text: str) -> None:
    params = _chat(name)
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("launch_rocket", {"city": "Zanzibar"})]
    assert [w.message for w in message.warnings] == ["tool 'launch_rocket' is not declared in the request"]
    for pieces in (char_chunks(text), random_chunks(text, 3)):
        assert not check_stream(params, pieces, message)


@pytest.mark.parametrize(("name", "text"), CASES)
def test_undeclared_tools_content_keeps_the_text(name: str, text: str) -> None:
    params = _chat(name, undeclared_tools="content")
    message = params.parse(text)
    assert not message.tool_calls
    assert "launch_rocket" in message.content and "Zanzibar" in message.content
    assert message.warnings
    for pieces in (char_chunks(text), random_chunks(text, 5)):
        assert not check_stream(params, pieces, message)


@pytest.mark.parametrize(("name", "text"), CASES)
def test_a_declared_call_still_has_no_warning(name: str, text: str) -> None:
    tmpl = ChatTemplate.load(name)
    declared = rendered_call(tmpl, USER, DECLARED, "get_weather", {"city": "Oslo"})
    assert declared is not None
    message = _chat(name).parse(declared)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert not message.warnings


@pytest.mark.parametrize(
    "name", ["Qwen3-Coder", "meta-llama-Llama-3.1-8B-Instruct", "deepseek-ai-DeepSeek-V4", "openai-gpt-oss-120b"]
)
def test_the_grammar_allows_only_declared_tools(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    params = tmpl.apply(USER, tools=DECLARED, tool_choice="required", enable_thinking=True, parallel_tool_calls=False)
    undeclared = rendered_call(tmpl, USER, [function_tool("launch_rocket", SCHEMA)], "launch_rocket", {"city": "X"})
    declared = rendered_call(tmpl, USER, DECLARED, "get_weather", {"city": "X"})
    assert undeclared is not None and declared is not None
    assert all_accept(params, declared)
    assert all_reject(params, undeclared)


# --- names that share a prefix with a declared name -----------------------------------------------------------------

PREFIXED = [
    ("Qwen3-Coder", "<tool_call>\n<function={}>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"),
    ("GLM-4.7-Flash", "</think><tool_call>{}<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>"),
    (
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
        '<tool_call>\n{{"name": "{}", "arguments": {{"city": "Oslo"}}}}\n</tool_call>',
    ),
    ("mistralai-Ministral-3-14B-Reasoning-2512", '[TOOL_CALLS]{}[ARGS]{{"city": "Oslo"}}'),
    (
        "moonshotai-Kimi-K2",
        '<|tool_call_begin|>functions.{}:0<|tool_call_argument_begin|>{{"city": "Oslo"}}<|tool_call_end|>',
    ),
    ("google-gemma-4-31B-it", '<|tool_call>call:{}{{city:<|"|>Oslo<|"|>}}<tool_call|>'),
    (
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=functions.{} <|constrain|>json<|message|>{{"city": "Oslo"}}<|call|>',
    ),
    ("meetkai-functionary-medium-v3.2", '{}\n{{"city": "Oslo"}}'),
]


@pytest.mark.parametrize(("name", "pattern"), PREFIXED, ids=[n for n, _ in PREFIXED])
@pytest.mark.parametrize(("declared", "written"), [("get", "get_weather"), ("get_weather_now", "get_weather")])
def test_a_name_is_sent_once_it_cannot_change(name: str, pattern: str, declared: str, written: str) -> None:
    """``get`` declared, ``get_weather`` written (and the other way round): the stream never sends the declared
    name, or a half-written one."""
    params = ChatTemplate.load(name).apply(
        USER,
        tools=[function_tool(declared, SCHEMA)],
        reasoning_format="auto",
        enable_thinking=True,
        parallel_tool_calls=False,
    )
    text = pattern.format(written)
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [(written, {"city": "Oslo"})]
    stream = params.stream()
    names = []
    for char in text:
        names += [part.name for delta in stream.feed(char) for part in delta.tool_calls if part.name is not None]
    names += [part.name for delta in stream.finish() for part in delta.tool_calls if part.name is not None]
    assert names == [written]


# --- bare JSON objects ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.3-70B-Instruct"])
def test_without_call_markers_only_the_call_shape_is_a_call(name: str) -> None:
    """Llama 3.x writes calls as bare objects, so an undeclared call must be exactly ``{"name", "parameters"}``:
    any other JSON object in the answer (one with a "name" member too) stays text."""
    params = _chat(name)
    record = 'The record is {"name": "Ada", "born": 1815}.'
    assert params.parse(record).content == record and not params.parse(record).tool_calls
    call = '{"name": "launch_rocket", "parameters": {"city": "Zanzibar"}}'
    message = params.parse(call)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("launch_rocket", {"city": "Zanzibar"})]
    assert message.warnings
    for pieces in (char_chunks(record), char_chunks(call)):
        assert not check_stream(params, pieces)


def test_a_cut_off_undeclared_call() -> None:
    params = _chat("Qwen3-Coder")
    text = "<tool_call>\n<function=launch_rocket>\n<parameter=city>\nZanzi"
    message = params.parse(text)
    assert [c.name for c in message.tool_calls] == ["launch_rocket"]
    assert message.tool_calls[0].arguments.startswith('{"city": "Zanzi')
    assert len(message.warnings) == 2  # undeclared, and cut off
    assert not check_stream(params, char_chunks(text), message)
    content = _chat("Qwen3-Coder", undeclared_tools="content").parse(text)
    assert not content.tool_calls and "Zanzi" in content.content and content.warnings


def test_the_option_is_checked() -> None:
    with pytest.raises(ValueError, match="undeclared_tools"):
        _chat("Qwen3-Coder", undeclared_tools="drop")


def test_the_command_line_has_the_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(DECLARED), encoding="utf-8")
    text = "<tool_call>\n<function=launch_rocket>\n<parameter=city>\nZanzibar\n</parameter>\n</function>\n</tool_call>"
    for option, calls in (("call", 1), ("content", 0)):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert cli.main(["parse", "Qwen3-Coder", "--tools", str(tools), "--undeclared-tools", option]) == 0
        message = json.loads(capsys.readouterr().out)
        assert len(message.get("tool_calls") or []) == calls


@pytest.mark.parametrize("name", ["GLM-4.6", "Qwen3-Coder", "openai-gpt-oss-120b", "google-gemma-4-31B-it"])
def test_a_declared_name_cut_off_is_not_an_undeclared_one(name: str) -> None:
    """An output that ends inside a declared name (``get_wea``) has no call of a tool named ``get_wea``."""
    tmpl = ChatTemplate.load(name)
    text = rendered_call(tmpl, USER, DECLARED, "get_weather", {"city": "Oslo"})
    assert text is not None
    params = _chat(name)
    at = text.index("get_weather")
    for cut in range(at + 1, at + len("get_weather")):
        message = params.parse(text[:cut])
        assert all(c.name == "get_weather" for c in message.tool_calls), (text[:cut], message.tool_calls)
        assert not check_stream(params, char_chunks(text[:cut]), message)
