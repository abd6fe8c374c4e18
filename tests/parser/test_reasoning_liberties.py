"""Liberties models take with reasoning markers, on real templates (docs/parsing.md, "Reasoning liberties").

1. A tool call ends an *unterminated* reasoning block (the prompt or the model opened it and the model went straight
   to the call); a call quoted inside a block that is closed later stays reasoning. A stream holds the marker and
   what follows until the end marker or the end of the output decides.
2. An end marker without its start marker, where the request has the model think and the template leaves opening
   the block to the model: the text before it is reasoning, with a warning.
3. A redundant opener after a prompt that already opened the block; a block the model writes after a prompt that
   opened and closed an empty one.
4. The end marker as the first thing in the reply: an empty block, not content.
5. A well-known ``<think>``/``<thinking>`` block at the start of the reply, from a template that renders no reasoning:
   reasoning (calls inside it are not calls); elsewhere it is text.

Every output is also streamed one character at a time, in random chunks and with every marker cut, and must end
equal to ``parse()`` (tests/robustness/promises.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.check.run import markers
from autoparser.message import apply_deltas

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.helpers import function_tool
from ..support.sample import near_markers, sweep

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = function_tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}})
PARIS = {"city": "Paris"}
UNCLOSED = "was not closed"  # in the warning of liberty 1
UNOPENED = "never opened"  # in the warning of liberty 2


@dataclass(frozen=True)
class Format:
    """A template and one call ``get_weather(city="Paris")`` as its model writes it."""

    template: str
    call: str
    marker: str  # the marker the call starts with
    opener: str = ""  # what the model writes to open the block when the prompt does not
    # Generic formats read a call marker inside the block by what follows (the end marker later: reasoning) and
    # warn when a call ends the block; Kimi's format ends reasoning at every call marker, as its model calls tools
    # from inside the block (docs/formats.md), without a warning.
    generic: bool = True

    def __str__(self) -> str:
        return self.template


QWEN_XML = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
MINIMAX = (
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n'
    "</minimax:tool_call>"
)
HERMES_JSON = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
R1 = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    '{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
GLM = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)

# The prompt opens <think> with thinking on (and for MiniMax-M2 and Step-3.5 with thinking off too).
QWEN35 = Format("Qwen3.5-4B", QWEN_XML, "<tool_call>")
NEMOTRON = Format("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", QWEN_XML, "<tool_call>")
STEP = Format("stepfun-ai-Step-3.5-Flash", QWEN_XML, "<tool_call>")
MINIMAX_M2 = Format("MiniMax-M2", MINIMAX, "<minimax:tool_call>")
R1_QWEN = Format("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", R1, "<｜tool▁calls▁begin｜>")
# The model opens the block itself.
QWEN3 = Format("Qwen-Qwen3-0.6B", HERMES_JSON, "<tool_call>", opener="<think>\n")
GLM46 = Format("GLM-4.6", GLM, "<tool_call>", opener="<think>")
KIMI_THINKING = Format("Kimi-K2-Thinking", KIMI, "<|tool_calls_section_begin|>", opener="<think>", generic=False)

# (format, enable_thinking) pairs where the output starts inside an open block (written by the prompt or the model).
OPEN_BLOCK = [
    (QWEN35, True),
    (NEMOTRON, True),
    (STEP, True),
    (STEP, False),
    (MINIMAX_M2, True),
    (MINIMAX_M2, False),
    (R1_QWEN, True),
    (QWEN3, True),
    (GLM46, True),
    (KIMI_THINKING, True),
]
GENERIC_OPEN_BLOCK = [(f, thinking) for f, thinking in OPEN_BLOCK if f.generic]


def _id(value: Any) -> str:
    if isinstance(value, bool):
        return "think" if value else "nothink"
    return str(value)


def apply(template: str, thinking: bool = True, *, via_kwargs: bool = False, tools: bool = True) -> ChatParams:
    kwargs: dict[str, Any] = {"tools": [WEATHER] if tools else None, "reasoning_format": "auto"}
    if via_kwargs:  # how vLLM and SGLang requests carry the switch
        kwargs["chat_template_kwargs"] = {"enable_thinking": thinking}
    else:
        kwargs["enable_thinking"] = thinking
    return ChatTemplate.load(template).apply(USER, parallel_tool_calls=True, **kwargs)


def chunkings(text: str, markers: Sequence[str]) -> list[list[str]]:
    return [char_chunks(text), *(random_chunks(text, seed) for seed in range(3)), *marker_cut_chunkings(text, markers)]


def assert_streams(params: ChatParams, text: str, markers: Sequence[str] = ()) -> None:
    """Every chunking of ``text`` streams to exactly ``parse(text)`` (append-only deltas: nothing retracted)."""
    cuts = ["<think>", "</think>", *markers]
    failures = [str(f) for pieces in chunkings(text, cuts) for f in check_stream(params, pieces)]
    assert not failures, failures[:3]


def parse(params: ChatParams, text: str, words: Sequence[str] = ()) -> ChatMessage:
    message, failures = check_parse(params, text, words=words)
    assert message is not None and not failures, failures
    return message


def weather_calls(message: ChatMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


def warnings_with(message: ChatMessage, needle: str) -> list[tuple[int, str]]:
    return [(w.position, w.message) for w in message.warnings if needle in w.message]


def streamed_before_finish(params: ChatParams, text: str) -> ChatMessage:
    """What a stream fed ``text`` one character at a time has sent before ``finish()``."""
    stream = params.stream()
    deltas = [d for char in text for d in stream.feed(char)]
    return apply_deltas(deltas)


# --- 1. a call ends an unterminated block ---------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "thinking"), OPEN_BLOCK, ids=_id)
def test_call_ends_an_unterminated_block(fmt: Format, thinking: bool) -> None:
    params = apply(fmt.template, thinking)
    text = f"{fmt.opener}I need the weather in Paris.\n{fmt.call}"
    message = parse(params, text, words=["Paris", "weather"])
    assert message.reasoning_content == "I need the weather in Paris."
    assert message.content == ""
    assert weather_calls(message) == [("get_weather", PARIS)]
    expected = [(text.index(fmt.marker), 1)] if fmt.generic else []
    assert [(at, 1) for at, _ in warnings_with(message, UNCLOSED)] == expected
    assert len(message.warnings) == len(expected)
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(("fmt", "thinking"), OPEN_BLOCK, ids=_id)
def test_parallel_calls_end_an_unterminated_block(fmt: Format, thinking: bool) -> None:
    params = apply(fmt.template, thinking)
    second = fmt.call.replace("Paris", "Oslo")
    text = f"{fmt.opener}Two cities.\n{fmt.call}\n{second}"
    message = parse(params, text, words=["Paris", "Oslo", "cities"])
    assert message.reasoning_content == "Two cities."
    assert weather_calls(message) == [("get_weather", PARIS), ("get_weather", {"city": "Oslo"})]
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(("fmt", "thinking"), OPEN_BLOCK, ids=_id)
def test_straight_to_a_call_is_no_repair(fmt: Format, thinking: bool) -> None:
    """Nothing was written in the block before the call (MiniMax-M2 and Step-3.5 open it even with thinking off)."""
    params = apply(fmt.template, thinking)
    text = f"{fmt.opener}\n{fmt.call}"
    message = parse(params, text, words=["Paris"])
    assert (message.reasoning_content, message.content, message.warnings) == ("", "", ())
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(("fmt", "thinking"), GENERIC_OPEN_BLOCK, ids=_id)
def test_call_quoted_in_a_closed_block_stays_reasoning(fmt: Format, thinking: bool) -> None:
    params = apply(fmt.template, thinking)
    thought = f"The format would be {fmt.call} with Paris, but I know it: sunny."
    for close in ("</think>\n\n", "\n</think>\n", "</think>"):
        text = f"{fmt.opener}{thought}{close}It is sunny in Paris."
        message = parse(params, text, words=["sunny", "Paris"])
        assert (message.reasoning_content, message.content) == (thought, "It is sunny in Paris.")
        assert (message.tool_calls, message.warnings) == ((), ())
        assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(("fmt", "thinking"), GENERIC_OPEN_BLOCK, ids=_id)
def test_stream_holds_the_marker_until_decided(fmt: Format, thinking: bool) -> None:
    params = apply(fmt.template, thinking)
    head = f"{fmt.opener}Checking the weather.\n"
    # Reasoning before the marker streams at once; the marker and the call wait for the end of the output.
    sent = streamed_before_finish(params, head + fmt.call)
    assert (sent.reasoning_content, sent.content, sent.tool_calls) == ("Checking the weather.", "", ())
    # With the end marker, the same text is reasoning as soon as the end marker has arrived.
    sent = streamed_before_finish(params, head + fmt.call + "\n</think>")
    assert sent.reasoning_content == f"Checking the weather.\n{fmt.call}"
    assert sent.tool_calls == ()


@pytest.mark.parametrize(("fmt", "thinking"), GENERIC_OPEN_BLOCK, ids=_id)
def test_marker_that_starts_no_call_stays_reasoning(fmt: Format, thinking: bool) -> None:
    params = apply(fmt.template, thinking)
    stray = f"I will write {fmt.marker} and then the call."
    text = f"{fmt.opener}{stray}\n{fmt.call}"
    message = parse(params, text, words=["Paris"])
    assert message.reasoning_content == stray
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert_streams(params, text, [fmt.marker])
    # Without any call that parses, the unterminated block runs to the end of the output, as it always did.
    text = f"{fmt.opener}{stray} Or maybe not."
    message = parse(params, text)
    assert (message.reasoning_content, message.content, message.tool_calls) == (f"{stray} Or maybe not.", "", ())
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(("fmt", "thinking"), OPEN_BLOCK, ids=_id)
def test_truncated_unterminated_block(fmt: Format, thinking: bool) -> None:
    """Cut anywhere: never a crash, nothing lost, stream == parse; text not read as a call stays reasoning. Every cut
    in CI; elsewhere every cut within two characters of a marker of the template and a seeded tenth of the others."""
    params = apply(fmt.template, thinking)
    full = f"{fmt.opener}Let me check.\n{fmt.call}"
    prefix = len(fmt.opener) + len("Let me check.\n")
    near = near_markers(full, markers(ChatTemplate.load(fmt.template).analysis, params))
    for cut in sweep(range(prefix + 1, len(full) + 1), 10, keep=near):
        text = full[:cut]
        message = parse(params, text, words=["check"])
        assert message.reasoning_content.startswith("Let me check.")
        assert len(message.tool_calls) <= 1
        if not message.tool_calls and (fmt.generic or fmt.marker not in text):
            assert message.content == ""
            assert message.reasoning_content == text[len(fmt.opener) :].strip()
        elif not message.tool_calls:  # Kimi: the block ended at the marker, whose text is content (reported)
            assert message.reasoning_content == "Let me check."
            assert message.content.startswith(fmt.marker) and message.warnings
        else:
            assert message.tool_calls[0].name == "get_weather"
        failures = [str(f) for f in check_stream(params, char_chunks(text), message)]
        failures += [str(f) for f in check_stream(params, random_chunks(text, cut), message)]
        assert not failures, (text, failures[:3])
    assert weather_calls(parse(params, full)) == [("get_weather", PARIS)]


@pytest.mark.parametrize("fmt", [QWEN35, NEMOTRON], ids=str)
@pytest.mark.parametrize("via_kwargs", [False, True], ids=["argument", "kwargs"])
def test_a_prompt_that_closed_the_block_is_not_affected(fmt: Format, via_kwargs: bool) -> None:
    """Thinking off: the prompt closed the block, so the text before the call is the answer, streamed at once."""
    params = apply(fmt.template, False, via_kwargs=via_kwargs)
    text = f"I will check.\n{fmt.call}"
    message = parse(params, text, words=["Paris"])
    assert (message.reasoning_content, message.content, message.warnings) == ("", "I will check.", ())
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert streamed_before_finish(params, text).content == "I will check."
    assert_streams(params, text, [fmt.marker])


# --- 2. an end marker without its start marker ----------------------------------------------------------------------

# Templates that write the (empty) block themselves with thinking off and leave it to the model with thinking on.
SWITCHED = [QWEN3.template, GLM46.template, "HuggingFaceTB-SmolLM3-3B"]


@pytest.mark.parametrize("template", SWITCHED)
@pytest.mark.parametrize("via_kwargs", [False, True], ids=["argument", "kwargs"])
def test_end_marker_without_opener(template: str, via_kwargs: bool) -> None:
    params = apply(template, True, via_kwargs=via_kwargs, tools=template != "HuggingFaceTB-SmolLM3-3B")
    for before, after in (("", ""), ("\n", "\n\n"), ("  ", "\n")):
        text = f"The user greets me; greet back.{before}</think>{after}Hello! How can I help?"
        message = parse(params, text, words=["greet", "Hello"])
        assert message.reasoning_content == "The user greets me; greet back."
        assert message.content == "Hello! How can I help?"
        assert warnings_with(message, UNOPENED) == [(text.index("</think>"), message.warnings[0].message)]
        assert len(message.warnings) == 1
        assert_streams(params, text)
        # Held until the end marker decides it, then streamed.
        decided = text[: text.index("</think>") + len("</think>")]
        assert streamed_before_finish(params, decided[:-1]).reasoning_content == ""
        assert streamed_before_finish(params, decided).reasoning_content == "The user greets me; greet back."


@pytest.mark.parametrize("template", SWITCHED)
def test_plain_answer_with_thinking_on(template: str) -> None:
    """No end marker: the answer is content (a stream holds it until the output ends, see docs/parsing.md)."""
    params = apply(template, True)
    text = "Hello! How can I help?"
    message = parse(params, text)
    assert (message.reasoning_content, message.content, message.warnings) == ("", text, ())
    assert_streams(params, text)
    # The usual output opens the block: nothing is held beyond the opener.
    text = "<think>\nThe user greets me.\n</think>\n\nHello! How can I help?"
    sent = streamed_before_finish(params, text)
    assert (sent.reasoning_content, sent.content) == ("The user greets me.", "Hello! How can I help?")


@pytest.mark.parametrize("fmt", [QWEN3, GLM46], ids=str)
def test_a_call_before_any_end_marker_decides_content(fmt: Format) -> None:
    params = apply(fmt.template, True)
    text = f"Let me look that up.\n{fmt.call}"
    message = parse(params, text, words=["look", "Paris"])
    assert (message.reasoning_content, message.content, message.warnings) == ("", "Let me look that up.", ())
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert streamed_before_finish(params, text + " ").content == "Let me look that up."
    assert_streams(params, text, [fmt.marker])
    # After the end marker, calls are calls and the text before it reasoning.
    text = f"I need the weather.</think>\n\n{fmt.call}"
    message = parse(params, text, words=["weather", "Paris"])
    assert (message.reasoning_content, message.content) == ("I need the weather.", "")
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert len(warnings_with(message, UNOPENED)) == 1
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize("template", SWITCHED)
@pytest.mark.parametrize("via_kwargs", [False, True], ids=["argument", "kwargs"])
def test_end_marker_without_opener_thinking_off(template: str, via_kwargs: bool) -> None:
    """Thinking off: the prompt closed the block, so a stray end marker is text, and the answer streams at once."""
    params = apply(template, False, via_kwargs=via_kwargs)
    text = "Some text.</think>Hello!"
    message = parse(params, text)
    assert (message.reasoning_content, message.content) == ("", text)
    assert streamed_before_finish(params, text).content == text
    assert_streams(params, text)


@pytest.mark.parametrize("template", SWITCHED)
def test_truncated_unopened_block(template: str) -> None:
    params = apply(template, True)
    full = "The user greets me.\n</think>\n\nHello!"
    end = full.index("</think>") + len("</think>")
    for cut in range(1, len(full) + 1):
        text = full[:cut]
        message = parse(params, text, words=["greets", "Hello"])
        if cut >= end:
            assert message.reasoning_content == "The user greets me."
        else:  # the end marker never came: the answer as written
            assert (message.reasoning_content, message.content) == ("", text.strip())
        failures = [str(f) for f in check_stream(params, char_chunks(text))]
        assert not failures, (text, failures[:3])


# Templates whose model opens the block itself, where the prompt writes no marker (issue 24, 2b): a reply that writes
# only the closer wrote reasoning before it, whatever the closer's spelling.
MODEL_OPENS = [
    ("ByteDance-Seed-OSS", "</seed:think>"),
    ("mistralai-Ministral-3-14B-Reasoning-2512", "[/THINK]"),
    ("microsoft-Phi-4-reasoning", "</think>"),
    ("openbmb-MiniCPM3-4B", "<|thought_end|>"),
    ("hfjs-CohereLabs-command-a-reasoning-08-2025", "<|END_THINKING|>"),
]


@pytest.mark.parametrize(("template", "end"), MODEL_OPENS)
def test_closer_alone_where_the_block_may_be_open(template: str, end: str) -> None:
    """Never the closer left in content: the text before it is reasoning, with a warning; a stream holds the text
    until the closer decides it."""
    params = apply(template, True, tools=False)
    text = f"I plan the answer.{end}The answer."
    message = parse(params, text, words=["plan", "answer"])
    assert (message.reasoning_content, message.content) == ("I plan the answer.", "The answer.")
    assert warnings_with(message, UNOPENED) == [(text.index(end), message.warnings[0].message)]
    assert_streams(params, text, [end])
    decided = text[: text.index(end) + len(end)]
    assert streamed_before_finish(params, decided[:-1]).reasoning_content == ""
    assert streamed_before_finish(params, decided).reasoning_content == "I plan the answer."


# A synthetic template whose history turns show the block (the model opens it itself) and whose prompt writes none.
_SHOWS_BLOCK = (
    "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}OPEN{{ m.reasoning_content }}CLOSE{% endif %}"
    "{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.mark.parametrize(
    ("start", "end"),
    [("<r:think>", "</r:think>"), ("[REASON]", "[/REASON]"), ("<|begin_of_thought|>", "<|end_of_thought|>")],
)
def test_closer_alone_synthetic(start: str, end: str) -> None:
    tmpl = ChatTemplate(_SHOWS_BLOCK.replace("OPEN", start).replace("CLOSE", end), name="synthetic")
    assert (tmpl.analysis.reasoning.start, tmpl.analysis.reasoning.end) == (start, end)
    params = tmpl.apply(USER, reasoning_format="auto")
    text = f"…plan{end}answer"
    message = parse(params, text, words=["plan", "answer"])
    assert (message.reasoning_content, message.content) == ("…plan", "answer")
    assert len(warnings_with(message, UNOPENED)) == 1
    assert_streams(params, text, [end])


def test_closer_alone_with_thinking_off_is_text() -> None:
    """The request turned thinking off and the template has no switch to tell the model: a stray closer is text, and
    the answer streams at once."""
    params = apply("mistralai-Ministral-3-14B-Reasoning-2512", False, tools=False)
    text = "Just the answer.[/THINK]More."
    assert parse(params, text).content == text
    assert streamed_before_finish(params, "Just the answer.").content == "Just the answer."


# --- 3. redundant openers --------------------------------------------------------------------------------------------

OPENED_BY_PROMPT = [
    "Qwen3.5-4B",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "MiniMax-M2",
    "stepfun-ai-Step-3.5-Flash",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
    "deepseek-ai-DeepSeek-V3.1",
]
REPEATS = ["<think>\n", "<think>", "\n<think>\n\n", "<think>\n<think>\n", " \t<think>\r\n", "\n\n<think> <think>"]


@pytest.mark.parametrize("template", OPENED_BY_PROMPT)
def test_redundant_opener_after_the_prompts(template: str) -> None:
    params = apply(template, True)
    assert params.generation_prompt.rstrip().endswith("<think>")
    for repeat in REPEATS:
        text = f"{repeat}The user wants the weather.\n</think>\n\nIt is sunny."
        message = parse(params, text, words=["weather", "sunny"])
        assert (message.reasoning_content, message.content) == ("The user wants the weather.", "It is sunny.")
        assert "<think>" not in message.reasoning_content + message.content
        assert_streams(params, text)


@pytest.mark.parametrize("fmt", [QWEN35, NEMOTRON, STEP, MINIMAX_M2], ids=str)
def test_redundant_opener_then_a_call(fmt: Format) -> None:
    params = apply(fmt.template, True)
    text = f"<think>\nI need the weather.\n{fmt.call}"
    message = parse(params, text, words=["weather", "Paris"])
    assert message.reasoning_content == "I need the weather."
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert_streams(params, text, [fmt.marker])


@pytest.mark.parametrize(
    "template", ["Qwen3.5-4B", "Qwen-Qwen3-0.6B", "GLM-4.6", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]
)
@pytest.mark.parametrize("via_kwargs", [False, True], ids=["argument", "kwargs"])
def test_block_after_a_prompt_that_closed_one(template: str, via_kwargs: bool) -> None:
    """Thinking off writes an empty block into the prompt; a model that thinks anyway writes a second one."""
    params = apply(template, False, via_kwargs=via_kwargs)
    assert "</think>" in params.generation_prompt
    for text, reasoning in (
        ("<think>\nThe user greets me.\n</think>\n\nHello!", "The user greets me."),
        ("<think>\n\n</think>\n\nHello!", ""),
        ("<think></think>Hello!", ""),
        ("Hello!", ""),
    ):
        message = parse(params, text, words=["greets", "Hello"])
        assert (message.reasoning_content, message.content, message.warnings) == (reasoning, "Hello!", ())
        assert_streams(params, text)


# --- 4. the end marker first ------------------------------------------------------------------------------------------

# (template, thinking, end marker): every way a template's block can be left to the model or closed by the prompt.
END_FIRST = [
    ("Qwen3.5-4B", False, "</think>"),  # the prompt wrote a closed empty block
    ("Qwen-Qwen3-0.6B", True, "</think>"),  # the model opens the block itself
    ("Qwen-Qwen3-0.6B", False, "</think>"),
    ("GLM-4.6", False, "</think>"),
    ("ByteDance-Seed-OSS", True, "</seed:think>"),  # no thinking switch
    ("mistralai-Ministral-3-14B-Reasoning-2512", True, "[/THINK]"),
    ("CohereForAI-c4ai-command-r7b-12-2024-tool_use", True, "<|END_THINKING|>"),  # TOOLS_ONLY
    ("deepseek-ai-DeepSeek-V3.2", False, "</think>"),  # DSML
    ("MiroThinker", False, "</think>"),
    ("LFM2-8B-A1B", True, "</think>"),
    ("unsloth-Apriel-1.5", False, "[BEGIN FINAL RESPONSE]"),  # only an end delimiter, thinking off
    ("Qwen-Qwen2.5-7B-Instruct", True, "</think>"),  # no reasoning in the template: the well-known end marker
    ("meta-llama-Llama-3.1-8B-Instruct", True, "</thinking>"),
]


@pytest.mark.parametrize(("template", "thinking", "end"), END_FIRST, ids=lambda v: _id(v) if v is not None else "")
def test_end_marker_first_is_an_empty_block(template: str, thinking: bool, end: str) -> None:
    """``</think>answer``: the block is empty, and the marker is not content (issue 19), with no warning: nothing
    was read as reasoning that the model did not mark so."""
    params = apply(template, thinking, tools=template != "MiroThinker")
    for text in (f"{end}Hello!", f"\n{end}\n\nHello!", f"  {end}Hello!"):
        message = parse(params, text, words=["Hello"])
        assert (message.reasoning_content, message.content, message.warnings) == ("", "Hello!", ()), text
        assert_streams(params, text, [end])
    # Only as the first thing: after text, the marker is whatever the template's other rules make it.
    later = parse(params, f"Hi.{end}Hello!")
    assert end in later.content or later.reasoning_content == "Hi."


def test_end_marker_first_then_a_call() -> None:
    params = apply("Qwen-Qwen3-0.6B", True)
    text = f"</think>\n\n{HERMES_JSON}"
    message = parse(params, text, words=["Paris"])
    assert (message.reasoning_content, message.content, message.warnings) == ("", "", ())
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert_streams(params, text, ["<tool_call>"])


def test_end_marker_first_with_reasoning_format_none_is_text() -> None:
    params = ChatTemplate.load("Qwen-Qwen3-0.6B").apply(USER, reasoning_format="none", enable_thinking=True)
    assert params.parse("</think>Hello!").content == "</think>Hello!"


# --- 5. a well-known block from a template that renders no reasoning -------------------------------------------------

# Templates that show no reasoning at all, with one call of get_weather(city="Paris") as their model writes it.
NO_REASONING = [
    Format("Qwen-Qwen2.5-7B-Instruct", HERMES_JSON, "<tool_call>"),
    Format("Qwen3-Coder", QWEN_XML, "<tool_call>"),
    Format("meta-llama-Llama-3.1-8B-Instruct", '{"name": "get_weather", "parameters": {"city": "Paris"}}', "{"),
    Format("mistralai-Mistral-Nemo-Instruct-2407", f"[TOOL_CALLS][{HERMES_JSON[12:-13]}]", "[TOOL_CALLS]"),
    Format("google-ai-edge-LiteRT-LM-Gemma3n", "```tool_code\nget_weather(city=Paris)\n```", "```tool_code"),
    Format("ibm-granite-granite-4.0", HERMES_JSON, "<tool_call>"),
]
WELL_KNOWN = [("<think>", "</think>"), ("<thinking>", "</thinking>")]


@pytest.mark.parametrize("fmt", NO_REASONING, ids=str)
@pytest.mark.parametrize(("start", "end"), WELL_KNOWN, ids=["think", "thinking"])
def test_well_known_block_at_the_start_is_reasoning(fmt: Format, start: str, end: str) -> None:
    params = apply(fmt.template)
    for text in (f"{start}The user greets me.{end}Hello!", f"\n{start}\nThe user greets me.\n{end}\n\nHello!"):
        message = parse(params, text, words=["greets", "Hello"])
        assert (message.reasoning_content, message.content, message.warnings) == ("The user greets me.", "Hello!", ())
        assert_streams(params, text, [start, end])
    # A call after the block is a call; a call inside it is not (the model only thought about it).
    text = f"{start}I need the weather.{end}\n{fmt.call}"
    message = parse(params, text, words=["weather", "Paris"])
    assert (message.reasoning_content, message.content) == ("I need the weather.", "")
    assert weather_calls(message) == [("get_weather", PARIS)]
    assert_streams(params, text, [start, end, fmt.marker])
    text = f"{start}Maybe {fmt.call} would do.{end}It is sunny."
    message = parse(params, text, words=["Maybe", "Paris", "sunny"])
    assert message.reasoning_content == f"Maybe {fmt.call} would do."
    assert (message.content, message.tool_calls) == ("It is sunny.", ())
    assert_streams(params, text, [start, end, fmt.marker])


@pytest.mark.parametrize("fmt", NO_REASONING[:3], ids=str)
def test_well_known_block_elsewhere_is_text(fmt: Format) -> None:
    params = apply(fmt.template)
    for text in ("Hello! <think>not reasoning</think> Bye.", "Hi.\n<thinking>x</thinking>", "<b>Bold</b> <think>"):
        message = parse(params, text)
        assert (message.reasoning_content, message.content) == ("", text.strip())
        assert_streams(params, text)
    # reasoning_format "none": nothing is extracted.
    inline = ChatTemplate.load(fmt.template).apply(USER, tools=[WEATHER], reasoning_format="none")
    assert inline.parse("<think>x</think>Hello!").content == "<think>x</think>Hello!"


@pytest.mark.parametrize("fmt", NO_REASONING[:3], ids=str)
def test_well_known_block_holds_only_the_start_of_the_reply(fmt: Format) -> None:
    params = apply(fmt.template)
    assert streamed_before_finish(params, "<thi").content == ""  # may still become <think>
    assert streamed_before_finish(params, "<b>Bold</b> text").content == "<b>Bold</b> text"
    assert streamed_before_finish(params, "Hello <think> there").content == "Hello <think> there"
    sent = streamed_before_finish(params, "<think>The user greets me. More")
    assert (sent.reasoning_content, sent.content) == ("The user greets me. More", "")


def test_well_known_block_unclosed_runs_to_the_end() -> None:
    params = apply("Qwen-Qwen2.5-7B-Instruct")
    message = parse(params, "<think>Still thinking when the output stopped", words=["Still"])
    assert (message.reasoning_content, message.content) == ("Still thinking when the output stopped", "")


def test_content_wrapper_made_of_think_tags_is_not_reasoning() -> None:
    """Nemotron Nano v2's analysis reads the prompt's ``<think>`` as its answers' wrapper: no well-known block there."""
    params = apply("NVIDIA-Nemotron-Nano-v2")
    assert params.parse("<think>x</think>Hello!").reasoning_content == ""
