"""What of a chat request shapes autoparser's parser, read off any serving stack's request object.

vLLM's and SGLang's ``ChatCompletionRequest`` name these fields alike (``tools``, ``tool_choice``,
``parallel_tool_calls``, ``chat_template_kwargs``), as pydantic models; the adapters hand them here as they are.

* :func:`request_shape`: the tools, the tool choice and parallel calls, as plain data (a cache key once
  :func:`~.serving.canonical`-ised).
* :func:`template_kwargs`: the template switches among a request's ``chat_template_kwargs``.
* :func:`reply_params`: the ``ChatParams`` for the reply, whole (reasoning included, after the generation prompt
  the template writes for the request's switches) or for the text after the reasoning only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api import ChatTemplate
from ..params import ChatParams
from ..template.switches import requested_thinking

__all__ = ["generation_prompt", "plain", "reply_params", "request_shape", "template_kwargs", "tool_name"]


def plain(value: Any) -> Any:
    """A pydantic model (a stack's tool, a named tool choice) as plain data."""
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value


def tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function", tool)
    return function.get("name", "") if isinstance(function, Mapping) else ""


def request_shape(request: Any, tools: Any = None) -> dict[str, Any]:
    """What of a request shapes the parser: tools, tool_choice (a named function becomes ``required`` with only
    that tool) and parallel_tool_calls (``tools`` alone when there is no request yet)."""
    tool_list = [plain(t) for t in (getattr(request, "tools", None) if request is not None else tools) or []]
    choice = plain(getattr(request, "tool_choice", None)) if request is not None else None
    if isinstance(choice, Mapping):  # {"type": "function", "function": {"name": ...}}
        name = tool_name(choice)
        tool_list = [t for t in tool_list if tool_name(t) == name]
        choice = "required"
    if choice not in ("auto", "required", "none"):
        choice = "auto" if tool_list else "none"
    parallel = getattr(request, "parallel_tool_calls", True) if request is not None else True
    return {"tools": tool_list, "tool_choice": choice, "parallel_tool_calls": parallel is not False}


# Render arguments stacks keep among the chat_template_kwargs they hand parsers, which are not template switches.
_NOT_TEMPLATE_KWARGS = frozenset(
    {
        "add_generation_prompt",
        "continue_final_message",
        "tools",
        "tokenize",
        "messages",
        "conversation",
        "chat_template",
        "return_dict",
        "return_assistant_tokens_mask",
        "documents",
    }
)


def template_kwargs(*sources: Mapping[str, Any] | None) -> dict[str, Any]:
    """The template switches (enable_thinking, reasoning_effort, ...) among chat_template_kwargs; later sources
    win."""
    merged: dict[str, Any] = {}
    for source in sources:
        merged.update({k: v for k, v in (source or {}).items() if k not in _NOT_TEMPLATE_KWARGS and v is not None})
    return merged


def generation_prompt(template: ChatTemplate, kwargs: Mapping[str, Any]) -> str:
    """The generation prompt the template writes for these switches (thinking as they set it, `enable_thinking`
    or the template's own switch, say `thinking`; else the template's default)."""
    analysis = template.analysis
    thinking = kwargs.get("enable_thinking", requested_thinking(analysis.switches, kwargs))
    prompts = analysis.generation_prompts
    return prompts.no_thinking if thinking is False else prompts.thinking


def reply_params(
    template: ChatTemplate,
    shape: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    *,
    prompt: str | None = None,
    content_only: bool = False,
    **options: Any,
) -> ChatParams:
    """The parser for a reply: after ``prompt`` (None: the template's generation prompt for ``kwargs``), or with
    ``content_only`` for the text after the reasoning (no reasoning, no prefill). ``options`` go to
    ``params_for_prompt`` (``undeclared_tools``)."""
    common = {
        "tools": shape["tools"] or None,
        "tool_choice": shape["tool_choice"],
        "parallel_tool_calls": shape["parallel_tool_calls"],
        "chat_template_kwargs": dict(kwargs),
        **options,
    }
    if content_only:
        return template.params_for_prompt("", reasoning_format="none", **common)
    if prompt is None:
        prompt = generation_prompt(template, kwargs)
    return template.params_for_prompt(prompt, reasoning_format="auto", **common)
