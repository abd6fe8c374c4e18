"""End-of-turn markers are not content when they end the output.

A model ends its turn with the marker its template writes after an answer (``<|im_end|>``, ``<|eot_id|>``,
``<end_of_turn>``, ``</s>``, MiniMax's ``[e~[``...). Servers usually stop on it and strip it; when one does not, the
marker (maybe followed by a line break, or written twice) must not end up in the content — nor, while streaming,
be sent before it is known to be one. Anywhere else it is text (``</s>`` is also HTML).
"""

from __future__ import annotations

import json

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.generate.reasoning import prefill

from ..robustness.promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks
from ..support.outputs import TOOLS as OUTPUT_TOOLS
from ..support.outputs import USER as OUTPUT_USER
from ..support.outputs import render_calls
from .helpers import STOP_TOKENS, function_tool

USER = [{"role": "user", "content": "Hi"}]
CITY = {"type": "string", "description": "City"}  # (command-r-plus's template reads every description)
TOOLS = [function_tool("get_weather", {"type": "object", "properties": {"city": CITY}})]

# What each template writes after an answer (read off the templates themselves).
KNOWN = {
    "Qwen3-Coder": "<|im_end|>",
    "Qwen-Qwen3-0.6B": "<|im_end|>",
    "meta-llama-Llama-3.1-8B-Instruct": "<|eot_id|>",
    "meta-llama-Llama-4-Scout-17B-16E-Instruct": "<|eot|>",
    "google-gemma-2-2b-it": "<end_of_turn>",
    "CohereForAI-c4ai-command-r-plus-tool_use": "<|END_OF_TURN_TOKEN|>",
    "deepseek-ai-DeepSeek-V3.1": "<｜end▁of▁sentence｜>",
    "MiniMax-M2": "[e~[",
    "microsoft-Phi-3.5-mini-instruct": "<|end|>",
    "ByteDance-Seed-OSS": "<seed:eos>",
    "LGAI-EXAONE-EXAONE-Deep-32B": "[|endofturn|]",
    "inclusionai-ling-3.0-flash": "<|role_end|>",
    "ibm-granite-granite-4.0": "<|end_of_text|>",
    "moonshotai-Kimi-K2": "<|im_end|>",
}


@pytest.mark.parametrize(("name", "marker"), sorted(KNOWN.items()))
def test_the_marker_is_learned(name: str, marker: str) -> None:
    assert marker in ChatTemplate.load(name).analysis.end_of_turn


@pytest.mark.parametrize("name", ["GLM-4.6", "nvidia-Nemotron-Mini-4B-Instruct", "llama-cpp-rwkv-world"])
def test_a_template_without_one_learns_none(name: str) -> None:
    """GLM's next turn just starts (``<|user|>``), Nemotron-Mini's starts with ``<extra_id_1>``: no closing marker,
    and a turn header is not one."""
    assert ChatTemplate.load(name).analysis.end_of_turn == ()


def test_eos_token_counts_when_the_template_uses_it() -> None:
    """Mistral's templates write ``eos_token`` after an answer: known only when the template is given it."""
    assert ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407").analysis.end_of_turn == ()
    loaded = ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407", eos_token="</s>", bos_token="<s>")
    assert loaded.analysis.end_of_turn == ("</s>",)
    assert ChatTemplate.load("Qwen3-Coder", eos_token="<|endoftext|>").analysis.end_of_turn == ("<|im_end|>",)


def test_every_stop_token_a_template_writes_after_an_answer_is_learned() -> None:
    """The stop tokens the tests cut rendered outputs at: each one a template writes right after an answer (before
    the next turn) is among its learned markers."""
    missing = []
    for name in bundled_templates():
        tmpl = ChatTemplate.load(name)
        try:
            text = tmpl.render([*USER, {"role": "assistant", "content": "ANSWER"}, {"role": "user", "content": "Q"}])
        except Exception:  # templates that cannot render this history learn nothing from it either
            continue
        after = text[text.find("ANSWER") + len("ANSWER") :].lstrip()
        written = [t for t in STOP_TOKENS if after.startswith(t)]
        missing += [(name, t) for t in written if t not in tmpl.analysis.end_of_turn]
    assert not missing


# --- parsing -------------------------------------------------------------------------------------------------------


def _chat(name: str, **kwargs: object) -> ChatParams:
    return ChatTemplate.load(name).apply(
        USER, tools=TOOLS, reasoning_format="auto", **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs}
    )  # type: ignore[arg-type]


def _opening(name: str) -> str:
    """What the output starts with so that it is an answer: the close of a reasoning block the prompt opened."""
    analysis = ChatTemplate.load(name).analysis
    return analysis.reasoning.end if prefill(_chat(name).generation_prompt, analysis.reasoning) else ""


def _streams_equal(params: ChatParams, text: str, marker: str) -> None:
    expected = params.parse(text)
    chunkings = [
        char_chunks(text),
        random_chunks(text, 1),
        random_chunks(text, 2),
        *marker_cut_chunkings(text, [marker]),
    ]
    for pieces in chunkings:
        assert not check_stream(params, pieces, expected), pieces


@pytest.mark.parametrize(("name", "marker"), sorted(KNOWN.items()))
@pytest.mark.parametrize("ending", ["{m}", "{m}\n", " {m}\n\n", "{m}{m}", "{m}\n{m}\n"])
def test_a_final_marker_is_not_content(name: str, marker: str, ending: str) -> None:
    params = _chat(name)
    text = _opening(name) + "The answer is <b>42</b>." + ending.format(m=marker)
    message = params.parse(text)
    assert message.content == "The answer is <b>42</b>."
    assert not message.warnings
    _streams_equal(params, text, marker)


# (command-r-plus's marker also ends its wrapped answers, so it is markup wherever it stands: see the content analysis)
INSIDE = [(n, m) for n, m in sorted(KNOWN.items()) if m != ChatTemplate.load(n).analysis.content.end.strip()]


@pytest.mark.parametrize(("name", "marker"), INSIDE)
def test_a_marker_inside_the_output_is_text(name: str, marker: str) -> None:
    params = _chat(name)
    text = f"{_opening(name)}Before {marker} after."
    message = params.parse(text)
    assert message.content == f"Before {marker} after."
    _streams_equal(params, text, marker)


@pytest.mark.parametrize(("name", "marker"), sorted(KNOWN.items()))
def test_a_marker_cut_off_at_the_end_is_text(name: str, marker: str) -> None:
    params = _chat(name)
    text = f"{_opening(name)}Done.{marker[:-1]}"
    assert params.parse(text).content == f"Done.{marker[:-1]}"
    _streams_equal(params, text, marker)


@pytest.mark.parametrize(
    "name",
    [
        "Qwen3-Coder",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
        "meta-llama-Llama-3.1-8B-Instruct",
        "deepseek-ai-DeepSeek-V3.1",
        "MiniMax-M2",
        "moonshotai-Kimi-K2",
        "deepseek-ai-DeepSeek-V4",
        "meetkai-functionary-medium-v3.2",
        "mistralai-Ministral-3-14B-Reasoning-2512",
    ],
)
def test_after_tool_calls(name: str) -> None:
    """The template's own call, then its end-of-turn marker: calls only, no "text after the calls" warning."""
    call = render_calls(name, [("get", {"city": "Oslo"})])
    assert call is not None, "the template renders the call"
    tmpl = ChatTemplate.load(name)
    if not tmpl.analysis.end_of_turn:  # Ministral writes eos_token: give it one
        tmpl = ChatTemplate.load(name, eos_token="</s>")
    marker = tmpl.analysis.end_of_turn[0]
    params = tmpl.apply(
        OUTPUT_USER, tools=OUTPUT_TOOLS, reasoning_format="auto", enable_thinking=True, parallel_tool_calls=False
    )
    text = call.rstrip() + marker + "\n"
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get", {"city": "Oslo"})]
    assert message.content == "" and not message.warnings
    _streams_equal(params, text, marker)


def test_reasoning_then_answer_then_marker() -> None:
    params = _chat("Qwen-Qwen3-0.6B")
    text = "<think>\nLet me think.\n</think>\n\nIt is 42.<|im_end|>"
    message = params.parse(text)
    assert (message.reasoning_content, message.content) == ("Let me think.", "It is 42.")
    _streams_equal(params, text, "<|im_end|>")


def test_html_strikethrough_is_not_an_end_of_turn_for_other_templates() -> None:
    text = "Price: <s>10</s> 8"
    assert _chat("Qwen3-Coder").parse(text).content == text
    mistral = ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407", eos_token="</s>")
    params = mistral.apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False)
    assert params.parse(text).content == text  # inside the output: text
    assert params.parse("Done.</s>").content == "Done."


def test_bare_json_calls_with_a_broken_object_and_a_marker() -> None:
    """Llama 3.x (calls are bare objects): a malformed object stays one stretch of text, and the final marker is
    still markup."""
    params = _chat("meta-llama-Llama-3.1-8B-Instruct")
    text = 'Here {"name": "get_weather", "parameters": {"city": "Oslo"' + "<|eot_id|>"
    message = params.parse(text)
    assert "<|eot_id|>" not in message.content
    assert "Oslo" in message.content + "".join(c.arguments for c in message.tool_calls)
    _streams_equal(params, text, "<|eot_id|>")
