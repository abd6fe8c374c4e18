"""Batch throughput: ``autoparser batch`` over short replies, one worker and two, with reading and writing.

The input is N short replies of Qwen3-Coder (with a tool declared): most a sentence of content, one in five a tool
call with two arguments, every row with an ``id`` kept in the output. Reported per run: rows per second of wall time,
CPU microseconds per row (this process and its workers: the machine is shared, so wall time alone misleads), and
the split of a row's time between ``ChatParams.parse()`` (timed alone on the same replies) and what the batch adds
around it (reading, the JSON or Arrow of the row, the message's conversion, writing, the processes). With two workers
the CPU a row is also split between the reading process (JSONL: finding the chunks' byte ranges, writing the blocks
that come back; Parquet: reading and writing record batches) and the workers: on two cores the first competes with
them.

Targets (issue 27): >= 20,000 replies/s per worker including reading and writing; >= 1.8x that with 2 workers.

Measured on the shared 2-core development machine (load 5-8 from other work, so wall rates are halved and the two-
worker rate cannot be judged there; CPU per row is the steadier figure), 100,000 rows: parse() alone 60-97 µs CPU a
reply; the batch adds 5-8 µs (JSONL) and 6-8 µs (Parquet) CPU a row with one worker, about 3 µs more with two (the
reading process, the chunks' trips between processes); the batch alone (parse() answered from a table) runs
40,000-123,000 rows/s (JSONL) and 76,000-168,000 rows/s (Parquet) per worker. So the rate is the parser's: 20,000
rows/s per worker needs parse() under about 40 µs a reply.

Run: python bench/batch_bench.py [--rows N] [--format jsonl|parquet|both] [--cli]
(``--cli`` also times the command itself, start-up and template analysis included.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autoparser import ChatTemplate
from autoparser.batch import BatchParser, run_batch

TEMPLATE = "Qwen3-Coder"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
_SENTENCES = [
    "The capital of France is Paris.",
    "Sure! Here is a short answer to your question.",
    "I don't know, but I can look it up for you.",
    "2 + 2 = 4",
    "Hello! How can I help you today?",
]
_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>\n"
    "<parameter=days>\n{days}\n</parameter>\n</function>\n</tool_call>"
)


def replies(rows: int) -> list[str]:
    out = []
    for i in range(rows):
        if i % 5 == 4:
            out.append(_CALL.format(city=f"City {i}", days=i % 7))
        else:
            out.append(f"{_SENTENCES[i % len(_SENTENCES)]} ({i})")
    return out


def write_input(folder: Path, texts: list[str], kind: str) -> Path:
    if kind == "jsonl":
        path = folder / "in.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for i, text in enumerate(texts):
                f.write(json.dumps({"id": i, "text": text}) + "\n")
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "in.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), path)
    return path


def parse_only(texts: list[str]) -> float:
    """Seconds of ``ChatParams.parse()`` alone over ``texts`` (CPU time)."""
    params = ChatTemplate.load(TEMPLATE).apply([{"role": "user", "content": "Hi"}], tools=TOOLS)
    for text in texts[:200]:
        params.parse(text)
    start = time.process_time()
    for text in texts:
        params.parse(text)
    return time.process_time() - start


class _Parsed:
    """The messages of the bench's replies, parsed beforehand: a stand-in for ``ChatParams`` in the run that times
    what the batch adds around ``parse()`` (the rest of the row's path runs as usual)."""

    def __init__(self, texts: list[str]) -> None:
        params = ChatTemplate.load(TEMPLATE).apply([{"role": "user", "content": "Hi"}], tools=TOOLS)
        self.messages = {text: params.parse(text) for text in texts}

    def parse(self, text: str):
        return self.messages[text]


class _OverheadParser(BatchParser):
    """A :class:`BatchParser` whose every request reads replies from :class:`_Parsed`."""

    def __init__(self, parsed: _Parsed, **options: object) -> None:
        super().__init__(ChatTemplate.load(TEMPLATE), **options)
        self.parsed = parsed

    def params_for(self, messages=None, tools=None):
        return self.parsed


def batch(path: Path, out: Path, workers: int, parsed: _Parsed | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (all processes) and the reading process's own CPU seconds of one batch."""
    if parsed is None:
        parser = BatchParser(ChatTemplate.load(TEMPLATE), tools=TOOLS, keep=["id"])
    else:
        parser = _OverheadParser(parsed, tools=TOOLS, keep=["id"])
        parser._default = parsed  # type: ignore[assignment]
    parser.default_params()  # the analysis and the parser: once, before the clock (the CLI does it at start-up)
    before = os.times()
    summary = run_batch(parser, path, out, workers=workers, progress=False)
    after = os.times()
    assert summary.failed == 0, summary
    return summary.seconds, summary.cpu_seconds, after.user + after.system - before.user - before.system


def cli(path: Path, out: Path, workers: int) -> float:
    command = [sys.executable, "-m", "autoparser", "batch", TEMPLATE, str(path), str(out), "--keep", "id"]
    tools = path.with_name("tools.json")
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    start = time.perf_counter()
    subprocess.run([*command, "--tools", str(tools), "--workers", str(workers)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--format", choices=["jsonl", "parquet", "both"], default="both")
    ap.add_argument("--cli", action="store_true", help="also time the command, start-up included")
    args = ap.parse_args()
    texts = replies(args.rows)
    parse_cpu = parse_only(texts)
    print(f"{args.rows:,} short replies, {TEMPLATE}; cores: {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    print(f"parse() alone: {parse_cpu / args.rows * 1e6:6.1f} µs CPU per reply ({args.rows / parse_cpu:,.0f}/s)")
    kinds = ["jsonl", "parquet"] if args.format == "both" else [args.format]
    parsed = _Parsed(texts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in kinds:
            path = write_input(folder, texts, kind)
            rates = {}
            for workers in (1, 2):
                wall, cpu, reading = batch(path, folder / f"out{workers}.{kind}", workers)
                rates[workers] = args.rows / wall
                per_row = cpu / args.rows * 1e6
                added = per_row - parse_cpu / args.rows * 1e6
                reader, others = reading / args.rows * 1e6, (cpu - reading) / args.rows * 1e6
                split = f"; reading process {reader:.1f}, workers {others:.1f}"
                print(
                    f"{kind:7} → {kind:7} {workers} worker{'s' if workers > 1 else ' '}: {rates[workers]:9,.0f} rows/s"
                    f"  {per_row:6.1f} µs CPU/row (parse {parse_cpu / args.rows * 1e6:.1f} + batch {added:.1f}"
                    f"{split if workers > 1 else ''})"
                )
            print(f"{'':17}2 workers / 1: {rates[2] / rates[1]:.2f}x")
            wall, cpu, _ = batch(path, folder / f"overhead.{kind}", 1, parsed)
            print(
                f"{'':17}the batch alone (parse() answered from a table): {args.rows / wall:,.0f} rows/s, "
                f"{cpu / args.rows * 1e6:.1f} µs CPU/row"
            )
            if args.cli:
                for workers in (1, 2):
                    seconds = cli(path, folder / f"cli{workers}.{kind}", workers)
                    print(f"{'':17}command, {workers} worker(s): {seconds:.2f} s ({args.rows / seconds:,.0f} rows/s)")


if __name__ == "__main__":
    main()
