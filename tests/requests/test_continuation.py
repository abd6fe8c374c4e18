"""``continue_final_message`` (vLLM's and transformers' extension): the prompt ends inside the final assistant
message, right after its text, so the model continues it; the reply is read as that message's continuation."""

from __future__ import annotations

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import RequestError, TemplateError

USER = {"role": "user", "content": "Write a haiku about autumn"}
START = "Crimson maple leaves"


def _continued(name: str, text: str = START) -> tuple[str, str] | None:
    """The continued prompt and the prompt of the same conversation with its final turn closed, or None where the
    template renders no assistant turn for it."""
    template = ChatTemplate.load(name)
    messages = [USER, {"role": "assistant", "content": text}]
    try:
        closed = template.apply(messages, add_generation_prompt=False).prompt
        continued = template.apply(messages, continue_final_message=True).prompt
    except (TemplateError, RequestError):
        return None
    return continued, closed


@pytest.mark.parametrize("name", bundled_templates())
def test_the_prompt_ends_with_the_final_text(name: str) -> None:
    """On every bundled template that shows the final assistant turn: the continued prompt is the closed prompt
    cut right after the message's text (what the template writes after it, its end of turn, is gone)."""
    found = _continued(name)
    if found is None or START not in found[1]:
        pytest.skip("the template renders no final assistant turn here")
    continued, closed = found
    assert continued.endswith(START)
    assert closed.startswith(continued)
    assert closed.rfind(START) + len(START) == len(continued)


def test_a_template_that_keeps_trailing_whitespace_keeps_it() -> None:
    template = ChatTemplate(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}",
        name="keeps.jinja",
    )
    messages = [USER, {"role": "assistant", "content": "Once upon a "}]
    assert template.apply(messages, continue_final_message=True).prompt.endswith("<assistant>Once upon a ")
    trimmed = ChatTemplate(
        "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}",
        name="trims.jinja",
    )
    assert trimmed.apply(messages, continue_final_message=True).prompt.endswith("<assistant>Once upon a")


def test_the_reply_is_read_as_the_continuation() -> None:
    params = ChatTemplate.load("Qwen-Qwen3-0.6B").apply(
        [USER, {"role": "assistant", "content": START}], continue_final_message=True
    )
    assert params.prompt.endswith(START) and params.generation_prompt == ""
    message = params.parse(" fall to the ground")
    assert message.content.strip() == "fall to the ground" and not message.reasoning_content


def test_parts_continue_their_last_text_part() -> None:
    template = ChatTemplate.load("Qwen-Qwen3-0.6B")
    parts = [{"type": "text", "text": "Crimson"}, {"type": "text", "text": " maple leaves"}]
    prompt = template.apply([USER, {"role": "assistant", "content": parts}], continue_final_message=True).prompt
    assert prompt.endswith("maple leaves")


@pytest.mark.parametrize(
    ("messages", "kwargs", "field"),
    [
        ([USER], {}, "messages[0].role"),
        ([USER, {"role": "assistant", "content": "  "}], {}, "messages[1].content"),
        ([USER, {"role": "assistant", "content": None}], {}, "messages[1].content"),
        ([USER, {"role": "assistant", "content": START}], {"add_generation_prompt": True}, "continue_final_message"),
    ],
)
def test_what_cannot_be_continued_is_a_request_error(messages: list, kwargs: dict, field: str) -> None:
    with pytest.raises(RequestError) as caught:
        ChatTemplate.load("Qwen-Qwen3-0.6B").apply(messages, continue_final_message=True, **kwargs)
    assert caught.value.field == field


def test_a_template_that_hides_the_text_is_a_request_error() -> None:
    template = ChatTemplate(
        "{% for m in messages %}{% if m.role == 'user' %}<u>{{ m.content }}</u>{% else %}<a>...</a>{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}<a>{% endif %}",
        name="hides.jinja",
    )
    with pytest.raises(RequestError, match="does not show the final message"):
        template.apply([USER, {"role": "assistant", "content": START}], continue_final_message=True)


def test_without_continuation_the_defaults_are_unchanged() -> None:
    template = ChatTemplate.load("Qwen-Qwen3-0.6B")
    messages = [USER]
    assert template.apply(messages).prompt == template.apply(messages, add_generation_prompt=True).prompt
    assert template.apply(messages).prompt.endswith("<|im_start|>assistant\n")
