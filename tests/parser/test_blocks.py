"""The parser of headed blocks (parser/blocks.py) on the synthetic templates (tests/data/templates/blocks-*.jinja, and
the role suffixes of tests/data/templates/suffix-*.jinja) and the real ones (Kimi K3, Functionary v2.2; Functionary
v3.2's ``>>>`` blocks read by the same generic parser).

Every output is the template's own rendering of a message; it must parse back to that message, and stream to it one
character per feed (each step equal to the partial parse: nothing shown is ever taken back) and in random chunks.
Then what models do besides: calls inside the answer, closers left out, unknown blocks and attributes, undeclared
tools, inline reasoning, thinking switched off, cut-off replies — never lost, never silent.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.check import Status, check_template
from autoparser.message import CallStatus
from autoparser.parser.blocks import build_block_parser

from ..robustness.promises import check_stream, random_chunks
from ..support.helpers import stream_char_by_char
from ..support.outputs import CONTENT, FULL_ARGS, REASONING, TOOLS, call_message, outputs
from ..support.outputs import chat as output_chat

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
TAGGED = str(TEMPLATES / "blocks-tagged.jinja")
ADDRESSED = str(TEMPLATES / "blocks-addressed.jinja")
SLASH = str(TEMPLATES / "suffix-slash.jinja")
COLON = str(TEMPLATES / "suffix-colon.jinja")
DOT = str(TEMPLATES / "suffix-dot.jinja")
RECIPIENT = str(TEMPLATES / "suffix-recipient.jinja")
SUFFIXES = (SLASH, COLON, DOT, RECIPIENT)
KIMI = "llamacpp-Kimi-K3"
FUNCTIONARY = "hfjs-meetkai-functionary-medium-v2.2"
USER = [{"role": "user", "content": "What is the weather?"}]


def _load(template: str) -> ChatTemplate:
    return ChatTemplate.from_file(template) if template.endswith(".jinja") else ChatTemplate.load(template)


def _thinking(template: str) -> bool:
    """Thinking on, except for the colon template, whose prompt then opens the reasoning block, which a rendered turn
    without reasoning does not continue (test_a_reasoning_block_the_prompt_opened covers it)."""
    return template != COLON


def _chat(template: str, **kwargs: Any) -> ChatParams:
    kwargs.setdefault("enable_thinking", _thinking(template))
    return _load(template).apply(USER, tools=TOOLS, parallel_tool_calls=True, **kwargs)


def _turn(template: str, message: dict[str, Any], **kwargs: Any) -> str:
    """What the model writes: the template's rendering of ``message`` after the generation prompt (end of turn
    included: the parser reads it as markup)."""
    kwargs.setdefault("enable_thinking", _thinking(template))
    tmpl = _load(template)
    prompt = tmpl.apply(USER, tools=TOOLS, **kwargs).prompt
    full = tmpl.apply([*USER, message], tools=TOOLS, add_generation_prompt=False, **kwargs).prompt
    assert full.startswith(prompt)
    return full[len(prompt) :]


def _calls(message: ChatMessage) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


def _streams_to(params: ChatParams, text: str, expected: ChatMessage) -> None:
    """One character per feed (never retracting), and random chunkings, end equal to ``expected``."""
    streamed = stream_char_by_char(params, text)
    assert (streamed.content, streamed.reasoning_content, _calls(streamed)) == (
        expected.content,
        expected.reasoning_content,
        _calls(expected),
    )
    for seed in (1, 2, 3):
        assert not check_stream(params, random_chunks(text, seed), expected)


_CALLS = {
    "one call": ([("get_weather", FULL_ARGS)], "", ""),
    "parallel calls": ([("get", {"city": "Zanzibar"}), ("get_weather", {"city_code": "ZNZ", "days": 2})], "", ""),
    "content+call": ([("get_weather", {"city": "Reykjavik"})], "Let me check the forecast.", ""),
    "reasoning+call": ([("get", {"city": "Kathmandu"})], "", REASONING),
}


@pytest.mark.parametrize(
    ("template", "case"),
    [
        (template, case)
        for template in (TAGGED, ADDRESSED, *SUFFIXES, KIMI, FUNCTIONARY)
        for case in _CALLS
        if not (template == FUNCTIONARY and _CALLS[case][2])  # (Functionary v2.2 renders no reasoning)
    ],
)
def test_calls_read_back_as_rendered(template: str, case: str) -> None:
    calls, content, reasoning = _CALLS[case]
    text = _turn(template, call_message(calls, content, reasoning))
    params = _chat(template)
    message = params.parse(text)
    assert _calls(message) == calls, text
    assert (message.content, message.reasoning_content) == (content, reasoning), text
    assert not message.warnings, text
    assert all(c.status is CallStatus.COMPLETE for c in message.tool_calls)
    _streams_to(params, text, message)


@pytest.mark.parametrize("template", [TAGGED, ADDRESSED, *SUFFIXES, KIMI])
@pytest.mark.parametrize("reasoning", ["", REASONING])
def test_answers_read_back_as_rendered(template: str, reasoning: str) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": CONTENT}
    if reasoning:
        message["reasoning_content"] = reasoning
    text = _turn(template, message)
    params = _chat(template)
    parsed = params.parse(text)
    assert (parsed.content, parsed.reasoning_content, parsed.tool_calls, parsed.warnings) == (
        CONTENT,
        reasoning,
        (),
        (),
    ), text
    _streams_to(params, text, parsed)


def test_thinking_off_the_prompt_opens_the_answer_block() -> None:
    """``enable_thinking=False``: the synthetic template's prompt opens ``[BLOCK]answer[/HEAD]`` itself."""
    params = _chat(TAGGED, enable_thinking=False)
    assert params.generation_prompt.endswith("[BLOCK]answer[/HEAD]")
    text = _turn(TAGGED, {"role": "assistant", "content": CONTENT}, enable_thinking=False)
    assert not text.startswith("[BLOCK]")
    message = params.parse(text)
    assert (message.content, message.reasoning_content, message.warnings) == (CONTENT, "", ())
    _streams_to(params, text, message)


def test_inline_reasoning_keeps_its_block_in_the_content() -> None:
    params = _chat(TAGGED, reasoning_format="none")
    text = "Plan.[BLOCK]/thought[/HEAD][BLOCK]answer[/HEAD]Hi.[BLOCK]/answer[/HEAD]"
    message = params.parse(text)
    assert message.reasoning_content == ""
    assert message.content == "Plan.[BLOCK]/thought[/HEAD]Hi."
    _streams_to(params, text, message)
    kimi = _chat(KIMI, reasoning_format="none")
    text = "<|close|>think<|sep|><|open|>response<|sep|>Hi.<|close|>response<|sep|>"
    message = kimi.parse(text)
    assert message.content == "<|close|>think<|sep|>Hi."
    _streams_to(kimi, text, message)  # (a header still arriving after the closer is not shown as content)
    addressed = _chat(ADDRESSED, reasoning_format="none").parse(
        "scratchpad<|body|>Plan.\n<|turn|>assistant to=user<|body|>Hi."
    )
    assert addressed.reasoning_content == "" and "Plan." in addressed.content and addressed.content.endswith("Hi.")


@pytest.mark.parametrize(
    ("template", "text", "calls", "content", "warned"),
    [
        # A call written inside the answer's block, which is never closed: the answer, then the call.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]answer[/HEAD]Checking.[BLOCK]invoke name='get' n='1'[/HEAD]"
            "[BLOCK]param name='city' kind='text'[/HEAD]Oslo[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD]",
            [("get", {"city": "Oslo"})],
            "Checking.",
            "",
        ),
        # An argument's closer left out: the next argument ends the value; reported.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]actions[/HEAD][BLOCK]invoke name='get_weather' n='1'[/HEAD]"
            "[BLOCK]param name='city' kind='text'[/HEAD]Oslo[BLOCK]param name='days' kind='int'[/HEAD]2"
            "[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD][BLOCK]/actions[/HEAD]",
            [("get_weather", {"city": "Oslo", "days": 2})],
            "",
            "without its '[BLOCK]/param[/HEAD]' marker",
        ),
        # Arguments in a JSON block, as the template writes arguments given as JSON text.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]actions[/HEAD][BLOCK]invoke name='get' n='1'[/HEAD]"
            '[BLOCK]payload kind=\'map\'[/HEAD]{"city": "Oslo"}[BLOCK]/payload[/HEAD][BLOCK]/invoke[/HEAD]',
            [("get", {"city": "Oslo"})],
            "",
            "",
        ),
        # An attribute the template never writes: read, and reported.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]invoke name='get' n='1' urgent='yes'[/HEAD]"
            "[BLOCK]param name='city' kind='text'[/HEAD]Oslo[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD]",
            [("get", {"city": "Oslo"})],
            "",
            "urgent='yes'",
        ),
        # A block of a kind the analysis never saw: its header stays in the content, with a warning.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]answer[/HEAD]Hi.[BLOCK]/answer[/HEAD][BLOCK]citation[/HEAD]x",
            [],
            "Hi.[BLOCK]citation[/HEAD]x",
            "[BLOCK]citation[/HEAD]",
        ),
        # A tool the request does not declare: a call, with a warning.
        (
            TAGGED,
            "Hm.[BLOCK]/thought[/HEAD][BLOCK]invoke name='launch' n='1'[/HEAD][BLOCK]param name='x' kind='int'"
            "[/HEAD]1[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD]",
            [("launch", {"x": 1})],
            "",
            "not declared",
        ),
        # Kimi K3 without its tools section, the reply stopped before the call's closer (as the generic tagged
        # parser reads a call whose end marker a stop string took: complete, its arguments being complete).
        (
            KIMI,
            '<|close|>think<|sep|><|open|>call tool="get" index="1"<|sep|><|open|>argument key="city" '
            'type="string"<|sep|>Oslo<|close|>argument<|sep|>',
            [("get", {"city": "Oslo"})],
            "",
            "",
        ),
        # Addressed: the answer without a recipient line, then a call to an undeclared tool.
        (
            ADDRESSED,
            'user<|body|>Sure.\n<|turn|>assistant to=launch<|body|>{"x": 1}',
            [("launch", {"x": 1})],
            "Sure.",
            "not declared",
        ),
        # Addressed: a recipient whose block is not JSON, and the opener's first token alone.
        (
            ADDRESSED,
            "user<|body|>Sure.\n<|turn|>assistant to=mail<|body|>Dear all<|turn|>x",
            [],
            "Sure.\n<|turn|>assistant to=mail<|body|>Dear all<|turn|>x",
            "'<|turn|>' did not start",
        ),
        (
            FUNCTIONARY,
            'all\n<|content|>Hi.\n<|from|><|from|>assistant\n<|recipient|>get\n<|content|>{"city": "Oslo"}',
            [("get", {"city": "Oslo"})],
            "Hi.\n<|from|>",
            "'<|from|>' did not start",
        ),
    ],
)
def test_liberties_are_read_and_reported(
    template: str, text: str, calls: list[tuple[str, Any]], content: str, warned: str
) -> None:
    params = _chat(template)
    message = params.parse(text)
    assert _calls(message) == calls
    assert message.content == content
    warnings = " | ".join(w.message for w in message.warnings)
    assert (warned in warnings) if warned else not warnings, warnings
    _streams_to(params, text, message)


def test_undeclared_tools_as_content_keep_the_call_text() -> None:
    params = _chat(TAGGED, undeclared_tools="content")
    text = (
        "Hm.[BLOCK]/thought[/HEAD][BLOCK]invoke name='launch' n='1'[/HEAD][BLOCK]param name='x' kind='int'[/HEAD]1"
        "[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD]"
    )
    message = params.parse(text)
    assert message.tool_calls == ()
    assert "launch" in message.content and message.warnings


def test_a_call_the_reasoning_only_quotes_is_reasoning() -> None:
    """A call header inside the reasoning block, the block's closer after it: reasoning (the generic liberty)."""
    params = _chat(TAGGED)
    quoted = "I could use [BLOCK]invoke name='get' n='1'[/HEAD] here.[BLOCK]/thought[/HEAD]"
    message = params.parse(quoted + "[BLOCK]answer[/HEAD]No.[BLOCK]/answer[/HEAD]")
    assert message.tool_calls == () and message.content == "No."
    assert "[BLOCK]invoke" in message.reasoning_content
    unclosed = "Let me look.[BLOCK]invoke name='get' n='1'[/HEAD][BLOCK]param name='city' kind='text'[/HEAD]Oslo"
    unclosed += "[BLOCK]/param[/HEAD][BLOCK]/invoke[/HEAD]"
    message = params.parse(unclosed)
    assert _calls(message) == [("get", {"city": "Oslo"})] and message.reasoning_content == "Let me look."
    _streams_to(params, unclosed, message)


def test_cut_off_replies_stream_to_their_parse() -> None:
    """Every cut of a call reply: no crash, the stream ends equal to the parse and never retracts."""
    params = _chat(TAGGED)
    text = _turn(TAGGED, call_message([("get_weather", {"city": "Oslo", "days": 2})], "Sure.", "Plan."))
    for cut in range(0, len(text), 7):
        assert not check_stream(params, random_chunks(text[:cut], cut))


def test_no_tools_in_the_request_leave_a_call_in_the_content_with_a_warning() -> None:
    params = _load(TAGGED).apply(USER, enable_thinking=True)
    text = "Hm.[BLOCK]/thought[/HEAD][BLOCK]invoke name='get' n='1'[/HEAD]x[BLOCK]/invoke[/HEAD]"
    message = params.parse(text)
    assert message.tool_calls == () and "invoke" in message.content and message.warnings


def test_functionary_v3_2_outputs_read_with_the_generic_block_parser() -> None:
    """Functionary v3.2 keeps its dedicated format; the blocks its analysis learns (``>>>NAME\\n``) read its own
    outputs just as well with the generic parser, which shows the pieces generalise to a third spelling."""
    template = "meetkai-functionary-medium-v3.2"
    params = output_chat(template)
    analysis = ChatTemplate.load(template).analysis
    generic = dataclasses.replace(params, _generated=build_block_parser(analysis, params._generated.request))
    checked = 0
    for output in outputs(template):
        message = generic.parse(output.text)
        assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
            (c.name, c.arguments) for c in output.calls
        ], output.text
        assert message.content == output.content and not message.warnings
        _streams_to(generic, output.text, message)
        checked += 1
    assert checked >= 4


# --- role suffixes --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("template", [*SUFFIXES, ADDRESSED, TAGGED])
def test_autoparser_check_reads_back_every_case(template: str) -> None:
    """``autoparser check`` on the synthetic block templates: every case rendered (none left out) and read back,
    parsed, streamed and accepted by the whole-output grammar."""
    report = check_template(_load(template))
    assert not report.error
    assert [(r.case, r.status) for r in report.results] == [(r.case, Status.OK) for r in report.results]
    assert len(report.results) == 6 and report.passed
    assert not [r.case for r in report.results if r.grammar], [r.grammar_reason for r in report.results]


def test_a_reasoning_block_the_prompt_opened() -> None:
    """Thinking on, the colon template's prompt ends with ``<turn>model:thought`` and a line break: the reply starts
    inside the reasoning block, closes it with ``</turn>``, then writes its blocks."""
    params = _chat(COLON, enable_thinking=True)
    assert params.generation_prompt.endswith("<turn>model:thought\n")
    replies = [
        (f"{REASONING}</turn>\n<turn>model\n{CONTENT}</turn>", REASONING, CONTENT, []),
        ('Plan.</turn>\n<turn>model:get\n{"city": "Oslo"}</turn>', "Plan.", "", [("get", {"city": "Oslo"})]),
        (f"</turn>\n<turn>model\n{CONTENT}", "", CONTENT, []),  # an empty reasoning block
        (f"<turn>model\n{CONTENT}</turn>", "", CONTENT, []),  # the reasoning block left without its end
    ]
    for text, reasoning, content, calls in replies:
        message = params.parse(text)
        assert (message.reasoning_content, message.content, _calls(message), message.warnings) == (
            reasoning,
            content,
            calls,
            (),
        ), text
        _streams_to(params, text, message)


@pytest.mark.parametrize(
    ("template", "text", "calls", "content", "reasoning", "warned"),
    [
        # A block end left out between blocks: the next header ends the block.
        (SLASH, "/think\nPlan.\n<|im_start|>assistant\nHi.", [], "Hi.", "Plan.", ""),
        (
            DOT,
            'assistant.analysis<|message|>Plan.<|start|>assistant.tool.get<|message|>{"city": "Oslo"}',
            [("get", {"city": "Oslo"})],
            "",
            "Plan.",
            "",
        ),
        # Several calls, then the answer after them.
        (
            SLASH,
            '/tool:get\n{"city": "Oslo"}<|im_end|>\n<|im_start|>assistant/tool:ping\n{}<|im_end|>\n'
            "<|im_start|>assistant\nDone.<|im_end|>",
            [("get", {"city": "Oslo"}), ("ping", {})],
            "Done.",
            "",
            "text after the tool calls",
        ),
        # A suffix the analysis never saw: its header stays in the content, reported.
        (
            SLASH,
            "/citation\nSee [1].<|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>",
            [],
            "/citation\nSee [1].<|im_end|>Hi.",
            "",
            "'/citation\\n'",
        ),
        (
            COLON,
            "\nHi.</turn>\n<turn>model:note\nremember</turn>",
            [],
            "Hi.\n<turn>model:note\nremember</turn>",
            "",
            "'\\n<turn>model:note\\n'",
        ),
        # A tool the request does not declare: a call, with a warning.
        (SLASH, '/tool:launch\n{"x": 1}<|im_end|>', [("launch", {"x": 1})], "", "", "not declared"),
        (DOT, 'assistant.tool.launch<|message|>{"x": 1}<|end|>', [("launch", {"x": 1})], "", "", "not declared"),
        # Arguments that break: the call as it stood, the rest left out with a warning, the next block read.
        (
            SLASH,
            '/tool:get\n{"city": Oslo}<|im_end|>\n<|im_start|>assistant\nDone.',
            [("get", {})],
            "Done.",
            "",
            "after where it broke",
        ),
        # A block end that ends no block: kept in the content, reported.
        (SLASH, "\nA<|im_end|>B<|im_end|> C", [], "AB<|im_end|> C", "", "'<|im_end|>'"),
        # No header at all after the prompt's opener: the reply is content, the prompt's opener no part of it; its
        # first word is reported (a header cut off or damaged there: `/tool:get_wea`).
        (SLASH, "Hi. All good.", [], "Hi. All good.", "", "'Hi.' did not start"),
        (DOT, "Hi.", [], "Hi.", "", "'Hi.' did not start"),
        (SLASH, "/tool:get_wea", [], "/tool:get_wea", "", "'/tool:get_wea' did not start"),
        # A call header whose opener broke: its call prefix is reported where it stands.
        (
            SLASH,
            '\nA<|im_end|>\n<|im_staRt|>assistant/tool:get\n{"city": "K"}',
            [],
            'A\n<|im_staRt|>assistant/tool:get\n{"city": "K"}',
            "",
            "'/tool:' did not start",
        ),
        # A call's block closed by its own end, the answer's by the other; an unknown recipient reported.
        (
            RECIPIENT,
            '<|message|>Sure.<|end|><|start|>assistant to=functions.get<|message|>{"city": "Oslo"}<|call|>',
            [("get", {"city": "Oslo"})],
            "Sure.",
            "",
            "",
        ),
        (
            RECIPIENT,
            " to=mail<|message|>Dear all<|end|><|call|>",
            [],
            "to=mail<|message|>Dear all<|end|><|call|>",  # (a reply's leading whitespace is no content)
            "",
            "' to=mail<|message|>'",
        ),
        # Another role's turn written after the answer: its opener's first token is reported, its text kept.
        (SLASH, "\nHi.<|im_end|>\n<|im_start|>user\nMore", [], "Hi.<|im_start|>user\nMore", "", "'<|im_start|>'"),
    ],
)
def test_role_suffix_liberties_are_read_and_reported(
    template: str, text: str, calls: list[tuple[str, Any]], content: str, reasoning: str, warned: str
) -> None:
    params = _chat(template)
    message = params.parse(text)
    assert _calls(message) == calls
    assert (message.content, message.reasoning_content) == (content, reasoning)
    warnings = " | ".join(w.message for w in message.warnings)
    assert (warned in warnings) if warned else not warnings, warnings
    _streams_to(params, text, message)


def test_role_suffix_inline_reasoning_keeps_its_block_in_the_content() -> None:
    params = _chat(SLASH, reasoning_format="none")
    text = "/think\nPlan.<|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>"
    message = params.parse(text)
    assert message.reasoning_content == ""
    assert message.content == "<|im_start|>assistant/think\nPlan.<|im_end|>Hi."
    _streams_to(params, text, message)


@pytest.mark.parametrize("template", SUFFIXES)
def test_role_suffix_cut_off_replies_stream_to_their_parse(template: str) -> None:
    """Every cut of a reasoning + content + parallel-call reply: no crash, the stream ends equal to the parse and
    never retracts."""
    params = _chat(template)
    calls = [("get_weather", {"city": "Oslo", "days": 2}), ("get", {"city": "Rome"})]
    text = _turn(template, call_message(calls, "Sure.", "Plan."))
    assert _calls(params.parse(text)) == calls
    for cut in range(0, len(text), 3):
        assert not check_stream(params, random_chunks(text[:cut], cut))


def test_role_suffix_tools_off_leave_a_call_in_the_content_with_a_warning() -> None:
    params = _load(SLASH).apply(USER, enable_thinking=True)
    text = '/tool:get\n{"city": "Oslo"}<|im_end|>'
    message = params.parse(text)
    assert message.tool_calls == () and '{"city": "Oslo"}' in message.content and message.warnings


ANSWER = "The answer is 42."


@pytest.mark.parametrize("template", [TAGGED, ADDRESSED, *SUFFIXES, KIMI, FUNCTIONARY])
def test_the_next_turns_opener_ending_the_output_is_markup(template: str) -> None:
    """A model that did not stop at the end of its turn starts the next one: its opener (``[BLOCK]``, ``<|turn|>``,
    ``<|im_start|>``, Kimi K3's ``<|open|>``, Functionary's ``<|from|>``: the stop markers the analysis learned, which
    also open the reply's own blocks) ending the output, after the end of turn or without it, is markup — neither
    content nor a warning. In the answer's text it stays text."""
    analysis = _load(template).analysis
    assert analysis.stop_markers
    params = _chat(template)
    answer = _turn(template, {"role": "assistant", "content": ANSWER})
    bare = next((answer.rstrip()[: -len(e)] for e in analysis.end_of_turn if answer.rstrip().endswith(e)), answer)
    assert bare != answer  # (the template ends the turn with a marker of its own)
    for marker in analysis.stop_markers:
        for text in (answer + marker, answer + marker + "\n", bare + marker):
            message = params.parse(text)
            assert (message.content, message.tool_calls, message.warnings) == (ANSWER, (), ()), text
            _streams_to(params, text, message)
            assert not check_stream(params, list(text), message), text
        inside = _turn(template, {"role": "assistant", "content": f"Before {marker} after."})
        message = params.parse(inside)
        assert message.content == f"Before {marker} after.", inside
        _streams_to(params, inside, message)


@pytest.mark.parametrize("template", [TAGGED, KIMI])
def test_a_call_cut_off_inside_a_value_is_cut_off(template: str) -> None:
    """The output ends inside an argument's value (a max_tokens stop): the call keeps what arrived, and its status
    says it was cut off (the value may be shortened), with a warning — not ``complete``."""
    text = _turn(template, call_message([("get_weather", {"city": "Zanzibar", "days": 2})], "", ""))
    cut = text[: text.index("Zanzibar") + 4]
    params = _chat(template)
    message = params.parse(cut)
    found = [(c.name, json.loads(c.arguments), c.status) for c in message.tool_calls]
    assert found == [("get_weather", {"city": "Zanz"}, CallStatus.CUT_OFF)], cut
    assert message.warnings
    _streams_to(params, cut, message)
    whole = params.parse(text)
    assert [c.status for c in whole.tool_calls] == [CallStatus.COMPLETE]


@pytest.mark.parametrize("template", [TAGGED, KIMI])
def test_an_argument_header_that_breaks_a_call_is_left_out_whole(template: str) -> None:
    """The second argument's header loses its name attribute (a sentinel inside the attribute's name): the call,
    committed at its header, is repaired with the argument before; the rest of it, from that header on, is in a
    warning — the header's text included, so nothing of the output is lost."""
    blocks = _load(template).analysis.blocks
    text = _turn(template, call_message([("get_weather", {"city": "Oslo", "days": 2})], "", ""))
    second = text.index(blocks.open + blocks.argument, text.index(blocks.open + blocks.argument) + 1)
    at = text.index(f" {blocks.key_attribute}=", second) + 2
    damaged = text[:at] + "zq1x" + text[at:]
    params = _chat(template)
    message = params.parse(damaged)
    found = [(c.name, json.loads(c.arguments), c.status) for c in message.tool_calls]
    assert found == [("get_weather", {"city": "Oslo"}, CallStatus.REPAIRED)], damaged
    rest = [w.message for w in message.warnings if "left out" in w.message]
    assert rest and "zq1x" in rest[0], message.warnings
    assert rest[0].index(blocks.open + blocks.argument) < rest[0].index("zq1x")  # (from the header's start)
    _streams_to(params, damaged, message)
