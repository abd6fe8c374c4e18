"""Never silent: a call or reasoning marker left in a reply's content is a warning, never a quiet answer — and prose
that merely quotes JSON or mentions a marker is no warning (reading/leftovers.py, docs/parsing.md "Never silent").

The sweep renders every bundled template's call in its own markup and gives it to every other template's parser:
each comes back as a call or with a warning about the markup. The converse writes prose answers the way each
template writes an answer: none warns. Synthetic templates spell the markers differently (``<x:act>``,
``<x:ponder>``) so that nothing hangs on the well-known list.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import ParseError
from autoparser.parser.leftovers import WELL_KNOWN_CALL_MARKERS
from tests.robustness.promises import char_chunks, check_stream, random_chunks
from tests.support.outputs import CONTENT, TOOLS, USER, chat, outputs, render_calls
from tests.support.sample import sampled

TEMPLATES = bundled_templates()
PARIS = ("get_weather", {"city": "Paris"})


def _applicable(template: str) -> bool:
    try:
        chat(template)
    except Exception:  # a template that cannot render the request at all (ShieldGemma wants a guideline)
        return False
    return True


PARSERS = [t for t in sampled() if _applicable(t)]  # the per-template cases: the sample's templates


@functools.cache
def _renders() -> dict[str, str]:
    """Every bundled template's text for one call of get_weather (where it renders one)."""
    found = {}
    for template in TEMPLATES:
        text = render_calls(template, [PARIS]) if _applicable(template) else None
        if text is not None:
            found[template] = text
    return found


def _offers_tools(template: str) -> bool:
    return bool(chat(template)._generated.request.tools)


def test_the_sweep_covers_the_families() -> None:
    """(Guards the sweep below: most templates render calls, in many spellings.)"""
    renders = _renders()
    assert len(renders) >= 70
    assert len({text.lstrip()[:6] for text in renders.values()}) >= 20


@pytest.mark.parametrize("parser", PARSERS)
def test_calls_in_any_family_markup_come_back_as_calls_or_warn(parser: str) -> None:
    """Every template's call markup given to this template's parser: a call, or a warning at or before the place
    where the call's name stands — never silently content (or reasoning). A parser whose request declares no tools
    (the template cannot render them) cannot know a bare JSON call from JSON: only markup counts there."""
    params = chat(parser)
    offered = _offers_tools(parser)
    silent = []
    for source, text in _renders().items():
        if not offered and not any(marker in text for marker in WELL_KNOWN_CALL_MARKERS):
            continue
        message = params.parse(text)
        if message.tool_calls:
            continue
        name_at = text.index(PARIS[0])
        if not any(w.position <= name_at for w in message.warnings):
            silent.append((source, text[:80], message.warnings))
    assert not silent, silent


@pytest.mark.parametrize("parser", ["Qwen-Qwen3-0.6B", "mistralai-Mistral-Nemo-Instruct-2407", "Cohere2MoE"])
def test_the_stream_ends_with_the_same_warnings(parser: str) -> None:
    params = chat(parser)
    for text in list(_renders().values())[::5]:
        expected = params.parse(text)
        for pieces in (char_chunks(text), random_chunks(text, 3)):
            assert not check_stream(params, pieces, expected), text


# --- the converse: prose ---------------------------------------------------------------------------------------------

PROSE = [
    'Here is the record:\n```json\n{"name": "Alice", "age": 30, "tags": ["a", "b"], "ok": true, "x": null}\n```',
    'Inline JSON {"a": 1, "b": [2, 3]} works too.',
    '{"name": "Alice", "age": 3}',
    "The word tool_call appears in this sentence, and so do function_call and TOOL_CALLS.",
    "Some models write <think> before they answer; this one did not.",
    "Wrap a call in `<tool_call>` tags, or start it with `[TOOL_CALLS]` or `<|python_tag|>`.",
    "Call `get_weather(city)` for the forecast; ping() in a sentence is prose, and so is get().",
    "Arrays like [1, 2] and calls like f(x) are fine.\n```python\nprint(get_weather)\n```",
]


def _answer_frame(template: str) -> str | None:
    """The template's own plain answer (the round trip's "content" case), where it reads back as that answer."""
    frame = next((o.text for o in outputs(template) if o.case == "content"), None)
    if frame is None or chat(template).parse(frame).content != CONTENT:
        return None
    return frame


# The analysis reads `<think>\n\n` as this template's answer wrapper (ContentMode.ALWAYS_WRAPPED: the template writes
# it before every answer), so `<think>` in the middle of an answer opens a wrapped answer and is consumed as markup.
_WRAPPER_MISREAD = pytest.mark.xfail(
    strict=True, reason="the answer wrapper learned as <think> eats a mid-answer <think>"
)
PROSE_TEMPLATES = [pytest.param(t, marks=_WRAPPER_MISREAD) if t == "NVIDIA-Nemotron-Nano-v2" else t for t in PARSERS]


@pytest.mark.parametrize("template", PROSE_TEMPLATES)
def test_prose_quoting_json_or_naming_markers_does_not_warn(template: str) -> None:
    frame = _answer_frame(template)
    if frame is None:
        pytest.skip("the template's plain answer does not read back yet (the round trip says why)")
    params = chat(template)
    for prose in PROSE:
        text = frame.replace(CONTENT, prose)
        message = params.parse(text, strict=True)
        assert message.content == prose and not message.tool_calls, (prose, message)


def test_llama_3_2_answer_quoting_json_is_no_failed_call() -> None:
    """Llama 3.x calls have no marker: a bare object is a call only in the call's shape. JSON the answer quotes is
    text, without a warning; an object after the Llama 3 call token, or in the call's shape with a broken body,
    still warns."""
    params = ChatTemplate.load("meta-llama-Llama-3.2-3B-Instruct").apply(USER, tools=TOOLS)
    for text in (
        'Here is the JSON:\n```json\n{"a": 1}\n```',
        'Sure: {"a": 1, "b": [2]} is the object.',
        '{"name": "Alice", "age": 3}',
        '[{"x": 1}] and {"y": [2]}',
    ):
        message = params.parse(text, strict=True)
        assert message.content == text and not message.tool_calls
    for text in ('<|python_tag|>{"a": 1}', '{"name": "get_weather", "parameters": {"city": }}'):
        with pytest.raises(ParseError):
            params.parse(text, strict=True)


# --- the rules, on synthetic spellings -------------------------------------------------------------------------------

SYNTHETIC = """\
{%- for message in messages -%}
    {{- '## ' + message.role + '\\n' -}}
    {%- if message.role == 'assistant' and message.reasoning_content -%}
        {{- '<x:ponder>' + message.reasoning_content + '</x:ponder>' -}}
    {%- endif -%}
    {{- message.content if message.content is string else '' -}}
    {%- for call in message.tool_calls or [] -%}
        {%- set call = call.function if call.function is defined else call -%}
        {%- set args = call.arguments if call.arguments is string else call.arguments|tojson -%}
        {{- '<x:act>' + call.name + '|' + args + '</x:act>' -}}
    {%- endfor -%}
    {{- '\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '## assistant\\n' -}}{%- endif -%}
"""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> ChatTemplate:
    path = Path(tmp_path_factory.mktemp("never-silent")) / "x-act.jinja"
    path.write_text(SYNTHETIC)
    return ChatTemplate.from_file(str(path))


def test_synthetic_template_learns_its_markers(synthetic: ChatTemplate) -> None:
    params = synthetic.apply(USER, tools=TOOLS, reasoning_format="auto")
    message = params.parse('<x:ponder>plan</x:ponder><x:act>get_weather|{"city": "Paris"}</x:act>', strict=True)
    assert message.reasoning_content == "plan" and [c.name for c in message.tool_calls] == ["get_weather"]
    assert params._generated.leftovers.reasoning == ("<x:ponder>", "</x:ponder>")


def _warned(params, text: str) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    message = params.parse(text)
    stream = params.stream()
    deltas = [d for piece in text for d in stream.feed(piece)] + stream.finish()
    streamed = [w for d in deltas for w in d.warnings]
    assert sorted(map(str, streamed)) == sorted(map(str, message.warnings)), (streamed, message.warnings)
    return [(w.position, w.message) for w in message.warnings]


def test_learned_markers_left_in_content_warn(synthetic: ChatTemplate) -> None:
    params = synthetic.apply(USER, tools=TOOLS, reasoning_format="auto")
    # A reasoning closer without its opener: the reasoning was not read (or was, with a warning of its own).
    text = "Answer first.</x:ponder>Then more."
    assert any(at == text.index("</x:") and "'</x:ponder>'" in m for at, m in _warned(params, text))
    # A second reasoning block that opens the content (after one the parser read) is news as well.
    warned = _warned(params, "<x:ponder>a</x:ponder>\n<x:ponder>b</x:ponder>Answer.")
    assert [m.split(";")[0] for _, m in warned] == ["reasoning marker '<x:ponder>' did not open a reasoning block"]
    # The opener in the middle of an answer, quoted or not, and a pair after text: prose.
    assert _warned(params, "Models write <x:ponder> first, and `</x:ponder>` after.") == []
    # Another family's markup: named, where it stands.
    text = 'Checking. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    warned = _warned(params, text)
    assert [(at, m.split(";")[0]) for at, m in warned] == [
        (text.index("<tool_call>"), "call marker '<tool_call>' did not start a tool call")
    ]


def test_declared_tools_in_call_position_warn(synthetic: ChatTemplate) -> None:
    params = synthetic.apply(USER, tools=TOOLS)
    for text, name in (
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', "get_weather"),
        ('[{"get": {"city": "Paris"}}]', "get"),
        ('Sure.\n[ping(), get(city="Oslo")]', "ping"),
        ('get_weather\n{"city": "Paris"}', "get_weather"),
        ('{"tool_name": "get", "parameters": {}}', "get"),
    ):
        warned = _warned(params, text)
        assert [m.split(" written")[0] for _, m in warned] == [f"tool {name!r}"], text
        with pytest.raises(ParseError):
            params.parse(text, strict=True)
    for text in (
        'The tool "get_weather" answered {"city": "Paris"}.',
        "Use get_weather(city) or ping() whenever you like.",
        '{"name": "get_weather_forecast", "arguments": {}}',
        "`get_weather(city='Paris')` would be the call.",
    ):
        assert _warned(params, text) == [], text


def test_an_unclosed_reasoning_block_holding_a_call_warns(synthetic: ChatTemplate) -> None:
    """A reply that never closed its reasoning block and wrote a call in it: the call was the reply. A closed block
    that discusses markup is thinking."""
    params = synthetic.apply(USER, tools=TOOLS, reasoning_format="auto")
    warned = _warned(params, '<x:ponder>plan <tool_call>{"name": "get", "arguments": {}}</tool_call>')
    kept = "call marker '<tool_call>' did not start a tool call; it was kept in the unclosed reasoning"
    assert [m for _, m in warned] == [kept]
    assert _warned(params, "<x:ponder>I could write <tool_call> here.</x:ponder>No.") == []
    # Closed where the output ends (no answer after it), with or without the end of the turn: closed all the same.
    for tail in ("", "\n", "\n\n"):
        assert _warned(params, f"<x:ponder>I could write <tool_call> here.</x:ponder>{tail}") == []


@pytest.mark.parametrize("template", ["Spark2.5", "Qwen-Qwen3-0.6B", "MiniMax-M2"])
def test_a_reasoning_block_the_output_ends_with_is_closed(template: str) -> None:
    """The block the prompt opened (or the model's own), closed by the last thing the model wrote: thinking that
    mentions a call marker, not a call. Left open, the same text warns."""
    params = ChatTemplate.load(template).apply(USER, tools=TOOLS, enable_thinking=True)
    opener = "" if params.generation_prompt.rstrip().endswith(params.thinking_start_tag) else params.thinking_start_tag
    thought = f"{opener}I would write <tool_call> there."
    assert _warned(params, thought + params.thinking_end_tag) == []
    assert [m.split(";")[0] for _, m in _warned(params, thought)] == [
        "call marker '<tool_call>' did not start a tool call"
    ]


def test_no_scan_of_reasoning_markers_when_reasoning_stays_inline(synthetic: ChatTemplate) -> None:
    params = synthetic.apply(USER, tools=TOOLS, reasoning_format="none")
    assert _warned(params, "<x:ponder>plan</x:ponder>Answer.") == []


def test_strict_raises_on_the_first_leftover(synthetic: ChatTemplate) -> None:
    params = synthetic.apply(USER, tools=TOOLS)
    with pytest.raises(ParseError) as raised:
        params.parse("Sure. [TOOL_CALLS]get_weather[ARGS]{}", strict=True)
    assert raised.value.pos == len("Sure. ")
