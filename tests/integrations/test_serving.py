"""What the serving adapters share (no serving stack needed): prompts rendered elsewhere, the reasoning boundary,
one merged delta per feed, re-reading a reply with the right parser, marker ids, template lookup."""

from __future__ import annotations

import json

import pytest

from autoparser import ChatTemplate
from autoparser.integrations.serving import (
    TEMPLATE_ENV,
    MarkerIds,
    ReplySession,
    merge_deltas,
    split_reasoning,
    template_for,
    template_source,
)
from autoparser.message import MessageDelta, ToolCallDelta, apply_deltas
from tests.robustness.promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks
from tests.support.ids import as_written, written

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ASK = [{"role": "user", "content": "Weather in Paris?"}]
QWEN_CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"


# --- ChatTemplate.params_for_prompt ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("Qwen3.5-4B", {"enable_thinking": True}),
        ("Qwen3.5-4B", {"enable_thinking": False}),
        ("Qwen-Qwen3-0.6B", {"enable_thinking": True}),
        ("Qwen-Qwen3-0.6B", {"enable_thinking": False}),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {}),
        ("GLM-4.6", {"enable_thinking": False}),
        ("openai-gpt-oss-120b", {}),
        ("meta-llama-Llama-3.1-8B-Instruct", {}),
    ],
)
def test_params_for_a_prompt_rendered_elsewhere_parse_as_apply(name: str, kwargs: dict) -> None:
    tmpl = ChatTemplate.load(name)
    history = [*ASK, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And Lyon?"}]
    applied = tmpl.apply(history, tools=[WEATHER], reasoning_format="auto", chat_template_kwargs=kwargs)
    found = tmpl.params_for_prompt(
        applied.prompt, tools=[WEATHER], reasoning_format="auto", chat_template_kwargs=kwargs
    )
    assert found.generation_prompt == applied.generation_prompt
    assert not found.warnings
    outputs = [
        "Let me think.\n</think>\n\nIt is sunny in Lyon.",
        "It is sunny in Lyon.",
        "Hmm.</think>" + QWEN_CALL,
        '{"name": "get_weather", "parameters": {"city": "Lyon"}}',
    ]
    for text in outputs:
        assert written(found.parse(text)) == written(applied.parse(text)), text


def test_a_prompt_without_a_generation_prompt_is_warned_about() -> None:
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    params = tmpl.params_for_prompt("<|im_start|>user\nhi<|im_end|>\n", reasoning_format="none")
    assert params.generation_prompt == ""
    assert params.warnings == ("the prompt does not end with this template's generation prompt",)
    assert params.parse("<think>a</think>b").content == "<think>a</think>b"
    named = {"type": "function", "function": {"name": "get_weather"}}
    required = tmpl.params_for_prompt("", tools=[WEATHER], tool_choice=named)
    assert required.parse("Hi").warnings  # a call was required


# --- ChatParams.reasoning_end ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "rest"),
    [
        ("I think.\n</think>\n\nHello!", "Hello!"),
        ("I think.\n</think>\n\n" + QWEN_CALL, QWEN_CALL),
        ("Straight to it " + QWEN_CALL, QWEN_CALL),  # a call ends the unterminated block
        ("Only thinking, cut off", ""),
        ("Done.</think>", ""),
    ],
)
def test_reasoning_end_splits_off_what_follows_the_block(output: str, rest: str) -> None:
    params = ChatTemplate.load("Qwen3.5-4B").apply(ASK, tools=[WEATHER], reasoning_format="auto")
    end = params.reasoning_end(output)
    assert end is not None and output[end:] == rest
    whole = params.parse(output)
    tail = ChatTemplate.load("Qwen3.5-4B").params_for_prompt("", tools=[WEATHER]).parse(output[end:])
    assert (tail.content, as_written(tail)) == (whole.content, as_written(whole))


def test_reasoning_end_waits_while_partial_output_cannot_tell() -> None:
    params = ChatTemplate.load("Qwen3.5-4B").apply(ASK, tools=[WEATHER], reasoning_format="auto")
    assert params.reasoning_end("Still thinking", partial=True) is None
    assert params.reasoning_end("Done.\n</think>\n\nHi", partial=True) == len("Done.\n</think>\n\n")
    plain = ChatTemplate.load("meta-llama-Llama-3.1-8B-Instruct").apply(ASK, reasoning_format="auto")
    assert plain.reasoning_end("Hello there", partial=True) == 0


# --- deltas ----------------------------------------------------------------------------------------------------------


def test_merge_deltas_joins_text_and_each_calls_fragments() -> None:
    merged = merge_deltas(
        [
            MessageDelta(reasoning_content="a"),
            MessageDelta(content="b", tool_calls=(ToolCallDelta(0, "id0", "f", '{"x"'),)),
            MessageDelta(tool_calls=(ToolCallDelta(0, arguments=": 1}"), ToolCallDelta(1, "id1", "g", "{}"))),
            MessageDelta(content="c"),
        ]
    )
    assert merged is not None
    assert (merged.content, merged.reasoning_content) == ("bc", "a")
    assert [(c.index, c.id, c.name, c.arguments) for c in merged.tool_calls] == [
        (0, "id0", "f", '{"x": 1}'),
        (1, "id1", "g", "{}"),
    ]
    assert merge_deltas([MessageDelta(), MessageDelta()]) is None


def test_split_reasoning() -> None:
    assert split_reasoning(None) == ("", None)
    assert split_reasoning(MessageDelta(reasoning_content="r")) == ("r", None)
    reasoning, rest = split_reasoning(MessageDelta("c", "r", (ToolCallDelta(0, "i", "f", "{}"),)))
    assert reasoning == "r" and rest is not None and (rest.content, rest.reasoning_content) == ("c", "")


@pytest.mark.parametrize("chunking", ["chars", "random", "markers"])
def test_a_session_streams_what_parse_reads_one_delta_per_feed(chunking: str) -> None:
    params = ChatTemplate.load("Qwen3.5-4B").apply(ASK, tools=[WEATHER], reasoning_format="auto")
    text = "Let me check.\n</think>\n\nOn it.\n" + QWEN_CALL + "<"
    pieces = {
        "chars": char_chunks(text),
        "random": random_chunks(text, 7),
        "markers": marker_cut_chunkings(text, ["</think>", "<tool_call>", "<parameter="])[0],
    }[chunking]
    session = ReplySession(params)
    deltas = [session.feed(piece) for piece in pieces]
    deltas.append(session.finish())
    sent = [d for d in deltas if d is not None]
    assert apply_deltas(sent).content == params.parse(text).content
    assert not check_stream(params, pieces)  # the parser's own promise, for the same chunking
    got = apply_deltas(sent)
    want = params.parse(text)
    assert (got.reasoning_content, [(c.name, c.arguments) for c in got.tool_calls]) == (
        want.reasoning_content,
        [(c.name, c.arguments) for c in want.tool_calls],
    )
    assert session.text == text and session.finished
    assert session.feed("more") is None and session.finish() is None


def test_adopting_the_requested_parser_sends_only_what_it_adds() -> None:
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    assumed = tmpl.params_for_prompt("", tools=[WEATHER], tool_choice="none")  # calls are text
    wanted = tmpl.params_for_prompt("", tools=[WEATHER])
    session = ReplySession(assumed, "none")
    head, tail = "Calling. ", QWEN_CALL
    sent = [session.feed(head)]
    assert session.adopt(wanted, "none") is None  # same shape: nothing to do
    sent.append(session.adopt(wanted, "auto"))
    sent.append(session.feed(tail))
    sent.append(session.finish())
    got = apply_deltas([d for d in sent if d is not None])
    want = wanted.parse(head + tail)
    assert got.content == want.content == "Calling."
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_adopting_keeps_what_was_sent_when_the_new_parser_disagrees(caplog: pytest.LogCaptureFixture) -> None:
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    session = ReplySession(tmpl.params_for_prompt("", tools=[WEATHER], tool_choice="none"), "none")
    text = "Text " + QWEN_CALL
    first = session.feed(text)
    assert first is not None and "<tool_call>" in first.content
    assert session.adopt(tmpl.params_for_prompt("", tools=[WEATHER]), "auto") is not None  # the call is new
    assert "keeping what was sent" in caplog.text  # its text was sent as content and stays


# --- marker ids and templates ----------------------------------------------------------------------------------------


def test_marker_ids() -> None:
    vocab = {"<think>": [1], "</think>": [2, 3]}
    ids = MarkerIds.of(lambda text: vocab[text], " <think>\n", "</think>")
    assert ids.start == (1,) and ids.end == (2, 3)
    assert not ids.ended([9, 1, 5])
    assert ids.ended([1, 5, 2, 3, 7])
    assert not ids.ended([1, 2, 3, 1, 4])  # a block opened again
    assert ids.after_end([1, 5, 2, 3, 7, 8]) == [7, 8] and ids.after_end([1, 5]) == []
    assert ids.reasoning_tokens([1, 5, 6, 2, 3, 7]) == 3 and ids.reasoning_tokens([1, 5]) == 0
    assert ids.ended_within([1, 5, 5, 2, 3], 1) and not ids.ended_within([1, 2, 3, 5, 5, 5], 2)
    assert MarkerIds.of(lambda text: 1 / 0, "<a>", "").end == ()  # a tokenizer that cannot encode: checks off
    assert not MarkerIds().ended_within([1, 2], 1) and MarkerIds().reasoning_tokens([1, 2]) == 0


class _Tokenizer:
    bos_token = "<s>"
    eos_token = "</s>"

    def __init__(self, chat_template: object) -> None:
        self.chat_template = chat_template


def test_template_lookup(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    qwen = ChatTemplate.load("Qwen3.5-4B").source
    llama = ChatTemplate.load("meta-llama-Llama-3.1-8B-Instruct").source
    variants = [{"name": "default", "template": llama}, {"name": "tool_use", "template": qwen}]
    assert template_source(variants, has_tools=True) == qwen
    assert template_source(variants) == llama
    assert template_source({"only": qwen}) == qwen and template_source({"a": qwen, "b": llama}) is None
    assert template_source(None) is None and template_source("") is None
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    assert template_for(_Tokenizer(variants), has_tools=True).source == qwen
    assert template_for(_Tokenizer(None)) is None
    assert template_for(_Tokenizer(None), request_template=llama).source == llama
    monkeypatch.setenv(TEMPLATE_ENV, "Qwen3.5-4B")
    assert template_for(_Tokenizer(llama)).source == qwen
    path = tmp_path / "t.jinja"
    path.write_text(llama, encoding="utf-8")
    monkeypatch.setenv(TEMPLATE_ENV, str(path))
    assert template_for(_Tokenizer(qwen)).source == llama
    monkeypatch.setenv(TEMPLATE_ENV, "no-such-template")
    with pytest.raises(ValueError, match="neither a file nor a bundled template"):
        template_for(_Tokenizer(qwen))
