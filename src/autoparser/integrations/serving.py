"""What a serving-stack adapter needs from autoparser, whatever the stack.

* :func:`template_for` finds the chat template a tokenizer carries (a string, or named variants such as
  ``tokenizer_config.json``'s ``[{"name": "tool_use", "template": ...}]``), once per source.
* :class:`ReplySession` parses one model reply as it streams and returns **one merged delta per feed** (servers
  send one chunk per token, not one per parser event). When the request turns out to shape the parser
  differently from what was assumed before it was known (a stack may hand over the request only after the
  reasoning), :meth:`ReplySession.adopt` re-reads the text with the right parser and sends only what it adds to
  what was already sent: a stream never retracts.
* :class:`MarkerIds` holds a marker's token ids, for the token-level checks stacks make (has the reasoning ended
  in these ids? which ids follow it?).
* :func:`constructing` finds the stack's object that is constructing a parser, for what the stack knows but does
  not pass on (the request, the other parser of the same request).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from ..api import ChatTemplate
from ..message import ChatMessage, MessageDelta, ToolCallDelta, apply_deltas
from ..params import ChatParams
from ..template.chat_template import bundled_templates
from ..template.hf_files import choose_template

__all__ = [
    "TEMPLATE_ENV",
    "MarkerIds",
    "ReplySession",
    "constructing",
    "merge_deltas",
    "split_reasoning",
    "template_for",
    "template_source",
]

TEMPLATE_ENV = "AUTOPARSER_CHAT_TEMPLATE"  # a template file or bundled name that overrides the tokenizer's
_log = logging.getLogger(__name__)


def template_source(chat_template: Any, has_tools: bool = False) -> str | None:
    """The Jinja source in a tokenizer's ``chat_template``: a string, a ``{name: source}`` dict or a list of
    ``{"name": ..., "template": ...}`` (tokenizer_config.json). Named variants are picked as transformers picks
    them (:func:`~autoparser.template.hf_files.choose_template`): ``tool_use`` for a request with tools, else
    ``default``, else the only one."""
    if isinstance(chat_template, str):
        return chat_template or None
    if isinstance(chat_template, Sequence) and not isinstance(chat_template, str):
        named = {item.get("name"): item.get("template") for item in chat_template if isinstance(item, Mapping)}
    elif isinstance(chat_template, Mapping):
        named = dict(chat_template)
    else:
        return None
    sources = {name: source for name, source in named.items() if isinstance(name, str) and isinstance(source, str)}
    chosen = choose_template(sources, [] if has_tools else None)
    if chosen is not None:
        return sources[chosen]
    return next(iter(sources.values())) if len(sources) == 1 else None  # transformers would refuse: be lenient


@functools.lru_cache(maxsize=32)
def _template(source: str, bos: str, eos: str, name: str) -> ChatTemplate:
    return ChatTemplate(source, bos, eos, name=name)


def template_for(tokenizer: Any, request_template: str | None = None, has_tools: bool = False) -> ChatTemplate | None:
    """The chat template for a request: the request's own, else ``$AUTOPARSER_CHAT_TEMPLATE`` (a file or a
    bundled template name: set it when the server renders with a template other than the tokenizer's), else the
    tokenizer's. None when there is none (the adapter then passes text through)."""
    bos = _token_text(getattr(tokenizer, "bos_token", None))
    eos = _token_text(getattr(tokenizer, "eos_token", None))
    if request_template:
        return _template(request_template, bos, eos, "request chat_template")
    override = os.environ.get(TEMPLATE_ENV, "")
    if override:
        path = Path(override)
        if path.is_file():
            return _template(path.read_text(encoding="utf-8"), bos, eos, path.name)
        if override in bundled_templates():
            return ChatTemplate.load(override)
        raise ValueError(f"${TEMPLATE_ENV}={override!r} is neither a file nor a bundled template name")
    source = template_source(getattr(tokenizer, "chat_template", None), has_tools)
    return _template(source, bos, eos, "tokenizer chat_template") if source else None


def _token_text(token: Any) -> str:
    return token if isinstance(token, str) else str(getattr(token, "content", "") or "")


def merge_deltas(deltas: Iterable[MessageDelta]) -> MessageDelta | None:
    """One delta saying what several say, in order: text joined, each call's fragments joined under its index
    (its id and name from its first fragment, its status from the fragment that set it). None when they add
    nothing."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, ToolCallDelta] = {}
    warnings = []
    for delta in deltas:
        content.append(delta.content)
        reasoning.append(delta.reasoning_content)
        warnings.extend(delta.warnings)
        for part in delta.tool_calls:
            merged = calls.get(part.index)
            if merged is None:
                calls[part.index] = ToolCallDelta(part.index, part.id, part.name, part.arguments, part.status)
            else:
                merged.arguments += part.arguments
                merged.status = part.status or merged.status
    merged_delta = MessageDelta("".join(content), "".join(reasoning), tuple(calls.values()), tuple(warnings))
    if not (merged_delta.content or merged_delta.reasoning_content or merged_delta.tool_calls):
        return None
    return merged_delta


def split_reasoning(delta: MessageDelta | None) -> tuple[str, MessageDelta | None]:
    """The reasoning text of ``delta`` and the rest of it (content and calls), None when there is no rest."""
    if delta is None:
        return "", None
    if not (delta.content or delta.tool_calls):
        return delta.reasoning_content, None
    return delta.reasoning_content, MessageDelta(delta.content, "", delta.tool_calls, delta.warnings)


class _Sent:
    """What a reply's stream has sent: the message a client holds (for :meth:`ReplySession.adopt`)."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[list[str]] = []  # [id, name, arguments]

    def record(self, delta: MessageDelta) -> None:
        self.content.append(delta.content)
        self.reasoning.append(delta.reasoning_content)
        for part in delta.tool_calls:
            while len(self.calls) <= part.index:
                self.calls.append(["", "", ""])
            call = self.calls[part.index]
            call[0] = part.id if part.id is not None else call[0]
            call[1] = part.name if part.name is not None else call[1]
            call[2] += part.arguments

    def extension(self, target: ChatMessage) -> MessageDelta | None:
        """What ``target`` adds to what was sent; a field that diverged is left as sent (and logged)."""
        content = _grown("content", "".join(self.content), target.content)
        reasoning = _grown("reasoning", "".join(self.reasoning), target.reasoning_content)
        parts: list[ToolCallDelta] = []
        for index, call in enumerate(target.tool_calls):
            if index < len(self.calls):
                _, name, arguments = self.calls[index]
                if name == call.name:
                    extra = _grown(f"call {index} arguments", arguments, call.arguments)
                    if extra:
                        parts.append(ToolCallDelta(index, arguments=extra))
                else:
                    _log.warning("autoparser: call %d was sent as %r, the reparse reads %r", index, name, call.name)
            else:
                parts.append(ToolCallDelta(index, call.id, call.name, call.arguments))
        return merge_deltas([MessageDelta(content, reasoning, tuple(parts))])


def _grown(what: str, sent: str, target: str) -> str:
    if target.startswith(sent):
        return target[len(sent) :]
    _log.warning("autoparser: the reparse changes the %s already sent; keeping what was sent", what)
    return ""


class ReplySession:
    """One model reply, parsed as it arrives (see the module docstring)."""

    def __init__(self, params: ChatParams, shape: Any = None) -> None:
        self.params = params
        self.shape = shape
        self._stream = params.stream()
        self._parts: list[str] = []
        self._sent = _Sent()
        self.finished = False

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def feed(self, text: str) -> MessageDelta | None:
        if self.finished or not text:
            return None
        self._parts.append(text)
        return self._record(self._stream.feed(text))

    def finish(self) -> MessageDelta | None:
        """The reply is complete: what the parser held back (a trailing marker prefix, closing braces)."""
        if self.finished:
            return None
        self.finished = True
        return self._record(self._stream.finish())

    def adopt(self, params: ChatParams, shape: Any) -> MessageDelta | None:
        """Continue with ``params`` (built from what the request turned out to be): re-read the text so far with
        it and return what it adds to what was sent."""
        if shape == self.shape:
            return None
        self.params, self.shape = params, shape
        self._stream = params.stream()
        deltas = self._stream.feed(self.text) if self.text else []
        if self.finished:
            deltas += self._stream.finish()
        extension = self._sent.extension(apply_deltas(deltas))
        if extension is not None:
            self._sent.record(extension)
        return extension

    def _record(self, deltas: list[MessageDelta]) -> MessageDelta | None:
        merged = merge_deltas(deltas)
        if merged is not None:
            self._sent.record(merged)
        return merged


@dataclass(frozen=True)
class MarkerIds:
    """The reasoning markers as token ids (empty when the template has none, or the tokenizer cannot say)."""

    start: tuple[int, ...] = ()
    end: tuple[int, ...] = ()

    @classmethod
    def of(cls, encode: Callable[[str], Sequence[int]], start: str, end: str) -> MarkerIds:
        return cls(_ids(encode, start), _ids(encode, end))

    def ended(self, ids: Sequence[int]) -> bool:
        """Whether ``ids`` close a reasoning block: an end marker after the last start marker."""
        end = _rfind(ids, self.end)
        return end >= 0 and end > _rfind(ids, self.start)

    def ended_within(self, ids: Sequence[int], tail: int) -> bool:
        """Whether an end marker (not followed by a start marker) lies in the last ``tail`` ids: the check a
        decoding step makes, in time proportional to the step, not to the whole output."""
        if not self.end:
            return False
        window = list(ids[max(len(ids) - tail - len(self.end) + 1, 0) :])
        return self.ended(window)

    def reasoning_tokens(self, ids: Sequence[int]) -> int:
        """How many ids come before the first end marker (0 when there is none)."""
        n = len(self.end)
        if not n:
            return 0
        first = self.end[0]
        for at in range(len(ids) - n + 1):
            if ids[at] == first and tuple(ids[at : at + n]) == self.end:
                return at
        return 0

    def after_end(self, ids: Sequence[int]) -> list[int]:
        """The ids after the last end marker ([] when there is none)."""
        end = _rfind(ids, self.end)
        return list(ids[end + len(self.end) :]) if end >= 0 else []


def _ids(encode: Callable[[str], Sequence[int]], marker: str) -> tuple[int, ...]:
    marker = marker.strip()
    if not marker:
        return ()
    try:
        return tuple(encode(marker))
    except Exception:  # a tokenizer that cannot encode the marker: token-level checks are then off
        return ()


def _rfind(ids: Sequence[int], needle: tuple[int, ...]) -> int:
    """The start of the last occurrence of ``needle`` in ``ids``, -1 when none (scans from the end)."""
    n = len(needle)
    if not n:
        return -1
    first = needle[0]
    for at in range(len(ids) - n, -1, -1):
        if ids[at] == first and tuple(ids[at : at + n]) == needle:
            return at
    return -1


def canonical(value: Any) -> str:
    """A stable text for a JSON-like value (a cache key)."""
    return json.dumps(value, sort_keys=True, default=str)


def constructing(cls: type, frame: FrameType | None, depth: int = 6) -> FrameType | None:
    """The frame of the ``__init__`` of an instance of ``cls`` at ``frame`` or up to ``depth`` frames above it
    (None when there is none): the stack's object that is constructing the caller, with its locals.

    Stacks build their parsers inside objects of their own that hold what the parser is not handed (vLLM's
    per-request ``Parser`` holds the other parser of the request; SGLang's ``ReasoningParser`` holds the request).
    A stack that stops doing so just makes this None, and the adapter does without."""
    for _ in range(depth):
        if frame is None:
            return None
        if frame.f_code.co_name == "__init__" and isinstance(frame.f_locals.get("self"), cls):
            return frame
        frame = frame.f_back
    return None
