"""What models write beyond their template's bytes (issue 24, capability 2g): parsed and streamed.

* a tagged value whose end tag the model dropped ends at the next argument's head (or the call's end): the call is
  ``repaired``, with a warning — in every tagged format (the generic one: Qwen3-Coder, Qwen3.5, GLM, Seed-OSS,
  MiniMax-M2, Nemotron 3, StepFun, ...; DSML; MiniMax-M3), and in synthetic spellings;
* a tagged value that fits none of its schema's types is kept as written, ``repaired``, with a warning;
* a pythonic string with unescaped quotes ends at the quote its argument's end follows (LFM2.5-VL writes them so:
  normal there; a repair elsewhere), and pythonic arguments separated by a space only are read;
* a marker word the template's prose prescribes (in several wordings) is consumed where the renders write none;
* Command R+'s one-line ``Action: ```json [...]``` `` is read as calls.

Every expected value below is written from the rendered call, not from the parser's output.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.check.recognizer import accepts
from autoparser.parser.markers import core

from ..robustness.promises import char_chunks, check_parse, check_stream, random_chunks
from ..support.grammar_check import all_accept, all_reject, full_verdicts
from ..support.helpers import function_tool, rendered_call
from ..support.sample import sampled

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
USER = [{"role": "user", "content": "What is the weather?"}]
WEATHER = function_tool(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
    "Weather lookup",
)


def load(name: str) -> ChatTemplate:
    path = TEMPLATES / f"{name}.jinja"
    return ChatTemplate.from_file(path) if path.is_file() else ChatTemplate.load(name)


def chat(name: str, tools: list[dict[str, Any]] | None = None) -> ChatParams:
    return load(name).apply(USER, tools=tools or [WEATHER], enable_thinking=True)


def assert_streams(params: ChatParams, text: str) -> None:
    """Streamed one character at a time and in random chunks, the message ends equal to parse() (and the parse
    keeps its promises: nothing lost, usable calls)."""
    message, failures = check_parse(params, text)
    assert not failures
    for pieces in (char_chunks(text), *(random_chunks(text, seed) for seed in (1, 2, 3))):
        assert not check_stream(params, pieces, message)


def _calls(message: Any) -> list[tuple[str, Any, str]]:
    return [(c.name, json.loads(c.arguments), c.status) for c in message.tool_calls]


# --- 1. a tagged value whose end tag the model dropped ---------------------------------------------------------------


def _tagged(name: str) -> bool:
    return load(name).analysis.tools.format.mode.name == "TAG_WITH_TAGGED"


SYNTHETIC_TAGGED = ["tagged-colon-names", "tagged-bracket-keys"]  # `<arg:city>…</arg>`, `[KEY]city[/KEY][VAL]…[/VAL]`
# Kimi-K3's `<|open|>argument key="city"…<|sep|>` markup is not read yet (issue 24, 2e: headers and channels).
NOT_READ_YET = {"llamacpp-Kimi-K3"}


def _tagged_templates(names: Iterable[str]) -> list[str]:
    """The tagged templates of ``names`` (bundled ones), then the synthetic ones."""
    return [n for n in names if _tagged(n) and n not in NOT_READ_YET] + SYNTHETIC_TAGGED


# An end tag right after a value: `</parameter>`, `</arg_value>`, `</｜DSML｜parameter>`, MiniMax-M3's
# `]<]minimax[>[</city>`, `[/VAL]` (with the layout before it, which the template writes as markup).
_END_TAG = re.compile(r"\s*(?:\]<\]minimax\[>\[)?(?:</[^<>\n]+>|\[/[A-Z_]+\])")
ARGUMENTS = {"city": "Paris", "days": 2}


@functools.cache
def _rendered(name: str) -> str | None:
    return rendered_call(load(name), USER, [WEATHER], "get_weather", ARGUMENTS)


def _rendered_calls(names: Iterable[str]) -> dict[str, str]:
    """The tagged templates of ``names`` (and the synthetic ones) that render the call, with its text."""
    return {name: text for name in _tagged_templates(names) if (text := _rendered(name)) is not None}


RENDERED = _rendered_calls(sampled())  # the per-template cases: the sample's templates (tests/support/sample.py)


def _without_end_tag(text: str, value: str) -> str:
    """``text`` with the end tag right after ``value`` (its first occurrence) taken out."""
    at = text.index(value) + len(value)
    found = _END_TAG.match(text, at)
    assert found is not None, text[at:]
    return text[:at] + text[found.end() :]


def test_enough_tagged_templates() -> None:
    rendered = _rendered_calls(bundled_templates())
    assert {"Qwen3-Coder", "Qwen3.5-4B", "GLM-4.6", "GLM-5.2", "ByteDance-Seed-OSS", "MiniMax-M3"} <= set(rendered)
    assert {"deepseek-ai-DeepSeek-V3.2", *SYNTHETIC_TAGGED} <= set(rendered)


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_the_rendered_call_is_complete(name: str) -> None:
    message = chat(name).parse(RENDERED[name])
    assert _calls(message) == [("get_weather", ARGUMENTS, "complete")]
    assert not message.warnings


@pytest.mark.parametrize("name", sorted(RENDERED))
@pytest.mark.parametrize("value", ["Paris", "2"], ids=["next-argument", "call-end"])
def test_a_value_without_its_end_tag_ends_at_the_next_markup(name: str, value: str) -> None:
    """`<parameter=city>\\nParis\\n<parameter=days>…`: the next argument's head ends the value (and the call's end
    ends the last one); the call is repaired, with a warning, never `{"city": "Paris\\n<parameter=days>\\n2"}`."""
    params = chat(name)
    text = _without_end_tag(RENDERED[name], value)
    message = params.parse(text)
    assert _calls(message) == [("get_weather", ARGUMENTS, "repaired")]
    assert message.content == ""
    assert any("end tag" in w.message or "has no" in w.message for w in message.warnings), message.warnings
    assert_streams(params, text)


# Templates whose history render the helper cannot cut out (their call turns differ from the prompt's generation
# prompt): outputs as they write them, with the first value's end tag dropped.
HAND_WRITTEN = {
    "MiniMax-M2": '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris\n'
    '<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
    "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
    "GLM-4.7-Flash": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
    "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_a_value_without_its_end_tag_in_other_tagged_templates(name: str) -> None:
    assert name not in _rendered_calls(bundled_templates()) and _tagged(name)
    params = chat(name)
    text = HAND_WRITTEN[name]
    message = params.parse(text)
    assert _calls(message) == [("get_weather", ARGUMENTS, "repaired")]
    assert any("has no" in w.message for w in message.warnings), message.warnings
    assert_streams(params, text)


@pytest.mark.parametrize("name", ["Qwen3-Coder", "GLM-4.6", "tagged-colon-names"])
def test_an_opener_that_starts_no_argument_is_the_values_text(name: str) -> None:
    """An argument opener not followed by a name and its end (`<parameter=x y` then a line break) is text."""
    params = chat(name)
    opener = core(load(name).analysis.tools.arguments.name_prefix)
    city = f"Pa{opener}x y\nris"
    text = rendered_call(load(name), USER, [WEATHER], "get_weather", {"city": city, "days": 2})
    assert text is not None
    message = params.parse(text)
    assert _calls(message) == [("get_weather", {"city": city, "days": 2}, "complete")]
    assert_streams(params, text)


def test_the_grammar_keeps_the_argument_opener_out_of_values() -> None:
    """The parser ends a value at the next argument's head, so the grammar's string values never hold its opener."""
    params = chat("Qwen3-Coder")
    good = rendered_call(load("Qwen3-Coder"), USER, [WEATHER], "get_weather", {"city": "Pa<b>ris", "days": 2})
    bad = rendered_call(load("Qwen3-Coder"), USER, [WEATHER], "get_weather", {"city": "Pa<parameter=x>", "days": 2})
    assert good is not None and bad is not None
    assert all_accept(params, good)
    assert all_reject(params, bad)


# --- 6. a tagged value that fits none of its schema's types ---------------------------------------------------------


def _with_days(name: str, days: str) -> str:
    text = _rendered(name)
    assert text is not None
    at = text.index("Paris")
    found = re.compile(r"(?<=[>\]\n])2(?=[\s<\[\]])").search(text, at)
    assert found is not None, text
    return text[: found.start()] + days + text[found.end() :]


MISFIT = ["Qwen3-Coder", "GLM-5.2", "ByteDance-Seed-OSS", "deepseek-ai-DeepSeek-V3.2", "MiniMax-M3", *SYNTHETIC_TAGGED]


@pytest.mark.parametrize("name", MISFIT)
def test_a_value_of_no_schema_type_is_kept_with_a_warning(name: str) -> None:
    """`days` (an integer) written `three`: kept as the string "three" — the call is repaired, with a warning that
    names the value, not passed as a complete call."""
    params = chat(name)
    text = _with_days(name, "three")
    message = params.parse(text)
    assert _calls(message) == [("get_weather", {"city": "Paris", "days": "three"}, "repaired")]
    assert any("'three'" in w.message and "integer" in w.message for w in message.warnings), message.warnings
    assert_streams(params, text)
    fits = params.parse(_with_days(name, "5"))
    assert _calls(fits) == [("get_weather", {"city": "Paris", "days": 5}, "complete")]
    assert not fits.warnings


def test_a_value_a_string_also_satisfies_is_no_misfit() -> None:
    tool = function_tool(
        "get_weather",
        {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "string"]}}},
    )
    message = chat("Qwen3-Coder", [tool]).parse(_with_days("Qwen3-Coder", "three"))
    assert _calls(message) == [("get_weather", {"city": "Paris", "days": "three"}, "complete")]
    assert not message.warnings


# --- 2. pythonic strings with unescaped quotes ---------------------------------------------------------------------

LFM_VL = "hfjs-LiquidAI-LFM2.5-VL-450M"
RAW_SINGLE = "pythonic-raw-single-quotes"  # `note='it's'` in a <calls> block
MINICPM3 = "openbmb-MiniCPM3-4B"  # escapes its strings (tojson)
NOTE = function_tool(
    "add_note",
    {"type": "object", "properties": {"title": {"type": "string"}, "days": {"type": "integer"}}, "required": ["title"]},
)
NOTE_LAST = function_tool(  # the string last (grammars keep the schema's order)
    "add_note",
    {"type": "object", "properties": {"days": {"type": "integer"}, "title": {"type": "string"}}, "required": ["title"]},
)


def test_the_analysis_learns_whether_strings_are_escaped() -> None:
    raw = {n: load(n).analysis.tools.pythonic.raw_strings for n in (LFM_VL, RAW_SINGLE, MINICPM3)}
    assert raw == {LFM_VL: True, RAW_SINGLE: True, MINICPM3: False}


@pytest.mark.parametrize(
    ("name", "title"),
    [(LFM_VL, 'Q3 "sync" review'), (LFM_VL, 'He said "hi", then left'), (RAW_SINGLE, "it's Bob's 'Q3'")],
)
@pytest.mark.parametrize("last", [False, True])
def test_a_template_that_escapes_nothing_round_trips(name: str, title: str, last: bool) -> None:
    """The template writes the string as it is: read back up to the quote its argument's end follows (the next
    argument, or the call's end), with no warning (the template's own spelling); the grammar accepts what the
    template wrote."""
    tool = NOTE_LAST if last else NOTE
    params = chat(name, [tool])
    arguments = {"days": 2, "title": title} if last else {"title": title, "days": 2}
    text = rendered_call(load(name), USER, [tool], "add_note", arguments)
    assert text is not None and title in text
    message = params.parse(text)
    assert _calls(message) == [("add_note", arguments, "complete")]
    assert not message.warnings
    assert_streams(params, text)
    assert all(full_verdicts(params, text).values())


RAW_PIECES = ["Q", "Q", ")", "(", ",", " ", "\t", "\n", "<", "]", "=", "x", "b", "days", "b=", ", b=", "b =", "Q)"]


@pytest.mark.parametrize(("name", "quote"), [(LFM_VL, '"'), (RAW_SINGLE, "'")])
@pytest.mark.parametrize("last", [False, True])
def test_what_the_grammar_allows_in_a_raw_string_reads_back_as_written(name: str, quote: str, last: bool) -> None:
    """Where strings go unescaped, the grammar allows a quote, a ``)`` or a comma inside one only where the parser
    does not end the argument, the call or the literal there: every title the grammar accepts is read back as
    written, complete, with no warning (seeded random titles of the characters that matter)."""
    tool = NOTE_LAST if last else NOTE
    params = load(name).apply(USER, tools=[tool], tool_choice="required")
    arguments = {"days": 2, "title": "TITLE"} if last else {"title": "TITLE", "days": 2}
    frame = rendered_call(load(name), USER, [tool], "add_note", arguments)
    assert frame is not None and frame.count("TITLE") == 1
    rng = random.Random(7)
    pieces = [quote if piece == "Q" else piece.replace("Q", quote) for piece in RAW_PIECES]
    accepted = 0
    for _ in range(300):
        title = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        text = frame.replace("TITLE", title)
        if not accepts(params.grammar, text):
            continue
        accepted += 1
        message = params.parse(text)
        assert _calls(message) == [("add_note", {**arguments, "title": title}, "complete")], text
        assert not message.warnings, text
    assert accepted >= 50
    for title in (f"f(x)<{quote}", f"f(x)]{quote}", f"a{quote}, days={quote}"):  # the call's end, a next argument
        assert not accepts(params.grammar, frame.replace("TITLE", title)), title


def test_a_quote_no_next_argument_follows_ends_no_literal() -> None:
    """``"a", b"``: the first quote is followed by a comma but no ``name=``: it closes no literal (the parser would
    otherwise read ``"a"`` and then fail on ``b"``); the string runs to the quote the next argument follows."""
    params = chat(LFM_VL, [NOTE])
    for title in ('a", b', 'a"b=1', "x\\\", y"):
        text = f'<|tool_call_start|>[add_note(title="{title}", days=2)]<|tool_call_end|>'
        message = params.parse(text)
        assert [(n, a.get("days"), st) for n, a, st in _calls(message)] == [("add_note", 2, "complete")], text
        assert not message.warnings


def test_unescaped_quotes_where_the_template_escapes_them_are_a_repair() -> None:
    params = chat(MINICPM3, [NOTE])
    text = '<|tool_call_start|>\n```python\nadd_note(title="Q3 "sync" review", days=2)\n```\n<|tool_call_end|>'
    message = params.parse(text)
    assert _calls(message) == [("add_note", {"title": 'Q3 "sync" review', "days": 2}, "repaired")]
    assert any("not escaped" in w.message for w in message.warnings)
    assert_streams(params, text)


# --- 3. pythonic arguments separated by a space ----------------------------------------------------------------------

SPACED = "pythonic-space-separated"  # `[get_weather(city="Paris" days=2)]`


def test_the_analysis_learns_the_argument_separator() -> None:
    separators = {n: load(n).analysis.tools.pythonic.separator for n in (SPACED, LFM_VL, MINICPM3)}
    assert separators == {SPACED: " ", LFM_VL: ", ", MINICPM3: ","}


@pytest.mark.parametrize("name", [SPACED, MINICPM3, LFM_VL])
def test_arguments_without_a_comma_are_read(name: str) -> None:
    params = chat(name)
    rendered = rendered_call(load(name), USER, [WEATHER], "get_weather", ARGUMENTS)
    assert rendered is not None
    text = re.sub(r'"Paris",?\s*days=', '"Paris" days=', rendered)
    assert '"Paris" days=2' in text
    message = params.parse(text)
    assert _calls(message) == [("get_weather", ARGUMENTS, "complete")]
    assert_streams(params, text)


def test_the_grammar_writes_the_templates_separator() -> None:
    params = chat(SPACED)
    text = rendered_call(load(SPACED), USER, [WEATHER], "get_weather", ARGUMENTS)
    assert text == '[get_weather(city="Paris" days=2)]'
    assert all_accept(params, text)
    assert all(full_verdicts(params, text).values())
    assert all_reject(params, '[get_weather(city="Paris", days=2)]')


# --- 4. a marker word the prose prescribes, the renders leaving it out ---------------------------------------------


def _prose_template(instructions: str, *, listed: bool) -> str:
    """A template whose system text is ``instructions`` and whose history writes the calls as bare JSON (a list, or
    one object per line), without the word the instructions prescribe."""
    return (
        "{%- set listed = " + ("true" if listed else "false") + " -%}"
        "{%- for message in messages -%}{{- '<|turn|>' + message.role + '\\n' -}}"
        "{%- if loop.first and tools -%}{{- " + json.dumps(instructions) + " + '\\n' -}}"
        "{%- for tool in tools -%}{{- tool.function|tojson + '\\n' -}}{%- endfor -%}{%- endif -%}"
        "{%- if message.content is string -%}{{- message.content -}}{%- endif -%}"
        "{%- if message.role == 'assistant' and message.tool_calls -%}{{- '[' if listed -}}"
        "{%- for c in message.tool_calls -%}"
        "{{- '{\"name\": \"' + c.function.name + '\", \"arguments\": ' + c.function.arguments|tojson + '}' -}}"
        "{{- (', ' if listed else '\\n') if not loop.last -}}"
        "{%- endfor -%}{{- ']' if listed -}}{%- endif -%}{{- '<|end|>\\n' -}}{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|turn|>assistant\\n' -}}{%- endif -%}"
    )


_ARGS = '{"name": "tool_name", "arguments": {"arg": "value"}}'
PROSE_WORDS = {
    "callfn": (
        f"Tools are available. To call them, begin the call list with the word callfn, no closing marker, as "
        f"callfn[{_ARGS}]",
        True,
    ),
    "TOOLS": (
        f"Start your reply with the keyword TOOLS followed by a JSON array of calls, for example:\nTOOLS [{_ARGS}]",
        True,
    ),
    "CALL:": (f"Prefix each call with the marker CALL: and write the call as a JSON object, like CALL: {_ARGS}", False),
}


def _prose_chat(word: str) -> ChatParams:
    instructions, listed = PROSE_WORDS[word]
    return ChatTemplate(_prose_template(instructions, listed=listed), name=f"prose-{word}.jinja").apply(
        USER, tools=[WEATHER]
    )


@pytest.mark.parametrize("word", list(PROSE_WORDS))
def test_the_prose_word_is_learned_although_renders_leave_it_out(word: str) -> None:
    instructions, listed = PROSE_WORDS[word]
    tmpl = ChatTemplate(_prose_template(instructions, listed=listed), name=f"prose-{word}.jinja")
    fmt = tmpl.analysis.tools.format
    assert (fmt.mode.name, fmt.section_start, fmt.stated_word, fmt.tools_array_wrapped) == (
        "JSON_NATIVE",
        "",
        word,
        listed,
    )
    rendered = rendered_call(tmpl, USER, [WEATHER], "get_weather", {"city": "Paris"})
    assert rendered is not None and word not in rendered


@pytest.mark.parametrize("word", list(PROSE_WORDS))
@pytest.mark.parametrize("gap", ["", " ", "\n"])
def test_the_prose_word_is_consumed_with_the_calls(word: str, gap: str) -> None:
    listed = PROSE_WORDS[word][1]
    body = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    text = f"Let me check. {word}{gap}" + (f"[{body}]" if listed else body)
    params = _prose_chat(word)
    message = params.parse(text)
    assert _calls(message) == [("get_weather", {"city": "Paris"}, "complete")]
    assert (message.content, message.warnings) == ("Let me check.", ())
    assert_streams(params, text)
    bare = params.parse(f"[{body}]" if listed else body)  # as the template's history writes it
    assert (_calls(bare), bare.content, bare.warnings) == ([("get_weather", {"city": "Paris"}, "complete")], "", ())
    # the grammar allows the word, and the calls without it
    assert all_accept(params, text[len("Let me check. ") :])
    assert all_accept(params, f"[{body}]" if listed else body)


@pytest.mark.parametrize("word", list(PROSE_WORDS))
def test_the_prose_word_in_an_answer_is_text(word: str) -> None:
    text = f"You could write {word} yourself, or {word}y."
    params = _prose_chat(word)
    message = params.parse(text)
    assert (message.tool_calls, message.content, message.warnings) == ((), text, ())
    assert_streams(params, text)


# --- 5. Command R+'s one-line Action fence --------------------------------------------------------------------------

COMMAND_R = "CohereForAI-c4ai-command-r-plus-tool_use"
WORD_FENCE = "word-fence-section"  # `Calls:\n```\n[...]\n```` (keys "function" and "args")
DESCRIBED = function_tool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string", "description": "c"}}, "required": ["city"]},
    "Weather lookup",
)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        (COMMAND_R, '{"tool_name": "get_weather", "parameters": {"city": "Paris"}}'),
        (WORD_FENCE, '{"function": "get_weather", "args": {"city": "Paris"}}'),
    ],
)
@pytest.mark.parametrize("layout", ["{w} ```json [{c}]```", "{w}```json\n[{c}]\n```", "{w} ``` [{c}] ```"])
def test_a_word_and_fence_section_on_one_line_is_read(name: str, call: str, layout: str) -> None:
    params = chat(name, [DESCRIBED])
    word = core(load(name).analysis.tools.format.section_start).split()[0]
    assert word in ("Action:", "Calls:")
    text = layout.format(w=word, c=call)
    message = params.parse(text)
    assert _calls(message) == [("get_weather", {"city": "Paris"}, "complete")]
    assert (message.content, message.warnings) == ("", ())
    assert_streams(params, text)


@pytest.mark.parametrize("name", [COMMAND_R, WORD_FENCE])
def test_the_sections_word_in_prose_is_text(name: str) -> None:
    word = core(load(name).analysis.tools.format.section_start).split()[0]
    text = f"{word} buy low. {word} sell high."
    params = chat(name, [DESCRIBED])
    message = params.parse(text)
    assert (message.tool_calls, message.content, message.warnings) == ((), text, ())
    assert_streams(params, text)
