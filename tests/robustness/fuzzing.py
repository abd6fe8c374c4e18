"""One fuzz case = one text checked against P1, P2 and P3; shared by test_fuzz.py and bench/fuzz.py."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from autoparser import ChatParams, ChatTemplate
from autoparser.parser.markers import is_fence

from ..support.outputs import call_marker_cores, chat, conversation, markers, request_tools
from .mutations import JSON_ANSWER, Mutant
from .promises import Failure, char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks

__all__ = ["Found", "check_mutant", "describe", "schema_chat"]

#: The response schema of the json_schema requests the fuzz sends (the answer of mutations.JSON_ANSWER fits it).
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "array"},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}, "tag": {"type": "string"}}},
    },
    "required": ["city"],
}
assert set(JSON_ANSWER) <= set(ANSWER_SCHEMA["properties"])  # type: ignore[arg-type]


@functools.cache
def schema_chat(template: str) -> ChatParams:
    """The request of :func:`~tests.support.outputs.chat` with a json_schema response format too: the answer may
    be a JSON value (bare or in a fence) the parser reads before anything else, and calls may still come."""
    return ChatTemplate.load(template).apply(
        conversation(template),
        tools=request_tools(template),
        reasoning_format="auto",
        parallel_tool_calls=True,
        enable_thinking=True,
        json_schema=ANSWER_SCHEMA,
    )


@dataclass(frozen=True)
class Found:
    template: str
    mutant: Mutant
    failure: Failure


def _seed(template: str, label: str) -> int:
    return zlib.crc32(f"{template}/{label}".encode("utf-8", "surrogatepass"))


def check_mutant(
    template: str,
    mutant: Mutant,
    *,
    one_char: bool = False,
    chunks: int = 0,
    fine: bool = False,
    params: ChatParams | None = None,
    fenced_answer: bool = False,
) -> list[Found]:
    """P1 and P2 on ``parse()``, P3 on a seeded random chunking (``chunks`` > 0: about that many pieces instead;
    ``one_char``: also one character per feed; ``fine``: also pieces of 1 to 3 characters and the chunkings that
    cut every marker; ``params``: another request than the template's usual one; ``fenced_answer``: the text is a
    JSON answer in a ```json fence, which is no call marker there even where the template's calls use a fence)."""
    params = chat(template) if params is None else params
    call_markers = call_marker_cores(template)
    if fenced_answer:
        call_markers = tuple(m for m in call_markers if not is_fence(m))
    message, failures = check_parse(
        params,
        mutant.text,
        words=mutant.words,
        expected_calls=mutant.expected_calls,
        call_markers=call_markers,
    )
    if message is not None:
        if chunks:
            size = max(1, len(mutant.text) // chunks)
            pieces = [mutant.text[i : i + size] for i in range(0, len(mutant.text), size)]
        else:
            pieces = random_chunks(mutant.text, _seed(template, mutant.label))
        failures += check_stream(params, pieces, message)
        if one_char:
            failures += check_stream(params, char_chunks(mutant.text), message)
        if fine:
            failures += check_stream(params, random_chunks(mutant.text, _seed(template, mutant.label) + 1, 3), message)
            for chunking in marker_cut_chunkings(mutant.text, markers(template)):
                failures += check_stream(params, chunking, message)
    return [Found(template, mutant, f) for f in dict.fromkeys(failures)]


def describe(found: Sequence[Found], limit: int = 12) -> str:
    """A readable report: one line per failure, the text shortened."""
    lines = [f"{len(found)} failure(s):"]
    for item in found[:limit]:
        lines.append(f"  [{item.template}] {item.mutant.label}: {item.failure} :: {item.mutant.text!r:.240}")
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more")
    return "\n".join(lines)
