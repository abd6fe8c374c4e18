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
