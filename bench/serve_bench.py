"""What ``autoparser serve`` adds to an upstream engine: latency per request and per token, and throughput.

Two processes on loopback: the upstream double of the tests (tests/serve/double.py, llama.cpp's ``/completion``
wire format) replaying a recorded Qwen3.5 reply (reasoning, an answer and a tool call) token by token with no delay,
and the real ``autoparser serve`` command in front of it. The client (this process, httpx2) calls the double directly,
then the same reply through the server, streamed and not, and with 1, 8 and 32 concurrent streams. The difference is
what the server costs: rendering the prompt, the HTTP hop, parsing and re-framing every token. A real engine's own
time per token (milliseconds) comes on top of both.

Bounded: a fixed number of requests per measurement (``--requests``), every request under a time limit, loopback
only. No asserts: it reports.

With ``--pace MS`` the double waits MS ms before each token, as an engine does, and the bench reports the server's
CPU time per token (read from /proc: Linux) with 1 and 8 concurrent streams, beside a bare relay's (:data:`FLOOR`):
what any process that reads and writes once per token costs on the machine.

At full speed it also reports what one worker process would serve with a core of its own (one second over its CPU
per token): on a small machine the double and the client, sharing the cores, bound the tokens/s measured.

With ``--workers N`` the server runs N worker processes (``autoparser serve --workers N``); the CPU figures are then
the server's processes together (the parent and its workers).

Run: python bench/serve_bench.py [--requests N] [--tokens N] [--pace MS] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = "Qwen3.5-4B"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
LIMIT = 30.0  # seconds, for any one request


def reply_text(tokens: int) -> str:
    """A reply of about ``tokens`` tokens: reasoning, an answer, then a call."""
    words = max(tokens - 40, 10)
    reasoning = " ".join(f"step{i}" for i in range(words // 4))
    answer = " ".join(f"word{i}" for i in range(words // 4))
    call = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )
    return f"{reasoning}\n</think>\n\n{answer}\n\n{call}"


DOUBLE = """
import sys, uvicorn
sys.path.insert(0, {root!r})
from tests.serve.double import Script, UpstreamDouble, tokens
double = UpstreamDouble()
double.default = Script(tokens({text!r}, ["<tool_call>", "</think>", "<function=", "<parameter="]), delay={delay})
uvicorn.run(double.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""


# The floor: the least a relay process costs per token on this machine. A bare uvloop relay, no HTTP library, no
# parsing: it reads the client's request, sends the double one fixed streamed request, and writes one fixed chunk
# per upstream read. Measured as the server is, it shows what of the server's CPU per token is the machine's (the
# two socket operations and the wake-up per token, which cost far more on a virtual machine at an engine's pace)
# and what is the server's own.
FLOOR = """
import asyncio, json, uvloop
UP = {up_port}
ASK = json.dumps({{"prompt": "x", "stream": True}}).encode()
HEAD = b"POST /completion HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nConnection: close\\r\\n"
CHUNK = b'data: {{"choices":[{{"index":0,"delta":{{"content":"token"}},"finish_reason":null}}]}}\\n\\n'
FRAME = b"%x\\r\\n" % len(CHUNK) + CHUNK + b"\\r\\n"
async def client(reader, writer):
    while True:
        try:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            break
        length = 0
        for line in head.split(b"\\r\\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        if head.startswith(b"GET"):
            writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
            continue
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", UP)
        up_writer.write(HEAD + b"Content-Length: %d\\r\\n\\r\\n" % len(ASK) + ASK)
        writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/event-stream\\r\\n")
        writer.write(b"Transfer-Encoding: chunked\\r\\n\\r\\n")
        while data := await up_reader.read(65536):
            writer.write(FRAME)
            if b'"stop": true' in data or b'"stop":true' in data:
                break
        up_writer.close()
        writer.write(b"e\\r\\ndata: [DONE]\\n\\n\\r\\n0\\r\\n\\r\\n")
    writer.close()
async def main():
    server = await asyncio.start_server(client, "127.0.0.1", {port})
    async with server:
        await server.serve_forever()
uvloop.run(main())
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux: /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and of its live children (the workers of ``--workers N``)."""
    total = cpu_seconds(pid)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    total += cpu_seconds(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    return total


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {process.returncode}")
        try:
            if httpx2.get(url, timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


async def _stream(client: httpx2.AsyncClient, url: str, body: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds to the first event with text, seconds in all, events) of one streamed request."""
    start = time.perf_counter()
    first = 0.0
    events = 0
    async with client.stream("POST", url, json=body, timeout=LIMIT) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            events += 1
            if not first:
                data = json.loads(line[6:])
                choices = data.get("choices") or [{}]
                text = data.get("content") or choices[0].get("delta", {}).get("reasoning_content")
                if text:
                    first = time.perf_counter() - start
    return first, time.perf_counter() - start, events


async def _whole(client: httpx2.AsyncClient, url: str, body: dict[str, Any]) -> float:
    start = time.perf_counter()
    response = await client.post(url, json=body, timeout=LIMIT)
    response.raise_for_status()
    return time.perf_counter() - start


async def _concurrent(client: httpx2.AsyncClient, url: str, body: dict[str, Any], streams: int, total: int) -> float:
    """Seconds for ``total`` streamed requests, ``streams`` at a time."""
    queue = list(range(total))

    async def worker() -> None:
        while queue:
            queue.pop()
            await _stream(client, url, body)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(streams)))
    return time.perf_counter() - start


async def measure_paced(
    server: str, pid: int, requests: int, tokens: int, pace: float, floor: str, floor_pid: int
) -> None:
    """At an engine's pace: the server's CPU per token with 1 and 8 concurrent streams, and the bare relay's (the
    machine's floor, :data:`FLOOR`) in the same run."""
    ask = {"model": TEMPLATE, "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=None)) as client:
        for url in (server, floor):
            await _stream(client, url + "/v1/chat/completions", {**ask, "stream": True})
        print(f"autoparser serve bench: {TEMPLATE}, {tokens} tokens per reply at {pace} ms per token")
        head = f"{'concurrent streams':20}{'requests':>10}{'server CPU/token (µs)':>24}{'bare relay (µs)':>18}"
        print(f"{head}{'above it (µs)':>16}")
        for streams in (1, 8):
            total = max(requests, streams)
            used = []
            for url, process in ((server, pid), (floor, floor_pid)):
                before = server_cpu(process)
                await _concurrent(client, url + "/v1/chat/completions", {**ask, "stream": True}, streams, total)
                used.append((server_cpu(process) - before) / (total * tokens) * 1e6)
            print(f"{streams:<20}{total:>10}{used[0]:24.1f}{used[1]:18.1f}{used[0] - used[1]:16.1f}")


async def measure(upstream: str, server: str, pid: int, requests: int, tokens: int, workers: int = 1) -> None:
    direct_url, served_url = upstream + "/completion", server + "/v1/chat/completions"
    ask = {"model": TEMPLATE, "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
    prompt = {"prompt": "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n"}
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx2.AsyncClient(limits=limits) as client:
        for _ in range(3):  # warm up: connections, the server's first render
            await _stream(client, direct_url, {**prompt, "stream": True})
            await _stream(client, served_url, {**ask, "stream": True})
        direct = [await _stream(client, direct_url, {**prompt, "stream": True}) for _ in range(requests)]
        before = server_cpu(pid)
        served = [await _stream(client, served_url, {**ask, "stream": True}) for _ in range(requests)]
        cpu_per_token = (server_cpu(pid) - before) / (requests * tokens) * 1e6
        direct_whole = [await _whole(client, direct_url, prompt) for _ in range(requests)]
        served_whole = [await _whole(client, served_url, ask) for _ in range(requests)]

        def median(values: list[float]) -> float:
            return statistics.median(values) * 1000

        d_total, s_total = median([t for _, t, _ in direct]), median([t for _, t, _ in served])
        d_first, s_first = median([f for f, _, _ in direct]), median([f for f, _, _ in served])
        events = statistics.median([n for _, _, n in served])
        print(f"autoparser serve bench: {TEMPLATE}, a reply of {tokens} tokens (reasoning, answer, one call)")
        print(f"upstream: the test double (llama.cpp /completion, no delay); loopback; {requests} requests each")
        print(f"server: {workers} worker process{'es' if workers > 1 else ''}")
        print()
        print(f"{'':34}{'direct':>12}{'served':>12}{'added':>12}")
        rows = [
            ("streamed request, total (ms)", d_total, s_total),
            ("streamed request, first token (ms)", d_first, s_first),
            ("per token (µs)", d_total / tokens * 1000, s_total / tokens * 1000),
            ("whole request (ms)", median(direct_whole), median(served_whole)),
        ]
        for label, a, b in rows:
            print(f"{label:34}{a:12.2f}{b:12.2f}{b - a:+12.2f}")
        print(f"(the server sent {events:.0f} events for the {tokens} upstream tokens; its CPU: "
              f"{cpu_per_token:.1f} µs per token)")  # fmt: skip
        print()
        head = f"{'concurrent streams':34}{'direct tok/s':>14}{'served tok/s':>14}{'served req/s':>14}"
        print(f"{head}{'CPU µs/tok':>12}{'CPU-bound tok/s':>17}")
        for streams in (1, 8, 32):
            total = max(requests, streams * 2)
            d_seconds = await _concurrent(client, direct_url, {**prompt, "stream": True}, streams, total)
            before = server_cpu(pid)
            s_seconds = await _concurrent(client, served_url, {**ask, "stream": True}, streams, total)
            cpu = (server_cpu(pid) - before) / (total * tokens) * 1e6
            print(
                f"{streams:<34}{total * tokens / d_seconds:14,.0f}{total * tokens / s_seconds:14,.0f}"
                f"{total / s_seconds:14.1f}{cpu:12.1f}{1e6 / cpu:17,.0f}"
            )
        print("(CPU-bound tok/s: what one worker process serves with a core of its own, 1 s / its CPU per token;")
        print(" served tok/s is what this machine gave, the double and this client sharing its cores with the server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per measurement (default 40)")
    parser.add_argument("--tokens", type=int, default=256, help="upstream tokens per reply (default 256)")
    parser.add_argument("--pace", type=float, default=0.0, help="ms per upstream token (default 0: full speed)")
    parser.add_argument("--workers", type=int, default=1, help="the server's worker processes (default 1)")
    parser.add_argument("--http", default="auto", help="the server's --http (auto, httptools, h11)")
    parser.add_argument("--loop", default="auto", help="the server's --loop (auto, uvloop, asyncio)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.serve.double import tokens as cut

    text = reply_text(args.tokens)
    n_tokens = len(cut(text, ["<tool_call>", "</think>", "<function=", "<parameter="]))
    up_port, server_port = _free_port(), _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    source = DOUBLE.format(root=str(ROOT), text=text, port=up_port, delay=args.pace / 1000)
    double = subprocess.Popen([sys.executable, "-c", source], env=env)
    server = subprocess.Popen(
        [sys.executable, "-m", "autoparser", "serve", TEMPLATE, "--upstream", f"http://127.0.0.1:{up_port}",
         "--port", str(server_port), "--log-level", "warning", "--workers", str(args.workers),
         "--http", args.http, "--loop", args.loop],
        env=env,
    )  # fmt: skip
    processes = [server, double]
    try:
        _wait(f"http://127.0.0.1:{up_port}/health", double)
        _wait(f"http://127.0.0.1:{server_port}/health", server)
        served = f"http://127.0.0.1:{server_port}"
        if args.pace:
            floor_port = _free_port()
            floor = subprocess.Popen([sys.executable, "-c", FLOOR.format(up_port=up_port, port=floor_port)], env=env)
            processes.append(floor)
            _wait(f"http://127.0.0.1:{floor_port}/health", floor)
            asyncio.run(
                measure_paced(
                    served, server.pid, args.requests, n_tokens, args.pace, f"http://127.0.0.1:{floor_port}", floor.pid
                )
            )
        else:
            upstream = f"http://127.0.0.1:{up_port}"
            asyncio.run(measure(upstream, served, server.pid, args.requests, n_tokens, args.workers))
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
