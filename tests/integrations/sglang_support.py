"""Driving real SGLang the way its OpenAI chat serving drives parsers (sglang 0.5's ``OpenAIServingChat``), with a
tokenizer built here (no downloads).

The serving layer itself needs a running engine (its ``TokenizerManager``), which needs a GPU; these helpers make
the same calls on the same SGLang objects, in the same order, with the same arguments:

* :func:`complete` as ``_build_chat_response``: ``ReasoningParser(name, stream_reasoning=False, force_reasoning,
  request, tokenizer, tool_call_parser_active)`` and ``parse_non_stream``, then, when tool parsing is active,
  ``FunctionCallParser(tools, name, tokenizer, tool_choice, prefix, constrained)`` with ``has_tool_call`` and
  ``parse_non_stream`` (``_process_tool_calls``);
* :func:`stream` as ``_generate_stream_content``: per step ``parse_stream_chunk`` of the reasoning parser (and its
  ``parse_stream_end`` on the last step), the rest to the tool-call parser's ``parse_stream_chunk`` (and its
  ``parse_stream_end`` on the last step), then ``_check_for_unstreamed_tool_args``' arithmetic on the detector.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, ToolChoice
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

NAME = "autoparser"


def request_for(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **fields: Any
) -> ChatCompletionRequest:
    body: dict[str, Any] = {"model": "local", "messages": messages, **fields}
    if tools:
        body["tools"] = tools
    return ChatCompletionRequest.model_validate(body)


def tool_parsing_active(request: ChatCompletionRequest) -> bool:
    """``OpenAIServingChat._tool_call_parsing_active`` with ``--tool-call-parser autoparser``."""
    if not request.tools:
        return FunctionCallParser.ToolCallParserEnum[NAME].parses_without_tools()
    return request.tool_choice != "none"


@dataclass
class Reply:
    """What a client receives: the reasoning, the content and the calls (name, arguments as JSON text)."""

    reasoning: str = ""
    content: str = ""
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, arguments]
    incomplete: set[int] = field(default_factory=set)

    def call_list(self) -> list[tuple[str, Any]]:
        return [(name, json.loads(arguments)) for name, arguments in (self.calls[i] for i in sorted(self.calls))]


def _reasoning_parser(request: ChatCompletionRequest, tokenizer: Any, *, stream: bool) -> ReasoningParser:
    return ReasoningParser(
        NAME,
        request.stream_reasoning if stream else False,
        False,  # force_reasoning: SGLang's template_manager has no reasoning config for these test models
        request,
        tokenizer=tokenizer,
        tool_call_parser_active=tool_parsing_active(request),
    )


def _tool_parser(request: ChatCompletionRequest, tokenizer: Any) -> FunctionCallParser:
    return FunctionCallParser(
        request.tools or [], NAME, tokenizer=tokenizer, tool_choice=request.tool_choice, prefix="", constrained=False
    )


def complete(request: ChatCompletionRequest, tokenizer: Any, text: str, *, reasoning: bool = True) -> Reply:
    reply = Reply()
    if reasoning and request.separate_reasoning:
        reasoning_text, text = _reasoning_parser(request, tokenizer, stream=False).parse_non_stream(text)
        reply.reasoning = reasoning_text or ""
    if tool_parsing_active(request):
        parser = _tool_parser(request, tokenizer)
        if parser.has_tool_call(text):
            text, items = parser.parse_non_stream(text)
            reply.calls = {i: [item.name, item.parameters] for i, item in enumerate(items)}
            reply.incomplete = set(getattr(parser.detector, "incomplete_tool_call_indices", ()))
    reply.content = text or ""
    return reply


def stream(
    request: ChatCompletionRequest, tokenizer: Any, pieces: list[str], *, reasoning: bool = True
) -> tuple[Reply, list[dict[str, Any]]]:
    """The reply and the chunks' deltas, one list entry per chunk SGLang would send."""
    reply, chunks = Reply(), []
    reasoning_parser = _reasoning_parser(request, tokenizer, stream=True) if reasoning else None
    tool_parser = _tool_parser(request, tokenizer) if tool_parsing_active(request) else None
    for step, delta in enumerate(pieces):
        last = step == len(pieces) - 1
        if reasoning_parser is not None and request.separate_reasoning:
            reasoning_text, delta = reasoning_parser.parse_stream_chunk(delta)
            if last:
                end_reasoning, end_normal = reasoning_parser.parse_stream_end()
                reasoning_text = (reasoning_text or "") + (end_reasoning or "")
                delta = (delta or "") + (end_normal or "")
            if reasoning_text:
                reply.reasoning += reasoning_text
                chunks.append({"reasoning_content": reasoning_text})
        if tool_parser is None:
            if delta:
                reply.content += delta
                chunks.append({"content": delta})
            continue
        normal, calls = tool_parser.parse_stream_chunk(delta or "")
        if last:
            end_text, end_calls = tool_parser.parse_stream_end()
            normal, calls = (normal or "") + end_text, [*calls, *end_calls]
        if normal:
            reply.content += normal
            chunks.append({"content": normal})
        for item in calls:
            entry = reply.calls.setdefault(item.tool_index, ["", ""])
            entry[0] = item.name or entry[0]
            entry[1] += item.parameters
            chunks.append({"tool_calls": [{"index": item.tool_index, "name": item.name, "arguments": item.parameters}]})
        if last:
            _unstreamed(tool_parser, reply)
            reply.incomplete = set(getattr(tool_parser.detector, "incomplete_tool_call_indices", ()))
    return reply, chunks


def _unstreamed(parser: FunctionCallParser, reply: Reply) -> None:
    """``_check_for_unstreamed_tool_args``: what the detector's records say is still owed to the last call."""
    detector = parser.detector
    if not detector.prev_tool_call_arr or not detector.streamed_args_for_tool:
        return
    index = len(detector.prev_tool_call_arr) - 1
    expected = detector.prev_tool_call_arr[index].get("arguments", {})
    expected = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
    actual = detector.streamed_args_for_tool[index]
    remaining = expected[len(actual) :] if expected.startswith(actual) else ""
    if remaining:
        reply.calls.setdefault(index, ["", ""])[1] += remaining


def named(name: str) -> ToolChoice:
    return ToolChoice.model_validate({"type": "function", "function": {"name": name}})
