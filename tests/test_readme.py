"""The README's parsing sample runs as written, and the OpenAI forms it shows.

The streaming loop is executed on the bundled example (Qwen3.5's output with a call): what it sends adds up to the
parsed message, and it sends no empty chunk (the parser holds text back on most feeds of that output).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate, merge_deltas

ROOT = Path(__file__).parent.parent
OUTPUT = (ROOT / "examples" / "qwen3.5-output.txt").read_text(encoding="utf-8")
TOOLS = json.loads((ROOT / "examples" / "tools.json").read_text(encoding="utf-8"))
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _parsing_sample() -> str:
    """The first python block of the README's "Parsing model output" section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Parsing model output") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _accumulate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    content = "".join(c.get("content", "") for c in chunks)
    reasoning = "".join(c.get("reasoning_content", "") for c in chunks)
    arguments = "".join(t["function"].get("arguments", "") for c in chunks for t in c.get("tool_calls", []))
    names = [t["function"]["name"] for c in chunks for t in c.get("tool_calls", []) if "name" in t.get("function", {})]
    return {"content": content, "reasoning": reasoning, "names": names, "arguments": arguments}


@pytest.mark.parametrize("size", [1, 4])
def test_the_streaming_loop_sends_no_empty_chunk(size: int) -> None:
    sent: list[dict[str, Any]] = []
    namespace = {"messages": MESSAGES, "tools": TOOLS, "model_output": OUTPUT, "pieces": _pieces(OUTPUT, size)}
    namespace["send"] = sent.append
    exec(_parsing_sample(), namespace)
    assert sent[:-1] and all(sent[:-1]), "the loop sent an empty chunk"
    params = ChatTemplate.load("Qwen3.5-4B").apply(MESSAGES, tools=TOOLS, reasoning_format="auto")
    # Without the check, most feeds of this output give nothing to send.
    stream = params.stream()
    empty = sum(not merge_deltas(stream.feed(piece)).to_openai() for piece in _pieces(OUTPUT, size))
    assert empty > len(_pieces(OUTPUT, size)) // 3
    message = params.parse(OUTPUT)
    got = _accumulate(sent)
    assert got["content"] == message.content and got["reasoning"] == message.reasoning_content
    assert got["names"] == [c.name for c in message.tool_calls]
    assert json.loads(got["arguments"]) == json.loads(message.tool_calls[0].arguments)


def test_reasoning_under_either_name() -> None:
    """``reasoning_content`` by default; ``reasoning`` (vLLM's newer field) on request, on messages and deltas."""
    params = ChatTemplate.load("Qwen3.5-4B").apply(MESSAGES, tools=TOOLS, reasoning_format="auto")
    message = params.parse(OUTPUT)
    default = message.to_openai()
    renamed = message.to_openai(reasoning_field="reasoning")
    assert default["reasoning_content"] == renamed["reasoning"] == message.reasoning_content
    assert "reasoning" not in default and "reasoning_content" not in renamed
    assert {k: v for k, v in renamed.items() if k != "reasoning"} == {
        k: v for k, v in default.items() if k != "reasoning_content"
    }
    stream = params.stream()
    deltas = [d for piece in _pieces(OUTPUT, 3) for d in stream.feed(piece)] + stream.finish()
    chunks = [d.to_openai(reasoning_field="reasoning") for d in deltas]
    assert "".join(c.get("reasoning", "") for c in chunks) == message.reasoning_content
    assert not any("reasoning_content" in c for c in chunks)
    assert [d.to_openai() for d in deltas] == [d.to_openai(reasoning_field="reasoning_content") for d in deltas]
    with pytest.raises(ValueError, match="reasoning_field"):
        message.to_openai(reasoning_field="thinking")
    with pytest.raises(ValueError, match="reasoning_field"):
        deltas[0].to_openai(reasoning_field="thinking")
