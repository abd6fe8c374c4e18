"""Calls after a closed empty reasoning block parse exactly as without it (issue 24, 2c).

EXAONE 4.0 writes ``<think>\\n\\n</think>\\n\\n`` before every history answer and into the generation prompt when
thinking is off (``<think>\\n`` when it is on); its calls are plain ``<tool_call>{json}</tool_call>``. The block's
closer must not be taken for an answer wrapper, and calls after it (or after the model's own ``</think>``) must be
calls. Synthetic templates spell the block and the call markers otherwise; each is compared with the same template
without any block.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.analysis.model import ContentAnalysis, ContentMode, ReasoningMode
from autoparser.build import build_parser
from autoparser.parser import tags
from autoparser.parser.request import ParseRequest, normalize_tools

from ..robustness.promises import char_chunks, check_stream, random_chunks
from ..support.helpers import function_tool

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = function_tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = function_tool("get_time", {"type": "object", "properties": {"zone": {"type": "string"}}})
TOOLS = [WEATHER, TIME]

# An answer or calls start with BLOCK (a turn without either renders nothing, as EXAONE 4's); the generation prompt
# opens the block (thinking on) or writes it closed.
_TEMPLATE = (
    "{%- if tools -%}<|system|>{% for t in tools %}{{ t | tojson }}{% endfor %}<|eot|>{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}<|bot|>{% if m.content or m.tool_calls %}BLOCK{% endif %}{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] -%}"
    'COPEN{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}CCLOSE'
    "{%- endfor -%}<|eot|>"
    "{%- else -%}<|{{ m.role }}|>{{ m.content }}<|eot|>{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|bot|>"
    "{%- if enable_thinking is defined and enable_thinking -%}OPENER{%- else -%}BLOCK{%- endif -%}"
    "{%- endif -%}"
)


def _literal(text: str) -> str:
    return "{{ " + json.dumps(text) + " }}" if text else ""


def synthetic(opener: str, closer: str, call_open: str, call_close: str) -> ChatTemplate:
    """The EXAONE 4 shape with these markers (``opener=""``: no reasoning block at all)."""
    block = f"{opener}\n\n{closer}\n\n" if opener else ""
    source = (
        _TEMPLATE.replace("BLOCK", _literal(block))
        .replace("OPENER", _literal(f"{opener}\n" if opener else ""))
        .replace("COPEN", call_open)
        .replace("CCLOSE", call_close)
    )
    return ChatTemplate(source, name=f"synthetic {opener or 'no block'} {call_open}")


BLOCKS = [("<think>", "</think>"), ("<|begin_of_thought|>", "<|end_of_thought|>"), ("[THINK]", "[/THINK]"),
          ("<x:reason>", "</x:reason>")]  # fmt: skip
CALLS = [("<tool_call>", "</tool_call>"), ("<fn>", "</fn>")]


def _call(open_: str, close: str, name: str, arguments: dict[str, str]) -> str:
    return f"{open_}{json.dumps({'name': name, 'arguments': arguments})}{close}"


def _replies(call_open: str, call_close: str) -> list[tuple[str, str, list[tuple[str, dict[str, str]]]]]:
    """(reply, content, calls) written as the template writes a turn."""
    one = [("get_weather", {"city": "Paris"})]
    two = [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})]
    return [
        ("".join(_call(call_open, call_close, n, a) for n, a in one), "", one),
        ("".join(_call(call_open, call_close, n, a) for n, a in two), "", two),
        ("Let me check." + _call(call_open, call_close, *one[0]), "Let me check.", one),
    ]


def _check(params: ChatParams, reply: str, content: str, calls: list[tuple[str, dict[str, str]]]) -> ChatMessage:
    message = params.parse(reply)
    assert message.content == content
    assert message.reasoning_content == ""
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == calls
    assert not message.warnings
    for pieces in (char_chunks(reply), random_chunks(reply, seed=7)):
        assert not check_stream(params, pieces, message)
    return message


def _shape(message: ChatMessage) -> tuple[object, ...]:
    """A message without its generated call ids."""
    calls = [(c.name, c.arguments, c.status) for c in message.tool_calls]
    return message.content, message.reasoning_content, calls, message.warnings


@pytest.mark.parametrize(("call_open", "call_close"), CALLS)
@pytest.mark.parametrize(("opener", "closer"), BLOCKS)
def test_calls_after_a_closed_empty_block(opener: str, closer: str, call_open: str, call_close: str) -> None:
    tmpl = synthetic(opener, closer, call_open, call_close)
    analysis = tmpl.analysis
    assert analysis.reasoning.mode is ReasoningMode.FORCED_CLOSED
    assert (analysis.reasoning.start.strip(), analysis.reasoning.end.strip()) == (opener, closer)
    assert analysis.content.mode is ContentMode.PLAIN  # the block's closer is no answer wrapper
    off = tmpl.apply(USER, tools=TOOLS, enable_thinking=False)
    assert off.generation_prompt.endswith(f"{closer}\n\n")
    on = tmpl.apply(USER, tools=TOOLS, enable_thinking=True)
    plain = synthetic("", "", call_open, call_close).apply(USER, tools=TOOLS)
    for reply, content, calls in _replies(call_open, call_close):
        expected = _check(plain, reply, content, calls)
        after_block = _check(off, reply, content, calls)
        assert _shape(after_block) == _shape(expected)
        # Thinking on: the model closes the block the prompt opened, then calls.
        _check(on, f"\n{closer}\n\n{reply}", content, calls)


def test_exaone4() -> None:
    tmpl = ChatTemplate.load("axolotl-exaone4")
    assert tmpl.analysis.content.mode is ContentMode.PLAIN
    reply = _call("<tool_call>", "</tool_call>", "get_weather", {"city": "Paris"})
    for thinking in (False, None):
        params = tmpl.apply(USER, tools=TOOLS, enable_thinking=thinking)
        assert params.generation_prompt.endswith("<think>\n\n</think>\n\n")
        _check(params, reply, "", [("get_weather", {"city": "Paris"})])
    params = tmpl.apply(USER, tools=TOOLS, enable_thinking=True)
    _check(params, "\n</think>\n\n" + reply, "", [("get_weather", {"city": "Paris"})])


def test_an_answer_wrapper_without_an_end_marker_leaves_calls_parsed() -> None:
    """An answer opener with no closer (``<|START_RESPONSE|>``, or a block's closer read as one) runs to a call marker:
    building that parser once failed (an empty delimiter), and the request silently lost its calls."""
    tmpl = ChatTemplate.load("axolotl-exaone4")
    analysis = dataclasses.replace(
        tmpl.analysis, content=ContentAnalysis(ContentMode.ALWAYS_WRAPPED, "<|START_RESPONSE|>", "")
    )
    request = ParseRequest(tools=normalize_tools(TOOLS), reasoning_format="auto")
    parser = build_parser(analysis, request).parser
    reply = "<|START_RESPONSE|>Let me check." + _call("<tool_call>", "</tool_call>", "get_weather", {"city": "Paris"})
    tree = parser.parse(reply)
    assert tree.success and tree.end == len(reply)
    assert tree.tag_text(tags.CONTENT) == "Let me check."
    assert tree.tag_text(tags.TOOL_NAME) == "get_weather"
