"""Parse and streaming benchmark for four output shapes at 200 B, 2 KB and 20 KB.

* Qwen3-Coder: a tagged tool call whose ``code`` argument carries the bulk (code with ``<``, quotes, newlines);
* Hermes-2-Pro: a JSON tool call whose ``content`` string argument carries the bulk (with escapes);
* Hermes nested: parallel JSON tool calls (four per 20 KB) whose arguments are nested JSON objects and arrays;
* QwQ: reasoning (up to ``</think>``) then a plain answer.

Reported: µs per full parse (``ChatParams.parse``), and total ms to stream the output one character per feed
(``StreamParser.feed`` + ``finish``). Targets (from the issue): full parse within 3x of the C++ reference at 2 KB
(reference 10-24 µs) and within 1.5x at 20 KB (reference 63-204 µs); streaming 20 KB char by char < 60 ms.

Run: python bench/parse_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from autoparser import ChatParams, ChatTemplate

SIZES = (200, 2_000, 20_000)
_CODE_LINES = [
    "def handler(request):",
    '    if request.size < limit and "x" in request.tags:',
    "        return render('<div class=\"row\">' + escape(value) + '</div>')",
    "    for i in range(10):  # counting <= 10",
    "        total += values[i] * 2",
    "    return {'status': 200, 'body': body}",
]


def _filler(size: int, seed: int) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    while sum(map(len, lines)) + len(lines) < size:
        lines.append(rng.choice(_CODE_LINES))
    return "\n".join(lines)[:size]


def _tool(name: str, param: str) -> list[dict[str, object]]:
    schema = {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}
    return [{"type": "function", "function": {"name": name, "description": "d", "parameters": schema}}]


def qwen3_coder(size: int) -> tuple[ChatParams, str]:
    params = ChatTemplate.load("Qwen3-Coder").apply([{"role": "user", "content": "go"}], tools=_tool("python", "code"))
    head = "<tool_call>\n<function=python>\n<parameter=code>\n"
    tail = "\n</parameter>\n</function>\n</tool_call>"
    return params, head + _filler(size - len(head) - len(tail), 1) + tail


def hermes(size: int) -> tuple[ChatParams, str]:
    tmpl = ChatTemplate.load("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use")
    params = tmpl.apply([{"role": "user", "content": "go"}], tools=_tool("write_file", "content"))
    head = '<tool_call>\n{"name": "write_file", "arguments": {"content": '
    tail = "}}\n</tool_call>"
    body = json.dumps(_filler(size, 2))
    return params, head + body[: size - len(head) - len(tail) - 1].rstrip("\\") + '"' + tail


def _nested_value(rng: random.Random, depth: int) -> object:
    """Objects and arrays ``depth`` levels deep, of numbers, booleans, nulls and strings with quotes: many small
    containers, the shape that costs a JSON reader most per character."""
    if depth == 0:
        return rng.choice([rng.randint(-999, 9999), round(rng.random() * 100, 3), True, False, None, f'v{depth} "q"'])
    if rng.random() < 0.5:
        return [_nested_value(rng, depth - 1) for _ in range(rng.randint(1, 3))]
    return {f"key_{i}": _nested_value(rng, depth - 1) for i in range(rng.randint(1, 3))}


def hermes_nested(size: int) -> tuple[ChatParams, str]:
    """Parallel calls, one per 5 KB (at least one), each of whose ``options`` argument is a nested JSON object."""
    tmpl = ChatTemplate.load("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use")
    schema = {"type": "object", "properties": {"options": {"type": "object"}}, "required": ["options"]}
    tools = [{"type": "function", "function": {"name": "configure", "description": "d", "parameters": schema}}]
    params = tmpl.apply([{"role": "user", "content": "go"}], tools=tools, parallel_tool_calls=True)
    rng = random.Random(5)
    count = max(size // 5_000, 1)
    calls = []
    for _ in range(count):
        options: dict[str, object] = {}
        head = '<tool_call>\n{"name": "configure", "arguments": {"options": '
        while len(head) + len(json.dumps(options)) + 20 < size // count:
            options[f"group_{len(options)}"] = _nested_value(rng, 4 if size >= 2_000 else 1)
        calls.append(head + json.dumps(options) + "}}\n</tool_call>")
    return params, "\n".join(calls)


def qwq(size: int) -> tuple[ChatParams, str]:
    # (thinking on: the template's own default closes the block in the prompt)
    params = ChatTemplate.load("Qwen-QwQ-32B").apply(
        [{"role": "user", "content": "go"}], reasoning_format="auto", enable_thinking=True
    )
    reasoning = _filler(size * 3 // 4, 3)
    answer = _filler(size - len(reasoning) - 10, 4)
    return params, reasoning + "\n</think>\n" + answer


def _time_parse(params: ChatParams, text: str, repeat: int) -> float:
    params.parse(text)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(20):
            params.parse(text)
        best = min(best, (time.perf_counter() - start) / 20)
    return best * 1e6


def _time_stream(params: ChatParams, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        stream = params.stream()
        start = time.perf_counter()
        for char in text:
            stream.feed(char)
        stream.finish()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'workload':<14}{'size':>8}{'parse µs':>12}{'stream ms':>12}")
    workloads = (("Qwen3-Coder", qwen3_coder), ("Hermes-2-Pro", hermes), ("Hermes nested", hermes_nested), ("QwQ", qwq))
    for name, make in workloads:
        for size in SIZES:
            params, text = make(size)
            message = params.parse(text)
            assert message.tool_calls or message.reasoning_content, f"{name} {size}: nothing parsed"
            parse_us = _time_parse(params, text, args.repeat)
            stream_ms = _time_stream(params, text, args.repeat)
            print(f"{name:<14}{len(text):>8}{parse_us:>12.1f}{stream_ms:>12.2f}")


if __name__ == "__main__":
    main()
