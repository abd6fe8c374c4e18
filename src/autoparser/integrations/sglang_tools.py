"""SGLang's tool-call detector named ``autoparser`` (registered by :mod:`.sglang`): tool calls and content in the text
SGLang hands it after the reasoning, in the chat template's own markup, whole or streamed; and the grammar of a
reply that calls, as an xgrammar structural tag, when SGLang asks for one."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult as ToolResult
from sglang.srt.function_call.core_types import ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser

from ..message import ChatMessage, MessageDelta
from ..params import ChatParams
from .serving import ReplySession, canonical, constructing, template_for
from .shape import plain, reply_params, request_shape, tool_name

__all__ = ["AutoparserDetector", "undeclared_tools"]

_log = logging.getLogger(__name__)


def undeclared_tools() -> str:
    """SGLang drops a call to a tool the request does not declare unless ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is on;
    autoparser keeps such text as content instead of dropping it."""
    try:
        from sglang.srt.environ import envs

        return "call" if envs.SGLANG_FORWARD_UNKNOWN_TOOLS.get() else "content"
    except Exception:  # an SGLang without the switch
        return "content"


class AutoparserDetector(BaseFormatDetector):
    """Tool calls (and content) in the text after the reasoning, in the chat template's own markup."""

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self._template = template_for(tokenizer, has_tools=True) if tokenizer is not None else None
        owner = constructing(FunctionCallParser, sys._getframe(1))
        # the request's tools, for has_tool_call (the one question SGLang asks without them)
        self._tools: Any = owner.f_locals["self"].tools if owner is not None else None
        self._tool_choice: Any = "auto"
        self._session: ReplySession | None = None
        self._last: tuple[str, str, ChatMessage] | None = None  # (shape, text, message): has_tool_call, then parse
        self.incomplete_tool_call_indices: set[int] = set()  # calls cut off: SGLang then finishes with "stop"
        fmt = self._template.analysis.tools.format if self._template is not None else None
        self.bot_token = (fmt.section_start or fmt.per_call_start).strip() if fmt is not None else ""

    # -- what SGLang asks of a detector

    def get_required_tool_parser(self, tool_choice: Any) -> None:
        """SGLang's one call that carries the tool choice: remember it (autoparser reads required calls itself)."""
        if tool_choice is not None:
            self._tool_choice = tool_choice
        return None

    def parses_required_natively(self) -> bool:
        """``required`` and named calls come in the model's own format (under the grammar of
        :meth:`get_structural_tag`), never as SGLang's generic JSON list."""
        return True

    def supports_structural_tag(self) -> bool:
        """No per-tool begin/end pairs (:meth:`structure_info`): :meth:`get_structural_tag` gives whole tags."""
        return False

    def structure_info(self) -> Any:
        def info(name: str) -> Any:
            raise NotImplementedError("autoparser describes its calls as whole structural tags (get_structural_tag)")

        return info

    def has_tool_call(self, text: str) -> bool:
        if self._template is None:
            return False
        if self._tools is not None:
            return bool(self._message(text, self._tools).tool_calls)
        return bool(self.bot_token) and self.bot_token in text

    def detect_and_parse(self, text: str, tools: Sequence[Any]) -> ToolResult:
        if self._template is None:
            return ToolResult(normal_text=text)
        message = self._message(text, tools)
        self.incomplete_tool_call_indices = {i for i, call in enumerate(message.tool_calls) if call.status == "cut_off"}
        index = {name: i for i, name in enumerate(_tool_names(tools))}
        calls = [
            ToolCallItem(tool_index=index.get(call.name, -1), name=call.name, parameters=call.arguments)
            for call in message.tool_calls
        ]
        return ToolResult(normal_text=message.content, calls=calls)

    def parse_streaming_increment(self, new_text: str, tools: Sequence[Any]) -> ToolResult:
        if self._template is None:
            return ToolResult(normal_text=new_text)
        if self._session is None:
            self._session = ReplySession(self._params(tools))
        return self._result(self._session.feed(new_text))

    def finish(self, tools: Sequence[Any]) -> ToolResult:
        """The end of the reply: what the parser held back (a trailing marker prefix, closing braces)."""
        if self._session is None:
            return ToolResult()
        return self._result(self._session.finish())

    def get_structural_tag(
        self,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = "auto",
        thinking_mode: bool = False,
        parallel_tool_calls: bool = True,
    ) -> Any:
        """The grammar of a reply to this request, as an xgrammar structural tag: for ``auto`` (asked only under
        SGLang's strict tool levels) free text until a call's trigger word, then only the calls; for ``required``
        and a named tool the reply's calls (autoparser's GBNF in a grammar tag). It covers the text after the
        reasoning, or with ``thinking_mode`` (no reasoning parser) the reply from its first token. None when
        autoparser has no grammar for it (``structural_tag_reason`` says why)."""
        if self._template is None or not tools:
            return None
        from xgrammar import StructuralTag

        shape = _shape(tools, tool_choice, parallel_tool_calls)
        params = reply_params(self._template, shape, {}, content_only=not thinking_mode)
        if shape["tool_choice"] == "auto":
            tag = params.structural_tag
            if tag is None:
                _log.info("autoparser: no structural tag for this request: %s", params.structural_tag_reason)
        else:
            tag = {"type": "structural_tag", "format": {"type": "grammar", "grammar": params.grammar}}
        return StructuralTag.model_validate(tag) if tag is not None and params.grammar else None

    # -- parsing

    def _params(self, tools: Sequence[Any]) -> ChatParams:
        assert self._template is not None
        shape = _shape(tools, self._tool_choice, True)
        return reply_params(self._template, shape, {}, content_only=True, undeclared_tools=undeclared_tools())

    def _message(self, text: str, tools: Sequence[Any]) -> ChatMessage:
        key = canonical(_shape(tools, self._tool_choice, True))
        if self._last is not None and self._last[:2] == (key, text):
            return self._last[2]
        message = self._params(tools).parse(text)
        self._last = (key, text, message)
        return message

    def _result(self, delta: MessageDelta | None) -> ToolResult:
        """SGLang's result for one step: the content and one item per call fragment (the call's index in the reply),
        with ``prev_tool_call_arr`` / ``streamed_args_for_tool`` kept equal to what was streamed, so SGLang's
        end-of-stream check finds nothing left to send."""
        if delta is None:
            return ToolResult()
        calls = []
        for part in delta.tool_calls:
            if part.status == "cut_off":
                self.incomplete_tool_call_indices.add(part.index)
            if not part.sends_something:
                continue
            calls.append(ToolCallItem(tool_index=part.index, name=part.name, parameters=part.arguments))
            while len(self.prev_tool_call_arr) <= part.index:
                self.prev_tool_call_arr.append({"name": "", "arguments": ""})
                self.streamed_args_for_tool.append("")
            if part.name is not None:
                self.prev_tool_call_arr[part.index]["name"] = part.name
            self.streamed_args_for_tool[part.index] += part.arguments
            self.prev_tool_call_arr[part.index]["arguments"] = self.streamed_args_for_tool[part.index]
            self.current_tool_id = part.index
        return ToolResult(normal_text=delta.content, calls=calls)


def _tool_names(tools: Sequence[Any] | None) -> list[str]:
    return [tool_name(plain(tool)) for tool in tools or ()]


class _Request:
    """The fields of a request :func:`~.shape.request_shape` reads, for a detector handed them one by one."""

    def __init__(self, tools: Any, tool_choice: Any, parallel_tool_calls: bool) -> None:
        self.tools, self.tool_choice, self.parallel_tool_calls = tools, tool_choice, parallel_tool_calls


def _shape(tools: Any, tool_choice: Any, parallel_tool_calls: bool) -> dict[str, Any]:
    return request_shape(_Request(list(tools or ()), tool_choice, parallel_tool_calls))
