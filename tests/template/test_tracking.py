"""Access tracking: which input fields does a template read? Rendering output must not change."""

from __future__ import annotations

from typing import Any

import pytest

from autoparser.template import JinjaChatTemplate
from autoparser.template.tracking import AccessLog, track

TOOLS = [{"type": "function", "function": {"name": "tool1", "description": "d", "parameters": {
    "type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]}}}]
MESSAGES = [
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call00001", "type": "function", "function": {"name": "tool1", "arguments": {"arg": "value"}}}]},
    {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
]


def tracked_render(name: str) -> tuple[str, str, AccessLog]:
    tmpl = JinjaChatTemplate.load(name)
    log = AccessLog()
    context: dict[str, Any] = {
        "bos_token": "", "eos_token": "", "add_generation_prompt": True,
        "messages": track(MESSAGES, "messages", log), "tools": track(TOOLS, "tools", log),
    }
    return tmpl.render(MESSAGES, TOOLS, add_generation_prompt=True), tmpl.render_context(context), log


@pytest.mark.parametrize(
    ("name", "reads_tools", "reads_object_args"),
    [
        ("Qwen3-Coder", True, True),  # iterates arguments|items
        ("Qwen-Qwen2.5-7B-Instruct", True, True),  # arguments|tojson
        ("microsoft-Phi-3.5-mini-instruct", False, False),  # no tool support at all
    ],
)
def test_tracking_reports_reads_without_changing_output(name: str, reads_tools: bool, reads_object_args: bool) -> None:
    plain, tracked, log = tracked_render(name)
    assert tracked == plain
    assert log.used("tools[0].function.name") is reads_tools
    assert log.used("messages[1].tool_calls[0].function.arguments.arg") is reads_object_args
    assert log.used("messages[0].content")


def test_access_log_paths() -> None:
    log = AccessLog()
    data = track({"a": [{"b": 1}, {"b": 2}], "c": {"d": 3}}, "x", log)
    assert data["a"][-1]["b"] == 2
    assert [item["b"] for item in data["a"][:1]] == [1]
    assert data.get("missing") is None and data.get("c")["d"] == 3
    assert log.used("x.a[1].b") and log.used("x.a[0]") and log.used("x.c.d")
    assert not log.used("x.a[2]") and not log.used("x.e")
    assert "x.a:slice" in log.paths and "AccessLog" in repr(log)
    assert list(data) == ["a", "c"] and "x:iter" in log.paths
