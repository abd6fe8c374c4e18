"""SGLang's reasoning detector named ``autoparser`` (registered by :mod:`.sglang`): the reasoning from the chat
template's markers, and the rest of the reply handed on as raw text for the tool-call detector, or parsed when
nothing reads it."""

from __future__ import annotations

import sys
from typing import Any

from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

from ..api import ChatTemplate
from ..message import MessageDelta
from ..params import ChatParams
from .serving import ReplySession, constructing, split_reasoning, template_for
from .sglang_tools import undeclared_tools
from .shape import generation_prompt, reply_params, request_shape, template_kwargs

__all__ = ["AutoparserReasoningDetector"]


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
            undeclared_tools=undeclared_tools(),
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
