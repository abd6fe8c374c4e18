"""A Messages request read into the equivalent chat-completions request, so that it renders exactly as the chat
endpoint renders that request (``parse_chat_request``, then the same ``ChatTemplate.apply``).

Anthropic's fields are checked here, with 400s naming the field the way Anthropic names it
(``messages.1.content.0.input``); what the chat validation or the rendering refuses afterwards names the Anthropic
field it came from (:meth:`Translation.translated`). What maps to what:

* ``system`` (a string or text blocks) is the system message; ``messages``' text blocks are text parts;
* an assistant's ``tool_use`` blocks are its ``tool_calls`` (``input`` as JSON text, the id decoded: :mod:`.ids`),
  its ``thinking`` blocks whose signature verifies its ``reasoning_content`` (:mod:`.signatures`; one that does not
  is left out, with a note), ``redacted_thinking`` is dropped (it holds nothing a local model wrote);
* a ``tool_result`` block is a ``tool`` message (its text; ``is_error`` has no chat equivalent and is not shown);
  a user message's other blocks around it stay a user message, in order;
* a final assistant message is continued (``continue_final_message``), as Anthropic continues a prefill;
* ``tools`` are function tools (``input_schema`` their parameters); ``tool_choice`` ``auto``/``any``/``tool``/
  ``none`` is ``auto``/``required``/the named function/``none``, ``disable_parallel_tool_use`` turns
  ``parallel_tool_calls`` off (otherwise the template's default);
* ``thinking`` sets the template's thinking switch (``enable_thinking``): ``enabled``, ``adaptive`` and
  ``between_tools`` on, ``disabled`` off, absent the template's default; ``output_config.effort`` is
  ``reasoning_effort``, ``output_config.format`` a ``json_schema`` response format;
* ``max_tokens`` (required), ``stop_sequences``, ``temperature``, ``top_p``, ``top_k``, ``stream`` are the chat
  fields of the same meaning; ``metadata`` is checked and unused.

Refused (400): media (image, document) blocks — the engine gets a text prompt only, as on the chat endpoint —,
server tools, MCP servers and containers (this server runs no tools), and blocks in a role that cannot hold them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol import REASONING_EFFORTS, APIError, ChatRequest, parse_chat_request
from .ids import model_id
from .signatures import Signer

if TYPE_CHECKING:
    from ..config import ServerInfo

__all__ = ["Translation", "read_messages"]

# Fields Anthropic defines that this server cannot honour: a 400 rather than a reply that ignores them
_UNSUPPORTED = {
    "mcp_servers": "MCP servers are not supported: this server runs no tools",
    "container": "containers are not supported: this server runs no tools",
}
_THINKING = {"enabled": True, "adaptive": True, "between_tools": True, "disabled": False}
_MEDIA = ("image", "document", "search_result", "container_upload")
_ASSISTANT_ONLY = ("tool_use", "thinking", "redacted_thinking")
# The Anthropic field a chat field came from, where the name differs (Translation.path)
_CHAT_FIELDS = {
    "stop": "stop_sequences",
    "reasoning_effort": "output_config.effort",
    "parallel_tool_calls": "tool_choice.disable_parallel_tool_use",
    "chat_template_kwargs.enable_thinking": "thinking",
    "chat_template_kwargs": "thinking",
}


def _invalid(path: str, message: str, status: int = 400) -> APIError:
    return APIError(status, f"{path}: {message}", param=path)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), type(value).__name__)


def _typed(value: object, path: str, kinds: tuple[type, ...], what: str) -> Any:
    """``value`` when it is one of ``kinds`` (None stays None), else a 400 naming ``path``."""
    if value is None:
        return None
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise _invalid(path, f"must be {what}, got {_kind(value)}")
    return value


def _required(body: Mapping[str, Any], key: str, path: str, kinds: tuple[type, ...], what: str) -> Any:
    value = _typed(body.get(key), path, kinds, what)
    if value is None:
        raise _invalid(path, "is required")
    return value


def _integer(value: object, path: str, low: int) -> int | None:
    value = _typed(value, path, (int, float), "an integer")
    if value is None:
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _invalid(path, f"must be an integer, got {value!r}")
    if not low <= value <= 2**31 - 1:
        raise _invalid(path, f"must be between {low} and {2**31 - 1}, got {value}")
    return int(value)


def _number(value: object, path: str, low: float, high: float) -> float | None:
    value = _typed(value, path, (int, float), "a number")
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise _invalid(path, f"must be between {low:g} and {high:g}, got {value!r}")
    return None if value is None else float(value)


@dataclass
class Translation:
    """What reading one request learns besides the chat request: where each chat message came from (so that an
    error the rendering raises names the Anthropic field), and what the reply must note (thinking left out)."""

    origins: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last_message: str = "messages"

    def add(self, messages: list[dict[str, Any]], message: dict[str, Any], origin: str) -> None:
        messages.append(message)
        self.origins.append(origin)

    def path(self, param: str) -> str:
        """The Anthropic field of a chat request's field (``param`` of an :class:`APIError`)."""
        found = re.fullmatch(r"messages\[(\d+)\].*", param)
        if found:
            index = int(found[1])
            return self.origins[index] if index < len(self.origins) else "messages"
        found = re.fullmatch(r"tools\[(\d+)\](?:\.function)?(\.parameters)?(.*)", param)
        if found:
            return f"tools.{found[1]}" + (".input_schema" if found[2] else "") + found[3]
        found = re.fullmatch(r"response_format(?:\.json_schema\.schema)?(.*)", param)
        if found:
            return "output_config.format.schema" + found[1]
        if param in ("continue_final_message", "add_generation_prompt"):  # the prefill cannot be continued
            return self.last_message
        return _CHAT_FIELDS.get(param, param)

    def translated(self, err: APIError) -> APIError:
        """``err`` naming the Anthropic field (first in its message, as every 400 here does) rather than the chat
        request's."""
        if err.param is None:
            return err
        path = self.path(err.param)
        message = err.message.removeprefix(f"{err.param}: ")
        return APIError(err.status, f"{path}: {message}", param=path, code=err.code, type=err.type)


def read_messages(
    body: object, info: ServerInfo, signer: Signer, seen: Translation, *, counting: bool = False
) -> ChatRequest:
    """The chat request equivalent to the Messages request ``body`` (``counting``: a ``count_tokens`` body, which
    has no ``max_tokens``). Raises :class:`APIError` naming the field (Anthropic's shape is the caller's)."""
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, got {_kind(body)}")
    for key, why in _UNSUPPORTED.items():
        if body.get(key) is not None:
            raise _invalid(key, why)
    model = _required(body, "model", "model", (str,), "a string")
    if model != info.model:
        raise _invalid("model", f"{model!r} is not served here: this server serves {info.model!r}", 404)
    chat: dict[str, Any] = {"messages": _messages(body, signer, seen)}
    if not counting:
        chat["max_tokens"] = _integer(body.get("max_tokens"), "max_tokens", 1)
        if chat["max_tokens"] is None:
            raise _invalid("max_tokens", "is required")
        chat["temperature"] = _number(body.get("temperature"), "temperature", 0.0, 1.0)
        chat["top_p"] = _number(body.get("top_p"), "top_p", 0.0, 1.0)
        chat["top_k"] = _integer(body.get("top_k"), "top_k", 0)
        chat["stop"] = _stop_sequences(body.get("stop_sequences"))
        if _typed(body.get("stream"), "stream", (bool,), "a boolean"):
            chat["stream"] = True
            chat["stream_options"] = {"include_usage": True}  # the usage of message_delta
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    chat.update(_tool_choice(body.get("tool_choice"), tools))
    thinking = _thinking(body.get("thinking"))
    if thinking is not None:
        chat["chat_template_kwargs"] = {"enable_thinking": thinking}
    chat.update(_output_config(body.get("output_config")))
    metadata = _typed(body.get("metadata"), "metadata", (dict,), "an object")
    if metadata:
        _typed(metadata.get("user_id"), "metadata.user_id", (str,), "a string")
    final = body["messages"][-1]
    if final.get("role") == "assistant":  # a prefill: the reply continues it
        chat["continue_final_message"] = True
        chat["add_generation_prompt"] = False
    try:
        chat = {k: v for k, v in chat.items() if v is not None}
        return parse_chat_request(chat, info.template_vars, max_tools=info.max_tools)
    except APIError as err:
        raise seen.translated(err) from None


def _stop_sequences(value: object) -> list[str] | None:
    stops = _typed(value, "stop_sequences", (list,), "an array of strings")
    if stops is not None and not all(isinstance(s, str) for s in stops):
        raise _invalid("stop_sequences", "must be an array of strings")
    return stops


# --- messages -------------------------------------------------------------------------------------------------------


def _messages(body: Mapping[str, Any], signer: Signer, seen: Translation) -> list[dict[str, Any]]:
    messages = _required(body, "messages", "messages", (list,), "an array of messages")
    if not messages:
        raise _invalid("messages", "must hold at least one message")
    out: list[dict[str, Any]] = []
    system = _system(body.get("system"))
    if system is not None:
        seen.add(out, {"role": "system", "content": system}, "system")
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, dict):
            raise _invalid(where, f"must be an object, got {_kind(message)}")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise _invalid(f"{where}.role", f'must be "user" or "assistant", got {json.dumps(role)}')
        content = message.get("content")
        if not isinstance(content, str | list):
            raise _invalid(f"{where}.content", f"must be a string or an array of content blocks, got {_kind(content)}")
        if isinstance(content, list) and not content and i < len(messages) - 1:
            raise _invalid(f"{where}.content", "must hold at least one content block")
        if role == "user":
            _user(content, where, seen, out)
        else:
            seen.add(out, _assistant(content, where, signer, seen), where)
    seen.last_message = f"messages.{len(messages) - 1}"
    return out


def _system(value: object) -> str | list[dict[str, Any]] | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _invalid("system", f"must be a string or an array of text blocks, got {_kind(value)}")
    parts = [_text_part(block, f"system.{j}") for j, block in enumerate(value)]
    return _joined(parts) if parts else None


def _text_part(block: object, where: str) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise _invalid(where, f"must be an object, got {_kind(block)}")
    if block.get("type") != "text":
        raise _invalid(f"{where}.type", f'must be "text", got {json.dumps(block.get("type"))}')
    return {"type": "text", "text": _required(block, "text", f"{where}.text", (str,), "a string")}


def _joined(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text part as a string (what a client sending a string sends); several as text parts, which the request
    normalisation joins or hands over as the template reads them."""
    return parts[0]["text"] if len(parts) == 1 else parts


def _block_type(block: object, where: str) -> str:
    if not isinstance(block, dict):
        raise _invalid(where, f"must be an object, got {_kind(block)}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _invalid(f"{where}.type", "is required (a string)")
    if kind in _MEDIA:
        raise _invalid(where, f"{kind} blocks are not supported: this server sends the engine a text prompt only")
    return kind


def _user(content: str | list[Any], where: str, seen: Translation, out: list[dict[str, Any]]) -> None:
    """A user message: its tool results as ``tool`` messages, the blocks around them as user messages, in order."""
    if isinstance(content, str):
        seen.add(out, {"role": "user", "content": content}, where)
        return
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}.content.{j}"
        kind = _block_type(block, at)
        if kind == "text":
            parts.append(_text_part(block, at))
        elif kind == "tool_result":
            if parts:
                seen.add(out, {"role": "user", "content": _joined(parts)}, where)
                parts = []
            seen.add(out, _tool_result(block, at), at)
        elif kind in _ASSISTANT_ONLY:
            raise _invalid(f"{at}.type", f"{kind} blocks belong to assistant messages")
        else:
            raise _invalid(f"{at}.type", f"unsupported content block type {kind!r}")
    if parts:
        seen.add(out, {"role": "user", "content": _joined(parts)}, where)


def _tool_result(block: Mapping[str, Any], at: str) -> dict[str, Any]:
    call_id = _required(block, "tool_use_id", f"{at}.tool_use_id", (str,), "a string")
    _typed(block.get("is_error"), f"{at}.is_error", (bool,), "a boolean")
    content = block.get("content")
    if content is None or isinstance(content, str):
        text: str | list[dict[str, Any]] = content or ""
    elif isinstance(content, list):
        parts = []
        for k, part in enumerate(content):
            kind = _block_type(part, f"{at}.content.{k}")
            if kind != "text":
                raise _invalid(f"{at}.content.{k}.type", f"unsupported content block type {kind!r} in a tool result")
            parts.append(_text_part(part, f"{at}.content.{k}"))
        text = _joined(parts) if parts else ""
    else:
        raise _invalid(f"{at}.content", f"must be a string or an array of content blocks, got {_kind(content)}")
    return {"role": "tool", "tool_call_id": model_id(call_id), "content": text}


def _assistant(content: str | list[Any], where: str, signer: Signer, seen: Translation) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[dict[str, Any]] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}.content.{j}"
        kind = _block_type(block, at)
        if kind == "text":
            texts.append(_text_part(block, at))
        elif kind == "thinking":
            thinking = _required(block, "thinking", f"{at}.thinking", (str,), "a string")
            if signer.verify(thinking, block.get("signature")):
                reasoning.append(thinking)
            elif thinking:
                seen.notes.append(
                    f"{at}: a thinking block whose signature this server did not make was left out of the prompt"
                )
        elif kind == "redacted_thinking":
            continue
        elif kind == "tool_use":
            calls.append(_tool_use(block, at))
        elif kind == "tool_result":
            raise _invalid(f"{at}.type", "tool_result blocks belong to user messages")
        else:
            raise _invalid(f"{at}.type", f"unsupported content block type {kind!r}")
    message: dict[str, Any] = {"role": "assistant", "content": _joined(texts) if texts else None if calls else ""}
    if reasoning:
        message["reasoning_content"] = "\n\n".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_use(block: Mapping[str, Any], at: str) -> dict[str, Any]:
    call_id = _required(block, "id", f"{at}.id", (str,), "a string")
    name = _required(block, "name", f"{at}.name", (str,), "a string")
    arguments = _required(block, "input", f"{at}.input", (dict,), "an object")
    return {
        "id": model_id(call_id),
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


# --- tools, tool choice, thinking, output ---------------------------------------------------------------------------


def _tools(value: object) -> list[dict[str, Any]]:
    tools = _typed(value, "tools", (list,), "an array of tools") or []
    out = []
    for k, tool in enumerate(tools):
        where = f"tools.{k}"
        if not isinstance(tool, dict):
            raise _invalid(where, f"must be an object, got {_kind(tool)}")
        kind = tool.get("type")
        if kind not in (None, "custom"):
            raise _invalid(
                f"{where}.type",
                f"server tools ({json.dumps(kind)}) are not supported: this server runs no tools; declare a client "
                "tool (name, description, input_schema) and run it yourself",
            )
        name = _required(tool, "name", f"{where}.name", (str,), "a string")
        schema = _required(tool, "input_schema", f"{where}.input_schema", (dict,), "an object (a JSON Schema)")
        # in OpenAI's order: a template that prints the tools as JSON prints what a chat client would have sent
        function: dict[str, Any] = {"name": name}
        description = _typed(tool.get("description"), f"{where}.description", (str,), "a string")
        if description is not None:
            function["description"] = description
        function["parameters"] = schema
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(value: object, tools: list[dict[str, Any]]) -> dict[str, Any]:
    choice = _typed(value, "tool_choice", (dict,), "an object")
    if choice is None:
        return {}
    kind = choice.get("type")
    where = "tool_choice.disable_parallel_tool_use"
    disable = _typed(choice.get("disable_parallel_tool_use"), where, (bool,), "a boolean")
    fields: dict[str, Any] = {"parallel_tool_calls": False} if disable and tools else {}
    if kind == "auto":
        fields["tool_choice"] = "auto" if tools else "none"
    elif kind == "none":
        fields["tool_choice"] = "none"
    elif kind in ("any", "tool"):
        if not tools:
            raise _invalid("tool_choice", f'"{kind}" needs `tools`')
        if kind == "any":
            fields["tool_choice"] = "required"
        else:
            name = _required(choice, "name", "tool_choice.name", (str,), "a string")
            if name not in [t["function"]["name"] for t in tools]:
                raise _invalid("tool_choice.name", f"names {name!r}, which is not among the request's tools")
            fields["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        raise _invalid("tool_choice.type", f'must be "auto", "any", "tool" or "none", got {json.dumps(kind)}')
    return fields


def _thinking(value: object) -> bool | None:
    """The template's thinking switch for ``thinking`` (None: the template's default)."""
    thinking = _typed(value, "thinking", (dict,), "an object")
    if thinking is None:
        return None
    kind = thinking.get("type")
    if kind not in _THINKING:
        accepted = ", ".join(map(json.dumps, _THINKING))
        raise _invalid("thinking.type", f"must be one of {accepted}, got {json.dumps(kind)}")
    if kind == "enabled":
        _integer(thinking.get("budget_tokens"), "thinking.budget_tokens", 1)  # checked; not a limit here
        if thinking.get("budget_tokens") is None:
            raise _invalid("thinking.budget_tokens", "is required")
    return _THINKING[kind]


def _output_config(value: object) -> dict[str, Any]:
    config = _typed(value, "output_config", (dict,), "an object")
    if not config:
        return {}
    fields: dict[str, Any] = {}
    effort = _typed(config.get("effort"), "output_config.effort", (str,), "a string")
    if effort is not None:
        if effort not in REASONING_EFFORTS:
            raise _invalid("output_config.effort", f"must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}")
        fields["reasoning_effort"] = effort
    fmt = _typed(config.get("format"), "output_config.format", (dict,), "an object")
    if fmt is not None:
        if fmt.get("type") != "json_schema":
            raise _invalid("output_config.format.type", f'must be "json_schema", got {json.dumps(fmt.get("type"))}')
        schema = _required(fmt, "schema", "output_config.format.schema", (dict,), "an object (a JSON Schema)")
        fields["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
    return fields
