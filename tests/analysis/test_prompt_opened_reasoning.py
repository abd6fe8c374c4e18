"""R4: reasoning opened by the generation prompt and closed only by the model (history turns strip the block, so
no rendered turn shows it): EXAONE Deep's ``<thought>``, LongCat's ``<longcat_think>``."""

from __future__ import annotations

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.model import ReasoningMode
from tests.robustness.promises import char_chunks, check_stream

USER = [{"role": "user", "content": "Hi"}]

# History drops everything up to </tag>; the generation prompt opens <tag>.
SYNTHETIC = (
    "{% for m in messages %}{% if m.role == 'assistant' %}<|a|>{{ m.content.split('</ponder>')[-1] }}<|end|>"
    "{% else %}<|u|>{{ m.content }}<|end|>{% endif %}{% endfor %}{% if add_generation_prompt %}<|a|><ponder>\n"
    "{% endif %}"
)


@pytest.mark.parametrize(
    ("template", "start", "end"),
    [
        ("LGAI-EXAONE-EXAONE-Deep-32B", "<thought>", "</thought>"),
        ("meituan-longcat-LongCat-Flash-Chat", "<longcat_think>", "</longcat_think>"),
    ],
)
def test_prompt_opened_block_is_learned_and_parsed(template: str, start: str, end: str) -> None:
    tmpl = ChatTemplate.load(template)
    reasoning = tmpl.analysis.reasoning
    assert reasoning.start.strip() == start and reasoning.end.strip() == end
    assert reasoning.mode in (ReasoningMode.FORCED_OPEN, ReasoningMode.FORCED_CLOSED)
    params = tmpl.apply(USER, reasoning_format="auto", enable_thinking=True)
    assert params.generation_prompt.rstrip().endswith(start)
    text = f"The user greets me.\nI greet back.\n{end}\n\nHello! How can I help?"
    message = params.parse(text)
    assert message.reasoning_content == "The user greets me.\nI greet back."
    assert message.content == "Hello! How can I help?"
    assert not message.warnings
    assert not check_stream(params, char_chunks(text), message)
    cut = params.parse(text[: text.index(end) + 3], partial=True)  # inside the end marker: still reasoning
    assert cut.content == "" and cut.reasoning_content.startswith("The user greets me.")


def test_synthetic_template() -> None:
    tmpl = ChatTemplate(SYNTHETIC, name="synthetic")
    reasoning = tmpl.analysis.reasoning
    assert (reasoning.mode, reasoning.start, reasoning.end) == (ReasoningMode.FORCED_OPEN, "<ponder>\n", "</ponder>")
    message = tmpl.apply(USER, reasoning_format="auto").parse("hmm</ponder>Hi")
    assert (message.reasoning_content, message.content) == ("hmm", "Hi")


def test_a_tag_the_template_never_closes_is_not_reasoning() -> None:
    source = SYNTHETIC.replace(".split('</ponder>')[-1]", "")
    assert ChatTemplate(source, name="synthetic").analysis.reasoning.mode is ReasoningMode.NONE


# --- an opener no render and no line of the template ever closes (issue 24, 2b) ---------------------------------------

# The generation prompt opens OPENER; nothing in the template writes its closer.
UNPAIRED = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>OPENER{% endif %}"
)


@pytest.mark.parametrize(
    ("opener", "closer"),
    [
        ("<think>", "</think>"),
        ("<x:think>", "</x:think>"),
        ("<r:reasoning>", "</r:reasoning>"),
        ("[THINK]", "[/THINK]"),
        ("<|START_THINKING|>", "<|END_THINKING|>"),
        ("<|begin_of_thought|>", "<|end_of_thought|>"),
        ("<|thought_start|>", "<|thought_end|>"),
        ("[BEGIN REASONING]", "[END REASONING]"),
    ],
)
def test_unpaired_opener_gets_its_closer_by_pairing(opener: str, closer: str) -> None:
    tmpl = ChatTemplate(UNPAIRED.replace("OPENER", opener + "\n"), name="synthetic")
    assert closer not in tmpl.source
    reasoning = tmpl.analysis.reasoning
    assert (reasoning.mode, reasoning.start.strip(), reasoning.end) == (ReasoningMode.FORCED_OPEN, opener, closer)
    params = tmpl.apply(USER, reasoning_format="auto")
    for text in (f"I plan the reply.{closer}Hello!", f"I plan the reply.\n{closer}\n\nHello!"):
        message = params.parse(text)
        assert (message.reasoning_content, message.content, message.warnings) == ("I plan the reply.", "Hello!", ())
        assert not check_stream(params, char_chunks(text), message)
    # No closer: the whole reply is reasoning (the block never ended), streamed as it comes.
    assert params.parse("Still thinking").reasoning_content == "Still thinking"


@pytest.mark.parametrize("opener", ["<answer>", "<|assistant_start|>", "[RESPONSE]", "<|START_RESPONSE|>"])
def test_an_unpaired_opener_that_does_not_say_reasoning_is_not_reasoning(opener: str) -> None:
    tmpl = ChatTemplate(UNPAIRED.replace("OPENER", opener), name="synthetic")
    assert tmpl.analysis.reasoning.mode is ReasoningMode.NONE


def test_olmo_thinker() -> None:
    """OLMo's thinker opens `<think>` in the generation prompt and never writes `</think>` (history turns hold no
    reasoning): the model's `…</think>answer` is reasoning, then the answer."""
    tmpl = ChatTemplate.load("openinstruct-olmo_thinker")
    assert "</think>" not in tmpl.source
    reasoning = tmpl.analysis.reasoning
    assert (reasoning.mode, reasoning.start, reasoning.end) == (ReasoningMode.FORCED_OPEN, "<think>", "</think>")
    params = tmpl.apply(USER, reasoning_format="auto")
    text = "The user says hi. I greet back.</think>\n\nHello! How can I help?"
    message = params.parse(text)
    assert (message.reasoning_content, message.content) == ("The user says hi. I greet back.", "Hello! How can I help?")
    assert not message.warnings
    assert not check_stream(params, char_chunks(text), message)
