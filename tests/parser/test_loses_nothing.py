"""Bad output loses nothing: for every tool-calling template, malformed outputs keep every piece of text.

The model's own call syntax is obtained from the template itself (render a conversation ending in a tool call,
minus the prompt and the end-of-turn text). Then four kinds of damage: text after the call, a call cut off, a
call to a tool the request does not offer, and broken argument syntax. Each parse must keep every payload word
in content, reasoning or arguments, must not raise, and must carry a warning; a call that was already committed
when the damage came stays a call (as the stream showed it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.analysis.model import ToolFormatMode

from ..support.helpers import rendered_call, same_message, stream_char_by_char
from ..support.sample import sampled

USER = [{"role": "user", "content": "What is the weather?"}]
PAYLOAD = "Zanzibar"


def _tool(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return {"type": "function", "function": {"name": name, "description": "Weather lookup", "parameters": schema}}


def _call_text(tmpl: ChatTemplate, name: str) -> str | None:
    """What the model writes for a call of ``name`` with city=PAYLOAD, per the template (None if unknown)."""
    return rendered_call(tmpl, USER, [_tool(name)], name, {"city": PAYLOAD})


def _tool_templates(names: Iterable[str]) -> list[str]:
    found = []
    for name in names:
        analysis = ChatTemplate.load(name).analysis
        if analysis.tools.format.mode is not ToolFormatMode.NONE or analysis.format != "generic":
            found.append(name)
    return found


def _cases(names: Iterable[str]) -> list[Any]:
    cases = []
    for name in _tool_templates(names):
        text = _call_text(ChatTemplate.load(name), "get_weather")
        if text is not None:
            cases.append(pytest.param(name, text, id=name))
    return cases


CASES = _cases(sampled())  # the per-template cases: the sample's templates (tests/support/sample.py)


def _chat(name: str, undeclared_tools: str = "call") -> ChatParams:
    return ChatTemplate.load(name).apply(
        USER, tools=[_tool("get_weather")], reasoning_format="auto", undeclared_tools=undeclared_tools
    )


def _kept(message: Any) -> str:
    return " ".join([message.content, message.reasoning_content, *(c.name + c.arguments for c in message.tool_calls)])


def test_enough_templates_are_covered() -> None:
    assert len(_cases(bundled_templates())) >= 25


@pytest.mark.parametrize(("name", "call"), CASES)
def test_well_formed_call_parses(name: str, call: str) -> None:
    message = _chat(name).parse(call)
    assert [c.name for c in message.tool_calls] == ["get_weather"], message
    assert PAYLOAD in message.tool_calls[0].arguments
    assert not message.warnings, message.warnings


@pytest.mark.parametrize(("name", "call"), CASES)
def test_text_after_the_call_is_content_with_a_warning(name: str, call: str) -> None:
    message = _chat(name).parse(call + "\nAnd one more thing: Timbuktu.")
    assert "Timbuktu" in message.content
    assert PAYLOAD in _kept(message)
    assert message.warnings


@pytest.mark.parametrize(("name", "call"), CASES)
def test_truncated_call_keeps_its_text(name: str, call: str) -> None:
    cut = call[: call.index(PAYLOAD) + len(PAYLOAD)]
    message = _chat(name).parse(cut)
    assert PAYLOAD in _kept(message)
    assert message.warnings or message.tool_calls, message  # a call cut after its value may still be whole


@pytest.mark.parametrize(("name", "call"), CASES)
def test_unknown_tool_becomes_content_with_a_warning(name: str, call: str) -> None:
    # (undeclared_tools="content"; the default, a call with a warning, is tested in test_undeclared_tools.py)
    tmpl = ChatTemplate.load(name)
    other = _call_text(tmpl, "launch_rocket")
    if other is None:
        pytest.skip("the template does not render a call to another tool")  # pragma: no cover
    message = _chat(name, "content").parse(other)
    assert not message.tool_calls
    assert "launch_rocket" in message.content and PAYLOAD in message.content
    assert message.warnings


@pytest.mark.parametrize(("name", "call"), CASES)
def test_broken_argument_syntax_keeps_the_text(name: str, call: str) -> None:
    # Damage the syntax right after the value: a JSON string that closes into stray braces, a tagged value whose
    # end tag is misspelt (MiniMax-M3 names the element after the argument), a Gemma string that never closes, a
    # bare pythonic value whose call never closes, a headed block's closer misspelt (Kimi-K3's <|close|>argument).
    damages = [
        (re.escape(PAYLOAD) + '"', PAYLOAD + "}}{"),
        (r"</[^>]*(?:param|arg_value|city)[^>]*>", "</broken>"),
        (re.escape(PAYLOAD) + r"(<\|close\|>)argument", PAYLOAD + r"\1broken"),
        (re.escape(PAYLOAD + '<|"|>'), PAYLOAD),
        (re.escape(PAYLOAD) + r"\)", PAYLOAD + "("),
    ]
    broken = call
    for pattern, replacement in damages:
        broken = re.sub(pattern, replacement, call, count=1)
        if broken != call:
            break
    assert broken != call, "no damage applies to this call syntax"
    params = _chat(name)
    message = params.parse(broken)
    assert PAYLOAD in _kept(message)
    assert message.warnings, message
    # A call committed before the damage stays (a stream had announced it), as far as it got: never "repaired".
    streamed = stream_char_by_char(params, broken)
    assert same_message(streamed, message), (streamed, message)
