"""vLLM plugin: a ``ToolParser`` and a ``ReasoningParser`` named ``autoparser``, built from the chat template.

    vllm serve MODEL --enable-auto-tool-choice --tool-call-parser autoparser --reasoning-parser autoparser

vLLM finds both through autoparser's ``vllm.general_plugins`` entry point (:mod:`.entry_points`), which registers
them lazily: this module is imported when vLLM first asks for a parser named ``autoparser``. Without installed entry
points, ``--tool-parser-plugin autoparser.integrations.vllm --reasoning-parser-plugin autoparser.integrations.vllm``
(or this file's path, see docs/integrations.md) does the same. Importing this module registers both classes with
vLLM's managers; it needs vLLM, ``import autoparser`` does not.

How the two parts share one parse. vLLM runs the reasoning parser first and hands the tool parser only the text
after the reasoning. Splitting the reply like that cannot express every format (gpt-oss interleaves reasoning and
calls, Kimi calls tools from inside its reasoning block, a call may end an unterminated block). So when both
parts are autoparser's and belong to the same vLLM ``Parser`` (one per request and choice), they share one
:class:`~.serving.ReplySession` that parses the whole reply, and each part reports its share of that parse: the
reasoning part the reasoning, until the parse shows something else; the tool part everything after that
(content, calls, any later reasoning), and the flush at the end. The result is exactly ``ChatParams.parse()`` of
the reply, streamed or not.

Either part also works alone: the reasoning part then hands on the raw text after the reasoning block (what any
tool parser expects), and the tool part reads the text it is given as content and calls only (it never looks for
reasoning: with a reasoning parser it gets the text after the reasoning, without one reasoning markup is text).

The parser is built from the request vLLM served: its tools, ``tool_choice`` (a named function narrows the tools
and requires the call), ``parallel_tool_calls`` and ``chat_template_kwargs``, and the generation prompt at the end
of the prompt vLLM rendered (``ChatTemplate.params_for_prompt``; the request's messages are rendered with
``ChatTemplate.apply`` only when the prompt was not seen). Parsers are cached by what shapes them.
"""

from __future__ import annotations

import json
import logging
import sys
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ..api import ChatTemplate
from ..build import parser_size
from ..cache import sized_cache
from ..errors import TemplateError
from ..message import ChatMessage, MessageDelta
from ..params import ChatParams
from .serving import MarkerIds, ReplySession, canonical, constructing, merge_deltas, split_reasoning, template_for
from .shape import plain, reply_params, request_shape, template_kwargs

try:  # where vLLM 0.32 keeps them; older releases kept the parsers under entrypoints.openai
    from vllm.tool_parsers import ToolParser, ToolParserManager
except ImportError:  # pragma: no cover - older vLLM
    from vllm.entrypoints.openai.tool_parsers import ToolParser, ToolParserManager  # type: ignore[no-redef]
try:
    from vllm.reasoning import ReasoningParser, ReasoningParserManager
except ImportError:  # pragma: no cover - vLLM before the reasoning package
    from vllm.entrypoints.openai.reasoning_parsers import (  # type: ignore[no-redef]
        ReasoningParser,
        ReasoningParserManager,
    )
try:
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
except ImportError:  # pragma: no cover - older vLLM
    from vllm.entrypoints.openai.protocol import (  # type: ignore[no-redef]
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )

try:  # the per-request parser that composes a reasoning and a tool parser (vLLM 0.32 has it)
    from vllm.parser.abstract_parser import Parser as _VllmParser
except ImportError:  # pragma: no cover - older vLLM: the two parts work alone
    _VllmParser = None

__all__ = ["NAME", "AutoparserReasoningParser", "AutoparserToolParser", "register"]

NAME = "autoparser"
_log = logging.getLogger(__name__)
# vLLM renamed DeltaMessage.reasoning_content to reasoning; write whichever the installed version has.
_REASONING_FIELD = "reasoning" if "reasoning" in DeltaMessage.model_fields else "reasoning_content"


# --- requests ----------------------------------------------------------------------------------------------------


def _applied_size(params: ChatParams, template: ChatTemplate, messages: str, shape: str) -> int:
    """The request's texts, held twice (as JSON and rendered), and its parser, counted here too: this entry keeps it
    alive even where the parser cache let it go."""
    return parser_size(params._generated, template.analysis, params._generated.request) + 2 * (
        len(messages) + len(shape) + len(params.prompt)
    )


@sized_cache(_applied_size)
def _applied(template: ChatTemplate, messages: str, shape: str) -> ChatParams:
    """``ChatTemplate.apply`` for a request whose prompt was not seen (cached: both parts of one request ask)."""
    args = json.loads(shape)
    return template.apply(json.loads(messages), reasoning_format="auto", **args)


# --- the shared reply ----------------------------------------------------------------------------------------------


class _Reply:
    """The state both parts of one vLLM ``Parser`` share: the request as far as known, and the parsed reply."""

    def __init__(self) -> None:
        self.prompt: str | None = None  # the prompt vLLM rendered, once seen (decoded from its token ids)
        self.session: ReplySession | None = None
        self.handoff: MessageDelta | None = None  # what the parse showed after the reasoning, for the tool part
        self.handed_over = False  # the reasoning part has passed the reply on
        self.full: tuple[str, ChatMessage] | None = None  # a complete reply and its parse (non-streaming)


def _owner() -> Any:
    """The vLLM ``Parser`` whose ``__init__`` is constructing the caller (None outside one).

    vLLM (0.32) builds one ``Parser`` per request and choice, which constructs its reasoning and tool
    parsers one after the other; finding it lets the two parts of the same request find each other."""
    frame = constructing(_VllmParser, sys._getframe(2)) if _VllmParser is not None else None
    return frame.f_locals["self"] if frame is not None else None


class _Part:
    """What both parts do: find the template, build parsers, find the other part."""

    def _setup(self, tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None = None) -> None:
        self._tokenizer = tokenizer
        self._kwargs = template_kwargs(chat_template_kwargs)
        owner = _owner()
        self._owner = weakref.ref(owner) if owner is not None else None

    def _peer(self, attribute: str) -> Any:
        owner = self._owner() if self._owner is not None else None
        return getattr(owner, attribute, None) if owner is not None else None

    def _kwargs_for(self, request: Any) -> dict[str, Any]:
        """The template switches for ``request``: the request's, under those vLLM resolved for this parser."""
        return template_kwargs(getattr(request, "chat_template_kwargs", None), self._kwargs)

    def _template(self, request: Any = None, has_tools: bool = False) -> ChatTemplate | None:
        return template_for(self._tokenizer, getattr(request, "chat_template", None), has_tools)

    def _params(
        self, shape: dict[str, Any], kwargs: Mapping[str, Any], *, prompt: str | None, request: Any, content_only: bool
    ) -> ChatParams:
        """The parser for this reply (``content_only``: no reasoning, no prefill: the text after reasoning)."""
        template = self._template(request, bool(shape["tools"]))
        if template is None:
            raise LookupError("the tokenizer has no chat template")
        if prompt is None and not content_only and request is not None and getattr(request, "messages", None):
            common = {
                "tools": shape["tools"] or None,
                "tool_choice": shape["tool_choice"],
                "parallel_tool_calls": shape["parallel_tool_calls"],
                "chat_template_kwargs": dict(kwargs),
            }
            try:
                messages = canonical([plain(m) for m in request.messages])
                return _applied(template, messages, canonical(common))
            except (TemplateError, TypeError, ValueError) as error:
                _log.warning(
                    "autoparser: could not render the request's messages (%s); using the template's generation prompt",
                    error,
                )
        return reply_params(template, shape, kwargs, prompt=prompt, content_only=content_only)

    def _decode(self, ids: Sequence[int]) -> str:
        try:
            return self._tokenizer.decode(list(ids), skip_special_tokens=False)
        except TypeError:  # a tokenizer without the keyword
            return self._tokenizer.decode(list(ids))

    def _encode(self, text: str) -> list[int]:
        try:
            return list(self._tokenizer.encode(text, add_special_tokens=False))
        except TypeError:
            return list(self._tokenizer.encode(text))

    def _keep_special_tokens(self, request: Any, markers: Sequence[str]) -> None:
        """A detokenizer that drops special tokens drops the markers made of them: keep them."""
        special = _special_tokens(self._tokenizer)
        if any(token in marker for marker in markers if marker for token in special) and hasattr(
            request, "skip_special_tokens"
        ):
            request.skip_special_tokens = False


def _special_tokens(tokenizer: Any) -> set[str]:
    tokens = {t for t in getattr(tokenizer, "all_special_tokens", None) or () if isinstance(t, str) and len(t) > 1}
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(decoder, Mapping):
        tokens |= {str(t) for t in decoder.values() if getattr(t, "special", False) and len(str(t)) > 1}
    return tokens


def _delta_message(delta: MessageDelta | None) -> Any:
    """A vLLM ``DeltaMessage`` for ``delta`` (None when it adds nothing)."""
    if delta is None:
        return None
    fields: dict[str, Any] = {}
    if delta.content:
        fields["content"] = delta.content
    if delta.reasoning_content:
        fields[_REASONING_FIELD] = delta.reasoning_content
    # A fragment carrying only the call's status says nothing on the wire (vLLM would send it as an empty call
    # fragment, and join it with the step's other fragment of the same call into one delta).
    sent = [part for part in delta.tool_calls if part.sends_something]
    if sent:
        fields["tool_calls"] = [
            DeltaToolCall(
                index=part.index,
                id=part.id,
                type="function" if part.id is not None else None,
                function=DeltaFunctionCall(name=part.name, arguments=part.arguments),
            )
            for part in sent
        ]
    return DeltaMessage(**fields) if fields else None


def _fold_flush(last: Any, flush: Any) -> Any:
    """What the end of the reply adds, with the arguments of a call the step's own delta (``last``) already carries
    appended to that delta's fragment instead.

    vLLM joins the flush into the final step's delta by concatenating the two lists of call fragments, so a call cut
    off in its arguments (the step sent some, the flush closes them) would arrive as two fragments of one index in
    one delta. vLLM edits that delta in place itself (unstreamed arguments), after the tool parser returned it."""
    if last is None or flush is None or not last.tool_calls or not flush.tool_calls:
        return flush
    sent = {part.index: part for part in last.tool_calls if part.function is not None}
    rest = []
    for part in flush.tool_calls:
        target = sent.get(part.index)
        if target is None or part.id is not None or part.function is None or part.function.name is not None:
            rest.append(part)
            continue
        target.function.arguments = (target.function.arguments or "") + (part.function.arguments or "")
    flush.tool_calls = rest
    return flush if rest or flush.content or getattr(flush, _REASONING_FIELD, None) else None


# --- the reasoning part ----------------------------------------------------------------------------------------------


class AutoparserReasoningParser(_Part, ReasoningParser):
    """Reasoning from the chat template's markers (see the module docstring)."""

    # vLLM then asks has_engine_confirmed_reasoning_end() when the reasoning is over (the parse decides, not a
    # token), and calls finish_streaming() at the end of a reply whose reasoning never ended.
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(tokenizer, *args, **kwargs)
        except TypeError:  # an older vLLM whose constructor takes only the tokenizer
            super().__init__(tokenizer)
        self._setup(tokenizer, kwargs.get("chat_template_kwargs"))
        self.reply = _Reply()
        self._ended = False  # the reply is past its reasoning (the rest is the tool part's, or passes as text)
        template = self._template()
        reasoning = template.analysis.reasoning if template is not None else None
        self._start = reasoning.start.strip() if reasoning is not None else ""
        self._end = reasoning.end.strip() if reasoning is not None else ""
        self._marker_ids = MarkerIds.of(self._encode, self._start, self._end)

    # -- token ids

    @property
    def reasoning_start_str(self) -> str | None:
        return self._start or None

    @property
    def reasoning_end_str(self) -> str | None:
        return self._end or None

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether text generated after ``input_ids`` (a prompt) starts past the reasoning: the prompt's
        generation prompt closed a block (thinking off), or the template has no reasoning at all."""
        prompt = self._decode(input_ids)
        if self.reply.prompt is None:
            self.reply.prompt = prompt
        if not self._end:
            return True
        template = self._template()
        if template is None:
            return True
        generation_prompt = template.params_for_prompt(prompt, reasoning_format="auto").generation_prompt
        if not generation_prompt:  # not a prompt ending in a generation prompt: judge the ids themselves
            return self._marker_ids.ended(input_ids)
        last_end = generation_prompt.rfind(self._end)
        return last_end >= 0 and last_end > (generation_prompt.rfind(self._start) if self._start else -1)

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Sequence[int]) -> bool:
        return self._marker_ids.ended_within(input_ids, len(delta_ids))

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        return self._marker_ids.after_end(input_ids)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """Tokens before the first reasoning end marker (usage's reasoning_tokens); 0 without one."""
        return self._marker_ids.reasoning_tokens(token_ids)

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        if self.reply.prompt is None:
            self.reply.prompt = self._decode(prompt_token_ids)

    def adjust_request(self, request: Any) -> Any:
        self._keep_special_tokens(request, (self._start, self._end))
        return request

    # -- complete replies

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        tool_part = self._tool_part()
        shape = request_shape(request) if tool_part is not None else {**request_shape(request), "tools": []}
        if self._template(request) is None:
            return None, model_output
        params = self._params(
            shape, self._kwargs_for(request), prompt=self.reply.prompt, request=request, content_only=False
        )
        message = params.parse(model_output)
        self.reply.full = (model_output, message)
        if self._alone():
            return message.reasoning_content or None, message.content or None
        end = params.reasoning_end(model_output) or 0
        return message.reasoning_content or None, model_output[end:] or None

    extract_reasoning_content = extract_reasoning  # the method's name in older vLLM

    # -- streaming

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int] = (),
        current_token_ids: Sequence[int] = (),
        delta_token_ids: Sequence[int] = (),
    ) -> Any:
        if self._ended:  # an older vLLM that keeps asking after the reasoning: the rest is text
            return DeltaMessage(content=delta_text) if delta_text else None
        session = self._session()
        reasoning, rest = split_reasoning(session.feed(delta_text))
        return self._report(reasoning, rest, final=False)

    extract_reasoning_content_streaming = extract_reasoning_streaming

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._ended

    def finish_streaming(self) -> Any:
        """The end of a reply whose reasoning never ended (vLLM also calls this when the reasoning ends: then
        there is nothing to add)."""
        if self._ended or self.reply.session is None:
            return None
        self._ended = True
        delta = self.reply.session.finish()
        tool_part = self._tool_part()
        if tool_part is not None:
            tool_part.track(delta)
        return _delta_message(delta)

    def _session(self) -> ReplySession:
        reply = self.reply
        if reply.session is None:
            tool_part = self._tool_part()
            shape = request_shape(None, tool_part.tools_given if tool_part is not None else None)
            params = self._params(shape, self._kwargs, prompt=reply.prompt, request=None, content_only=False)
            reply.session = ReplySession(params, canonical(shape))
        return reply.session

    def _report(self, reasoning: str, rest: MessageDelta | None, *, final: bool) -> Any:
        """The delta for vLLM: the reasoning, and once the parse shows more than reasoning, the hand-over."""
        if rest is None:
            return DeltaMessage(**{_REASONING_FIELD: reasoning}) if reasoning else None
        tool_part = self._tool_part()
        if self._alone():
            # No tool parser follows: this part reports the content itself, to the end of the reply.
            return _delta_message(MessageDelta(rest.content, reasoning))
        self._ended = True
        self.reply.handed_over = True
        if tool_part is not None:
            self.reply.handoff = rest
            # vLLM hands this text to the tool part, which sends the parse's own account (the handoff) instead.
            text = rest.content
        else:  # someone else's tool parser: it gets the raw text after the reasoning block
            session = self._session()
            end = session.params.reasoning_end(session.text, partial=not final)
            text = session.text[end:] if end is not None else rest.content
        fields: dict[str, Any] = {"content": text} if text else {}
        if reasoning:
            fields[_REASONING_FIELD] = reasoning
        return DeltaMessage(**fields) if fields else None

    def _alone(self) -> bool:
        """Whether no tool parser follows (known only inside a vLLM ``Parser``; otherwise one may)."""
        return self._owner is not None and self._peer("tool_parser") is None

    def _tool_part(self) -> AutoparserToolParser | None:
        peer = self._peer("tool_parser")
        return peer if isinstance(peer, AutoparserToolParser) else None


# --- the tool part ---------------------------------------------------------------------------------------------------


class AutoparserToolParser(_Part, ToolParser):
    """Tool calls (and content) from the chat template's markers (see the module docstring)."""

    # vLLM then calls finish_streaming() at the end of the reply, which flushes what the parser held back.
    engine_based_streaming = True
    # tool_choice "required" and named functions are read in the model's own format, under the grammar that
    # adjust_request() hands vLLM, not as vLLM's generic JSON list.
    supports_required_and_named = False
    # Set by vLLM when no reasoning parser runs; the text is read as content and calls either way.
    skip_reasoning_parsing = False

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        try:
            super().__init__(tokenizer, tools)
        except TypeError:  # vLLM before tools were passed to the constructor
            super().__init__(tokenizer)
        self._setup(tokenizer, kwargs.get("chat_template_kwargs"))
        self.tools_given = tools
        self._own: ReplySession | None = None  # the session when no autoparser reasoning part shares one
        # What the last extract_tool_calls_streaming() returned: vLLM calls it on every step of the tool phase, and
        # calls finish_streaming() in the same step as the last one (see _fold_flush).
        self._last_message: Any = None

    # -- vLLM's bookkeeping

    def track(self, delta: MessageDelta | None) -> None:
        """Keep ``prev_tool_call_arr`` / ``streamed_args_for_tool`` equal to what was streamed, so vLLM's
        end-of-stream check finds nothing left to send."""
        for part in delta.tool_calls if delta is not None else ():
            while len(self.prev_tool_call_arr) <= part.index:
                self.prev_tool_call_arr.append({"name": "", "arguments": ""})
                self.streamed_args_for_tool.append("")
            entry = self.prev_tool_call_arr[part.index]
            if part.name is not None:
                entry["name"] = part.name
            self.streamed_args_for_tool[part.index] += part.arguments
            entry["arguments"] = self.streamed_args_for_tool[part.index]
            self.current_tool_id = part.index
            self.current_tool_name_sent = True

    # -- complete replies

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        reasoning_part = self._reasoning_part()
        full = reasoning_part.reply.full if reasoning_part is not None else None
        if full is not None:
            message = full[1]
        elif self._template(request) is None:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        else:
            params = self._params(
                request_shape(request), self._kwargs_for(request), prompt=None, request=request, content_only=True
            )
            message = params.parse(model_output)
        calls = [
            ToolCall(
                id=call.id,  # the model's, or generated in the template's format (never vLLM's own)
                type="function",
                function=FunctionCall(name=call.name, arguments=call.arguments),
            )
            for call in message.tool_calls
        ]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=message.content or None)

    # -- streaming

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int] = (),
        current_token_ids: Sequence[int] = (),
        delta_token_ids: Sequence[int] = (),
        request: Any = None,
    ) -> Any:
        try:
            session, first = self._session(request)
        except LookupError:  # no chat template: the text passes as content
            return DeltaMessage(content=delta_text) if delta_text else None
        fed = session.feed(delta_text) if first is None else None
        delta = merge_deltas(d for d in (first, fed) if d is not None)
        self.track(delta)
        self._last_message = _delta_message(delta)
        return self._last_message

    def finish_streaming(self) -> Any:
        reasoning_part = self._reasoning_part()
        session = reasoning_part.reply.session if reasoning_part is not None else self._own
        if session is None:
            return None
        delta = session.finish()
        self.track(delta)
        last, self._last_message = self._last_message, None
        return _fold_flush(last, _delta_message(delta))

    def _session(self, request: Any) -> tuple[ReplySession, MessageDelta | None]:
        """The session to feed, and (when this call's text was fed already: the reasoning part's hand-over) what
        to send instead of feeding it."""
        shape = request_shape(request, self.tools_given)
        key = canonical(shape)
        reasoning_part = self._reasoning_part()
        if reasoning_part is None:
            if self._own is None:
                params = self._params(shape, self._kwargs_for(request), prompt=None, request=request, content_only=True)
                self._own = ReplySession(params, key)
            return self._own, None
        reply = reasoning_part.reply
        if reply.session is None:  # the prompt ended the reasoning: the reasoning part never ran
            params = self._params(
                shape, reasoning_part._kwargs_for(request), prompt=reply.prompt, request=request, content_only=False
            )
            reply.session = ReplySession(params, key)
        if not reply.handed_over:
            return reply.session, None
        reply.handed_over = False
        handoff = reply.handoff or MessageDelta()
        reply.handoff = None
        if reply.session.shape != key:  # the request shapes the parser differently than assumed: re-read
            params = self._params(
                shape, reasoning_part._kwargs_for(request), prompt=reply.prompt, request=request, content_only=False
            )
            handoff = merge_deltas([handoff, reply.session.adopt(params, key) or MessageDelta()]) or MessageDelta()
        return reply.session, handoff

    def _reasoning_part(self) -> AutoparserReasoningParser | None:
        peer = self._peer("reasoning_parser")
        return peer if isinstance(peer, AutoparserReasoningParser) else None

    # -- requests

    def adjust_request(self, request: Any) -> Any:
        """Keep special-token markers in the text, and for tool_choice "required" or a named function hand vLLM
        the grammar of a reply that calls (in the model's own format, after any reasoning)."""
        shape = request_shape(request)
        try:
            params = self._params(shape, self._kwargs_for(request), prompt=None, request=request, content_only=True)
        except LookupError:
            return request
        self._keep_special_tokens(request, params.preserved_tokens)
        if shape["tool_choice"] == "required" and shape["tools"]:
            _require_grammar(request, params)
        return request


def _require_grammar(request: Any, params: ChatParams) -> None:
    """Put the reply grammar where the installed vLLM reads it (``structured_outputs`` in vLLM 0.32; older releases read
    ``guided_grammar``). Lark (llguidance) keeps the JSON-schema parts exact; GBNF is the fallback."""
    grammar = params.lark_grammar
    if grammar and not grammar.lstrip().startswith("%llguidance"):
        grammar = "%llguidance {}\n" + grammar  # marks it as llguidance Lark (vLLM then picks that backend)
    grammar = grammar or params.grammar
    if not grammar:
        return
    if hasattr(request, "structured_outputs"):
        from vllm.sampling_params import StructuredOutputsParams

        request.structured_outputs = StructuredOutputsParams(grammar=grammar)
        if hasattr(request, "response_format"):
            request.response_format = None
    elif hasattr(request, "guided_grammar"):  # pragma: no cover - vLLM before structured_outputs
        request.guided_grammar = grammar


def register() -> None:
    """Register both parts under the name ``autoparser`` (done on import; safe to repeat)."""
    for manager, cls in (
        (ToolParserManager, AutoparserToolParser),
        (ReasoningParserManager, AutoparserReasoningParser),
    ):
        try:
            manager.register_module(NAME, force=True, module=cls)
        except TypeError:  # pragma: no cover - a manager with the decorator form only
            manager.register_module(NAME)(cls)


register()
