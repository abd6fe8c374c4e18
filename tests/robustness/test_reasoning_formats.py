"""P3 (the stream ends equal to ``parse()``) for every bundled template under every ``reasoning_format`` value, thinking
on and off.

The round-trip outputs are streamed in random chunks; short outputs that start with a reasoning marker (the end marker
first, an empty block, a well-known ``<think>`` block the template may not know, markers cut at every character) are
streamed one character at a time. With ``reasoning_format="none"`` the prompt's prefill (``<think>\\n``) is part of the
content, which is where a stream once lost track of it (Qwen3.5, ``'</think>Th'``: issue 19).
"""

from __future__ import annotations

import zlib

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.parser.request import REASONING_FORMATS

from ..support.outputs import USER, conversation, outputs, request_tools
from .promises import char_chunks, check_stream, random_chunks

TEMPLATES = bundled_templates()

# Replies that begin with reasoning markup (or text that could become it), whatever the template's own markers are.
EDGE = (
    "</think>Th",
    "<think>\n</think>Th",
    "<think>x</think>Th",
    "<thinking>x</thinking>Th",
    " </think>\n\nanswer",
    "<think>",
    "</think>",
    "<",
    "Th</think>x",
    "\n<think>a<think>b</think>c",
    "<think>I could call <tool_call>.</think>Done.",
)


def _edge_texts(template: str) -> list[str]:
    reasoning = ChatTemplate.load(template).analysis.reasoning
    markers = [m.strip() for m in (reasoning.start, reasoning.end) if m.strip()]
    own = [m + "Th" for m in markers] + [m + "x" + m + "Th" for m in markers]
    if len(markers) == 2:
        own.append(f"{markers[0]}x{markers[1]}Th")
    return [*EDGE, *own]


@pytest.mark.parametrize("template", TEMPLATES)
def test_stream_equals_parse_for_every_reasoning_format(template: str) -> None:
    tmpl = ChatTemplate.load(template)
    tools = request_tools(template)
    texts = [o.text for o in outputs(template)]
    failures = []
    for reasoning_format in REASONING_FORMATS:
        for thinking in (True, False):
            params = tmpl.apply(
                conversation(template), tools=tools, reasoning_format=reasoning_format, enable_thinking=thinking
            )
            where = f"{reasoning_format}/thinking={thinking}"
            for text in _edge_texts(template):
                failures += [f"{where} {text!r}: {f}" for f in check_stream(params, char_chunks(text))]
            for text in texts:
                seed = zlib.crc32(f"{template}/{where}/{text}".encode("utf-8", "surrogatepass"))
                failures += [f"{where} {text!r:.80}: {f}" for f in check_stream(params, random_chunks(text, seed))]
    assert not failures, "\n".join(failures[:12])


def test_qwen35_reply_starting_with_the_end_marker_streams_as_it_parses() -> None:
    """Issue 19: fed one character at a time the stream sent ``'</think>Ththink>Th'``; the prefill was lost."""
    params = ChatTemplate.load("Qwen3.5-4B").apply(USER, reasoning_format="none", enable_thinking=True)
    assert params.parse("</think>Th").content == "<think>\n</think>Th"
    assert not check_stream(params, char_chunks("</think>Th"))
