"""A Jinja environment that renders chat templates the way Hugging Face transformers does.

Templates come from model hubs and are untrusted code, so they run in Jinja's immutable sandbox. The
environment mirrors transformers' chat-template renderer so that prompts are byte-identical:

* ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension (``{% break %}``/``{% continue %}``);
* ``tojson`` that keeps key order and non-ASCII text, does no HTML escaping, and takes ``indent``,
  ``separators``, ``ensure_ascii`` and ``sort_keys``;
* ``raise_exception(msg)`` (raises a template error), ``strftime_now(fmt)``, a ``dict`` callable and a
  ``namespace`` that refuses underscore-prefixed attributes;
* a no-op ``{% generation %}...{% endgeneration %}`` block (used by training code to mark assistant text).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["clear_compile_cache", "compile_template", "make_environment", "variables_read"]


class GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}body{% endgeneration %}`` renders its body unchanged."""

    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        default=_materialize,
    )


def _materialize(value: Any) -> Any:
    """Serialize lazy sequences (``tools | map(attribute='function')`` is a generator in Jinja2).

    transformers raises "not JSON serializable" here; templates written for other Jinja engines expect a list.
    Only inputs that transformers rejects render differently.
    """
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _SafeDict:
    """``dict(...)`` for templates, without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class _SafeNamespace(jinja2.utils.Namespace):
    """``namespace(...)`` that refuses underscore-prefixed attributes (no path to Python internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # same signature trick as Jinja's Namespace
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _SafeNamespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _SafeNamespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"templates may not set underscore attribute {name!r}")


def make_environment() -> ImmutableSandboxedEnvironment:
    """A fresh sandboxed environment configured like transformers' chat-template renderer."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _SafeDict()
    env.globals["namespace"] = _SafeNamespace
    return env


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> tuple[jinja2.Template, frozenset[str]]:
    env = make_environment()
    tree = env.parse(source)  # parsed once: both the compiled template and the name scan use the tree
    names = frozenset(node.name for node in tree.find_all(jinja2.nodes.Name) if node.ctx == "load")
    return env.from_string(tree), names


def compile_template(source: str) -> jinja2.Template:
    """Compile ``source`` once (templates are re-used for every request)."""
    return _compile(source)[0]


def variables_read(source: str) -> frozenset[str]:
    """Every variable name the template reads (inputs such as ``messages``, ``tools``, ``functions`` and locals)."""
    return _compile(source)[1]


def clear_compile_cache() -> None:
    _compile.cache_clear()
