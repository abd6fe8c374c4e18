"""What a template needs from a request, learned once per template: the facts :mod:`.messages` normalises by.

* **Content shape per role.** The content format (:func:`.content_format.content_format`) says whether the template
  loops over content parts anywhere; vLLM then hands parts to *every* role. That garbles roles the template prints
  as a string (Gemma 4 prints a system message's parts as a Python list; cogito concatenates them to a string and
  fails). So for a template that reads parts, each role is checked by rendering: a role whose two text parts both
  reach the prompt, with no ``'type'``/``"type"`` of a printed list, takes parts; any other role gets the parts
  joined into one string, as a string-format template does.
* **Media.** An image (audio, video) part reaches the template only where it can show it: a role that takes parts
  and whose rendering changes when one is added.
* **The developer role** is kept where the template names it (vLLM's rule: the literal ``"developer"`` in the
  source), else it becomes ``system``.
* From the analysis: whether past tool-call arguments go in as objects or JSON text, the call id format the
  template accepts, and whether reasoning is rendered only as a typed thinking block (Ministral).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .. import disk_cache
from ..analysis.diff import common_prefix_len
from ..analysis.model import TemplateAnalysis
from ..disk_cache import digest
from ..template.probing import ProbeRenderer, RenderableTemplate
from .content_format import ContentFormat, content_format

__all__ = ["ASSISTANT_WITH_CALLS", "MEDIA_KINDS", "RequestProfile", "request_profile"]

CHAT_ROLES = ("system", "user", "assistant")
# An assistant turn with tool calls is its own case: Kimi-K2 loops over the parts of a plain answer but prints the
# content of a turn with calls as a string.
ASSISTANT_WITH_CALLS = "assistant+tool_calls"
MEDIA_KINDS = ("image", "audio", "video")
_PART_A, _PART_B = "Xq7PartOne", "Zk3PartTwo"
_PROBE_SCHEMA = {"type": "object", "properties": {"arg": {"type": "string", "description": "Argument"}}}
_LIST_REPRS = ("'type': 'text'", '"type": "text"', "'text': '", '"text": "')  # a list of parts printed whole


class AnalysedTemplate(RenderableTemplate, Protocol):
    @property
    def analysis(self) -> TemplateAnalysis: ...


@dataclass(frozen=True, slots=True)
class RequestProfile:
    """Per template: how request content and fields must be shaped for it (see the module docstring)."""

    content_format: ContentFormat = "string"
    parts_roles: frozenset[str] = frozenset()  # roles (and ASSISTANT_WITH_CALLS) whose content goes in as parts
    media: frozenset[str] = frozenset()  # media kinds the template renders (in parts roles)
    keeps_developer: bool = False
    object_arguments: bool = True
    id_format: str = "openai"
    reasoning_in_blocks: bool = False
    null_content_with_calls: bool = False  # an assistant turn with calls keeps content None (see _prefers_null)
    tool_result_names: bool = False  # a tool result gets its call's function name (the template needs it)
    tool_result_list: bool = False  # a tool result goes in as a list of its text (see _splits_tool_results)


def request_profile(template: AnalysedTemplate) -> RequestProfile:
    """The profile of ``template`` (cached per source and special tokens, like the analysis)."""
    return _profile(_Key(template))


class _Key:
    """Hashes a template by what its renders depend on, keeping the template itself for the probe."""

    __slots__ = ("_hash", "template")

    def __init__(self, template: AnalysedTemplate) -> None:
        self.template = template
        self._hash = hash((template.source, template.bos_token, template.eos_token))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Key):
            return NotImplemented
        a, b = self.template, other.template
        return (a.source, a.bos_token, a.eos_token) == (b.source, b.bos_token, b.eos_token)


@functools.lru_cache(maxsize=512)  # per template: more than the bundled set, so a loop over all never thrashes
def _profile(key: _Key) -> RequestProfile:
    """Read from the disk cache where a process worked it out before (:mod:`autoparser.disk_cache`)."""
    template = key.template
    disk_key = digest(template.source, template.bos_token, template.eos_token)
    return disk_cache.remembered("profile", disk_key, RequestProfile, lambda: _work_out(template))


def _work_out(template: AnalysedTemplate) -> RequestProfile:
    analysis = template.analysis
    fmt = content_format(template.source)
    parts_roles: frozenset[str] = frozenset()
    media: frozenset[str] = frozenset()
    if fmt == "openai":
        renderer = ProbeRenderer(template)
        parts_roles = frozenset(role for role in CHAT_ROLES if _renders_parts(renderer, role))
        if "assistant" in parts_roles and _renders_parts_with_calls(
            renderer, analysis.capabilities.supports_object_arguments
        ):
            parts_roles |= {ASSISTANT_WITH_CALLS}
        if "user" in parts_roles:
            media = frozenset(kind for kind in MEDIA_KINDS if _renders_media(renderer, kind))
    return RequestProfile(
        content_format=fmt,
        parts_roles=parts_roles,
        media=media,
        keeps_developer='"developer"' in template.source or "'developer'" in template.source,
        object_arguments=analysis.capabilities.supports_object_arguments,
        id_format=analysis.id_format,
        reasoning_in_blocks=analysis.reasoning.in_content_blocks,
        null_content_with_calls=_prefers_null(ProbeRenderer(template), analysis.capabilities.supports_object_arguments),
        tool_result_names=analysis.capabilities.needs_tool_result_name,
        tool_result_list=_splits_tool_results(ProbeRenderer(template), analysis.capabilities.supports_object_arguments),
    )


def _conversation(role: str, content: Any) -> list[dict[str, Any]]:
    """A short conversation with ``content`` as the (first) message of ``role``."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Bye"},
    ]
    target = next(m for m in messages if m["role"] == role)
    target["content"] = content
    return messages


def _render(renderer: ProbeRenderer, role: str, content: Any, tools: list[dict[str, Any]] | None = None) -> str | None:
    """The probe rendered with ``content`` for ``role`` (without the system message if the template refuses it)."""
    messages = _conversation(role, content)
    out = renderer.render(messages, tools, add_generation_prompt=True)
    if out is None and role != "system":
        out = renderer.render(messages[1:], tools, add_generation_prompt=True)
    return out


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


_PROBE_TOOL = {"type": "function", "function": {"name": "tool1", "description": "Tool 1", "parameters": _PROBE_SCHEMA}}


def _renders_parts(renderer: ProbeRenderer, role: str) -> bool:
    """Whether ``role`` shows both text parts and no printed list — with tools as well, and as the first message
    of a conversation without a system message: Llama 4 moves the first user message into its tool preamble as
    ``messages[0]['content']|trim``, printing the parts as a Python list."""
    parts = [_text(_PART_A), _text(_PART_B)]
    out = _render(renderer, role, parts)
    if out is None or not _shows_parts(out):
        return False
    renders = [_render(renderer, role, parts, [_PROBE_TOOL])]
    if role != "system":
        renders.append(renderer.render(_conversation(role, parts)[1:], [_PROBE_TOOL], add_generation_prompt=True))
    return all(r is None or _shows_parts(r) for r in renders)  # (a template that cannot render tools: no matter)


def _shows_parts(out: str) -> bool:
    return _PART_A in out and _PART_B in out and not any(r in out for r in _LIST_REPRS)


def _render_with_calls(
    renderer: ProbeRenderer, content: Any, object_arguments: bool, result: Any = "Result"
) -> str | None:
    """A conversation whose assistant turn has ``content`` and a call, then the ``result`` and an answer."""
    arguments: Any = {"arg": "value"} if object_arguments else '{"arg": "value"}'
    call = {"id": "call00001", "type": "function", "function": {"name": "tool1", "arguments": arguments}}
    tool = _PROBE_TOOL
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": content, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call00001", "content": result},
        {"role": "assistant", "content": "Done"},
        {"role": "user", "content": "Bye"},
    ]
    out = renderer.render(messages, [tool], add_generation_prompt=True)
    if out is None:  # a template that renders calls only after reasoning (Command A Reasoning)
        messages[1]["reasoning_content"] = "Reasoning"
        out = renderer.render(messages, [tool], add_generation_prompt=True)
    return out


def _renders_parts_with_calls(renderer: ProbeRenderer, object_arguments: bool) -> bool:
    out = _render_with_calls(renderer, [_text(_PART_A), _text(_PART_B)], object_arguments)
    return out is not None and _PART_A in out and _PART_B in out and not any(r in out for r in _LIST_REPRS)


def _splits_tool_results(renderer: ProbeRenderer, object_arguments: bool) -> bool:
    """Whether a tool result given as a string does not reach the prompt whole while a list holding that string
    does: the template iterates over the result (Command A Reasoning reads a list of documents, each printed as
    JSON) and would print a string one character at a time."""
    text = f"{_PART_A} {_PART_B}"
    as_string = _render_with_calls(renderer, "", object_arguments, text)
    as_list = _render_with_calls(renderer, "", object_arguments, [text])
    return as_string is not None and text not in as_string and as_list is not None and text in as_list


def _prefers_null(renderer: ProbeRenderer, object_arguments: bool) -> bool:
    """Whether the template gives ``content: null`` next to calls a meaning of its own. vLLM sends ``""`` (or ``[]``),
    which DeepSeek-R1-Distill-Qwen, testing ``content is not none``, renders as an extra empty assistant turn. The null
    is kept where its rendering is the empty string's with something *removed* (never where it adds, as LFM2 printing
    ``null``)."""
    null = _render_with_calls(renderer, None, object_arguments)
    empty = _render_with_calls(renderer, "", object_arguments)
    if null is None or empty is None or len(null) >= len(empty):
        return False
    head = common_prefix_len(null, empty)
    return empty.endswith(null[head:])


def _renders_media(renderer: ProbeRenderer, kind: str) -> bool:
    without = _render(renderer, "user", [_text(_PART_A), _text(_PART_B)])
    with_media = _render(renderer, "user", [_text(_PART_A), {"type": kind}, _text(_PART_B)])
    return with_media is not None and without is not None and with_media != without


def media_kind(part: Mapping[str, Any]) -> str | None:
    """The media kind of a content part (``image_url`` -> ``image``), or None for text-like parts."""
    kind = part.get("type")
    if kind in ("image_url", "input_image", "image", "image_pil", "image_embeds") or "image_url" in part:
        return "image"
    if kind in ("audio_url", "input_audio", "audio", "audio_embeds"):
        return "audio"
    if kind in ("video_url", "video", "video_embeds"):
        return "video"
    return None
