"""Call shapes as the rendering shows them (issue 24, capability 2d) and answer wrappers (2f), read back.

Each synthetic template (tests/data/templates/shape-*.jinja) writes calls its own way (key order and names, section
markers around per-call markers, a section closed only after several calls, leaked indentation, a call turn whose
header differs from the prompt's, calls only after reasoning). Its outputs are *rendered* by the template itself
(the model's part of an assistant turn), then parsed whole and streamed (one character at a time, in random chunks
and cut inside every marker) and checked by the grammars; what a model may also write (without the leaked
indentation, the section closer after a lone call, keys in the other order) is read the same way. The analysis of
each template is in tests/analysis/test_call_shapes.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from ..analysis.test_call_shapes import load
from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.grammar_check import full_verdicts, verdicts
from ..support.helpers import function_tool

USER = [{"role": "user", "content": "Weather in Paris?"}]
_PARAMS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
TOOLS = [function_tool("get", _PARAMS), function_tool("get_weather", _PARAMS)]

Calls = list[tuple[str, dict[str, Any]]]
ONE: Calls = [("get_weather", {"city": "Paris", "days": 2})]
TWO: Calls = [("get", {"city": "Oslo"}), ("get_weather", {"city": "Rome", "days": 3})]
CONTENT = "Let me check."
PLAN = "The user wants the weather; the tool needs a city."

# template -> (the end-of-turn marker after its turns, the markers a stream is cut inside, whether its turns with
# calls need reasoning)
SHAPES: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "shape-args-first": ("<|im_end|>", ("<tool_call>", "</tool_call>", '"name"'), False),
    "shape-function-args": ("<|im_end|>", ("<call>", "</call>", '"function"'), False),
    "shape-bare-tool-name": ("<|im_end|>", ('"tool_name"', '"inputs"'), False),
    "shape-bare-list": ("<|im_end|>", ('"parameters"', '"function"'), False),
    "shape-json-section": ("<|im_end|>", ("<|calls|>", "<|call|>", "<|/call|>", "<|/calls|>"), False),
    "shape-tagged-section": ("<|im_end|>", ("[CALLS]", "[CALL]", "[ARGS]", "[/CALL]", "[/CALLS]"), False),
    "shape-lone-unclosed": (
        "<|im_end|>",
        ("<｜calls▁begin｜>", "<｜call▁begin｜>", "<｜sep｜>", "<｜calls▁end｜>"),
        False,
    ),
    "shape-lone-unclosed-json": ("<|im_end|>", ("<calls>", "<call>", "</call>", "<done>"), False),
    "shape-indented": ("<|E|>", ("<calls>", "<call>", "<args>", "</call>", "</calls>"), False),
    "shape-indented-json": ("<|E|>", ("<tool>", "</tool>", '"tool"'), False),
    "shape-header": ("<|eot|>", ('"tool"', '"args"'), False),
    "shape-calls-after-plan": ("<|EOT|>", ("<|BEGIN_PLAN|>", "<|END_PLAN|>", "<|BEGIN_CALLS|>", "<|END_CALLS|>"), True),
}


def _params(name: str) -> ChatParams:
    return load(name).apply(USER, tools=TOOLS, reasoning_format="auto", parallel_tool_calls=True)


def _message(calls: Calls, content: str = "", reasoning: str = "") -> dict[str, Any]:
    wire = [
        {"id": f"call0000{i + 1}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": wire}
    return message | ({"reasoning_content": reasoning} if reasoning else {})


def rendered(tmpl: ChatTemplate, message: Mapping[str, Any], end_of_turn: str) -> str:
    """What the model writes for ``message``, as the template renders it: the assistant turn after the generation
    prompt's header (matched whitespace aside, as an indented template leaks it) up to its end-of-turn marker."""
    base = tmpl.apply(USER, tools=TOOLS, add_generation_prompt=False).prompt
    header = tmpl.apply(USER, tools=TOOLS).prompt[len(base) :]
    full = tmpl.apply([*USER, message], tools=TOOLS, add_generation_prompt=False).prompt
    assert full.startswith(base)
    turn = full[len(base) :]
    if turn.startswith(header):
        text = turn[len(header) :]
    else:
        spaced = re.match(r"\s*" + r"\s*".join(map(re.escape, header.split())), turn)
        assert spaced is not None, (header, turn)
        text = turn[spaced.end() :]
    return text[: text.rindex(end_of_turn)]


def _assert_reads(
    params: ChatParams, text: str, calls: Calls, content: str, reasoning: str, cuts: Sequence[str]
) -> None:
    words = re.findall(r"[A-Za-z]{4,}", content + " " + reasoning)
    message, failures = check_parse(params, text, words=words)
    assert message is not None and not failures, (text, failures)
    got = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
    assert (got, message.content, message.reasoning_content, message.warnings) == (calls, content, reasoning, ())
    chunkings = [char_chunks(text), *(random_chunks(text, seed) for seed in range(3))]
    chunkings += marker_cut_chunkings(text, list(cuts))
    streamed = [str(f) for pieces in chunkings for f in check_stream(params, pieces, message)]
    assert not streamed, (text, streamed[:3])


def _cases(name: str) -> list[tuple[Calls, str, str]]:
    """(calls, content, reasoning) of each output rendered from ``name``."""
    needs_plan = SHAPES[name][2]
    reasoning = PLAN if needs_plan else ""
    cases = [(ONE, "", reasoning), (TWO, "", reasoning)]
    if not needs_plan:  # (the plan template drops a calling turn's text, as Command A does)
        cases.append((ONE, CONTENT, ""))
    return cases


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_templates_own_calls_read_back(name: str) -> None:
    end_of_turn, cuts, _ = SHAPES[name]
    tmpl, params = load(name), _params(name)
    for calls, content, reasoning in _cases(name):
        text = rendered(tmpl, _message(calls, content, reasoning), end_of_turn)
        _assert_reads(params, text, calls, content, reasoning, cuts)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_grammars_accept_the_templates_own_calls(name: str) -> None:
    """The lazy grammar (from its trigger) and the whole-output grammar accept what the parser reads back."""
    end_of_turn, _, _ = SHAPES[name]
    tmpl, params = load(name), _params(name)
    for calls, content, reasoning in _cases(name):
        text = rendered(tmpl, _message(calls, content, reasoning), end_of_turn)
        assert all(verdicts(params, text).values()), (text, verdicts(params, text))
        assert all(full_verdicts(params, text).values()), (text, full_verdicts(params, text))


# What a model may write beyond the template's own bytes: (template, text, calls, content, reasoning).
LIBERTIES: list[tuple[str, str, Calls, str]] = [
    # Indentation: the model writes none of it, or other whitespace.
    ("shape-indented", '<calls><call>get<args>{"city": "Oslo"}</call></calls>', TWO[:1], ""),
    (
        "shape-indented",
        'Let me check.\n<calls>\n  <call>get<args>{"city": "Oslo"}</call>\n'
        '  <call>get_weather<args>{"city": "Rome", "days": 3}</call>\n</calls>',
        TWO,
        CONTENT,
    ),
    ("shape-indented-json", '<tool>{"args": {"city": "Oslo"}, "tool": "get"}</tool>', TWO[:1], ""),
    # Keys in the other order than the template's.
    ("shape-indented-json", '<tool>{"tool": "get", "args": {"city": "Oslo"}}</tool>', TWO[:1], ""),
    ("shape-args-first", '<tool_call>{"name": "get", "arguments": {"city": "Oslo"}}</tool_call>', TWO[:1], ""),
    ("shape-bare-list", '[{"function": "get", "parameters": {"city": "Oslo"}}]', TWO[:1], ""),
    # The section closer the template writes only after several calls: after a lone call too, or not at all.
    (
        "shape-lone-unclosed",
        '<｜calls▁begin｜><｜call▁begin｜>get<｜sep｜>{"city": "Oslo"}<｜call▁end｜><｜calls▁end｜>',
        TWO[:1],
        "",
    ),
    (
        "shape-lone-unclosed",
        '<｜calls▁begin｜><｜call▁begin｜>get<｜sep｜>{"city": "Oslo"}<｜call▁end｜>'
        '<｜call▁begin｜>get_weather<｜sep｜>{"city": "Rome", "days": 3}<｜call▁end｜>',
        TWO,
        "",
    ),
    (
        "shape-lone-unclosed-json",
        '<calls><call>{"name": "get", "arguments": {"city": "Oslo"}}</call><done>',
        TWO[:1],
        "",
    ),
    # Section markers dropped around per-call markers.
    ("shape-json-section", '<|call|>{"arguments": {"city": "Oslo"}, "function": "get"}<|/call|>', TWO[:1], ""),
]


@pytest.mark.parametrize(("name", "text", "calls", "content"), LIBERTIES, ids=lambda v: v if isinstance(v, str) else "")
def test_what_models_also_write(name: str, text: str, calls: Calls, content: str) -> None:
    _assert_reads(_params(name), text, calls, content, "", SHAPES[name][1])


def test_a_closer_elsewhere_is_text() -> None:
    """The optional closer is markup only after the calls."""
    text = "The list ends with <｜calls▁end｜> in this format."
    message = _params("shape-lone-unclosed").parse(text)
    assert (message.content, message.tool_calls, message.warnings) == (text, (), ())


# --- the bundled templates that showed these shapes first --------------------------------------------------------

BUNDLED: list[tuple[str, str, Calls, str, str]] = [
    # Llama 4's JSON template: bare calls after a header the prompt wrote.
    ("vllm-tool_chat_template_llama4_json", '{"name": "get", "parameters": {"city": "Oslo"}}', TWO[:1], "", ""),
    (
        "vllm-tool_chat_template_llama4_json",
        'Let me check.{"name": "get", "parameters": {"city": "Oslo"}}'
        '{"name": "get_weather", "parameters": {"city": "Rome", "days": 3}}',
        TWO,
        CONTENT,
        "",
    ),
    # DeepSeek-V3.1 (vLLM's template): with the indentation its renders leak, and without it.
    (
        "vllm-tool_chat_template_deepseekv31",
        '          <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜>'
        '        <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Rome", "days": 3}<｜tool▁call▁end｜>'
        "    <｜tool▁calls▁end｜>",
        TWO,
        "",
        "",
    ),
    (
        "vllm-tool_chat_template_deepseekv31",
        # (thinking on, through the template's `thinking` switch: the prompt opened `<think>`, the model closes it)
        "</think>Let me check."
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜>'
        "<｜tool▁calls▁end｜>",
        TWO[:1],
        CONTENT,
        "",
    ),
    # Command A Reasoning: calls after the thinking, its own key names; the answer's closer never in the content.
    (
        "hfjs-CohereLabs-command-a-reasoning-08-2025",
        '<|START_THINKING|>Look it up.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": '
        '"get", "parameters": {"city": "Oslo"}},\n    {"tool_call_id": "1", "tool_name": "get_weather", '
        '"parameters": {"city": "Rome", "days": 3}}\n]<|END_ACTION|>',
        TWO,
        "",
        "Look it up.",
    ),
    ("hfjs-CohereLabs-command-a-reasoning-08-2025", "<|START_RESPONSE|>Sunny.<|END_RESPONSE|>", [], "Sunny.", ""),
    (
        "hfjs-CohereLabs-command-a-reasoning-08-2025",
        "<|START_THINKING|>Easy.<|END_THINKING|><|START_RESPONSE|>Sunny.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
        [],
        "Sunny.",
        "Easy.",
    ),
]


@pytest.mark.parametrize(("name", "text", "calls", "content", "reasoning"), BUNDLED, ids=lambda v: str(v)[:30])
def test_bundled_templates(name: str, text: str, calls: Calls, content: str, reasoning: str) -> None:
    params = ChatTemplate.load(name).apply(
        USER, tools=TOOLS, reasoning_format="auto", parallel_tool_calls=True, enable_thinking=True
    )
    cuts = [m for m in re.findall(r"<[^<>]+>", text) if len(m) > 2]
    _assert_reads(params, text, calls, content, reasoning, cuts)


# --- 2f: an answer wrapper whose closer ends the turn ------------------------------------------------------------

WRAPPED: list[tuple[str, str, str]] = [
    ("<|reply|>Sunny.<|/reply|>", "Sunny.", ""),
    ("<|reply|>Sunny.<|/reply|>\n", "Sunny.", ""),
    ("<|reply|>Sunny.<|/reply|><|end_of_turn|>", "Sunny.", ""),
    ("<|reflect|>Easy one.<|/reflect|><|reply|>Sunny.<|/reply|>", "Sunny.", "Easy one."),
    ("<|reply|>Sunny.<|end_of_turn|>", "Sunny.", ""),  # the closer dropped: the end of turn ends the answer
]


@pytest.mark.parametrize(("text", "content", "reasoning"), WRAPPED)
def test_an_answer_closer_learned_as_the_end_of_turn_is_markup(text: str, content: str, reasoning: str) -> None:
    """wrapper-reply.jinja shows its answer's closer only right before the end of turn (no call turn to compare
    with): the analysis learns the opener and reads the closer as part of the end of turn; the wrapped answer ends
    there, whatever follows."""
    params = load("wrapper-reply").apply(USER, reasoning_format="auto")
    _assert_reads(params, text, [], content, reasoning, ["<|reply|>", "<|/reply|>", "<|end_of_turn|>"])


def test_an_answer_closer_inside_the_text_is_text() -> None:
    params = load("wrapper-reply").apply(USER, reasoning_format="auto")
    message = params.parse("<|reply|>Write <|/reply|> to close it.<|/reply|>")
    assert (message.content, message.warnings) == ("Write <|/reply|> to close it.", ())
