"""A long string argument streamed piece by piece reads exactly as the whole output parses.

A string value cut off by the end of a feed is scanned on from where that feed stopped (peg/json_scan.py), and raw
JSON arguments are shown through :class:`~autoparser.reading.json_args.JsonView`'s short paths for string and key
text; neither may change what a stream ends with. Checked on templates of each way to write a string argument:
Python literals in pythonic calls (MiniCPM3 escapes them; LFM2.5 writes inner quotes bare), JSON strings in JSON
arguments (Hermes 2 Pro, Llama 3.2) and raw text in tags (Qwen3-Coder): cut in two at every position, one
character per feed (every prefix equal to the partial parse), and in seeded pieces of one to four characters. How
the cost grows with the length is measured by ``bench/linear_bench.py --shapes long_string``.
"""

from __future__ import annotations

import json
import random

import pytest

from autoparser import ChatMessage, ChatParams

from ..robustness.promises import check_stream
from ..support.helpers import same_message, stream_char_by_char
from ..support.outputs import chat, render_calls
from ..support.sample import sweep

TEMPLATES = [
    "openbmb-MiniCPM3-4B",
    "hfjs-LiquidAI-LFM2.5-VL-450M",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "meta-llama-Llama-3.2-3B-Instruct",
    "Qwen3-Coder",
]
# Quotes of both kinds, backslashes (before a letter too), line breaks, non-ASCII text, brackets, and what looks like
# the next argument or the end of a pythonic call.
VALUES = [
    'Say "hi" to Zoë — it\'s 5\\6, (ok) [x] {y}\nnext line 😀 é\\n',
    "a=1, b='two', c=\"three\") \\u00e9 \\x41 end\\",
    'No backslash: "quoted", it\'s — Zoë 😀 (ok), [x]\nnext line',
]


def _output(template: str, value: str) -> tuple[ChatParams, str] | None:
    """The template's call holding ``value`` (three times over, to make it long), if it reads back as written."""
    text = render_calls(template, [("get_weather", {"location": value * 3})])
    if text is None:
        return None
    params = chat(template)
    calls = params.parse(text).tool_calls
    if len(calls) != 1 or json.loads(calls[0].arguments).get("location") != value * 3:
        return None  # (the template writes the value so that it cannot be read back: nothing to stream)
    return params, text


CASES = [
    pytest.param(template, value, id=f"{template}-{index}")
    for template in TEMPLATES
    for index, value in enumerate(VALUES)
]


@pytest.mark.parametrize(("template", "value"), CASES)
def test_a_long_string_argument_streams_as_it_parses(template: str, value: str) -> None:
    found = _output(template, value)
    if found is None:
        # (LFM2.5 writes backslashes unescaped: `\6` and `\x41` read back as escapes)
        assert template == "hfjs-LiquidAI-LFM2.5-VL-450M" and "\\" in value, "the call should read back"
        return
    params, text = found
    expected = params.parse(text)
    assert expected.tool_calls[0].status == "complete" and not expected.warnings, expected
    for cut in sweep(range(len(text) + 1), seed=len(text)):
        failures = check_stream(params, [text[:cut], text[cut:]], expected)
        assert not failures, (cut, failures)
    rng = random.Random(len(text))
    pieces, at = [], 0
    while at < len(text):
        step = rng.randint(1, 4)
        pieces.append(text[at : at + step])
        at += step
    assert not check_stream(params, pieces, expected)
    streamed: ChatMessage = stream_char_by_char(params, text)
    assert same_message(streamed, expected), (streamed, expected)
