"""OpenAI chat messages to what a template renders, the way vLLM's chat serving hands them over — minus its garbling.

What clients send and what templates read differ. Each step below follows vLLM (``parse_chat_messages``,
``_postprocess_messages``, ``safe_apply_chat_template``) so that prompts match the ones vLLM renders, except where
that would print something the model never should see; those departures are marked *(vLLM: ...)*.

* **Content.** A role that takes parts (:mod:`.profile`) gets a list: a string becomes one text part, ``None`` an
  empty list. Any other role gets a string: text parts joined with ``"\\n"``, ``None`` an empty string (next to
  calls, a template that gives null a meaning of its own keeps it: :mod:`.profile`). A media part goes in as
  ``{"type": "image"}`` (or audio, video) with its extra fields, and only where the template shows it; anywhere else
  it is a :class:`~autoparser.errors.RequestError` naming the part *(vLLM: inserts its own placeholders for
  multimodal models, or hands parts to roles the template prints as a Python list; sends ``""`` for null)*.
* **Tool results** take a string (text parts joined), as vLLM gives them — or a list holding that string, where the
  template iterates over a result and would print a string character by character (Command A Reasoning, reading a
  list of documents) — and the ``name`` of the call they
  answer where the client sent none and the template cannot do without it (Functionary v2 writes it: vLLM's
  request raises there).
* **Past tool calls.** ``arguments`` sent as JSON text become objects for templates that read objects; templates
  that print arguments as text get text (an object is serialised) *(vLLM: always objects, which such templates print
  as a Python dict or fail on)*. Empty arguments are ``{}``; text that is not a JSON object stays as sent, with a
  warning *(vLLM: replaced by ``{}``, losing it)*. An empty ``tool_calls`` list is dropped.
* **Call ids** the template refuses (Mistral's accept only 9 alphanumerics) are mapped, consistently in the call
  and its result, to ids it accepts (:mod:`.call_ids`) *(vLLM: the template raises)*.
* **Reasoning** of past turns, under ``reasoning_content`` or vLLM's newer ``reasoning``, reaches the template under
  every name templates read (the render aliases ``reasoning_content``/``reasoning``/``thinking`` as transformers
  does); a template that shows reasoning only as a typed ``thinking`` content block gets one *(vLLM: drops it)*.
* **The developer role** becomes ``system`` where the template does not name it; then all system messages are
  merged, in order, into one at the start (joined with a blank line), as vLLM does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import RequestError
from .call_ids import IdMap
from .checks import check_json_data
from .json_data import as_json_data
from .profile import ASSISTANT_WITH_CALLS, RequestProfile, media_kind

__all__ = ["NormalizedMessages", "left_out", "normalize_messages"]

# Part types whose text is read as text (vLLM's TEXT_PART_TYPES), and the field holding it.
_TEXT_FIELDS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
# Fields of a part that say what it is rather than add to it (not carried over to a normalised media part).
_PART_FIELDS = frozenset(
    {"type", "text", "image_url", "input_image", "image_pil", "image_embeds", "audio_url", "input_audio",
     "audio_embeds", "video_url", "video_embeds", "uuid", "detail", "refusal"}
)  # fmt: skip


@dataclass(slots=True)
class NormalizedMessages:
    """The messages as the template gets them, and what had to be changed on the way (for ``ChatParams.warnings``)."""

    messages: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def normalize_messages(
    messages: Sequence[Mapping[str, Any]], profile: RequestProfile, template_name: str = "the template"
) -> NormalizedMessages:
    """Shape ``messages`` for a template with ``profile`` (see the module docstring). Never mutates the input."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise RequestError("messages", f"must be a list of message objects, got {type(messages).__name__}")
    check_json_data(messages, "messages")  # depth and lone surrogates, before anything walks or prints them
    ids = IdMap(profile.id_format)
    result = NormalizedMessages([])
    developer_converted = False
    names = _call_names(messages)
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise RequestError(where, f"a message must be an object, got {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise RequestError(f"{where}.role", "every message needs a role (system, user, assistant, tool, ...)")
        item = dict(message)
        if role == "developer" and not profile.keeps_developer:
            item["role"] = role = "system"
            developer_converted = True
        shape = ASSISTANT_WITH_CALLS if role == "assistant" and message.get("tool_calls") else role
        if not (shape == ASSISTANT_WITH_CALLS and message.get("content") is None and profile.null_content_with_calls):
            item["content"] = _content(message.get("content"), shape, profile, where, template_name)
        if role == "assistant":
            _assistant(item, profile, ids, where, result.warnings)
        elif role == "tool" and isinstance(item.get("tool_call_id"), str):
            if profile.tool_result_names and not item.get("name") and item["tool_call_id"] in names:
                item["name"] = names[item["tool_call_id"]]  # the function it answers (Functionary v2 writes it)
            item["tool_call_id"] = ids.map(item["tool_call_id"])
        result.messages.append(item)
    if developer_converted:
        result.messages = _merge_system(result.messages)
    result.messages = [as_json_data(message) for message in result.messages]  # printed as JSON, never a repr
    return result


def _call_names(messages: Sequence[Any]) -> dict[str, str]:
    """The function name of every call id the conversation's assistant turns hold: a tool result OpenAI clients send
    without a ``name`` gets its call's (templates that write the function a result answers read it)."""
    names: dict[str, str] = {}
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in calls if isinstance(calls, list | tuple) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if (
                isinstance(function, Mapping)
                and isinstance(call.get("id"), str)
                and isinstance(function.get("name"), str)
            ):
                names.setdefault(call["id"], function["name"])
    return names


def _content(content: Any, role: str, profile: RequestProfile, where: str, template_name: str) -> Any:
    if content is not None and not isinstance(content, str | list | tuple):
        raise RequestError(
            f"{where}.content", f"must be a string, a list of parts or null, got {type(content).__name__}"
        )
    as_parts = role in profile.parts_roles and role != "tool"
    if role == "tool" and profile.tool_result_list:  # a string would be read character by character
        text = _content(content, role, replace(profile, tool_result_list=False), where, template_name)
        return [text] if isinstance(text, str) else text
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if as_parts else content
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(content or ()):
        normalized = _part(part, f"{where}.content[{i}]")
        if normalized is None:
            continue
        kind = media_kind(normalized) if normalized.get("type") != "text" else None
        if kind is not None and not (as_parts and kind in profile.media):
            why = "reads this role's content as a string" if not as_parts else f"has no place for {kind} parts"
            article = "an" if kind[0] in "aeiou" else "a"
            raise RequestError(
                f"{where}.content[{i}]",
                f"{article} {kind} part, which template {template_name!r} cannot show ({why}); send text only, or "
                "render with the model's own multimodal processor",
            )
        parts.append(normalized)
    if as_parts:
        return parts
    if any(p.get("type") not in ("text", "thinking") for p in parts):  # a tool result with media, kept as vLLM does
        return parts
    return "\n".join(p["text"] if p["type"] == "text" else p.get("thinking", "") for p in parts)


def _part(part: Any, where: str) -> dict[str, Any] | None:
    """A content part as templates read it: ``{"type": "text", "text": ...}`` (plus extra fields) or a media part
    ``{"type": "image", ...}``; None for a text part without text (vLLM skips those)."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        raise RequestError(where, f"a content part must be an object or a string, got {type(part).__name__}")
    kind = part.get("type")
    if kind in _TEXT_FIELDS:
        text = part.get(_TEXT_FIELDS[kind])
        if text is None:
            return None
        if not isinstance(text, str):
            raise RequestError(f"{where}.{_TEXT_FIELDS[kind]}", f"must be a string, got {type(text).__name__}")
        extra = {k: v for k, v in part.items() if k not in _PART_FIELDS}
        return {"type": "text", "text": text, **extra}
    media = media_kind(part)
    if media is None:
        if kind == "thinking":
            return dict(part)  # a typed reasoning block: templates that know it read it as it is
        raise RequestError(f"{where}.type", f"unsupported content part type {kind!r}")
    return {"type": media, **{k: v for k, v in part.items() if k not in _PART_FIELDS}}


def _assistant(item: dict[str, Any], profile: RequestProfile, ids: IdMap, where: str, warnings: list[str]) -> None:
    calls = item.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list | tuple):
            raise RequestError(f"{where}.tool_calls", f"must be a list, got {type(calls).__name__}")
        if not calls:
            del item["tool_calls"]
        else:
            item["tool_calls"] = [
                _call(call, profile, ids, f"{where}.tool_calls[{i}]", warnings) for i, call in enumerate(calls)
            ]
    reasoning = next((item[k] for k in ("reasoning_content", "reasoning") if item.get(k) is not None), None)
    if reasoning is not None and not isinstance(reasoning, str):
        raise RequestError(f"{where}.reasoning_content", f"must be a string, got {type(reasoning).__name__}")
    if reasoning and profile.reasoning_in_blocks:
        for key in ("reasoning_content", "reasoning", "thinking"):
            item.pop(key, None)
        content = item["content"]
        text = [{"type": "text", "text": content}] if isinstance(content, str) and content else []
        item["content"] = [
            {"type": "thinking", "thinking": reasoning},
            *(content if isinstance(content, list) else text),
        ]


def _call(call: Any, profile: RequestProfile, ids: IdMap, where: str, warnings: list[str]) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise RequestError(where, f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, Mapping):
        raise RequestError(where, 'a tool call is {"type": "function", "function": {"name": ..., "arguments": ...}}')
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise RequestError(f"{where}.function.name", "a tool call needs the function's name")
    result = dict(call)
    result["function"] = {**function, "arguments": _arguments(function.get("arguments"), profile, where, warnings)}
    if isinstance(call.get("id"), str):
        result["id"] = ids.map(call["id"], name)
    return result


def _arguments(arguments: Any, profile: RequestProfile, where: str, warnings: list[str]) -> Any:
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        except RecursionError:
            raise RequestError(f"{where}.function.arguments", "is JSON text that nests too deeply") from None
        check_json_data(parsed, f"{where}.function.arguments")
        if not isinstance(parsed, dict):
            warnings.append(
                f"{where}.function.arguments is not a JSON object; the template gets the text as it was sent"
            )
            return arguments
        if not profile.object_arguments:
            return arguments  # the client's own text, byte for byte
        arguments = parsed
    if not isinstance(arguments, Mapping):
        raise RequestError(
            f"{where}.function.arguments", f"must be JSON text or an object, got {type(arguments).__name__}"
        )
    if profile.object_arguments:
        return dict(arguments)
    return json.dumps(arguments, ensure_ascii=False)


def _merge_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every system message merged, in order, into one at the start (vLLM's rule after converting developer), unless
    there is only one and it is first."""
    systems = [i for i, m in enumerate(messages) if m["role"] == "system"]
    if systems in ([], [0]):
        return messages
    texts: list[str] = []
    rest: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] != "system":
            rest.append(message)
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p["text"] for p in content if isinstance(p, Mapping) and "text" in p)
        if content:
            texts.append(content)
    return [{"role": "system", "content": "\n\n".join(texts)}, *rest]


def left_out(messages: Sequence[Mapping[str, Any]], prompt: str) -> list[str]:
    """A note for each message whose text the rendered ``prompt`` does not hold: the template left it out (DeepSeek
    V3.2 drops ``developer`` messages, some templates drop the system message or the text of a turn with calls).
    The client should know: the model never sees it. A text counts as shown when it is in the prompt trimmed, or
    each of its lines is (templates trim and re-indent)."""
    notes: list[str] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list | tuple):
            texts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        else:
            continue
        missing = [text for text in texts if text.strip() and not _shown(text, prompt)]
        if missing:
            excerpt = " ".join(missing[0].split())
            excerpt = excerpt if len(excerpt) <= 60 else excerpt[:57] + "..."
            notes.append(
                f"messages[{index}] ({message.get('role')}): the template leaves its text out of the prompt "
                f"({excerpt!r}): the model will not see it"
            )
    return notes


def _shown(text: str, prompt: str) -> bool:
    if text.strip() in prompt:
        return True
    return all(line.strip() in prompt for line in text.splitlines() if line.strip())
