"""The short path for regular replies (parser/regular.py) reads exactly what the engine reads, or leaves the reply
to it.

On every bundled template (the seeded sample outside CI) and several request shapes (the check's request with tools
and reasoning extracted, thinking on and off, reasoning kept inline, no tools), the template's own outputs, the same
outputs with their text made plain (no markup character, so that the short path takes them), synthetic replies
built from the template's reasoning markers and plain answers with each markup character slipped in are parsed
whole and cut around every marker and at a seeded tenth of the other positions: wherever the short path answers,
its message equals the engine's, field by field, warnings included. The short path must also answer (it is no use
otherwise).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.errors import TemplateError
from autoparser.message import ChatMessage
from autoparser.parser.assemble import GeneratedParser
from autoparser.parser.markers import core
from autoparser.parser.regular import RegularReply, signal_char
from autoparser.reading.streaming import parse_output

from ..support.outputs import CONTENT, REASONING, conversation, outputs, request_tools
from ..support.sample import near_markers, sampled

PLAIN_CONTENT = "Here is the forecast for Paris: mild, 21 degrees.\nBring an umbrella, s'il vous pla\u00eet."
PLAIN_REASONING = "First, the user asks about the weather in Paris.\nThe lookup tool needs a city; 2 is less than 3."


def _shapes(template: str) -> Iterator[tuple[str, ChatParams]]:
    """The request shapes a template renders (name, params)."""
    tmpl = ChatTemplate.load(template)
    messages = conversation(template)
    tools = request_tools(template)
    shapes = {
        "tools": {"tools": tools, "reasoning_format": "auto"},
        "thinking": {"tools": tools, "reasoning_format": "auto", "enable_thinking": True},
        "no thinking": {"tools": tools, "reasoning_format": "auto", "enable_thinking": False},
        "inline reasoning": {"tools": tools, "reasoning_format": "none", "enable_thinking": True},
        "no tools": {"tools": None, "reasoning_format": "auto"},
    }
    for name, kwargs in shapes.items():
        try:
            yield name, tmpl.apply(messages, **kwargs)
        except TemplateError:
            continue


def _replies(template: str, params: ChatParams) -> list[str]:
    """The template's outputs, plain variants of them, synthetic reasoning blocks and answers with markup."""
    texts = [o.text for o in outputs(template)]
    texts += [t.replace(CONTENT, PLAIN_CONTENT).replace(REASONING, PLAIN_REASONING) for t in texts]
    reasoning = ChatTemplate.load(template).analysis.reasoning
    start, end = core(reasoning.start), core(reasoning.end)
    texts += [PLAIN_CONTENT, f"  {PLAIN_CONTENT}\n\n", "\x0b" + PLAIN_CONTENT + "\x0c", "", " \n", "ok"]
    texts += [f'{PLAIN_CONTENT} (really) "so" {{x}}', f"{PLAIN_CONTENT}\n{PLAIN_CONTENT}"]
    if end:
        for opener in (start, ""):
            texts += [
                f"{opener}\n{PLAIN_REASONING}\n{end}\n\n{PLAIN_CONTENT}",
                f"{opener}{PLAIN_REASONING}{end}{PLAIN_CONTENT}",
                f" {opener}\x0b{PLAIN_REASONING} \n{end}\x0c\n",
                f"{opener}{end}",
                f"{opener}\n{PLAIN_REASONING}\n{end}\n{end}\n{PLAIN_CONTENT}",
                f"{opener}{opener}{PLAIN_REASONING}{end}{PLAIN_CONTENT}",
            ]
    # each markup character the short path watches for, slipped into a plain answer and a plain block
    generated = params._generated
    leftovers = generated.leftovers
    literals = {*leftovers.calls, *leftovers.words, *leftovers.reasoning, *leftovers.tool_names}
    for literal in sorted({*(generated.markup or ()), *literals}):
        if literal:
            texts.append(f"{PLAIN_CONTENT[:20]}{literal}{PLAIN_CONTENT[20:]}")
            texts.append(f"{PLAIN_CONTENT[:20]}{signal_char(literal)}{PLAIN_CONTENT[20:]}")
            # (where the literal itself is the signal, its pieces are plain text: `to=functions` without its dot)
            texts.append(f"{PLAIN_CONTENT[:20]}{literal[:-1]} {literal[1:]}{PLAIN_CONTENT[20:]}")
            if end:
                texts.append(f"{start}{PLAIN_REASONING}{literal}{end}{PLAIN_CONTENT}")
    for name in generated.leftovers.tool_names:  # in call position or not, in the answer or the reasoning
        for shown in (f"{name}(city='Paris')", f'{{"name": "{name}", "arguments": {{}}}}', f"{name} (", f"{name}"):
            texts.append(f"{PLAIN_CONTENT} {shown} (ok)")
            if end:
                texts.append(f"{start}{PLAIN_REASONING} {shown}{end}{PLAIN_CONTENT} (ok)")
    return list(dict.fromkeys(texts))


def _cuts(text: str, markers: list[str]) -> list[int]:
    """Where to cut ``text``: whole, around every marker (where the two readings could part), and a seeded tenth of
    the other positions (every position in CI would cost a minute for nothing the boundaries do not show)."""
    rng = random.Random(len(text))
    keep = near_markers(text, markers) | {0, len(text)}
    return [cut for cut in range(len(text) + 1) if cut in keep or rng.randrange(10) == 0]


def _fields(message: ChatMessage) -> tuple[Any, ...]:
    """Everything a message says; a generated id by its shape only (two parses never generate the same)."""
    calls = [
        (
            c.name,
            c.arguments,
            c.status,
            c.id_generated,
            (len(c.id), c.id.startswith("call_"), c.id[5:].isalnum()) if c.id_generated else c.id,
        )
        for c in message.tool_calls
    ]
    return message.role, message.content, message.reasoning_content, calls, message.warnings


def _engine(generated: GeneratedParser) -> GeneratedParser:
    return dataclasses.replace(generated, regular=None)


TEMPLATES = sampled()


def _short_paths(template: str) -> list[tuple[str, ChatParams, GeneratedParser, RegularReply, GeneratedParser]]:
    """(shape, params, its generated parser, its short path, the same parser without it) for each request shape of
    ``template`` whose parser has a short path."""
    found = []
    for shape, params in _shapes(template):
        generated = params._generated
        if generated.regular is not None:
            found.append((shape, params, generated, generated.regular, _engine(generated)))
    return found


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_short_path_reads_what_the_engine_reads(template: str) -> None:
    answered = 0
    paths = _short_paths(template)
    for shape, params, generated, regular, engine in paths:
        near = [core(m) for m in (*(generated.markup or ()), regular.start, regular.end) if core(m)]
        for text in _replies(template, params):
            for cut in _cuts(text, near):
                piece = text[:cut]
                fast = regular.read(generated.prefill, piece)
                if fast is None:
                    continue
                answered += 1
                slow = parse_output(engine, piece)
                assert _fields(fast) == _fields(slow), f"{shape}: {piece!r}"
                assert _fields(parse_output(generated, piece)) == _fields(fast)
    if paths:
        assert answered, "the short path never answered"


# What damage inserts: what a model writes between and inside calls (the engine's spaces too), markup and literals.
_DAMAGE = [*" \n\t\x0b,;:{}[]()\"'\\=<>|_/aZ0.9é", "<|python_tag|>", "\\u00e9", "True", "None", "null", "1e5"]


def _damaged(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        at, kind = rng.randrange(len(text) + 1), rng.random()
        if kind < 0.4:
            text = text[:at] + rng.choice(_DAMAGE) + text[at:]
        elif kind < 0.7:
            text = text[:at] + text[at + 1 :]
        else:
            source = rng.randrange(len(text) + 1)
            text = text[:at] + text[source : source + rng.randint(1, 8)] + text[at:]
    return text


@pytest.mark.parametrize("template", TEMPLATES)
def test_damaged_replies_read_as_the_engine_reads_them(template: str) -> None:
    """Wherever the short path still answers a damaged reply (seeded random damage: :func:`_damaged`), it answers as
    the engine does."""
    rng = random.Random(f"damage:{template}")
    for _shape, params, generated, regular, engine in _short_paths(template):
        for text in _replies(template, params):
            for _ in range(12):
                piece = _damaged(text, rng)
                fast = regular.read(generated.prefill, piece)
                if fast is not None:
                    assert _fields(fast) == _fields(parse_output(engine, piece)), repr(piece)


def test_the_short_path_answers_plain_replies_of_the_common_families() -> None:
    """Plain answers and reasoning blocks of the families whose replies it is for take it (no markup in them)."""
    families = {
        "Qwen-Qwen2.5-7B-Instruct": {},
        "meta-llama-Llama-3.1-8B-Instruct": {},
        "Qwen3-Coder": {},
        "Qwen-Qwen3-0.6B": {"enable_thinking": True},
        "llama-cpp-deepseek-r1": {},
    }
    for template, kwargs in families.items():
        tmpl = ChatTemplate.load(template)
        params = tmpl.apply([{"role": "user", "content": "hi"}], tools=request_tools(template), **kwargs)
        generated = params._generated
        assert generated.regular is not None, template
        assert generated.regular.read("", PLAIN_CONTENT) is not None or generated.prefill, template
        reasoning = tmpl.analysis.reasoning
        if params.enable_thinking and core(reasoning.end):
            start = "" if generated.prefill else core(reasoning.start)
            reply = f"{start}\n{PLAIN_REASONING}\n{core(reasoning.end)}\n\n{PLAIN_CONTENT}"
            message = generated.regular.read(generated.prefill, reply)
            assert message is not None, template
            assert (message.reasoning_content, message.content) == (PLAIN_REASONING, PLAIN_CONTENT)


def test_dedicated_formats_and_schemas_keep_the_engine() -> None:
    assert (
        ChatTemplate.load("openai-gpt-oss-120b").apply([{"role": "user", "content": "hi"}])._generated.regular is None
    )
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    params = ChatTemplate.load("Qwen-Qwen2.5-7B-Instruct").apply(
        [{"role": "user", "content": "hi"}], json_schema=schema
    )
    assert params._generated.regular is None


def test_a_block_the_prompt_opens_is_read_without_joining_the_prompt() -> None:
    """DeepSeek-R1's prompt ends with `<think>\\n`: the reply is the block's inside, read as it is (the prefill is
    not joined to it), as the engine reads the two joined; a prompt that opens and closes the block opens nothing."""
    tmpl = ChatTemplate.load("llama-cpp-deepseek-r1")
    generated = tmpl.apply([{"role": "user", "content": "hi"}])._generated
    regular = generated.regular
    assert regular is not None and generated.prefill and regular.opened == generated.prefill
    for reply in (f"{PLAIN_REASONING}\n</think>\n\n{PLAIN_CONTENT}", f"\n\n{PLAIN_REASONING}</think>", "</think>ok"):
        message = regular.read(generated.prefill, reply)
        assert message is not None, reply
        assert _fields(message) == _fields(parse_output(_engine(generated), reply))
    closed = ChatTemplate.load("Qwen-Qwen3-0.6B").apply([{"role": "user", "content": "hi"}], enable_thinking=False)
    assert closed._generated.regular is not None and closed._generated.regular.opened is None
