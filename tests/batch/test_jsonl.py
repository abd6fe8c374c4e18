"""JSONL chunks as byte ranges: the reading process finds each chunk's end by seeking, the worker reads the lines.
However the input is cut (any ``--chunk-rows``, one worker or two), the output is the same, byte for byte, and
every line is read once: blank lines, lines too long for a probe, a last line without its newline, lines that are
no JSON or no UTF-8."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from autoparser.batch import BatchParser, run_batch
from autoparser.batch.jsonl import JsonlReader, LineSpan

TEMPLATE = "Qwen3-Coder"


def _spans(path: Path, chunk_rows: int, offset: int = 0) -> list[LineSpan]:
    spans = []
    for span, position in JsonlReader(path, chunk_rows, offset):
        assert position == span.end
        spans.append(span)
    return spans


def _lines(varied: int) -> list[bytes]:
    """Lines of lengths 1 to a few hundred bytes, one of 150,000 (past the sample and every probe), blank ones."""
    lines = [json.dumps({"id": i, "text": "w" * (i * 37 % 300)}).encode() + b"\n" for i in range(varied)]
    lines[varied // 3] = json.dumps({"id": "long", "text": "x" * 150_000}).encode() + b"\n"
    lines[5:5] = [b"\n", b"   \n", b"\r\n"]
    return lines


@pytest.mark.parametrize("chunk_rows", [1, 3, 50, 1000])
def test_chunks_are_whole_lines_covering_the_file(tmp_path: Path, chunk_rows: int) -> None:
    lines = _lines(2000)
    data = b"".join(lines) + b'{"id": "last", "text": "no newline"}'
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    starts = {0}
    for line in lines:
        starts.add(max(starts) + len(line))
    for offset in (0, sum(map(len, lines[:700]))):
        spans = _spans(path, chunk_rows, offset)
        assert spans[0].start == offset and spans[-1].end == len(data)
        assert all(a.end == b.start for a, b in itertools.pairwise(spans))  # contiguous, none empty
        assert all(span.start < span.end and span.end in starts | {len(data)} for span in spans)  # at line ends
        assert b"".join(span.read() for span in spans) == data[offset:]
    # lines of one length: chunks of exactly chunk_rows lines
    even = tmp_path / "even.jsonl"
    even.write_bytes(b'{"text": "Hi"}\n' * 5 * chunk_rows)
    assert [span.read().count(b"\n") for span in _spans(even, chunk_rows)] == [chunk_rows] * 5


def test_chunks_follow_the_lines_length(tmp_path: Path) -> None:
    """Short lines after a long one: chunks of ``chunk_rows`` rows again at once. Whatever the lines, a chunk's
    bytes grow at most 4 times from one chunk to the next (past the line where its estimated end falls)."""
    path = tmp_path / "in.jsonl"
    short, long = b'{"t": "a"}\n', b'{"t": "' + b"x" * 200_000 + b'"}\n'
    path.write_bytes(long + short * 5000)
    spans = _spans(path, 100)
    assert [span.read().count(b"\n") for span in spans] == [1] + [100] * 50
    path.write_bytes(short * 5000 + long * 3 + short * 5000 + long)
    spans = _spans(path, 100)
    assert sum(span.read().count(b"\n") for span in spans) == 10_004
    for last, span in itertools.pairwise(spans):
        assert span.end - span.start <= 4 * (last.end - last.start) + len(long)


def test_an_empty_input_and_an_offset_at_its_end(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"")
    assert _spans(path, 10) == []
    path.write_bytes(b'{"text": "Hi"}\n')
    assert _spans(path, 10, offset=path.stat().st_size) == []


TRICKY = [
    b'{"id": 0, "text": "caf\xc3\xa9"}',
    b"",
    b"   ",
    b"\r",
    b"\x0b\x0c ",
    b'{"id": 1, "text": "crlf"}\r',
    b"not json",
    b"[1, 2]",
    b'{"id": 2, "text": "caf\xe9"}',  # Latin-1: no UTF-8
    b'{"id": 3, "text": "lone \\ud800 surrogate"}',
    b'   {"id": 4, "text": "leading space"}',
    b'{"id": 5}',
    b'{"id": 6, "text": "' + b"long " * 4000 + b'"}',
    b'{"id": 7, "text": "last line, no newline"}',
]


def test_output_does_not_depend_on_the_chunks(tmp_path: Path) -> None:
    """Every chunking writes the same bytes: one row per non-blank line, each failure in its own row, and only a
    line that cannot be UTF-8 (a lone surrogate) written escaped."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(TRICKY * 40))
    parser = BatchParser(TEMPLATE, keep=["id"])
    outputs = []
    for chunk_rows, workers in [(1, 1), (2, 1), (7, 1), (1000, 1), (3, 2)]:
        output = tmp_path / f"out-{chunk_rows}-{workers}.jsonl"
        summary = run_batch(parser, source, output, workers=workers, chunk_rows=chunk_rows, progress=False)
        assert summary.rows == 10 * 40 and summary.failed == 4 * 40
        outputs.append(output.read_bytes())
    assert all(out == outputs[0] for out in outputs[1:])
    rows = [json.loads(line) for line in outputs[0].splitlines()[:10]]
    assert [row["id"] for row in rows] == [0, 1, None, None, None, 3, 4, 5, 6, 7]  # a line not read has no id
    assert [(row["error"] or "")[:30] for row in rows[2:6]] == [
        "the line is not valid JSON: Ex",
        "the line holds a JSON list, no",
        "the line is not UTF-8 text: in",
        "",
    ]
    assert rows[7]["error"].startswith("no reply") and rows[0]["message"]["content"] == "café"
    first, *_, surrogate = outputs[0].splitlines()[:6]
    assert "café".encode() in first and b"\\ud800" in surrogate and surrogate.isascii()
