"""The OpenAI chat-completions request: validated field by field, with OpenAI-format errors naming the field.

:func:`parse_chat_request` turns a request body into a :class:`ChatRequest` (what ``ChatTemplate.apply`` and the
upstream need) or raises :class:`APIError` with the field (``param``) at fault. :func:`apply_request` renders it
with the template; what the template or the request normalisation refuses becomes a 400 as well
(``RequestError.field``, ``TemplateError``'s reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api import ChatTemplate
from ..errors import GrammarError, RequestError, SchemaError, TemplateError
from ..params import ChatParams
from ..peg.lowering.gbnf_syntax import RuleSet
from ..peg.lowering.json_schema import JsonSchemaConverter
from ..requests import check_schema
from ..requests.profile import media_kind

__all__ = [
    "REASONING_EFFORTS",
    "APIError",
    "ChatRequest",
    "Sampling",
    "apply_request",
    "build_grammar",
    "parse_chat_request",
]

# vLLM 0.32's ChatCompletionRequest.reasoning_effort (OpenAI's values, and DeepSeek V4's "max")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# Render arguments the server sets itself: a request's chat_template_kwargs cannot override them.
_SERVER_KWARGS = frozenset(
    {"messages", "tools", "add_generation_prompt", "continue_final_message", "chat_template", "tokenize"}
)
INT64 = (-(2**63), 2**63 - 1)
# Fields of OpenAI's request that are checked for their type only (this server has no use for them): field ->
# (the types it takes, what they are called)
_PASSIVE: dict[str, tuple[tuple[type, ...], str]] = {
    "model": ((str,), "a string"),
    "user": ((str,), "a string"),
    "safety_identifier": ((str,), "a string"),
    "prompt_cache_key": ((str,), "a string"),
    "service_tier": ((str,), "a string"),
    "store": ((bool,), "a boolean"),
    "prediction": ((dict,), "an object"),
    "metadata": ((dict,), "an object"),
    "verbosity": ((str,), "a string"),
}
# Fields a client may send that this server cannot honour: a 400 rather than a reply that ignores them.
_UNSUPPORTED = {
    "functions": "the deprecated `functions` field is not supported; send `tools`",
    "function_call": "the deprecated `function_call` field is not supported; send `tool_choice`",
    "audio": "audio output is not supported",
    "web_search_options": "web search is not supported",
}


class APIError(Exception):
    """An error answered in OpenAI's format: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _invalid(param: str, message: str, code: str = "invalid_value") -> APIError:
    return APIError(400, f"{param}: {message}", param=param, code=code)


@dataclass(frozen=True)
class Sampling:
    """What the upstream gets besides the prompt and the grammar (None: the engine's default)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[str, float] | None = None  # token id (as a string) -> bias in [-100, 100], OpenAI's form
    # vLLM's extensions (its ranges: top_k -1 or 0 for all tokens, min_p in [0, 1], repetition_penalty > 0)
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat-completions request."""

    messages: list[Any]
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool | None = None
    json_schema: dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None  # passed to ChatTemplate.apply, which sets the template's own switches
    stream: bool = False
    include_usage: bool = False
    sampling: Sampling = Sampling()
    # vLLM's extensions: the prompt ends with the assistant's opening (default), or inside the final assistant
    # message, whose text the model then continues
    add_generation_prompt: bool | None = None
    continue_final_message: bool = False


def _type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


def _typed(body: Mapping[str, Any], key: str, kinds: tuple[type, ...], what: str) -> Any:
    """``body[key]`` when it is one of ``kinds`` (None when absent or null)."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in kinds:
        raise _invalid(key, f"must be {what}, got {_type_name(value)}", "invalid_type")
    if not isinstance(value, kinds):
        raise _invalid(key, f"must be {what}, got {_type_name(value)}", "invalid_type")
    return value


def _number(body: Mapping[str, Any], key: str, low: float, high: float) -> float | None:
    value = _typed(body, key, (int, float), "a number")
    if value is None:
        return None
    if not (math.isfinite(value) and low <= value <= high):
        raise _invalid(key, f"must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


def _integer(body: Mapping[str, Any], key: str, low: int = INT64[0], high: int = INT64[1]) -> int | None:
    """``body[key]``, an integer in [low, high] (int64 at most: what an engine's parser takes); OpenAI's API takes
    an integral float (``1.0``), and so does this."""
    value = _typed(body, key, (int, float), "an integer")
    if value is None:
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _invalid(key, f"must be an integer, got {value!r}", "invalid_type")
    if not low <= value <= high:
        raise _invalid(key, f"must be between {low} and {high}, got {value}")
    return int(value)


def _positive_int(body: Mapping[str, Any], key: str) -> int | None:
    return _integer(body, key, 1)


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _invalid("stop", "must be a string or an array of strings", "invalid_type")
    return tuple(s for s in value if s)


def _logit_bias(body: Mapping[str, Any]) -> dict[str, float] | None:
    bias = _typed(body, "logit_bias", (dict,), "an object mapping token ids to biases")
    if not bias:
        return None
    for key, value in bias.items():
        if not key.isdigit():
            raise _invalid("logit_bias", f"keys must be token ids, got {key!r}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not -100 <= value <= 100:
            raise _invalid("logit_bias", f"biases must be numbers between -100 and 100, got {value!r} for {key}")
    return {key: float(value) for key, value in bias.items()}


def _tool_choice(body: Mapping[str, Any], tools: list[Any] | None) -> str | dict[str, Any]:
    choice = body.get("tool_choice")
    if choice is None:
        return "auto" if tools else "none"
    if isinstance(choice, str):
        if choice not in ("auto", "required", "none"):
            raise _invalid("tool_choice", f'must be "auto", "required", "none" or a named function, got {choice!r}')
        if choice == "required" and not tools:
            raise _invalid("tool_choice", '"required" needs `tools`')
        return choice if tools else "none"
    if not isinstance(choice, dict):
        raise _invalid("tool_choice", f"must be a string or an object, got {_type_name(choice)}", "invalid_type")
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if choice.get("type", "function") != "function" or not isinstance(name, str) or not name:
        raise _invalid("tool_choice", 'a named tool choice is {"type": "function", "function": {"name": ...}}')
    names = [
        t["function"].get("name") for t in tools or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ]
    if name not in names:
        raise _invalid("tool_choice", f"names {name!r}, which is not among the request's tools")
    return {"type": "function", "function": {"name": name}}


def _metadata(body: Mapping[str, Any]) -> None:
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and not all(isinstance(v, str) for v in metadata.values()):
        raise _invalid("metadata", "values must be strings", "invalid_type")


def _modalities(body: Mapping[str, Any]) -> None:
    modalities = _typed(body, "modalities", (list,), "an array of strings")
    if modalities is None:
        return
    if not all(isinstance(m, str) for m in modalities):
        raise _invalid("modalities", "must be an array of strings", "invalid_type")
    if any(m != "text" for m in modalities):
        raise _invalid("modalities", 'only ["text"] is supported', "unsupported_value")


def _json_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    fmt = _typed(body, "response_format", (dict,), "an object")
    if fmt is None:
        return None
    kind = fmt.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict):
            raise _invalid("response_format.json_schema", "must be an object with a `schema`", "invalid_type")
        schema = spec.get("schema")
        if schema is None:
            return {"type": "object"}  # OpenAI: a json_schema response format without a schema is any JSON object
        if not isinstance(schema, dict):
            raise _invalid("response_format.json_schema.schema", "must be an object", "invalid_type")
        _typed(spec, "name", (str,), "a string")
        _typed(spec, "strict", (bool,), "a boolean")
        _typed(spec, "description", (str,), "a string")
        try:
            check_schema(schema, "response_format.json_schema.schema")
        except RequestError as err:
            raise APIError(400, str(err), param=err.field, code="invalid_schema") from None
        return schema
    raise _invalid("response_format.type", f'must be "text", "json_object" or "json_schema", got {kind!r}')


def _no_media(content: object, index: int) -> None:
    """Refuse image, audio and video parts: the upstream gets a text prompt only, and a reply to a prompt whose
    image placeholder stands for nothing would answer a question it was never shown (a 400, not a 200 that drops
    the image)."""
    if not isinstance(content, list):
        return
    for j, part in enumerate(content):
        kind = media_kind(part) if isinstance(part, dict) else None
        if kind is not None:
            raise _invalid(
                f"messages[{index}].content[{j}]",
                f"{kind} parts are not supported: this server sends the engine a text prompt only",
                "unsupported_content",
            )


def _template_kwargs(body: Mapping[str, Any]) -> dict[str, Any]:
    """``chat_template_kwargs``, checked: no render argument the server sets itself, a boolean ``enable_thinking``."""
    kwargs = _typed(body, "chat_template_kwargs", (dict,), "an object")
    kwargs = dict(kwargs or {})
    for key in kwargs:
        if key in _SERVER_KWARGS:
            raise _invalid(f"chat_template_kwargs.{key}", "is set by the server, not by a request")
    if "enable_thinking" in kwargs and not isinstance(kwargs["enable_thinking"], bool | None):
        raise _invalid(
            "chat_template_kwargs.enable_thinking",
            f"must be a boolean, got {_type_name(kwargs['enable_thinking'])}",
            "invalid_type",
        )
    return kwargs


def _reasoning_effort(body: Mapping[str, Any]) -> str | None:
    """The top-level ``reasoning_effort``. ``ChatTemplate.apply`` takes it as vLLM's ``build_chat_params`` does: it
    sets the template's effort switch (whatever the template calls it) and, unless the request sets thinking itself,
    turns thinking on (``"none"``: off) through the template's own switch."""
    effort = _typed(body, "reasoning_effort", (str,), "a string")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise _invalid("reasoning_effort", f"must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}")
    return effort


def parse_chat_request(
    body: object,
    template_vars: frozenset[str] = frozenset(),
    *,
    max_tools: int | None = None,
    model: str | None = None,
) -> ChatRequest:
    """Validate a ``/v1/chat/completions`` body. ``template_vars``: the variables the chat template reads (kept for
    callers; the template's reasoning switches are its analysis's, applied by ``ChatTemplate.apply``).
    ``max_tools``: the most ``tools`` a request may hold (None: any number). ``model``: the one model served; a
    request naming another is a 404, as vLLM answers (one that names none is served, as vLLM serves it).

    Raises :class:`APIError` (400) naming the field. Messages and tools are checked in depth by
    :func:`apply_request` (the request normalisation)."""
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, got {_type_name(body)}", code="invalid_type")
    for key, why in _UNSUPPORTED.items():
        if body.get(key) is not None:
            raise _invalid(key, why, "unsupported_parameter")
    if "messages" not in body:
        raise _invalid("messages", "is required", "missing_required_parameter")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _invalid("messages", f"must be an array of messages, got {_type_name(messages)}", "invalid_type")
    if not messages:
        raise _invalid("messages", "must hold at least one message")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _invalid(f"messages[{i}]", f"must be an object, got {_type_name(message)}", "invalid_type")
        if not isinstance(message.get("role"), str):
            raise _invalid(f"messages[{i}].role", "is required (a string)", "missing_required_parameter")
        _no_media(message.get("content"), i)
    tools = _typed(body, "tools", (list,), "an array of tools")
    if tools is not None and max_tools is not None and len(tools) > max_tools:
        raise _invalid("tools", f"holds {len(tools)} tools; this server takes at most {max_tools}")
    for key, (kinds, what) in _PASSIVE.items():
        _typed(body, key, kinds, what)
    _metadata(body)
    if model is not None and body.get("model") not in (None, model):
        raise APIError(404, f"The model `{body['model']}` does not exist.", param="model", code="model_not_found")
    _modalities(body)
    n = _integer(body, "n")
    if n is not None and n != 1:
        raise _invalid("n", f"only n=1 is supported, got {n}", "unsupported_value")
    if _typed(body, "logprobs", (bool,), "a boolean"):
        raise _invalid("logprobs", "log probabilities are not supported", "unsupported_parameter")
    if _integer(body, "top_logprobs", 0, 20):
        raise _invalid("top_logprobs", "log probabilities are not supported", "unsupported_parameter")
    parallel = _typed(body, "parallel_tool_calls", (bool,), "a boolean")
    stream = bool(_typed(body, "stream", (bool,), "a boolean"))
    options = _typed(body, "stream_options", (dict,), "an object") or {}
    include_usage = _typed(options, "include_usage", (bool,), "a boolean") if options else None
    if options:
        _typed(options, "include_obfuscation", (bool,), "a boolean")
    max_tokens = _positive_int(body, "max_completion_tokens")
    if max_tokens is None:
        max_tokens = _positive_int(body, "max_tokens")
    else:
        _positive_int(body, "max_tokens")
    sampling = Sampling(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0),
        seed=_integer(body, "seed"),
        stop=_stop(body),
        frequency_penalty=_number(body, "frequency_penalty", -2.0, 2.0),
        presence_penalty=_number(body, "presence_penalty", -2.0, 2.0),
        logit_bias=_logit_bias(body),
        top_k=_integer(body, "top_k", -1, 2**31 - 1),
        min_p=_number(body, "min_p", 0.0, 1.0),
        repetition_penalty=_number(body, "repetition_penalty", 0.0, 2.0**31),
    )
    if sampling.repetition_penalty == 0:
        raise _invalid("repetition_penalty", "must be greater than 0 (1: no penalty)")
    add_generation_prompt = _typed(body, "add_generation_prompt", (bool,), "a boolean")
    # (what cannot be continued is ChatTemplate.apply's RequestError, a 400 naming the field: apply_request)
    continue_final_message = bool(_typed(body, "continue_final_message", (bool,), "a boolean"))
    return ChatRequest(
        messages=messages,
        tools=tools,
        tool_choice=_tool_choice(body, tools),
        parallel_tool_calls=parallel,
        json_schema=_json_schema(body),
        chat_template_kwargs=_template_kwargs(body),
        reasoning_effort=_reasoning_effort(body),
        stream=stream,
        include_usage=bool(include_usage) and stream,
        sampling=sampling,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
    )


def apply_request(template: ChatTemplate, request: ChatRequest) -> ChatParams:
    """The prompt and parser for ``request``; what the template or the normalisation refuses is a 400."""
    try:
        return template.apply(
            request.messages,
            tools=request.tools,
            tool_choice=request.tool_choice,
            parallel_tool_calls=request.parallel_tool_calls,
            json_schema=request.json_schema,
            chat_template_kwargs=request.chat_template_kwargs,
            reasoning_effort=request.reasoning_effort,
            add_generation_prompt=request.add_generation_prompt,
            continue_final_message=request.continue_final_message,
        )
    except RequestError as err:
        raise APIError(400, str(err), param=err.field, code="invalid_value") from err
    except SchemaError as err:
        raise _schema_error(err, request) from err
    except TemplateError as err:
        raise APIError(
            400, f"the chat template cannot render this request: {err.reason}", param="messages", code="template_error"
        ) from err
    except (ValueError, TypeError) as err:  # what apply() refuses beyond the checks above
        raise APIError(400, str(err), code="invalid_value") from err


def build_grammar(params: ChatParams, request: ChatRequest, write: Callable[[ChatParams], object]) -> None:
    """Write the grammar the upstream will be sent (``write``: the upstream's grammar fields; they are cached in
    ``params``), so that a schema valid as JSON Schema but beyond what a grammar can express (a lookahead in a
    ``pattern``, an unsatisfiable ``allOf``) is a 400 naming it, not a failure after the reply began."""
    try:
        write(params)
    except SchemaError as err:
        raise _schema_error(err, request) from err
    except GrammarError as err:
        raise APIError(400, f"no grammar can be written for this request: {err}", code="invalid_schema") from err


def _schema_error(err: SchemaError, request: ChatRequest) -> APIError:
    """A schema the grammar writer refused, as a 400 naming the schema (the tool's parameters, or the response
    format) and the keyword in it."""
    where, found = _failing_schema(request)
    err = found or err  # the schema's own path (the grammar may have converted a part of it alone)
    pointer = [p for p in err.path.removeprefix("#").split("/") if p]
    param = ".".join([where, *pointer])
    return APIError(400, f"{param}: {err.reason}", param=param, code="invalid_schema")


def _failing_schema(request: ChatRequest) -> tuple[str, SchemaError | None]:
    """Which of the request's schemas the grammar writer cannot take: each is converted alone to find it."""
    candidates: list[tuple[str, Any]] = []
    for i, tool in enumerate(request.tools or []):
        if isinstance(tool, dict):
            function = tool.get("function", tool)
            parameters = function.get("parameters") if isinstance(function, dict) else None
            if isinstance(parameters, dict | bool):
                prefix = f"tools[{i}].function" if "function" in tool else f"tools[{i}]"
                candidates.append((f"{prefix}.parameters", parameters))
    if request.json_schema is not None:
        candidates.append(("response_format.json_schema.schema", request.json_schema))
    for where, schema in candidates:
        try:
            JsonSchemaConverter(RuleSet()).convert(schema, "probe")
        except SchemaError as err:
            return where, err
        except (GrammarError, RecursionError):
            continue
    return ("tools" if request.tools else "response_format.json_schema.schema"), None
