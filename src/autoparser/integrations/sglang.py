"""SGLang plugin: a tool-call detector and a reasoning detector named ``autoparser``, built from the chat template.

    pip install sglang autoparser        # the entry point registers both in every SGLang process
    sglang serve --model-path MODEL --tool-call-parser autoparser --reasoning-parser autoparser

:func:`register` puts both into SGLang's registries (``FunctionCallParser.ToolCallParserEnum``,
``ReasoningParser.DetectorMap``); the ``sglang.srt.plugins`` entry point calls it, so no flag is needed. Importing
this module needs SGLang; ``import autoparser`` does not.

SGLang runs the reasoning detector on the reply and hands the tool-call detector only the text after the
reasoning, and the two never see each other: so here each part reads its share, as the vLLM parts do alone
(:mod:`.vllm`). The reasoning detector reports the reasoning and hands on the raw text after the reasoning block
(what any tool-call detector expects); when no tool-call parser reads that text (``tool_call_parser_active`` is
off: no tool parser, no tools, ``tool_choice`` none) it reports the content itself, parsed (content wrappers
removed, call markup left as text). The tool-call detector reads the text it is handed as content and calls.
Formats that mix reasoning and calls (gpt-oss, a Kimi call inside its reasoning) are therefore not fully read.

What each part knows of the request. SGLang builds the reasoning detector inside a ``ReasoningParser`` that holds
the request but does not pass it on, so the detector reads it there (:func:`~.serving.constructing`): its
``chat_template_kwargs`` pick the generation prompt (thinking on or off) and its tools the calls that may end
the reasoning. The tool-call detector gets the tools with every call, the tool choice through
``get_required_tool_parser``, and ``parallel_tool_calls`` only when SGLang asks it for a grammar.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult as ToolResult
from sglang.srt.function_call.core_types import ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

from ..api import ChatTemplate
from ..message import ChatMessage, MessageDelta
from ..params import ChatParams
from .serving import ReplySession, canonical, constructing, split_reasoning, template_for
from .shape import generation_prompt, plain, reply_params, request_shape, template_kwargs

__all__ = ["NAME", "AutoparserDetector", "AutoparserReasoningDetector", "register"]

NAME = "autoparser"
_log = logging.getLogger(__name__)


def _undeclared_tools() -> str:
    """SGLang drops a call to a tool the request does not declare unless ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is on;
    autoparser keeps such text as content instead of dropping it."""
    try:
        from sglang.srt.environ import envs

        return "call" if envs.SGLANG_FORWARD_UNKNOWN_TOOLS.get() else "content"
    except Exception:  # an SGLang without the switch
        return "content"


# --- the tool-call part ------------------------------------------------------------------------------------------


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
        return reply_params(self._template, shape, {}, content_only=True, undeclared_tools=_undeclared_tools())

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
    names = []
    for tool in tools or ():
        function = plain(tool).get("function", {})
        names.append(function.get("name", "") if isinstance(function, Mapping) else "")
    return names


class _Request:
    """The fields of a request :func:`~.shape.request_shape` reads, for a detector handed them one by one."""

    def __init__(self, tools: Any, tool_choice: Any, parallel_tool_calls: bool) -> None:
        self.tools, self.tool_choice, self.parallel_tool_calls = tools, tool_choice, parallel_tool_calls


def _shape(tools: Any, tool_choice: Any, parallel_tool_calls: bool) -> dict[str, Any]:
    return request_shape(_Request(list(tools or ()), tool_choice, parallel_tool_calls))


# --- the reasoning part ----------------------------------------------------------------------------------------------


class AutoparserReasoningDetector(BaseReasoningFormatDetector):
    """Reasoning from the chat template's markers; the rest handed on as raw text, or parsed when nothing reads it."""

    def __init__(
        self,
        tokenizer: Any = None,
        stream_reasoning: bool = True,
        force_reasoning: bool | None = None,
        continue_final_message: bool = False,
        previous_content: str = "",
        force_nonempty_content: bool = False,
        tool_call_parser_active: bool = False,
    ) -> None:
        owner = constructing(ReasoningParser, sys._getframe(1))
        request = owner.f_locals.get("request") if owner is not None else None
        shape = request_shape(request) if request is not None else request_shape(None)
        self._tools_read_later = tool_call_parser_active
        self._template: ChatTemplate | None = (
            template_for(tokenizer, getattr(request, "chat_template", None), bool(shape["tools"]))
            if tokenizer is not None
            else None
        )
        template = self._template
        reasoning = template.analysis.reasoning if template is not None else None
        super().__init__(
            reasoning.start.strip() if reasoning is not None else "",
            reasoning.end.strip() if reasoning is not None else "",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
            continue_final_message=continue_final_message,
            previous_content=previous_content,
            force_nonempty_content=force_nonempty_content,
            reasoning_default=_reasoning_default(template),
        )
        self._kwargs = template_kwargs(getattr(request, "chat_template_kwargs", None))
        if not tool_call_parser_active:  # nobody reads calls after this part: call markup stays content
            shape = {**shape, "tools": [], "tool_choice": "none"}
        self._shape = shape
        self._session: ReplySession | None = None
        self._handed_over = False  # past the reasoning: the rest passes through as raw text
        self._held = ""  # reasoning held back while stream_reasoning is off

    def _params(self) -> ChatParams:
        assert self._template is not None
        return reply_params(
            self._template,
            self._shape,
            self._kwargs,
            prompt=generation_prompt(self._template, self._kwargs),
            undeclared_tools=_undeclared_tools(),
        )

    # -- complete replies

    def detect_and_parse(self, text: str) -> ReasoningResult:
        if self._template is None:
            return ReasoningResult(normal_text=text)
        params = self._params()
        message = params.parse(text)
        if self._tools_read_later:
            end = params.reasoning_end(text) or 0
            result = ReasoningResult(normal_text=text[end:], reasoning_text=message.reasoning_content)
        else:
            result = ReasoningResult(normal_text=message.content, reasoning_text=message.reasoning_content)
        return self._maybe_apply_force_nonempty_content(result)

    # -- streaming

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._template is None or self._handed_over:
            return ReasoningResult(normal_text=new_text)
        if self._session is None:
            self._session = ReplySession(self._params())
        reasoning, rest = split_reasoning(self._session.feed(new_text))
        return self._report(reasoning, rest, final=False)

    def finish(self) -> ReasoningResult:
        if self._session is None or self._handed_over:
            return ReasoningResult()
        reasoning, rest = split_reasoning(self._session.finish())
        result = self._report(reasoning, rest, final=True)
        if not self._handed_over and self._held:  # the reply ended inside its reasoning
            result.reasoning_text, self._held = self._held + result.reasoning_text, ""
        return result

    def _report(self, reasoning: str, rest: MessageDelta | None, *, final: bool) -> ReasoningResult:
        if not self.stream_reasoning and not self._handed_over:
            self._held += reasoning
            reasoning = ""
        if rest is None:
            return ReasoningResult(reasoning_text=reasoning)
        if not self._tools_read_later:  # nothing reads the rest: report the content, parsed, to the end
            return ReasoningResult(normal_text=rest.content, reasoning_text=self._release(reasoning))
        self._handed_over = True
        assert self._session is not None
        text = self._session.text
        end = self._session.params.reasoning_end(text, partial=not final)
        return ReasoningResult(
            normal_text=text[end:] if end is not None else rest.content, reasoning_text=self._release(reasoning)
        )

    def _release(self, reasoning: str) -> str:
        held, self._held = self._held, ""
        return held + reasoning


def _reasoning_default(template: ChatTemplate | None) -> Any:
    """How SGLang decides, without a reasoning config of its own for the template, whether a request reasons (which
    gates grammars until the reasoning ends): by ``enable_thinking`` or ``thinking`` when that is the template's
    switch, always when the template reasons with no switch, never when it has no reasoning markers."""
    if template is None or not template.analysis.reasoning.end.strip():
        return None
    names = {switch.variable for switch in template.analysis.switches if switch.kind != "effort"}
    for name in ("enable_thinking", "thinking"):
        if name in names:
            return name
    return "always"


def register() -> None:
    """Register both parts under the name ``autoparser`` (safe to repeat)."""
    FunctionCallParser.ToolCallParserEnum[NAME] = AutoparserDetector
    ReasoningParser.DetectorMap[NAME] = AutoparserReasoningDetector
    # The dependency-free name lists SGLang keeps beside the registries (its CLI reads the registries once they
    # are imported, as here; the lists keep the two in step).
    for module, attribute in (
        ("sglang.srt.function_call.parser_names", "TOOL_CALL_PARSER_NAMES"),
        ("sglang.srt.parser.reasoning_parser_names", "REASONING_PARSER_NAMES"),
    ):
        try:
            names = getattr(__import__(module, fromlist=[attribute]), attribute)
        except (ImportError, AttributeError):
            continue
        if NAME not in names:
            names.append(NAME)
