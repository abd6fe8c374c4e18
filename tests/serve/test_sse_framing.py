"""Server-sent events both ways: the upstream's split out of reads however the bytes fall (``SseEvents``), and the
server's chunk events written from a fixed envelope (``Reply.delta_event``) byte-identical to dumping the chunk."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

import httpx2
import pytest

from autoparser.serve.chunks import Reply, Usage, sse
from autoparser.serve.upstream import LlamaCppUpstream, Piece, PieceStream, SseEvents, UpstreamError

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
        {"content": "\x00\t\n\\ \U0001f600 </script>"},
        {"reasoning_content": ""},
        {"reasoning_content": "think"},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
        {},
    ]
    for delta in deltas:
        assert reply.delta_event(delta, usage) == sse(reply.chunk(delta, with_usage_field=usage))
        json.loads(reply.delta_event(delta, usage)[len(b"data: ") :])


def _llama_stream(texts: list[str]) -> bytes:
    events = [{"index": 0, "content": text, "stop": False} for text in texts]
    events.append({"content": "", "stop": True, "stop_type": "eos", "tokens_evaluated": 7, "tokens_predicted": 3})
    return b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)


_UPSTREAM = LlamaCppUpstream("http://127.0.0.1:9", httpx2.AsyncClient())


def _stream(reads: list[bytes]) -> PieceStream:
    async def chunks() -> AsyncIterator[bytes]:
        for data in reads:
            yield data

    async def close() -> None:
        pass

    return PieceStream(chunks(), close, _UPSTREAM.decode_event, "upstream x")


def _pieces(*streams: list[bytes]) -> list[list[list[Piece]]]:
    """Each stream's batches (the reads of each given)."""

    async def run() -> list[list[list[Piece]]]:
        return [[batch async for batch in _stream(reads).batches()] for reads in streams]

    return asyncio.run(run())


def test_pieces_however_the_bytes_fall() -> None:
    """The upstream's bytes, cut anywhere (inside a character too), give the same text and end."""
    texts = ["héllo", " wörld ✓", " 😀", "\n", 'a "quote"']
    raw = _llama_stream(texts)
    for cut, batches in enumerate(_pieces(*[[raw[:cut], raw[cut:]] for cut in range(len(raw) + 1)])):
        pieces = [piece for batch in batches for piece in batch]
        assert "".join(piece.text for piece in pieces) == "".join(texts), cut
        assert pieces[-1].finish == "stop" and pieces[-1].usage == Usage(7, 3), cut
        assert len(batches) <= 2


def test_an_event_with_space_around_its_json_is_read_and_one_that_is_not_json_fails() -> None:
    spaced = b'data:  {"content": "a", "stop": false}  \n\n'
    broken = b'data: {"content": "b"\n\n'
    written: list[str] = []

    async def run() -> None:
        async for batch in _stream([spaced + b'data: {"content": "c", "stop": false}\n\n' + broken]).batches():
            written.extend(piece.text for piece in batch)

    with pytest.raises(UpstreamError, match="not JSON") as caught:
        asyncio.run(run())
    assert caught.value.kind == "upstream_bad_reply"
    assert written == ["a", "c"]  # what came before the bad event in the same read is the reply's


def test_an_error_event_and_an_event_that_is_not_an_object_fail() -> None:
    with pytest.raises(UpstreamError, match="boom") as caught:
        _pieces([b'data: {"error": {"message": "boom"}}\n\n'])
    assert caught.value.kind == "upstream_error"
    with pytest.raises(UpstreamError, match="not an object") as caught:
        _pieces([b"data: [1, 2]\n\n"])
    assert caught.value.kind == "upstream_bad_reply"
