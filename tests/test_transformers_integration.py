"""Hugging Face transformers: ``TemplateAnalysis.to_response_template()`` run by transformers' own response parser
(``tokenizer.parse_response``, ``tokenizer.get_response_parser``) on a tokenizer built here, and
``ChatMessage.to_hf()`` rendered by transformers' ``apply_chat_template`` and parsed back.

The agreement harness and its stated reasons are in tests/support/hf_agreement.py; docs/integrations.md shows the
table it writes.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from transformers.utils.chat_parsing.response_templates import load_response_template

from autoparser import ChatMessage, ChatTemplate, ToolCall, bundled_templates
from autoparser.errors import AutoparserError, ResponseTemplateError

from .support import hf_agreement as hf
from .support.corpus import apply_case
from .support.helpers import STOP_TOKENS
from .support.ids import generated_ids_ok
from .support.outputs import TOOLS, Output, chat
from .support.sample import sampled

CORPUS = hf.corpus_cases()
OUTPUTS = hf.roundtrip_outputs(sampled())  # the per-output cases: the sample's templates (tests/support/sample.py)
_CORPUS_VERDICTS = {v.key: v for v in hf.corpus_verdicts()}

# Generic templates whose output shape a response template cannot express, and the words of the reason.
INEXPRESSIBLE = {
    "Apertus-8B-Instruct": "function name is the JSON key",
    # Headed blocks: a header's value says what a block is (docs/analysis.md, "Headed blocks").
    "hfjs-meetkai-functionary-medium-v2.2": "headed blocks",
    "llamacpp-Kimi-K3": "headed blocks",
    # Python calls in a code fence: transformers has no content parser for them.
    "google-ai-edge-LiteRT-LM-Gemma3n": "Python calls with keyword arguments",
    "openbmb-MiniCPM3-4B": "Python calls with keyword arguments",
    "hfjs-LiquidAI-LFM2.5-VL-450M": "Python calls with keyword arguments",
}


@pytest.mark.parametrize("template", bundled_templates())
def test_response_template_for_every_generic_format(template: str) -> None:
    """Generic formats get a template transformers loads; dedicated ones and inexpressible shapes say why not."""
    analysis = ChatTemplate.load(template).analysis
    if analysis.format != "generic" or template in INEXPRESSIBLE:
        with pytest.raises(ResponseTemplateError) as raised:
            analysis.to_response_template()
        assert isinstance(raised.value, NotImplementedError) and isinstance(raised.value, AutoparserError)
        why = (
            f"dedicated output format {analysis.format!r}" if analysis.format != "generic" else INEXPRESSIBLE[template]
        )
        assert why in str(raised.value) and template in str(raised.value)
        return
    spec = analysis.to_response_template()
    loaded = load_response_template(spec)  # transformers' own validation: keys, regexes, one implicit field
    assert loaded.implicit == "content"
    json.dumps(spec)  # a tokenizer_config.json can carry it
    assert ("reasoning_content" in spec["fields"]) == bool(analysis.reasoning.enabled and analysis.reasoning.end)
    assert ("tool_calls" in spec["fields"]) == (analysis.tools.format.mode.value != "NONE")


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CORPUS])
def test_corpus_case_agrees_with_parse(case: dict[str, Any]) -> None:
    """transformers reads the corpus output as ``params.parse()`` does, or the difference has a stated reason."""
    verdict = _CORPUS_VERDICTS[case["id"]]
    if verdict.agrees:
        return
    reason = hf.corpus_reason(case)
    if reason is None:
        pytest.fail(f"{case['id']}: transformers disagrees with parse() and no reason is stated: {verdict.detail}")
    pytest.xfail(f"{reason} ({verdict.detail[:300]})")


@pytest.mark.parametrize("output", [pytest.param(o, id=o.key) for o in OUTPUTS])
def test_roundtrip_output_agrees_with_rendering(output: Output) -> None:
    """transformers reads back what each template rendered (content, reasoning, typed arguments, ids)."""
    verdict = hf.roundtrip_verdict(output)
    if verdict.agrees:
        return
    reason = hf.ROUNDTRIP_REASONS.get(output.key)
    if reason is None:
        pytest.fail(f"{output.key}: transformers does not read back the rendering, no reason stated: {verdict.detail}")
    pytest.xfail(f"{reason} ({verdict.detail[:300]})")


def test_every_stated_reason_has_a_difference() -> None:
    """A reason for a case that agrees is stale; the harness must also have cases to judge."""
    roundtrip = {v.key: v for v in hf.roundtrip_verdicts()}
    assert len(_CORPUS_VERDICTS) > 150 and len(roundtrip) > 250
    stale = [k for k in hf.CORPUS_REASONS if _CORPUS_VERDICTS[k].agrees]
    stale += [k for k in hf.ROUNDTRIP_REASONS if roundtrip[k].agrees]
    assert not stale, f"stated reasons for cases that agree: {stale}"


def test_agreement_table_is_current() -> None:
    assert hf.render_table() in hf.DOC.read_text(encoding="utf-8"), "paste `python -m tests.support.hf_agreement`"


def _stream(template: str, text: str, prefix: str, tools: Any, pieces: list[str]) -> dict[str, Any]:
    parser = hf.local_tokenizer().get_response_parser(hf.response_template(template), prefix=prefix, tools=tools)
    for piece in pieces:
        parser.feed(piece)
    message, _ = parser.finalize()
    return message


def _chunks(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, len(text) // 5))) if len(text) > 1 else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("output", [pytest.param(o, id=o.key) for o in OUTPUTS if hf.roundtrip_verdict(o).agrees])
def test_streamed_response_equals_parse_response(output: Output) -> None:
    """No delimiter of ours is taken before it is complete: transformers' stream parser, fed one character at a
    time or in random pieces, ends with the message ``parse_response`` gives."""
    prompt = chat(output.template).prompt
    whole = hf.local_tokenizer().parse_response(
        output.text, hf.response_template(output.template), prefix=prompt, tools=TOOLS
    )
    assert _stream(output.template, output.text, prompt, TOOLS, list(output.text)) == whole
    rng = random.Random(output.key)
    assert _stream(output.template, output.text, prompt, TOOLS, _chunks(output.text, rng)) == whole


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CORPUS if _CORPUS_VERDICTS[c["id"]].agrees])
def test_streamed_corpus_case_equals_parse_response(case: dict[str, Any]) -> None:
    _, params = apply_case(case)
    template, tools = case["template"].removesuffix(".jinja"), case["params"]["tools"] or None
    whole = hf.local_tokenizer().parse_response(
        case["input"], hf.response_template(template), prefix=params.prompt, tools=tools
    )
    assert _stream(template, case["input"], params.prompt, tools, list(case["input"])) == whole


def test_token_ids_in_and_out() -> None:
    """The tokenizer path: response and prompt as token ids decode to the same parse."""
    tokenizer = hf.local_tokenizer()
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    params = tmpl.apply([{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS)
    text = (
        "I should call get.\n</think>\n\nChecking.\n"
        "<tool_call>\n<function=get>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    )
    ids = tokenizer.encode(text, add_special_tokens=False)
    prefix_ids = tokenizer.encode(params.prompt, add_special_tokens=False)
    tokenizer.response_template = tmpl.analysis.to_response_template()  # the tokenizer's own, as users set it
    try:
        parsed = tokenizer.parse_response(ids, prefix=prefix_ids, tools=TOOLS)
        assert parsed == tokenizer.parse_response(text, prefix=params.prompt, tools=TOOLS)
    finally:
        tokenizer.response_template = None  # the tokenizer is shared by the other tests
    assert parsed["reasoning_content"] == "I should call get."
    assert parsed["content"] == "Checking."
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "get", "arguments": {"city": "Paris"}}}]


@pytest.mark.parametrize(
    ("template", "text", "content", "reasoning", "calls"),
    [
        # Hermes: content, two calls with stray whitespace, trailing line breaks; no content piece is whitespace.
        (
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            'Let me look.  \n<tool_call>{"name": "get", "arguments": {"city": "Oslo"}}</tool_call>\n\n'
            '<tool_call>\n {"name": "ping", "arguments": {}}\n</tool_call>\n\n',
            "Let me look.",
            "",
            [("get", {"city": "Oslo"}), ("ping", {})],
        ),
        # Text after a call stays content, joined to the text before it.
        (
            "Qwen3-Coder",
            "Sure. <tool_call>\n<function=ping>\n</function>\n</tool_call> Done.",
            "Sure. Done.",
            "",
            [("ping", {})],
        ),
        # DeepSeek V3.1: the section end arrives after the call's end; it is markup, not content.
        (
            "deepseek-ai-DeepSeek-V3.1",
            "Plan.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get<｜tool▁sep｜>"
            '{"city": "Lima"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
            "",
            "Plan.",
            [("get", {"city": "Lima"})],
        ),
        # Tagged values are typed by the tool's schema: 3 is an integer, "007" a string (city_code is a string).
        (
            "GLM-4.7-Flash",
            "</think><tool_call>get_weather<arg_key>city_code</arg_key><arg_value>007</arg_value>"
            "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
            "",
            "",
            [("get_weather", {"city_code": "007", "days": 3})],
        ),
    ],
)
def test_variants_real_models_write(
    template: str, text: str, content: str, reasoning: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    """Sloppy but valid output: transformers reads it as autoparser does, streamed or not."""
    params = chat(template)
    spec = hf.response_template(template)
    message = hf.local_tokenizer().parse_response(text, spec, prefix=params.prompt, tools=TOOLS)
    read = hf.read_transformers(message)
    assert (read.content, read.reasoning) == (content, reasoning)
    assert [(n, a) for n, a, _ in read.calls] == calls
    assert message.get("content", "") == content  # the pieces themselves, not just after trimming
    ours = hf.read_autoparser(params.parse(text))
    assert (ours.content, ours.reasoning, [(n, a) for n, a, _ in ours.calls]) == (content, reasoning, calls)
    assert _stream(template, text, params.prompt, TOOLS, list(text)) == message


def test_call_ids_the_markup_holds() -> None:
    """Mistral Small 3.2 writes `[CALL_ID]` between name and arguments; a call without one has an empty id."""
    params = chat("Mistral-Small-3.2-24B-Instruct-2506")
    spec = hf.response_template("Mistral-Small-3.2-24B-Instruct-2506")
    text = '[TOOL_CALLS]get[CALL_ID]a1b2c3d4e[ARGS]{"city": "Rome"}[TOOL_CALLS]ping[ARGS]{}'
    message = hf.local_tokenizer().parse_response(text, spec, prefix=params.prompt, tools=TOOLS)
    assert [(c["id"], c["function"]["name"]) for c in message["tool_calls"]] == [("a1b2c3d4e", "get"), ("", "ping")]
    assert params.parse(text).tool_calls[0].id == "a1b2c3d4e"


def test_reasoning_the_prompt_opened() -> None:
    """The anchor keeps exactly the open reasoning block at the end of the prompt: thinking on (`<think>\\n` open)
    and off (the prompt closes an empty block), and an empty prefix."""
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    spec = tmpl.analysis.to_response_template()
    tokenizer = hf.local_tokenizer()
    user = [{"role": "user", "content": "Hi"}]
    on = tmpl.apply(user, enable_thinking=True).prompt
    off = tmpl.apply(user, enable_thinking=False).prompt
    assert tokenizer.parse_response("Greet.\n</think>\n\nHello!", spec, prefix=on) == {
        "role": "assistant",
        "reasoning_content": "Greet.",
        "content": "Hello!",
    }
    assert tokenizer.parse_response("Hello!", spec, prefix=off) == {"role": "assistant", "content": "Hello!"}
    assert tokenizer.parse_response("<think>\nGreet.\n</think>\n\nHello!", spec, prefix="")["reasoning_content"] == (
        "Greet."
    )
    # A history turn's closed block is not reopened; only the prompt's last, open one counts.
    history = [*user, {"role": "assistant", "content": "Hey", "reasoning_content": "Hmm"}, *user]
    prompt = tmpl.apply(history, enable_thinking=True).prompt
    assert tokenizer.parse_response("A.\n</think>\n\nB", spec, prefix=prompt)["reasoning_content"] == "A."


def test_reasoning_with_only_an_end_marker() -> None:
    """Apriel 1.5 (DELIMITER: only `[BEGIN FINAL RESPONSE]`): the text before the marker is reasoning once the
    marker shows up, content if it never does; a stream holds the text until that is known."""
    params = chat("unsloth-Apriel-1.5")
    tokenizer = hf.local_tokenizer()
    spec = hf.response_template("unsloth-Apriel-1.5")
    text = "Think.\n[BEGIN FINAL RESPONSE]\nAnswer.\n[END FINAL RESPONSE]"
    message = tokenizer.parse_response(text, spec, prefix=params.prompt)
    assert (message["reasoning_content"], message["content"]) == ("Think.", "Answer.")
    assert tokenizer.parse_response("Just an answer.", spec, prefix=params.prompt) == {
        "role": "assistant",
        "content": "Just an answer.",
    }
    stream = tokenizer.get_response_parser(spec, prefix=params.prompt)
    held = [event for char in "Think.\n[BEGIN FINAL" for event in stream.feed(char)]
    assert held == []  # nothing is said before the marker decides
    events = stream.feed(" RESPONSE]\nAnswer.")
    assert {"type": "region_close", "field": "reasoning_content", "value": "Think."} in events
    assert stream.finalize()[0] == {"role": "assistant", "reasoning_content": "Think.", "content": "Answer."}


# --- ChatMessage.to_hf -----------------------------------------------------------------------------------------


def test_to_hf_shape() -> None:
    message = ChatMessage(
        content="",
        reasoning_content="Thinking.",
        tool_calls=(ToolCall("get", '{"city": "Oslo", "n": [1, 2]}', "call_1"), ToolCall("ping", "{}")),
    )
    assert message.to_hf() == {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Thinking.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get", "arguments": {"city": "Oslo", "n": [1, 2]}},
                "id": "call_1",
            },
            {"type": "function", "function": {"name": "ping", "arguments": {}}},
        ],
    }
    assert ChatMessage(content="Hi").to_hf() == {"role": "assistant", "content": "Hi"}
    # Arguments that are not a JSON object are kept as the model wrote them, never dropped.
    assert ToolCall("f", '{"a": ').to_hf()["function"]["arguments"] == '{"a": '
    assert ToolCall("f", "[1]").to_hf()["function"]["arguments"] == "[1]"


def _model_part(rendered: str, prompt: str) -> str:
    """What follows the prompt in a rendered conversation, up to the end-of-turn token."""
    assert rendered.startswith(prompt)
    text = rendered[len(prompt) :]
    cuts = [i for i in (text.find(t) for t in STOP_TOKENS) if i >= 0]
    return text[: min(cuts)] if cuts else text


@pytest.mark.parametrize(
    ("template", "output", "thinking"),
    [
        (
            "Qwen3-Coder",
            "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
            "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
            False,
        ),
        (
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "tags": ["a"]}}\n</tool_call>',
            False,
        ),
        (
            "Qwen3.5-4B",
            "Need weather.\n</think>\n\n<tool_call>\n<function=get>\n<parameter=city>\nLima\n"
            "</parameter>\n</function>\n</tool_call>",
            True,
        ),
        (
            "mistralai-Mistral-Nemo-Instruct-2407",
            '[TOOL_CALLS][{"name": "get", "arguments": {"city": "Rome"}, "id": "abcDEF123"}]',
            False,
        ),
        (  # the generated id is one Mistral's template accepts (9 alphanumerics) and renders back
            "mistralai-Mistral-Nemo-Instruct-2407",
            '[TOOL_CALLS][{"name": "get", "arguments": {"city": "Rome"}}]',
            False,
        ),
    ],
)
def test_to_hf_round_trips_through_apply_chat_template(template: str, output: str, thinking: bool) -> None:
    """Parse a reply, hand ``to_hf()`` to transformers' ``apply_chat_template`` as the assistant turn, and parse
    the rendered turn back: the same message (JSON-string arguments would render quoted, or not at all)."""
    tmpl = ChatTemplate.load(template, hf.BOS, hf.EOS)  # the tokenizer's own special tokens
    user = [{"role": "user", "content": "What is the weather?"}]
    params = tmpl.apply(user, tools=TOOLS, enable_thinking=thinking, reasoning_format="auto")
    parsed = params.parse(output)
    assert parsed.tool_calls and not parsed.warnings
    tokenizer = hf.local_tokenizer()
    kwargs = {"tools": TOOLS, "chat_template": tmpl.source, "tokenize": False, "enable_thinking": thinking}
    prompt = tokenizer.apply_chat_template(user, add_generation_prompt=True, **kwargs)
    assert prompt == params.prompt
    rendered = tokenizer.apply_chat_template([*user, parsed.to_hf()], **kwargs)
    again = params.parse(_model_part(rendered, prompt))
    without_ids = [dataclasses.replace(hf.read_autoparser(m), calls=()) for m in (again, parsed)]
    assert without_ids[0] == without_ids[1]
    assert [c[:2] for c in hf.read_autoparser(again).calls] == [c[:2] for c in hf.read_autoparser(parsed).calls]
    # an id the next turn renders comes back as it was, whether the model wrote it or it was generated
    for back, first in zip(again.tool_calls, parsed.tool_calls, strict=True):
        assert back.id_generated or back.id == first.id, (back, first)
    assert generated_ids_ok(again, tmpl) and generated_ids_ok(parsed, tmpl)


def test_response_template_travels_in_tokenizer_config(tmp_path: Any) -> None:
    """``save_pretrained`` writes it to tokenizer_config.json and ``from_pretrained`` reads it back (a local
    directory: no download), ready for ``parse_response``."""
    from transformers import AutoTokenizer

    tokenizer = hf.local_tokenizer()
    spec = ChatTemplate.load("Qwen3-Coder").analysis.to_response_template()
    tokenizer.response_template = spec
    try:
        tokenizer.save_pretrained(tmp_path)
    finally:
        tokenizer.response_template = None  # the tokenizer is shared by the other tests
    assert json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))["response_template"] == spec
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.response_template == spec
    reply = "Sure.\n<tool_call>\n<function=ping>\n</function>\n</tool_call>"
    assert loaded.parse_response(reply, prefix="") == {
        "role": "assistant",
        "content": "Sure.",
        "tool_calls": [{"type": "function", "function": {"name": "ping", "arguments": {}}}],
    }
