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
from autoparser.analysis.model import BlockMode
from autoparser.parser.assemble import COMMON_STOPS
from autoparser.parser.blocks import block_prefill
from autoparser.parser.reasoning import prefill

from ..robustness.promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks
from ..support.helpers import STOP_TOKENS, function_tool
from ..support.outputs import TOOLS as OUTPUT_TOOLS
from ..support.outputs import USER as OUTPUT_USER
from ..support.outputs import case_set, render_calls
from ..support.sample import sampled

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
    """The request of the round trip (a system message first and no tools where the template needs that)."""
    request = case_set(name)
    tools = TOOLS if request.tools is not None else None
    conversation = [*request.conversation[:-1], *USER]
    return ChatTemplate.load(name).apply(
        conversation,
        tools=tools,
        reasoning_format="auto",
        **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs},  # type: ignore[arg-type]
    )


def _opening(name: str) -> str:
    """What the output starts with so that it is an answer: the close of a reasoning block the prompt opened, or
    the rest of the answer's header where the prompt ends inside a block's opener and leaves the model to name the
    recipient (Functionary's ``all\n<|content|>`` after ``<|from|>assistant\n<|recipient|>``)."""
    analysis = ChatTemplate.load(name).analysis
    generation_prompt = _chat(name).generation_prompt
    blocks = analysis.blocks
    if blocks.mode is BlockMode.ADDRESSED:
        started = block_prefill(blocks, generation_prompt)
        header = blocks.header(blocks.content).lstrip()
        if started and header.startswith(started):
            return header[len(started) :]
    return analysis.reasoning.end if prefill(generation_prompt, analysis.reasoning) else ""


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


# --- without a tokenizer config: common stop tokens, the next turn's marker, an unknown EOS ----------------------

# Formats whose parsers use the shared end-of-turn items (gpt-oss, Gemma 4, MiniMax M3 and MiroThinker read their
# own end markers).
SHARED_EOT = ("generic", "kimi-k2", "deepseek-dsml", "functionary-v3.2", "lfm2", "lfm2.5")
EOT_TEMPLATES = [n for n in sampled() if ChatTemplate.load(n).analysis.format in SHARED_EOT]  # (the sample's)

# What each template writes when the turn after an assistant's begins (read off the templates themselves).
NEXT_TURN = {
    "GLM-4.6": ("<|user|>", "<|observation|>"),
    "GLM-4.7-Flash": ("<|user|>", "<|observation|>"),
    "GLM-5.2": ("<|user|>", "<|observation|>"),
    "mistralai-Ministral-3-14B-Reasoning-2512": ("[INST]", "[TOOL_RESULTS]"),
    "mistralai-Mistral-Nemo-Instruct-2407": ("[INST]", "[TOOL_RESULTS]"),
    "nvidia-Nemotron-Mini-4B-Instruct": ("<extra_id_1>",),
    "Qwen3-Coder": ("<|im_start|>",),
    "meta-llama-Llama-3.1-8B-Instruct": ("<|start_header_id|>",),
    "deepseek-ai-DeepSeek-V3.1": ("<｜User｜>", "<｜tool▁output▁begin｜>"),
    "moonshotai-Kimi-K2": ("<|im_user|>", "<|im_system|>"),
    "LGAI-EXAONE-K-EXAONE-236B-A23B": ("<|user|>", "<|tool|>"),
}


@pytest.mark.parametrize(("name", "markers"), sorted(NEXT_TURN.items()))
def test_the_next_turns_marker_is_learned(name: str, markers: tuple[str, ...]) -> None:
    analysis = ChatTemplate.load(name).analysis
    assert all(m in analysis.stop_markers for m in markers), analysis.stop_markers
    assert not set(analysis.stop_markers) & set(analysis.end_of_turn)


def test_an_unknown_eos_is_the_usual_one() -> None:
    """A template that writes ``eos_token``, loaded without a tokenizer config: ``</s>`` ends its turns; with one,
    the given EOS is the end of turn instead. A template that never writes it does not get ``</s>``."""
    assert "</s>" in ChatTemplate.load("mistralai-Ministral-3-14B-Reasoning-2512").analysis.stop_markers
    given = ChatTemplate.load("mistralai-Ministral-3-14B-Reasoning-2512", eos_token="</s>").analysis
    assert "</s>" in given.end_of_turn and "</s>" not in given.stop_markers
    assert "</s>" not in ChatTemplate.load("Qwen3-Coder").analysis.stop_markers


def test_ministral_without_a_tokenizer_config() -> None:
    """The issue's example: the EOS Ministral writes after its answers, with no tokenizer config to name it."""
    params = ChatTemplate.load("mistralai-Ministral-3-14B-Reasoning-2512").apply(USER)
    text = "[THINK]x[/THINK]The answer is 4.</s>"
    message = params.parse(text)
    assert (message.reasoning_content, message.content, message.warnings) == ("x", "The answer is 4.", ())
    _streams_equal(params, text, "</s>")
    assert params.parse("[THINK]x[/THINK]Use <s>old</s> new.</s>").content == "Use <s>old</s> new."


def _stops(name: str) -> list[str]:
    """The markers that end a turn only at the end of the output (not the template's content markers: Solar's
    ``<|end|>`` closes its wrapped answers, so it is markup everywhere)."""
    analysis = ChatTemplate.load(name).analysis
    content = {analysis.content.start.strip(), analysis.content.end.strip()}
    return sorted({*COMMON_STOPS, *analysis.stop_markers} - content)


@pytest.mark.parametrize("name", EOT_TEMPLATES)
def test_stop_markers_ending_the_output_are_not_content(name: str) -> None:
    """Every common stop token and every learned stop marker, on every template whose parser shares the end-of-turn
    items: markup at the end of the output (also after another marker, or with a line break), text elsewhere."""
    params = _chat(name)
    opening = _opening(name)
    for marker in _stops(name):
        for ending in ("{m}", "{m}\n", "<|im_end|>{m}" if marker != "<|im_end|>" else "{m}{m}"):
            text = opening + "The answer is <b>42</b>." + ending.format(m=marker)
            message = params.parse(text)
            assert (message.content, message.warnings) == ("The answer is <b>42</b>.", ()), (marker, text)
        assert not check_stream(params, char_chunks(text), message), text
        inside = f"{opening}Before {marker} after."
        message = params.parse(inside)
        assert message.content == f"Before {marker} after.", marker
        assert not check_stream(params, char_chunks(inside), message), inside


@pytest.mark.parametrize("name", ["GLM-4.6", "GLM-4.7-Flash", "GLM-5.2"])
def test_glm_ends_its_turn_with_the_next_turns_marker(name: str) -> None:
    """GLM writes nothing after an answer: its model stops by writing the next turn's role marker, ``<|user|>``
    after an answer, ``<|observation|>`` after calls."""
    tmpl = ChatTemplate.load(name)
    params = tmpl.apply(
        OUTPUT_USER, tools=OUTPUT_TOOLS, reasoning_format="auto", enable_thinking=True, parallel_tool_calls=False
    )
    call = render_calls(name, [("get", {"city": "Oslo"})])
    assert call is not None
    answer = call[: call.index("<tool_call>")] + "It is sunny."  # (after the reasoning block the call's turn has)
    for text, marker in ((call.rstrip() + "<|observation|>", "<|observation|>"), (answer + "<|user|>", "<|user|>")):
        message = params.parse(text)
        assert message.content == ("" if message.tool_calls else "It is sunny."), text
        assert not message.warnings, text
        _streams_equal(params, text, marker)
    assert [c.name for c in params.parse(call.rstrip() + "<|observation|>").tool_calls] == ["get"]


def test_a_stop_marker_cut_off_is_held_back_only_while_it_may_still_be_one() -> None:
    """The stream holds back only what may still become a marker ending the output: ``<|us`` while it may be
    ``<|user|>``; at ``finish()`` or once it cannot be one any more, it is text."""
    params = ChatTemplate.load("GLM-4.6").apply(USER, enable_thinking=False)
    stream = params.stream()
    sent = "".join(d.content for d in stream.feed("Hello world. <|us"))
    assert sent == "Hello world."
    assert "".join(d.content for d in stream.finish()) == " <|us"
    stream = params.stream()
    sent = "".join(d.content for d in stream.feed("Hello world. <|user|> and"))
    assert sent == "Hello world. <|user|> and"
    assert params.parse("Hello world. <|us").content == "Hello world. <|us"


def test_a_new_next_turn_marker_is_learned_from_a_synthetic_template() -> None:
    """A template that writes nothing after an answer and opens the next turn with a token of its own."""
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}<|human|>{{ m.content }}{% else %}<|bot|>{{ m.content }}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}<|bot|>{% endif %}"
    )
    tmpl = ChatTemplate(source, name="human-bot.jinja")
    assert tmpl.analysis.end_of_turn == ()
    assert "<|human|>" in tmpl.analysis.stop_markers
    params = tmpl.apply(USER)
    for text in ("Sure, 42.<|human|>", "Sure, 42.<|human|>\n", "Sure, 42.<|endoftext|><|human|>"):
        message = params.parse(text)
        assert (message.content, message.warnings) == ("Sure, 42.", ()), text
        _streams_equal(params, text, "<|human|>")
    assert params.parse("Say <|human|> twice.").content == "Say <|human|> twice."


def test_a_long_run_of_markers_is_content_when_text_follows() -> None:
    """A run of end-of-turn markers followed by text is content, parsed and streamed. (Each marker used to look
    ahead over the rest of the run: quadratic; bench/linear_bench.py --shapes end_markers measures the cost.)"""
    params = ChatTemplate.load("Qwen3-Coder").apply(USER)
    text = ("Hi. " + "<|im_end|> " * 500) + "x"
    assert params.parse(text).content == text
    stream = params.stream()
    deltas = [d for piece in (text[i : i + 7] for i in range(0, len(text), 7)) for d in stream.feed(piece)]
    deltas += stream.finish()
    assert "".join(d.content or "" for d in deltas) == text
