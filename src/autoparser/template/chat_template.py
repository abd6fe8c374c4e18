"""``JinjaChatTemplate``: a model's Jinja chat template, rendered exactly as transformers renders it.

The public :class:`autoparser.ChatTemplate` extends it with the analysis and parsing layers.

Templates are untrusted, so whatever goes wrong in one — a syntax error, nesting too deep to compile, an
exception inside a filter, runaway recursion, a render past its :class:`~.limits.RenderLimits` — surfaces as a
:class:`~autoparser.errors.TemplateError` naming the template and, when known, the line. Only
``KeyboardInterrupt``/``SystemExit`` and errors in the caller's own inputs (e.g. messages that are not mappings)
pass through unchanged.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from ..cache import Deferred
from ..errors import RenderLimitError, TemplateDecodeError, TemplateError
from .environment import compile_template, render_bounded
from .limits import DEFAULT_LIMITS, LimitExceeded, RenderLimits

__all__ = ["JinjaChatTemplate", "bundled_templates", "with_reasoning_aliases"]

_BUNDLE = "autoparser.templates"
# Names under which a message's reasoning may arrive; templates read `reasoning_content`, `thinking` or `reasoning`
# (vLLM's newer name: MiniCPM-V 4.5 and Solar Open read it).
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def bundled_templates() -> list[str]:
    """Names of the chat templates shipped with autoparser (``JinjaChatTemplate.load(name)``)."""
    return sorted(
        entry.name.removesuffix(".jinja")
        for entry in resources.files(_BUNDLE).iterdir()
        if entry.name.endswith(".jinja")
    )


_ATOMS = frozenset({str, int, float, bool, type(None)})


def data_copy(value: Any) -> Any:
    """A deep copy of request data (what a template may mutate must not be the caller's), made without
    ``copy.deepcopy``'s per-object bookkeeping: JSON-like data (dicts, lists, tuples, strings, numbers) is copied
    directly — a request with 1,000 tools is copied several times per ``apply()`` — anything else deep-copied."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict or (isinstance(value, dict) and _stateless(value, dict)):  # a JsonDict too (same type back)
        return kind({key: data_copy(item) for key, item in value.items()})
    if kind is list or (isinstance(value, list) and _stateless(value, list)):
        return kind([data_copy(item) for item in value])
    if kind is tuple:
        return tuple(data_copy(item) for item in value)
    return copy.deepcopy(value)


def _stateless(value: object, base: type) -> bool:
    """Whether ``value``, of a subclass of ``base``, is all in its items: no attributes of its own, built like
    ``base`` (a copy made as ``type(value)(items)`` is then whole)."""
    kind = type(value)
    return not hasattr(value, "__dict__") and kind.__init__ is base.__init__ and kind.__new__ is base.__new__


def with_reasoning_aliases(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of the messages with reasoning under every name templates read (as transformers does)."""
    prepared: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise TypeError(f"chat messages must be mappings, got {type(message).__name__}")
        item = data_copy(dict(message))
        reasoning = next((item[k] for k in _REASONING_FIELDS if item.get(k) is not None), None)
        if reasoning is not None:
            item = {"thinking": reasoning, "reasoning": reasoning, **item, "reasoning_content": reasoning}
        prepared.append(item)
    return prepared


class JinjaChatTemplate:
    """A Jinja chat template plus the BOS/EOS strings it is rendered with.

    ``limits`` bounds every render, including the many renders of analysis (see :class:`RenderLimits`); it is a
    plain attribute, so it can also be changed after construction.
    """

    __slots__ = ("bos_token", "eos_token", "limits", "name", "source")

    def __init__(
        self,
        source: str,
        bos_token: str = "",
        eos_token: str = "",
        *,
        name: str = "<string>",
        limits: RenderLimits = DEFAULT_LIMITS,
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"template source must be a str, got {type(source).__name__}")
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.name = name
        self.limits = limits

    @classmethod
    def from_file(
        cls, path: str | Path, bos_token: str = "", eos_token: str = "", *, limits: RenderLimits = DEFAULT_LIMITS
    ) -> JinjaChatTemplate:
        """Read a template file (``.jinja``, UTF-8).

        A file that is not UTF-8 raises :class:`~autoparser.errors.TemplateDecodeError`: a ``TemplateError``
        naming the file and line, and still a ``UnicodeDecodeError`` for existing handlers. A file that cannot be
        read at all (missing, a directory, no permission) raises the usual :class:`OSError`: that is a problem
        with the path rather than with a template, Python's message already names the path, and ``except
        OSError`` is how callers (the CLI among them) handle unreadable paths. A ``.json`` file (a Hugging Face
        ``tokenizer_config.json`` or ``chat_template.json``) raises :class:`~autoparser.errors.TemplateError`:
        ``ChatTemplate.from_pretrained`` reads those.
        """
        path = Path(path)
        if path.suffix.lower() == ".json":
            raise TemplateError(
                path.name,
                "a .json file is a Hugging Face config, not a Jinja template: read it with "
                "ChatTemplate.from_pretrained(path), which also takes the model directory",
            )
        data = path.read_bytes()
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise TemplateDecodeError(path.name, err) from None
        return cls(source, bos_token, eos_token, name=path.name, limits=limits)

    @classmethod
    def load(
        cls, name: str, bos_token: str = "", eos_token: str = "", *, limits: RenderLimits = DEFAULT_LIMITS
    ) -> JinjaChatTemplate:
        """A bundled template by name (see :func:`bundled_templates`), e.g. ``"Qwen3-Coder"``."""
        stem = name.removesuffix(".jinja")
        entry = resources.files(_BUNDLE).joinpath(f"{stem}.jinja")
        if not entry.is_file():
            raise KeyError(f"no bundled template named {name!r}; see autoparser.template.bundled_templates()")
        return cls(entry.read_text(encoding="utf-8"), bos_token, eos_token, name=f"{stem}.jinja", limits=limits)

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
        context = self._variables(enable_thinking, extra_context)
        context["messages"] = with_reasoning_aliases(messages)
        context["tools"] = data_copy(list(tools)) if tools is not None else None
        context["add_generation_prompt"] = add_generation_prompt
        return self.render_context(context)

    def _variables(self, enable_thinking: bool | None, extra: Mapping[str, Any]) -> dict[str, Any]:
        """The render context :meth:`render` gives besides the conversation, its tools and ``add_generation_prompt``
        (which it sets after these: a key of ``extra`` by one of those names does not count)."""
        context = {"bos_token": self.bos_token, "eos_token": self.eos_token, "documents": None, **extra}
        if enable_thinking is not None:
            context["enable_thinking"] = enable_thinking
        return context

    def plain_context(
        self, names: tuple[str, ...], enable_thinking: bool | None, extra: Mapping[str, Any]
    ) -> tuple[tuple[type, object], ...] | None:
        """What the context of :meth:`render` (with ``enable_thinking`` and ``extra``) gives each of ``names``, as
        (type, value) pairs (``True`` and ``1`` print differently), ``(type(None), _UNSET)`` where it gives nothing;
        None where a value is not plain (a str, number, bool or None) and cannot key a cache."""
        context = self._variables(enable_thinking, extra)
        values = []
        for name in names:
            value = context.get(name, _UNSET)
            if value is not _UNSET and value is not None and type(value) not in _PLAIN:
                return None
            values.append((type(value), value))
        return tuple(values)

    def check_syntax(self) -> None:
        """Raise :class:`TemplateError` (with the line) if the template does not compile."""
        try:
            compile_template(self.source)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(self.name, f"syntax error: {err.message}", err.lineno) from err

    def render_context(self, context: Mapping[str, Any], *, limits: RenderLimits | None = None) -> str:
        """Render with exactly ``context`` as the template variables (no copying or aliasing of inputs).

        Capability probing uses this with access-tracking wrappers, which copying would trigger. ``limits``
        overrides :attr:`limits` for this render (analysis uses it to share one time budget across its renders).
        """
        try:
            template = compile_template(self.source)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(self.name, f"syntax error: {err.message}", err.lineno) from err
        try:
            return render_bounded(template, context, self.limits if limits is None else limits)
        except LimitExceeded as err:
            raise RenderLimitError(self.name, str(err), _template_line(err), limit=err.limit) from err
        except Deferred:
            raise  # (quick mode: rendered again without it)
        except jinja2.exceptions.SecurityError as err:
            # Kimi-K2 calls list.append: a template written for an engine that allows mutation.
            hint = " (the template changes a value in place, which transformers' sandbox refuses too)"
            message = f"{err}{hint}" if "append" in str(err) or "is unsafe" in str(err) else str(err)
            raise TemplateError(self.name, message, _template_line(err)) from err
        except jinja2.TemplateError as err:  # raise_exception(), undefined-variable errors, ...
            raise TemplateError(self.name, str(err), _template_line(err)) from err
        except RecursionError as err:
            raise TemplateError(
                self.name,
                "recursion too deep (a macro or loop that calls itself without end?)",
                _template_line(err, recursion=True),
            ) from err
        except MemoryError as err:
            raise TemplateError(self.name, "out of memory while rendering", _template_line(err)) from err
        except Exception as err:  # untrusted code: whatever it raises is the template's failure
            raise TemplateError(self.name, f"{type(err).__name__}: {err}", _template_line(err)) from err

    def __repr__(self) -> str:
        return f"JinjaChatTemplate({self.name!r})"


_UNSET = object()  # a variable the context does not give
_PLAIN = (str, int, float, bool)


def _template_line(err: BaseException, *, recursion: bool = False) -> int | None:
    """The template line an exception was raised from (Jinja compiles templates to `<template>` code).

    For a ``RecursionError`` the innermost line is wherever the stack happened to run out; the line that recurs
    most often in the stack — the call that calls itself — says more.
    """
    lines = []
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    if not lines:
        return None
    return Counter(lines).most_common(1)[0][0] if recursion else lines[-1]
