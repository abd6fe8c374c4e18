"""Server-sent events both ways: the upstream's split out of reads however the bytes fall (``SseEvents``), and the
server's chunk events written from a fixed envelope (``Reply.delta_event``) byte-identical to dumping the chunk."""

from __future__ import annotations

import json
import random

import pytest

from autoparser.serve.chunks import Reply, sse
from autoparser.serve.upstream import SseEvents

STREAM = (
    ": ping\n\n"
    'data: {"content": "a"}\n\n'
    'event: x\ndata: {"content":\ndata: "b\\n"}\n\n'
    "id: 3\n\n"  # no data: no event
    'data:{"content": "c"}\r\n\r\n'
    'data: {"content": "d"}\r\rdata: [DONE]\n\n'
)
EXPECTED = ['{"content": "a"}', '{"content":\n"b\\n"}', '{"content": "c"}', '{"content": "d"}', "[DONE]"]


def _split(text: str, cuts: list[int]) -> list[str]:
    events = SseEvents()
    found: list[str] = []
    last = 0
    for cut in [*sorted(cuts), len(text)]:
        found += events.feed(text[last:cut])
        last = cut
    return found + events.close()


def test_events_whole_and_in_every_two_pieces() -> None:
    assert _split(STREAM, []) == EXPECTED
    for cut in range(len(STREAM) + 1):
        assert _split(STREAM, [cut]) == EXPECTED, cut


def test_events_in_random_pieces() -> None:
    rng = random.Random(7)
    for _ in range(300):
        cuts = [rng.randrange(len(STREAM) + 1) for _ in range(rng.randrange(1, 12))]
        assert _split(STREAM, cuts) == EXPECTED, cuts


def test_an_event_cut_by_the_end_of_the_stream_is_kept() -> None:
    assert _split('data: {"a": 1}\n', []) == ['{"a": 1}']
    assert _split('data: {"a": 1}\r', []) == ['{"a": 1}']
    assert _split(": ping\n", []) == []


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("usage", [False, True])
def test_delta_events_are_the_chunks_bytes(field: str, usage: bool) -> None:
    reply = Reply('model "with" {"_":0} in its name', field)
    deltas = [
        {"content": 'héllo \u2028 "quoted" {"_":0}'},
        {"reasoning_content": "think"},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
        {},
    ]
    for delta in deltas:
        assert reply.delta_event(delta, usage) == sse(reply.chunk(delta, with_usage_field=usage))
        json.loads(reply.delta_event(delta, usage)[len(b"data: ") :])
