"""Capability probing: what a chat template can express, found by rendering it with tracked inputs.

A template that never reads ``tools[0].function.name`` cannot show tools to the model; one that never reads
``tool_calls`` cannot replay a tool call; one that reads ``arguments.arg`` wants arguments as objects rather
than JSON strings. Each probe renders a small conversation whose dicts and lists are wrapped by
:func:`~autoparser.template.tracking.track`, then asks the :class:`AccessLog` what was read. A probe whose render
raises counts as "not supported" for what it tests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .probing import ProbeRenderer
from .tracking import AccessLog

__all__ = ["TemplateCapabilities", "probe_capabilities"]

_TEXT_NEEDLE = "Q_PROBE_TEXT_Q"
_ARG_SCHEMA = {"type": "string", "description": "Argument"}
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tool1",
            "description": "Tool 1",
            "parameters": {"type": "object", "properties": {"arg": _ARG_SCHEMA}, "required": ["arg"]},
        },
    }
]
_USER = {"role": "user", "content": "User message"}


@dataclass(frozen=True, slots=True)
class TemplateCapabilities:
    """What the template reads and renders (see the module docstring for how each flag is decided)."""

    supports_string_content: bool = True
    supports_typed_content: bool = False
    supports_system_role: bool = True
    supports_tools: bool = True
    supports_tool_calls: bool = True
    supports_parallel_tool_calls: bool = True
    supports_object_arguments: bool = False
    supports_preserve_reasoning: bool = False
    # A tool result renders only with the ``name`` of the function it answers (Functionary v2 writes it; OpenAI
    # clients send none): the request layer then passes the call's name along.
    needs_tool_result_name: bool = False

    def to_dict(self) -> dict[str, bool]:
        return asdict(self)


def _tracked(renderer: ProbeRenderer, messages: list[dict[str, Any]], tools: list[Any] | None) -> AccessLog | None:
    """Render with tracked inputs; the access log, or None when the template raised."""
    log = AccessLog()
    if renderer.render(messages, tools, add_generation_prompt=True, log=log) is None:
        return None
    return log


def _tool_call(call_id: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "tool1", "arguments": arguments}}


def _tool_conversation(
    calls: list[dict[str, Any]], reasoning: bool = False, named: bool = False
) -> list[dict[str, Any]]:
    """A call, its result and an answer. ``reasoning``: the calling turn reasons first; ``named``: the result
    carries the tool's ``name`` too (Functionary v2's template writes ``'<|from|>' + message['name']`` and raises
    without it)."""
    turn: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": calls}
    if reasoning:
        turn["reasoning_content"] = "Reasoning"
    result = {"role": "tool", "content": "Tool response", "tool_call_id": calls[0]["id"]}
    return [
        _USER,
        turn,
        result | {"name": "tool1"} if named else result,
        {"role": "assistant", "content": "The tool response was 'tool response'"},
        _USER,
    ]


def probe_capabilities(renderer: ProbeRenderer) -> TemplateCapabilities:
    """Probe a template's capabilities (about ten renders)."""
    flags: dict[str, bool] = {}

    # Content: a plain string must show up; typed parts count only if their text is rendered as text, not as a
    # stringified list of dicts.
    plain = renderer.render([{"role": "user", "content": _TEXT_NEEDLE}], add_generation_prompt=True)
    flags["supports_string_content"] = plain is not None and _TEXT_NEEDLE in plain
    parts = [{"type": "text", "text": _TEXT_NEEDLE}]
    typed = renderer.render([{"role": "user", "content": parts}], add_generation_prompt=True)
    flags["supports_typed_content"] = typed is not None and _TEXT_NEEDLE in typed and "'text'" not in typed

    system = _tracked(renderer, [{"role": "system", "content": "System message"}, _USER], [])
    flags["supports_system_role"] = system is not None and system.used("messages[0].content")

    # Preserved reasoning: the template reads an earlier assistant turn's reasoning (it may still drop turns
    # before the last user message, as Qwen3 does).
    assistant = {"role": "assistant", "content": "Assistant message", "reasoning_content": "Reasoning"}
    history = _tracked(renderer, [_USER, assistant, _USER], None)
    flags["supports_preserve_reasoning"] = history is not None and (
        history.used("messages[1].reasoning_content")
        or history.used("messages[1].thinking")
        or history.used("messages[1].reasoning")
    )
    flags.update(_probe_tools(renderer))
    return TemplateCapabilities(**flags)


def _probe_tools(renderer: ProbeRenderer) -> dict[str, bool]:
    """Tools, tool calls, argument shape (object vs JSON string) and parallel calls.

    A turn with calls is tried without reasoning, then with it: some templates render calls only after the
    reasoning a model always writes first (Command A Reasoning raises on a call turn with neither reasoning nor
    text); and a template that raises on the probe's tool result is tried with the tool's name in the result
    (Functionary v2 writes it)."""
    flags = {"supports_object_arguments": False}
    log: AccessLog | None = None
    arguments: Any = None
    reasoning = named = False
    for reasoning, named in ((False, False), (True, False), (False, True), (True, True)):
        arguments = {"arg": "value"}
        conversation = _tool_conversation([_tool_call("call00001", arguments)], reasoning, named)
        log = _tracked(renderer, conversation, _PROBE_TOOLS)
        if log is not None and log.used("messages[1].tool_calls[0].function.arguments.arg"):
            flags["supports_object_arguments"] = True
        else:
            arguments = '{"arg": "value"}'
            conversation = _tool_conversation([_tool_call("call00001", arguments)], reasoning, named)
            string_log = _tracked(renderer, conversation, _PROBE_TOOLS)
            log = string_log if string_log is not None else log
        if log is not None:
            break
    if log is None:
        return flags | {"supports_tools": False, "supports_tool_calls": False, "supports_parallel_tool_calls": False}
    flags["needs_tool_result_name"] = named
    flags["supports_tools"] = log.used("tools[0].function.name")
    flags["supports_tool_calls"] = log.used("messages[1].tool_calls")
    if not flags["supports_tool_calls"]:
        return flags | {"supports_parallel_tool_calls": False}
    calls = [_tool_call("call00001", arguments), _tool_call("call00002", arguments)]
    parallel = _tracked(renderer, _tool_conversation(calls, reasoning, named), _PROBE_TOOLS)
    flags["supports_parallel_tool_calls"] = parallel is not None and parallel.used("messages[1].tool_calls[1].function")
    return flags
