"""``JinjaChatTemplate``: a model's Jinja chat template, rendered exactly as transformers renders it.

The public :class:`autoparser.ChatTemplate` extends it with the analysis and parsing layers.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from ..errors import TemplateError
from .environment import compile_template

__all__ = ["JinjaChatTemplate", "bundled_templates", "with_reasoning_aliases"]

_BUNDLE = "autoparser.templates"
# Names under which a message's reasoning may arrive; templates read `reasoning_content` or `thinking`.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def bundled_templates() -> list[str]:
    """Names of the chat templates shipped with autoparser (``JinjaChatTemplate.load(name)``)."""
    return sorted(
        entry.name.removesuffix(".jinja")
        for entry in resources.files(_BUNDLE).iterdir()
        if entry.name.endswith(".jinja")
    )


def with_reasoning_aliases(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of the messages with reasoning under every name templates read (as transformers does)."""
    prepared: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise TypeError(f"chat messages must be mappings, got {type(message).__name__}")
        item = copy.deepcopy(dict(message))
        reasoning = next((item[k] for k in _REASONING_FIELDS if item.get(k) is not None), None)
        if reasoning is not None:
            item = {"thinking": reasoning, **item, "reasoning_content": reasoning}
        prepared.append(item)
    return prepared


class JinjaChatTemplate:
    """A Jinja chat template plus the BOS/EOS strings it is rendered with."""

    __slots__ = ("bos_token", "eos_token", "name", "source")

    def __init__(self, source: str, bos_token: str = "", eos_token: str = "", *, name: str = "<string>") -> None:
        if not isinstance(source, str):
            raise TypeError(f"template source must be a str, got {type(source).__name__}")
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.name = name

    @classmethod
    def from_file(cls, path: str | Path, bos_token: str = "", eos_token: str = "") -> JinjaChatTemplate:
        """Read a template file (``.jinja``)."""
        path = Path(path)
        return cls(path.read_text(encoding="utf-8"), bos_token, eos_token, name=path.name)

    @classmethod
    def load(cls, name: str, bos_token: str = "", eos_token: str = "") -> JinjaChatTemplate:
        """A bundled template by name (see :func:`bundled_templates`), e.g. ``"Qwen3-Coder"``."""
        stem = name.removesuffix(".jinja")
        entry = resources.files(_BUNDLE).joinpath(f"{stem}.jinja")
        if not entry.is_file():
            raise KeyError(f"no bundled template named {name!r}; see autoparser.template.bundled_templates()")
        return cls(entry.read_text(encoding="utf-8"), bos_token, eos_token, name=f"{stem}.jinja")

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        enable_thinking: bool | None = None,
        **extra_context: Any,
    ) -> str:
        """Render the conversation. ``enable_thinking=None`` leaves the variable undefined."""
        context: dict[str, Any] = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "documents": None,
            **extra_context,
            "messages": with_reasoning_aliases(messages),
            "tools": copy.deepcopy(list(tools)) if tools is not None else None,
            "add_generation_prompt": add_generation_prompt,
        }
        if enable_thinking is not None:
            context["enable_thinking"] = enable_thinking
        return self.render_context(context)

    def check_syntax(self) -> None:
        """Raise :class:`TemplateError` (with the line) if the template does not compile."""
        try:
            compile_template(self.source)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(self.name, f"syntax error: {err.message}", err.lineno) from err

    def render_context(self, context: Mapping[str, Any]) -> str:
        """Render with exactly ``context`` as the template variables (no copying or aliasing of inputs).

        Capability probing uses this with access-tracking wrappers, which copying would trigger.
        """
        try:
            return compile_template(self.source).render(context)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(self.name, f"syntax error: {err.message}", err.lineno) from err
        except jinja2.TemplateError as err:
            raise TemplateError(self.name, str(err), _template_line(err)) from err
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError) as err:
            raise TemplateError(self.name, f"{type(err).__name__}: {err}", _template_line(err)) from err

    def __repr__(self) -> str:
        return f"JinjaChatTemplate({self.name!r})"


def _template_line(err: BaseException) -> int | None:
    """The template line an exception was raised from (Jinja compiles templates to `<template>` code)."""
    tb = err.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
