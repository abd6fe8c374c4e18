"""Pythonic tool calls (``get_weather(city="Paris", days=2)``) learned from the template, parsed in every layout.

Templates: MiniCPM3 and Gemma 3n (bundled), and synthetic ones (tests/data/templates) for the layouts no bundled
template renders: a ```python fence holding a list, a ``<|python_start|>`` list, a ``<function_calls>`` block with
one call per line. The expected analyses below are read off the template sources, not off the analysis.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.analysis.calls.pythonic import analyze_pythonic_format
from autoparser.analysis.model import ToolFormat, ToolFormatMode
from autoparser.build import build_parser
from autoparser.parser.calls.tools_pythonic import Wrapper, split_wrapper

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.grammar_check import all_accept, all_reject, verdicts
from ..support.helpers import calls_of, function_tool, rendered_call

SYNTHETIC = Path(__file__).parent.parent / "data" / "templates"
USER = [{"role": "user", "content": "What is the weather?"}]
WEATHER = function_tool(
    "get_weather",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "note": {"type": "string"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "none": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object"},
        },
        "required": ["city"],
    },
)
PING = function_tool("ping")
TOOLS = [WEATHER, PING]


def load(name: str) -> ChatTemplate:
    path = SYNTHETIC / f"{name}.jinja"
    return ChatTemplate.from_file(path) if path.is_file() else ChatTemplate.load(name)


def chat(name: str, **kwargs: Any) -> ChatParams:
    kwargs.setdefault("tools", TOOLS)
    kwargs.setdefault("parallel_tool_calls", True)
    return load(name).apply(USER, **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs})


# template -> (section start, section end, list, quote, keywords), as each template writes its calls
LEARNED: dict[str, tuple[str, str, bool, str, str]] = {
    "openbmb-MiniCPM3-4B": ("<|tool_call_start|>\n```python\n", "```\n<|tool_call_end|>", False, '"', "json"),
    "google-ai-edge-LiteRT-LM-Gemma3n": ("```tool_code\n", "```", False, "", ""),
    "pythonic-python-fence": ("```python\n", "```", True, "'", "python"),
    "pythonic-python-tags": ("<|python_start|>", "<|python_end|>", True, '"', "json"),
    "pythonic-function-calls": ("<function_calls>\n", "</function_calls>", False, '"', "json"),
}
TEMPLATES = sorted(LEARNED)
BARE_VALUES = {"google-ai-edge-LiteRT-LM-Gemma3n"}  # its template raises on non-string values


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_layout_is_learned(name: str) -> None:
    analysis = load(name).analysis
    fmt, values = analysis.tools.format, analysis.tools.pythonic
    assert analysis.format == "generic"
    assert fmt.mode is ToolFormatMode.PYTHONIC
    assert (fmt.section_start, fmt.section_end, fmt.tools_array_wrapped, values.quote, values.keywords) == LEARNED[name]
    # Only markup tokens are preserved, not the fences.
    assert all("`" not in token for token in analysis.preserved_tokens)


def test_preserved_tokens() -> None:
    # MiniCPM3's reasoning markers come from its prose (analysis/calls/prose.py), its call markers from the rendering.
    assert load("openbmb-MiniCPM3-4B").analysis.preserved_tokens == (
        "<|thought_start|>",
        "<|thought_end|>",
        "<|tool_call_start|>",
        "<|tool_call_end|>",
    )
    assert load("pythonic-python-tags").analysis.preserved_tokens == ("<|python_start|>", "<|python_end|>")
    assert load("google-ai-edge-LiteRT-LM-Gemma3n").analysis.preserved_tokens == ()


@pytest.mark.parametrize("name", TEMPLATES)
def test_apply_builds_a_parser_without_degrading(name: str) -> None:
    params = chat(name)
    assert params.warnings == ()
    assert params.grammar is not None


# ------------------------------------------------------------------------------------------ the template's own calls

TYPED: dict[str, Any] = {
    "city": "Paris, France (FR)",
    "note": 'He said "hi" it\'s\nfine <b>bold</b>, a) b',
    "days": 2,
    "ratio": -1.5e-3,
    "flag": True,
    "none": None,
    "tags": ["a b", "c,d"],
    "opts": {"x": [1, {"y": False, "z": None}], "s": "t)"},
}
STRINGS: dict[str, Any] = {"city": "Paris, France", "note": "two words, (and) more\nlines <x>"}


def arguments_for(name: str) -> dict[str, Any]:
    return STRINGS if name in BARE_VALUES else TYPED


def own_output(name: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """What the template writes for an assistant turn with these calls (after the generation prompt)."""
    tmpl = load(name)
    prompt = tmpl.apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False).prompt
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
    }
    full = tmpl.apply(
        [*USER, message], tools=TOOLS, add_generation_prompt=False, enable_thinking=True, parallel_tool_calls=False
    ).prompt
    assert full.startswith(prompt)
    text = full[len(prompt) :]
    return text[: text.rindex("<")] if text.rstrip().endswith(("<|im_end|>", "<end_of_turn>")) else text


@pytest.mark.parametrize("name", TEMPLATES)
def test_own_rendering_round_trips(name: str) -> None:
    arguments = arguments_for(name)
    output = own_output(name, [("get_weather", arguments), ("ping", {})])
    message = chat(name).parse(output)
    assert calls_of(message) == [("get_weather", arguments), ("ping", {})], output
    assert message.content == ""
    assert message.warnings == ()


@pytest.mark.parametrize("name", TEMPLATES)
def test_own_rendering_streams_like_parse(name: str) -> None:
    output = "Let me check.\n" + own_output(name, [("get_weather", arguments_for(name)), ("ping", {})])
    params = chat(name)
    expected, failures = check_parse(params, output, words=["Paris", "check"], expected_calls=2)
    assert not failures, failures
    assert expected is not None and len(expected.tool_calls) == 2
    start, end = LEARNED[name][:2]
    chunkings = [char_chunks(output), *(random_chunks(output, seed) for seed in range(4))]
    chunkings += marker_cut_chunkings(output, [*start.split(), *end.split(), "get_weather(", "ping()"])
    for pieces in chunkings:
        assert not check_stream(params, pieces, expected), pieces


def test_helpers_rendered_call_agrees() -> None:
    """The shared helper extracts the same call text (the loses-nothing suite relies on it)."""
    tmpl = load("openbmb-MiniCPM3-4B")
    text = rendered_call(tmpl, USER, TOOLS, "get_weather", {"city": "Oslo"})
    assert text is not None
    assert calls_of(chat("openbmb-MiniCPM3-4B").parse(text)) == [("get_weather", {"city": "Oslo"})]


# ------------------------------------------------------------------------------------------------ other layouts

ONE = 'get_weather(city="Paris", days=2)'
TWO = ["get_weather(city='Paris', days=2)", "ping()"]
EXPECTED_TWO = [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})]
LAYOUTS = {
    "minicpm3": "<|tool_call_start|>\n```python\n{lines}\n```\n<|tool_call_end|>",
    "gemma3n": "```tool_code\n{lines}\n```",
    "python fence": "```python\n{list}\n```",
    "plain fence": "```\n{lines}\n```",
    "python tags": "<|python_start|>{list}<|python_end|>",
    "python tags, no end": "<|python_start|>{list}",
    "function_calls": "<function_calls>\n{lines}\n</function_calls>",
    "lfm2": "<|tool_call_start|>{list}<|tool_call_end|>",
    "bare list": "{list}",
    "bare list, spaced": "[ {spaced} ]",
    "markers without fence": "<|tool_call_start|>\n{lines}\n<|tool_call_end|>",
    "fence in tags": "<|python_start|>```python\n{list}\n```<|python_end|>",
}


def layout(template: str, calls: list[str]) -> str:
    return template.format(lines="\n".join(calls), list="[" + ", ".join(calls) + "]", spaced=" ,\n ".join(calls))


@pytest.mark.parametrize("shape", sorted(LAYOUTS))
@pytest.mark.parametrize("name", TEMPLATES)
def test_common_layouts_parse_whatever_the_template_shows(name: str, shape: str) -> None:
    output = "Sure.\n" + layout(LAYOUTS[shape], TWO) + "\n"
    params = chat(name)
    message = params.parse(output)
    assert calls_of(message) == EXPECTED_TWO, output
    assert message.content == "Sure."
    assert message.warnings == ()
    assert not check_stream(params, random_chunks(output, 7), message)


@pytest.mark.parametrize("name", TEMPLATES)
def test_calls_separated_by_commas_or_semicolons_on_lines(name: str) -> None:
    for separator in (",\n", ";\n", "; "):
        message = chat(name).parse(f"<function_calls>\n{separator.join(TWO)}\n</function_calls>")
        assert calls_of(message) == EXPECTED_TWO, separator


@pytest.mark.parametrize("name", TEMPLATES)
def test_empty_call_lists_leave_no_residue(name: str) -> None:
    params = chat(name)
    for output in (
        "[]",
        " [ ]\n",
        "Nothing to call. []",
        "<|tool_call_start|>[]<|tool_call_end|>",
        "<|tool_call_start|><|tool_call_end|>",
        "<|tool_call_start|>\n```python\n```\n<|tool_call_end|>",
        "<|python_start|>[]<|python_end|>",
        "<function_calls>\n</function_calls>",
    ):
        message = params.parse(output)
        assert message.tool_calls == ()
        assert message.content == ("Nothing to call." if output.startswith("Nothing") else ""), output
        assert message.warnings == ()
        assert not check_stream(params, char_chunks(output), message), output


@pytest.mark.parametrize("name", TEMPLATES)
def test_lists_and_fences_in_prose_are_text(name: str) -> None:
    text = (
        "Arrays look like [1, 2] and [a, b]; call(me) or [ping] is text, and so is ping() in prose.\n"
        "```python\nprint(get_weather)\n```\n```js\nlet x = [f(1)];\n```"
    )
    params = chat(name)
    message = params.parse(text)
    assert message.content == text
    assert message.tool_calls == ()
    if name == "pythonic-python-fence":  # its calls come in ```python fences: one holding other code is reported
        assert [w.message for w in message.warnings] == ["'```python' did not start a valid tool call"]
    else:
        assert message.warnings == ()
    assert not check_stream(params, char_chunks(text), message)


@pytest.mark.parametrize("name", TEMPLATES)
def test_damaged_fences(name: str) -> None:
    """Fences with more backticks, or a tool fence that lost some, still hold calls; a tool fence with no valid call
    after it (cut off, or holding something else) is reported; the fence word in prose is text."""
    params = chat(name)
    for output in (
        "````tool_code\nping()\n````",
        "Checking.``tool_code\nping()\n```",
        "tool_code\nping()",
        "``````python\n[ping()]\n```",
    ):
        message = params.parse(output)
        assert [c.name for c in message.tool_calls] == ["ping"], output
        assert "ping" not in message.content
    for output in ("```tool_code", "```tool_code\nget_wea", "```tool_call\nx = 1\n```"):
        message, failures = check_parse(params, output, words=["x = 1"])
        assert not failures, failures
        assert message is not None and message.tool_calls == () and message.content == output
        assert message.warnings, output
    prose = "Put calls in a tool_code block."
    assert params.parse(prose).content == prose
    assert params.parse(prose).warnings == ()


# ------------------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ('"two words"', "two words"),
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'line\\nbreak'", "line\nbreak"),
        ('"a<b>c"', "a<b>c"),
        ('"a), (b, c=d"', "a), (b, c=d"),
        ('"\\u00e9\\t"', "é\t"),
    ],
)
@pytest.mark.parametrize("name", TEMPLATES)
def test_string_values(name: str, written: str, value: str) -> None:
    message = chat(name).parse(f"[get_weather(city={written})]")
    assert calls_of(message) == [("get_weather", {"city": value})]


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("days=2", 2),
        ("days=-17", -17),
        ("ratio=1.5e3", 1500.0),
        ("ratio=-0.25", -0.25),
        ("flag=True", True),
        ("flag=true", True),
        ("flag=False", False),
        ("flag=false", False),
        ("none=None", None),
        ("none=null", None),
        ("tags=['a', \"b\"]", ["a", "b"]),
        ("tags=[]", []),
        ("opts={'k': [1, None, true], \"n\": {'m': False}}", {"k": [1, None, True], "n": {"m": False}}),
        ("opts={}", {}),
    ],
)
@pytest.mark.parametrize("name", ["openbmb-MiniCPM3-4B", "pythonic-python-fence", "LFM2-8B-A1B", "LFM2.5-Instruct"])
def test_typed_values_in_both_spellings(name: str, written: str, value: Any) -> None:
    key = written.split("=", 1)[0]
    message = chat(name).parse(f"<|tool_call_start|>[get_weather(city='x', {written})]<|tool_call_end|>")
    assert calls_of(message) == [("get_weather", {"city": "x", key: value})]
    assert message.content == ""


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("city=Paris", {"city": "Paris"}),
        ("city=Paris, France, days=2", {"city": "Paris, France", "days": 2}),
        ("city=a (b), c, days=2", {"city": "a (b), c", "days": 2}),
        ("city=2, days=2", {"city": "2", "days": 2}),  # city takes strings: written bare, 2 is the string "2"
        ("city=True", {"city": "True"}),
        ("city=two\nlines", {"city": "two\nlines"}),
        ("city='quoted', flag=True, none=None", {"city": "quoted", "flag": True, "none": None}),
        ("city=x, note=2nd street", {"city": "x", "note": "2nd street"}),
        ("city=x, ratio=2.5, tags=['a']", {"city": "x", "ratio": 2.5, "tags": ["a"]}),
        ("city=, days=1", {"city": "", "days": 1}),
    ],
)
def test_bare_values_where_the_template_writes_them(written: str, expected: dict[str, Any]) -> None:
    name = "google-ai-edge-LiteRT-LM-Gemma3n"
    output = f"```tool_code\nget_weather({written})\nping()\n```"
    params = chat(name)
    message = params.parse(output)
    assert calls_of(message) == [("get_weather", expected), ("ping", {})], output
    assert message.warnings == ()
    assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("junk", ["x", "\udfffzq29kxq", " and more", "), (x"])
def test_a_bare_value_does_not_run_into_the_next_lines_call(junk: str) -> None:
    """Bare text may span lines, but a damaged call end (text after its ``)``) must not turn the call on the next line
    into text of its value: the first call is broken (warned), and the second is not silently its argument."""
    name = "google-ai-edge-LiteRT-LM-Gemma3n"
    output = f"```tool_code\nget_weather(city=Zanzibar){junk}\nget_weather(city=ZNZ)\n```"
    params = chat(name)
    message, failures = check_parse(params, output, words=["Zanzibar", "ZNZ"], expected_calls=2)
    assert not failures, failures
    assert message is not None and message.warnings
    assert "ZNZ" not in message.tool_calls[0].arguments
    assert not check_stream(params, char_chunks(output), message)


def test_bare_values_only_where_the_template_writes_them() -> None:
    """MiniCPM3 quotes its strings: ``city=Paris`` is not a value there. The call committed at ``city=`` (a stream
    showed it), so it stays as far as it went (no argument reads: ``{}``), repaired; the rest of the call, up to its
    ``)``, is left out with a warning, not content, and nothing is lost."""
    output = "<|tool_call_start|>\n```python\nget_weather(city=Paris)\n```\n<|tool_call_end|>"
    params = chat("openbmb-MiniCPM3-4B")
    message, failures = check_parse(params, output, words=["Paris"])
    assert not failures, failures
    assert message is not None
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("get_weather", "{}", "repaired")]
    assert message.content == ""
    assert any("Paris)" in w.message for w in message.warnings)
    assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("city", ["Paris", "Tokyo", "Nairobi", "Frankfurt", "True_north", "Timbuktu"])
def test_an_unquoted_value_is_left_out_whole(city: str) -> None:
    """Where the template quotes strings, ``city=Tokyo`` is no value; the warnings hold the word whole, even one that
    starts like ``True``, ``None`` or ``False`` (the call breaks before the word, not after its ``T``)."""
    output = f"<|tool_call_start|>\n```python\nget_weather(city={city})\n```\n<|tool_call_end|>"
    params = chat("openbmb-MiniCPM3-4B")
    message, failures = check_parse(params, output, words=[city])
    assert not failures, failures
    assert message is not None
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("get_weather", "{}", "repaired")]
    assert any(f"{city})" in w.message for w in message.warnings), message.warnings
    assert not check_stream(params, char_chunks(output), message)


# ---------------------------------------------------------------------------------- truncated and malformed output


@pytest.mark.parametrize("name", [*TEMPLATES, "LFM2-8B-A1B", "LFM2.5-Instruct"])
def test_every_truncation_keeps_everything(name: str) -> None:
    output = (
        "I will check.\n<|tool_call_start|>[get_weather(city='Zanzibar town', days=3, tags=['Qux'], "
        "opts={'deep': [True, null]}), ping()]<|tool_call_end|>\nDone, Kthx."
    )
    params = chat(name)
    words = ["check", "Zanzibar", "town", "Qux", "deep", "Done", "Kthx"]
    for cut in range(1, len(output) + 1):
        prefix = output[:cut]
        message, failures = check_parse(params, prefix, words=words)
        assert not failures, (prefix, failures)
        assert message is not None
        assert "<|tool_call_start|>" not in message.content or message.warnings, prefix
    for cut in (30, 60, 95, 110):
        assert not check_stream(params, char_chunks(output[:cut]))


@pytest.mark.parametrize("name", TEMPLATES)
def test_cut_inside_a_call_keeps_it_as_written(name: str) -> None:
    output = '<|tool_call_start|>[get_weather(city="Pari'
    message = chat(name).parse(output)
    assert [c.name for c in message.tool_calls] == ["get_weather"]
    assert "Pari" in message.tool_calls[0].arguments
    assert message.warnings
    partial = chat(name).parse(output, partial=True)
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get_weather", "")]  # held until complete
    assert partial.content == ""


@pytest.mark.parametrize(
    ("calls", "in_prose"),
    [
        ("[launch_rocket(target='moon')]", True),  # a tool the request does not offer
        ("[get_weather('Paris')]", True),  # positional arguments
        ("[get_weather city='Paris']", False),  # no parenthesis (in prose: just text)
        ("[get_weather=Paris]", False),
    ],
)
@pytest.mark.parametrize("name", ["openbmb-MiniCPM3-4B", "pythonic-python-tags", "LFM2.5-Instruct"])
def test_malformed_calls_are_content_with_a_warning(name: str, calls: str, in_prose: bool) -> None:
    """Malformed before the call committed (at ``name(keyword=``): the whole text stays content, with a warning
    where it was wrapped or looked like a call of ours."""
    params = chat(name)
    outputs = [f"<|tool_call_start|>{calls}<|tool_call_end|> Then more.", f"Maybe {calls} now."]
    for output in outputs if in_prose else outputs[:1]:
        message, failures = check_parse(params, output, words=["moon", "Paris", "more", "now"])
        assert not failures, failures
        assert message is not None
        assert message.tool_calls == ()
        assert message.content == output
        assert message.warnings, output
        assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("name", [n for n in TEMPLATES if n not in BARE_VALUES])  # (there `city=` is "")
def test_a_call_broken_after_it_committed_stays_as_far_as_it_went(name: str) -> None:
    output = "<|tool_call_start|>[ping(), get_weather(city=)]<|tool_call_end|> Bye."
    params = chat(name)
    message, failures = check_parse(params, output, words=["Bye"])
    assert not failures, failures
    assert message is not None
    calls = [(c.name, c.arguments, c.status) for c in message.tool_calls]
    assert calls == [("ping", "{}", "complete"), ("get_weather", "{}", "repaired")]
    assert message.content == "Bye."
    assert message.warnings
    assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_broken_call_after_a_good_one(name: str) -> None:
    """The first call committed (a stream showed it): it stays; what broke is content, the wrapper is consumed."""
    output = "<|tool_call_start|>[get_weather(city='Paris'), launch(x=1)]<|tool_call_end|> ok"
    params = chat(name)
    message = params.parse(output)
    assert calls_of(message) == [("get_weather", {"city": "Paris"})]
    assert "launch(x=1)" in message.content and "ok" in message.content
    assert "<|tool_call" not in message.content
    assert message.warnings
    assert not check_stream(params, char_chunks(output), message)


# --------------------------------------------------------------------------------------------------- LFM2 / LFM2.5


@pytest.mark.parametrize("name", ["LFM2-8B-A1B", "LFM2.5-Instruct"])
def test_lfm_wrapped_list_consumes_its_markers(name: str) -> None:
    """Real LFM2.5 output wraps the list in LFM2's markers although its template never shows them."""
    output = '<think>Weather.</think>Checking.<|tool_call_start|>[get_weather(city="Paris", days=2)]<|tool_call_end|>'
    params = chat(name, reasoning_format="auto")
    message = params.parse(output)
    assert calls_of(message) == [("get_weather", {"city": "Paris", "days": 2})]
    assert message.content == "Checking."
    assert message.reasoning_content == "Weather."
    assert message.warnings == ()
    for pieces in [char_chunks(output), *marker_cut_chunkings(output, ["<|tool_call_start|>", "<|tool_call_end|>"])]:
        assert not check_stream(params, pieces, message)


@pytest.mark.parametrize("name", ["LFM2-8B-A1B", "LFM2.5-Instruct"])
def test_lfm_empty_list_is_no_call(name: str) -> None:
    params = chat(name)
    for output in ("[]", "<|tool_call_start|>[]<|tool_call_end|>", "The answer is 4.\n<|tool_call_start|>[]"):
        message = params.parse(output)
        assert message.tool_calls == ()
        assert message.content == ("The answer is 4." if output.startswith("The") else ""), output
        assert message.warnings == ()


# ----------------------------------------------------------------------------- JSON calls inside a pythonic wrapper

JSON_TEMPLATES = ["LFM2-8B-A1B", "LFM2.5-Instruct", *TEMPLATES]
JSON_CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'
JSON_PING = '{"name": "ping", "arguments": {}}'
JSON_CASES = {
    # a list of JSON calls in LFM2's markers, as LFM2 / LFM2.5 models write them
    "list": (f"<|tool_call_start|>[{JSON_CALL}]<|tool_call_end|>", [("get_weather", {"city": "Paris", "days": 2})]),
    "two": (
        f"<|tool_call_start|>[{JSON_CALL}, {JSON_PING}]<|tool_call_end|>",
        [("get_weather", {"city": "Paris", "days": 2}), ("ping", {})],
    ),
    "object": (f"<|tool_call_start|>{JSON_CALL}<|tool_call_end|>", [("get_weather", {"city": "Paris", "days": 2})]),
    "spaced": (
        f"<|tool_call_start|>\n[\n  {JSON_CALL}\n]\n<|tool_call_end|>",
        [("get_weather", {"city": "Paris", "days": 2})],
    ),
    "string arguments": (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}]<|tool_call_end|>',
        [("get_weather", {"city": "Paris"})],
    ),
    "other wrapper": (f"<|python_start|>[{JSON_CALL}]<|python_end|>", [("get_weather", {"city": "Paris", "days": 2})]),
    "tool fence": (f"```tool_code\n[{JSON_CALL}]\n```", [("get_weather", {"city": "Paris", "days": 2})]),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
@pytest.mark.parametrize("name", JSON_TEMPLATES)
def test_json_calls_inside_a_wrapper(name: str, case: str) -> None:
    """The wrapper says calls follow: a model trained on JSON calls writes the envelope in it, and those are calls,
    wrapper consumed, no warning (they were text with a warning before)."""
    calls, expected = JSON_CASES[case]
    output = "Let me check.\n" + calls
    params = chat(name)
    message = params.parse(output)
    assert calls_of(message) == expected
    assert message.content == "Let me check."
    assert message.warnings == ()
    markers = ["<|tool_call_start|>", "<|tool_call_end|>", "<|python_start|>", "```"]
    for pieces in [char_chunks(output), random_chunks(output, 3), *marker_cut_chunkings(output, markers)]:
        assert not check_stream(params, pieces, message)


@pytest.mark.parametrize("name", JSON_TEMPLATES)
def test_json_calls_inside_a_wrapper_cut_anywhere(name: str) -> None:
    output = f"I will check.\n<|tool_call_start|>[{JSON_CALL}, {JSON_PING}]<|tool_call_end|>"
    params = chat(name)
    words = ["check", "Paris"]
    for cut in range(1, len(output) + 1):
        prefix = output[:cut]
        message, failures = check_parse(params, prefix, words=words, call_markers=["<|tool_call_start|>"])
        assert not failures, (prefix, failures)
        assert message is not None
    for cut in (40, 70, 90):
        assert not check_stream(params, char_chunks(output[:cut]))


@pytest.mark.parametrize("name", ["LFM2-8B-A1B", "LFM2.5-Instruct", "openbmb-MiniCPM3-4B"])
def test_json_calls_outside_a_wrapper_are_text(name: str) -> None:
    """Bare, or in a code fence that holds code: an answer showing the JSON format is not a call."""
    params = chat(name)
    for output in (f"The format is [{JSON_CALL}].", f"Like this:\n```python\n[{JSON_CALL}]\n```"):
        message = params.parse(output)
        assert message.tool_calls == ()
        assert message.content == output
        assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("name", ["LFM2-8B-A1B", "LFM2.5-Instruct", "openbmb-MiniCPM3-4B"])
def test_json_calls_inside_a_wrapper_that_do_not_parse(name: str) -> None:
    """An undeclared tool or a body that is no call: the wrapper and its text stay content, with a warning."""
    params = chat(name)
    for body in ('[{"name": "launch_rocket", "arguments": {"target": "moon"}}]', '[{"city": "Paris"}]'):
        output = f"<|tool_call_start|>{body}<|tool_call_end|>"
        message = params.parse(output)
        assert message.tool_calls == ()
        assert message.content == output
        assert message.warnings
        assert not check_stream(params, char_chunks(output), message)


@pytest.mark.parametrize("name", JSON_TEMPLATES)
def test_an_empty_list_inside_a_wrapper_leaves_nothing(name: str) -> None:
    params = chat(name)
    for output in (
        "<|tool_call_start|>[]<|tool_call_end|>",
        "<|tool_call_start|>[ ]<|tool_call_end|>\n",
        "<|tool_call_start|>\n[]\n<|tool_call_end|>",
        "The answer is 4.\n<|tool_call_start|>[]<|tool_call_end|>",
        "The answer is 4.<|tool_call_start|>[]<|tool_call_end|><|im_end|>",
    ):
        message = params.parse(output)
        assert message.tool_calls == ()
        assert message.content == ("The answer is 4." if output.startswith("The") else ""), output
        assert message.warnings == ()
        marked = marker_cut_chunkings(output, ["<|tool_call_start|>", "<|tool_call_end|>"])
        for pieces in [char_chunks(output), *marked]:
            assert not check_stream(params, pieces, message), output


# ------------------------------------------------------------------------------------------------------ grammars

GRAMMAR_TOOLS = [
    function_tool(
        "get_weather",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "flag": {"type": "boolean"}},
            "required": ["city", "days"],
        },
    ),
    PING,
]


def grammar_chat(name: str, **kwargs: Any) -> ChatParams:
    return load(name).apply(
        USER, tools=GRAMMAR_TOOLS, **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs}
    )


def learned_layout(name: str, calls: list[str]) -> str:
    start, end, listed, _, _ = LEARNED[name]
    body = "[" + ", ".join(calls) + "]" if listed else "\n".join(calls) + "\n"
    return start + body + end


def test_grammar_triggers_are_the_learned_wrapper() -> None:
    assert [t.value for t in grammar_chat("openbmb-MiniCPM3-4B").grammar_triggers] == ["<|tool_call_start|>"]
    assert [t.value for t in grammar_chat("google-ai-edge-LiteRT-LM-Gemma3n").grammar_triggers] == ["```tool_code"]
    assert [t.value for t in grammar_chat("pythonic-python-fence").grammar_triggers] == ["```python"]
    assert [t.value for t in grammar_chat("pythonic-function-calls").grammar_triggers] == ["<function_calls>"]


@pytest.mark.parametrize("choice", ["auto", "required"])
@pytest.mark.parametrize("name", TEMPLATES)
def test_grammar_accepts_the_learned_layout(name: str, choice: str) -> None:
    quote = LEARNED[name][3] or '"'
    output = "Checking.\n" + learned_layout(name, [f"get_weather(city={quote}Paris{quote}, days=2)"])
    params = grammar_chat(name, tool_choice=choice)
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize("name", TEMPLATES)
def test_grammar_parallel_calls_only_when_enabled(name: str) -> None:
    output = learned_layout(name, ["get_weather(city='Paris', days=2)", "ping()"])
    assert all_accept(grammar_chat(name, parallel_tool_calls=True), output)
    assert all_reject(grammar_chat(name, tool_choice="required"), output)


@pytest.mark.parametrize(
    ("label", "call"),
    [
        ("unknown tool", "launch(city='Paris', days=2)"),
        ("missing required", "get_weather(city='Paris')"),
        ("wrong type", "get_weather(city='Paris', days='two')"),
        ("unknown argument", "get_weather(city='Paris', days=2, hours=3)"),
        ("positional", "get_weather('Paris', days=2)"),
        ("unclosed string", "get_weather(city='Paris, days=2)"),
    ],
)
@pytest.mark.parametrize("name", TEMPLATES)
def test_grammar_rejects_invalid_calls(name: str, label: str, call: str) -> None:
    params = grammar_chat(name, tool_choice="required")
    output = learned_layout(name, [call])
    assert all_reject(params, output), (label, verdicts(params, output))


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("openbmb-MiniCPM3-4B", "flag=true", "flag=True"),  # tojson values
        ("pythonic-python-tags", "flag=false", "flag=False"),
        ("pythonic-python-fence", "flag=True", "flag=true"),  # Python values
        ("google-ai-edge-LiteRT-LM-Gemma3n", "flag=True", "flag=yes"),  # never rendered: either spelling
        ("google-ai-edge-LiteRT-LM-Gemma3n", "flag=false", "flag=1"),
    ],
)
def test_grammar_follows_the_keyword_spelling(name: str, good: str, bad: str) -> None:
    params = grammar_chat(name, tool_choice="required")
    make = lambda flag: learned_layout(name, [f"get_weather(city='Paris', days=2, {flag})"])  # noqa: E731
    assert all_accept(params, make(good)), verdicts(params, make(good))
    assert all_reject(params, make(bad)), verdicts(params, make(bad))


def test_grammar_bare_strings_only_where_the_template_writes_them() -> None:
    gemma = grammar_chat("google-ai-edge-LiteRT-LM-Gemma3n", tool_choice="required")
    output = learned_layout("google-ai-edge-LiteRT-LM-Gemma3n", ["get_weather(city=Paris, days=2)"])
    assert all_accept(gemma, output), verdicts(gemma, output)
    assert all_reject(gemma, output.replace("days=2", "days=two"))  # integers stay integers
    minicpm = grammar_chat("openbmb-MiniCPM3-4B", tool_choice="required")
    assert all_reject(minicpm, learned_layout("openbmb-MiniCPM3-4B", ["get_weather(city=Paris, days=2)"]))


# ------------------------------------------------------------------------------------- layouts no template renders


def test_wrapper_detection_from_rendered_calls() -> None:
    render = 'Calls:\n[FFF_FIRST_FUN_F(AA_ARG_FST_AA="XXXX", BB_ARG_SND_BB="YYYY")]\nEnd.'
    fmt = analyze_pythonic_format(render)
    assert fmt is not None
    assert (fmt.section_start, fmt.section_end, fmt.tools_array_wrapped) == ("Calls:\n", "End.", True)
    lone = analyze_pythonic_format("[FFF_FIRST_FUN_F(AA_ARG_FST_AA=XXXX)\n")  # a bracket without its pair
    assert lone is not None and (lone.section_start, lone.tools_array_wrapped) == ("[", False)
    assert analyze_pythonic_format('<function=FFF_FIRST_FUN_F>{"AA_ARG_FST_AA": "XXXX"}') is None
    assert analyze_pythonic_format("FFF_FIRST_FUN_F(XXXX)") is None  # positional: not keyword arguments


def test_split_wrapper() -> None:
    split = lambda start, end: split_wrapper(ToolFormat(ToolFormatMode.PYTHONIC, start, end))  # noqa: E731
    assert split("<|tool_call_start|>\n```python\n", "```\n<|tool_call_end|>") == Wrapper(
        "<|tool_call_start|>", "<|tool_call_end|>", "python"
    )
    assert split("```tool_code\n", "```") == Wrapper(fence="tool_code")
    assert split("<function_calls>\n", "</function_calls>") == Wrapper("<function_calls>", "</function_calls>")
    assert split("Action:\n", "") == Wrapper(irregular=(("Action:",), ()))
    assert split("", "") == Wrapper() and not Wrapper().opens


def with_layout(start: str, end: str, listed: bool) -> ChatParams:
    """MiniCPM3 with another learned layout (no bundled template has it)."""
    tmpl = load("openbmb-MiniCPM3-4B")
    analysis = tmpl.analysis
    fmt = ToolFormat(ToolFormatMode.PYTHONIC, start, end, tools_array_wrapped=listed)
    changed = dataclasses.replace(analysis, tools=dataclasses.replace(analysis.tools, format=fmt))
    params = tmpl.apply(USER, tools=TOOLS, parallel_tool_calls=True, enable_thinking=True)
    request = params._generated.request
    return dataclasses.replace(params, _generated=build_parser(changed, request))


def test_irregular_learned_wrapper() -> None:
    params = with_layout("Action:\n", "", listed=False)
    output = "Let me see.\nAction:\nget_weather(city='Paris')\nping()"
    message = params.parse(output)
    assert calls_of(message) == [("get_weather", {"city": "Paris"}), ("ping", {})]
    assert message.content == "Let me see."
    assert not check_stream(params, char_chunks(output), message)
    broken = params.parse("Action: none needed.")
    assert broken.content == "Action: none needed." and broken.warnings


def test_bare_lines_learned() -> None:
    """A template that writes calls bare, one per line: a tool's name and "(" start them anywhere."""
    params = with_layout("", "", listed=False)
    output = "Checking.\nget_weather(city='Paris')\nping()"
    message = params.parse(output)
    assert calls_of(message) == [("get_weather", {"city": "Paris"}), ("ping", {})]
    assert message.content == "Checking."
    assert params.parse("Use get_weather(Paris) later.").tool_calls == ()
    assert not check_stream(params, char_chunks(output), message)
