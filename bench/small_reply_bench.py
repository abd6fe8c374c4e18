"""A complete ~200-byte reply, per family: ``ChatParams.parse`` against vLLM's own parser for that family.

Each family is a bundled template and the vLLM parser that serves its models: JSON calls in ``<tool_call>`` (Hermes,
Qwen 2.5), tagged XML calls (Qwen3-Coder), Mistral, Llama 3 JSON, DeepSeek V3.1, Granite, LFM2 (pythonic), a
reasoning-only reply (DeepSeek-R1, Qwen3), plain text. autoparser's parser comes from
``ChatTemplate.load(name).apply(messages, tools=...)``; vLLM's is built as its chat serving builds it, with a small
tokenizer trained here (tests/integrations/vllm_support.py), and called as serving calls it on a complete reply:
``extract_tool_calls(text, request)`` or ``extract_reasoning(text, request)``.

Reported per family: µs per call (median of batch means, wall and CPU time), and the ratio autoparser / vLLM measured
in the same run, batches of the two interleaved so that both see the same load. Target (issue 27): ratio <= 1 on
every family. Where vLLM is not importable, autoparser's figures alone are printed (absolute µs per core).

Run: python bench/small_reply_bench.py [--batches N] [--calls N]
     (with vLLM: the vLLM environment's python, PYTHONPATH=src, from the repository root)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autoparser import ChatTemplate

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "country": {"type": "string"},
                "unit": {"type": "string"},
                "days": {"type": "integer"},
                "hourly": {"type": "boolean"},
            },
            "required": ["city"],
        },
    },
}
ARGS = '{"city": "Paris", "country": "France", "unit": "celsius", "days": 3, "hourly": false}'
ASK = [{"role": "user", "content": "What is the weather in Paris this week?"}]
ANSWER = (
    "Paris will be mild this week: around 15 degrees Celsius by day, with showers on Tuesday and Wednesday "
    "and sunshine from Thursday on. Bring an umbrella and a light jacket."
)
THOUGHT = (
    "The user wants the weather in Paris for the week. I have no tool for that here, so I should answer "
    "from what is typical for the season and say so."
)


@dataclass(frozen=True)
class Family:
    name: str
    template: str
    text: str
    vllm_tool: str | None = None  # vLLM's tool parser name
    vllm_reasoning: str | None = None  # or its reasoning parser name
    tools: bool = True
    apply: dict[str, Any] = field(default_factory=dict)
    tokens: tuple[str, ...] = ()  # special tokens vLLM's parser looks up in the tokenizer, beyond the template's


FAMILIES = (
    Family(
        "hermes JSON call",
        "Qwen-Qwen2.5-7B-Instruct",
        f'Let me look up the forecast for Paris for you.\n<tool_call>\n{{"name": "get_weather", "arguments": {ARGS}}}'
        "\n</tool_call>",
        vllm_tool="hermes",
    ),
    Family(
        "qwen3_coder XML call",
        "Qwen3-Coder",
        "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=country>\nFrance\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
        vllm_tool="qwen3_coder",
    ),
    Family(
        "mistral call",
        "mistralai-Mistral-Nemo-Instruct-2407",
        f'[TOOL_CALLS][{{"name": "get_weather", "arguments": {ARGS}, "id": "a1B2c3D4e"}}]',
        vllm_tool="mistral",
    ),
    Family(
        "llama3_json call",
        "meta-llama-Llama-3.1-8B-Instruct",
        f'{{"name": "get_weather", "parameters": {ARGS}}}',
        vllm_tool="llama3_json",
        tokens=("<|python_tag|>",),
    ),
    Family(
        "deepseek_v31 call",
        "deepseek-ai-DeepSeek-V3.1",
        "Let me check the forecast.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        f"{ARGS}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        vllm_tool="deepseek_v31",
    ),
    Family(
        "granite call",
        "vllm-tool_chat_template_granite",
        f'<|tool_call|>[{{"name": "get_weather", "arguments": {ARGS}}}]',
        vllm_tool="granite",
    ),
    Family(
        "lfm2 pythonic call",
        "LFM2.5-Instruct",
        "Let me check the forecast for Paris.<|tool_call_start|>"
        "[get_weather(city='Paris', country='France', unit='celsius', days=3, hourly=False)]<|tool_call_end|>",
        vllm_tool="lfm2",
        tokens=("<|tool_call_start|>", "<|tool_call_end|>"),
    ),
    Family(
        "deepseek_r1 reasoning only",
        "llama-cpp-deepseek-r1",
        f"{THOUGHT}\n</think>\n\n{ANSWER[:60]}",
        vllm_reasoning="deepseek_r1",
        tools=False,
    ),
    Family(
        "qwen3 reasoning only",
        "Qwen-Qwen3-0.6B",
        f"<think>\n{THOUGHT}\n</think>\n\n{ANSWER[:50]}",
        vllm_reasoning="qwen3",
        tools=False,
        apply={"enable_thinking": True},
    ),
    Family("hermes plain text", "Qwen-Qwen2.5-7B-Instruct", ANSWER, vllm_tool="hermes"),
    Family(
        "llama3_json plain text",
        "meta-llama-Llama-3.1-8B-Instruct",
        ANSWER,
        vllm_tool="llama3_json",
        tokens=("<|python_tag|>",),
    ),
)


def autoparser_call(family: Family) -> Callable[[], object]:
    tools = [WEATHER] if family.tools else None
    params = ChatTemplate.load(family.template).apply(ASK, tools=tools, **family.apply)
    text = family.text
    return lambda: params.parse(text)


def vllm_call(family: Family) -> Callable[[], object]:
    """vLLM's parser for the family, as its chat serving builds and calls it on a complete reply."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.integrations import vllm_support as vs

    tokenizer = vs.tokenizer_for(family.template, (family.text,), family.tokens)
    request = vs.request_for(ASK, [WEATHER] if family.tools else None, **_chat_kwargs(family))
    text = family.text
    if family.vllm_reasoning:
        from vllm.reasoning import ReasoningParserManager

        reasoning = ReasoningParserManager.get_reasoning_parser(family.vllm_reasoning)(tokenizer)
        return lambda: reasoning.extract_reasoning(text, request)
    from vllm.tool_parsers import ToolParserManager

    assert family.vllm_tool
    parser = ToolParserManager.get_tool_parser(family.vllm_tool)(tokenizer, request.tools)
    request = parser.adjust_request(request)
    return lambda: parser.extract_tool_calls(text, request)


def _chat_kwargs(family: Family) -> dict[str, Any]:
    return {"chat_template_kwargs": dict(family.apply)} if family.apply else {}


def have_vllm() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)  # µs per call, one figure per batch
    cpu: list[float] = field(default_factory=list)

    def batch(self, call: Callable[[], object], calls: int) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            call()
        self.wall.append((time.perf_counter() - wall) / calls * 1e6)
        self.cpu.append((time.process_time() - cpu) / calls * 1e6)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)


def _summary(result: object) -> str:
    """What a parser read, in one short line (to see that both read the reply alike)."""
    if hasattr(result, "to_openai"):
        message = result.to_openai()  # type: ignore[attr-defined]
        calls = [c["function"]["name"] for c in message.get("tool_calls", [])]
        return f"reasoning={bool(message.get('reasoning_content'))} content={bool(message['content'])} calls={calls}"
    if isinstance(result, tuple):  # vLLM's (reasoning, content)
        return f"reasoning={bool(result[0])} content={bool(result[1])} calls=[]"
    calls = [c.function.name for c in getattr(result, "tool_calls", [])]
    return f"reasoning=False content={bool(getattr(result, 'content', None))} calls={calls}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=30, help="timed batches per parser (the median is reported)")
    parser.add_argument("--calls", type=int, default=200, help="parses per batch")
    parser.add_argument("--only", default="", help="run the families whose name contains this")
    parser.add_argument("--show", action="store_true", help="print what each parser read")
    args = parser.parse_args()
    with_vllm = have_vllm()
    rows: list[tuple[str, int, Timing, Timing | None]] = []
    for family in FAMILIES:
        if args.only and args.only not in family.name:
            continue
        ours = autoparser_call(family)
        theirs = vllm_call(family) if with_vllm else None
        for call in (ours, theirs):
            for _ in range(3 * args.calls if call else 0):  # warm-up: caches, branch predictors, lazy compiles
                call()  # type: ignore[misc]
        if args.show:
            print(f"{family.name}: autoparser {_summary(ours())}" + (f" | vLLM {_summary(theirs())}" if theirs else ""))
        mine, other = Timing(), Timing() if theirs else None
        for _ in range(args.batches):
            mine.batch(ours, args.calls)
            if theirs and other:
                other.batch(theirs, args.calls)
        rows.append((family.name, len(family.text.encode()), mine, other))
    head = f"{'family':28} {'bytes':>5} {'autoparser µs':>13} {'(cpu)':>7}"
    print(head + (f" {'vLLM µs':>8} {'(cpu)':>7} {'ratio':>6}" if with_vllm else ""))
    for name, size, mine, other in rows:
        line = f"{name:28} {size:5d} {mine.median:13.1f} {mine.cpu_median:7.1f}"
        if other is not None:
            line += f" {other.median:8.1f} {other.cpu_median:7.1f} {mine.median / other.median:6.2f}"
        print(line)
    if not with_vllm:
        print("(vLLM is not importable here: autoparser's figures only)")
    print(json.dumps({"python": sys.version.split()[0], "vllm": with_vllm}))


if __name__ == "__main__":
    main()
