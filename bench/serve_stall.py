"""Does one request stall another? The largest gap between two events of a running stream while heavy requests
arrive at ``autoparser serve``.

Two processes on loopback, as in bench/serve_bench.py: the upstream double streaming a reply at an engine's pace
(``--pace`` ms per token), and the real ``autoparser serve`` in front of it. One client streams a long reply and
records the time between consecutive events; meanwhile other clients send heavy requests: 1,000 tools each, and
600-message conversations (their replies are short). The gaps are reported with no heavy load and under it: a
request's CPU work (JSON, validation, rendering, the parser and the grammar) that ran on the event loop shows up
as a gap of its whole duration in every stream in flight. The same reply read from the upstream double directly,
meanwhile, shows the gaps the upstream itself makes (its one event loop reads each heavy request's body, prompt and
grammar, too): a gap there is passed on by the server, not made by it.

No asserts: it reports. Run: python bench/serve_stall.py [--pace MS] [--tokens N] [--heavy N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from serve_bench import TEMPLATE, _free_port, _wait  # noqa: E402  (the same two processes)

DOUBLE = """
import sys, uvicorn
sys.path.insert(0, {root!r})
from tests.serve.double import Script, UpstreamDouble, tokens
double = UpstreamDouble()
double.default = Script(["Fine", "."])
double.script("[long]", Script(tokens({text!r}), delay={delay}))
uvicorn.run(double.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""


def many_tools(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` distinct tools (fresh names each time: no cache helps)."""
    properties = {f"p{j}": {"type": "string", "description": f"parameter {j}"} for j in range(6)}
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{seed}_{i}",
                "description": f"Tool number {i} of request {seed}",
                "parameters": {"type": "object", "properties": properties, "required": ["p0"]},
            },
        }
        for i in range(n)
    ]


def long_conversation(n: int) -> list[dict[str, str]]:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}: " + "words " * 30} for i in
             range(n - 1)]  # fmt: skip
    return [*turns, {"role": "user", "content": "And now?"}]


async def _gaps(client: httpx2.AsyncClient, url: str) -> list[float]:
    """Seconds between consecutive events of one long streamed reply through the server."""
    body = {"model": TEMPLATE, "messages": [{"role": "user", "content": "Tell me a story [long]"}], "stream": True}
    return await _event_gaps(client, url, body)


async def _direct_gaps(client: httpx2.AsyncClient, upstream: str) -> list[float]:
    """The same long reply read from the upstream double itself, at the same time: the gaps the upstream makes (its
    own event loop reads every heavy request's body too), which the server can only pass on."""
    return await _event_gaps(client, upstream + "/completion", {"prompt": "Tell me a story [long]", "stream": True})


async def _event_gaps(client: httpx2.AsyncClient, url: str, body: dict[str, Any]) -> list[float]:
    gaps: list[float] = []
    last = None
    async with client.stream("POST", url, json=body, timeout=120) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter()
            if last is not None:
                gaps.append(now - last)
            last = now
    return gaps


async def _heavy(client: httpx2.AsyncClient, url: str, count: int, stop: asyncio.Event) -> int:
    sent = 0
    while not stop.is_set() and sent < count:
        if sent % 2 == 0:
            body = {"model": TEMPLATE, "messages": [{"role": "user", "content": "Hi"}], "tools": many_tools(1000, sent)}
        else:
            body = {"model": TEMPLATE, "messages": long_conversation(600)}
        response = await client.post(url, json=body, timeout=120)
        response.raise_for_status()
        sent += 1
    return sent


def _report(label: str, gaps: list[float]) -> None:
    ms = sorted(g * 1000 for g in gaps)
    p99 = ms[int(len(ms) * 0.99) - 1] if ms else 0.0
    print(f"{label:36}{len(ms):8}{statistics.median(ms):10.1f}{p99:10.1f}{ms[-1]:10.1f}")


async def measure(server: str, upstream: str, heavy: int) -> None:
    url = server + "/v1/chat/completions"
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=None)) as client:
        await client.post(url, json={"model": TEMPLATE, "messages": [{"role": "user", "content": "warm up"}]})
        print(f"{'':36}{'events':>8}{'median':>10}{'p99':>10}{'max':>10}   (gaps between events, ms)")
        _report("alone", await _gaps(client, url))
        stop = asyncio.Event()
        stream = asyncio.create_task(_gaps(client, url))
        direct = asyncio.create_task(_direct_gaps(client, upstream))
        loaders = [asyncio.create_task(_heavy(client, url, heavy, stop)) for _ in range(2)]
        gaps = await stream
        stop.set()
        sent = sum(await asyncio.gather(*loaders))
        _report(f"with {sent} heavy requests arriving", gaps)
        _report("  the upstream's own, meanwhile", await direct)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pace", type=float, default=5.0, help="ms per upstream token (default 5)")
    parser.add_argument("--tokens", type=int, default=600, help="tokens of the long reply (default 600)")
    parser.add_argument("--heavy", type=int, default=10, help="heavy requests per loader, two loaders (default 10)")
    parser.add_argument("--loop", default="auto", help="the server's --loop (auto, uvloop, asyncio)")
    args = parser.parse_args()
    text = " ".join(f"word{i}" for i in range(args.tokens // 2))
    up_port, server_port = _free_port(), _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    source = DOUBLE.format(root=str(ROOT), text=text, delay=args.pace / 1000, port=up_port)
    double = subprocess.Popen([sys.executable, "-c", source], env=env)
    server = subprocess.Popen(
        [sys.executable, "-m", "autoparser", "serve", TEMPLATE, "--upstream", f"http://127.0.0.1:{up_port}",
         "--port", str(server_port), "--log-level", "warning", "--max-tools", "1000", "--loop", args.loop],
        env=env,
    )  # fmt: skip
    try:
        _wait(f"http://127.0.0.1:{up_port}/health", double)
        _wait(f"http://127.0.0.1:{server_port}/health/live", server)
        print(f"autoparser serve stall bench: {TEMPLATE}, a {args.tokens}-token reply at {args.pace} ms per token")
        asyncio.run(measure(f"http://127.0.0.1:{server_port}", f"http://127.0.0.1:{up_port}", args.heavy))
    finally:
        for process in (server, double):
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
