"""A Jinja environment that renders chat templates the way Hugging Face transformers does.

Templates come from model hubs and are untrusted code, so they run in Jinja's immutable sandbox. The
environment mirrors transformers' chat-template renderer so that prompts are byte-identical:

* ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension (``{% break %}``/``{% continue %}``);
* ``tojson`` that keeps key order and non-ASCII text, does no HTML escaping, and takes ``indent``,
  ``separators``, ``ensure_ascii`` and ``sort_keys``;
* ``raise_exception(msg)`` (raises a template error), ``strftime_now(fmt)``, a ``dict`` callable and a
  ``namespace`` that refuses underscore-prefixed attributes;
* a no-op ``{% generation %}...{% endgeneration %}`` block (used by training code to mark assistant text).

On top of that every render is bounded in time and size (:mod:`.limits`, wired in by :mod:`.guards`), and a
template too deeply nested to compile fails with a syntax error rather than Python's ``RecursionError``.
"""

from __future__ import annotations

import functools
import json
import marshal
from collections.abc import Generator, Iterator, Mapping
from datetime import datetime
from types import CodeType
from typing import Any, cast

import jinja2
import jinja2.ext
import jinja2.lexer
import jinja2.nodes
import jinja2.parser
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .. import disk_cache
from ..disk_cache import digest
from .compiling import fast_lexer, freeze_children
from .content_loops import loops_over_content
from .guards import BoundedSandbox, add_guards, install
from .limits import DEFAULT_LIMITS, Budget, RenderLimits
from .scan import ContextScan, generation_tail, scan_context, walk_tree

__all__ = [
    "clear_compile_cache",
    "compile_template",
    "context_scan",
    "generation_variables",
    "loops_over_message_content",
    "make_environment",
    "render_bounded",
    "variables_read",
]


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


class ChatSandbox(BoundedSandbox):
    """The bounded sandbox, tokenizing with :class:`~.compiling.FastLexer` (the same tokens as Jinja's lexer)."""

    @property
    def lexer(self) -> jinja2.lexer.Lexer:
        return fast_lexer(self)


def make_environment() -> ImmutableSandboxedEnvironment:
    """A fresh sandboxed environment configured like transformers' chat-template renderer."""
    env = ChatSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    # No constant folding while compiling: it is a third of the compile's cost (a template is compiled once per source,
    # and a cold template pays it before its first reply), and rendering the folded expressions does the same work.
    env.optimized = False
    install(env)
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _SafeDict()
    env.globals["namespace"] = _SafeNamespace
    return env


_Compiled = tuple[jinja2.Template, frozenset[str], ContextScan, bool, tuple[str, ...] | None]


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> _Compiled:
    """The compiled template and what the compile read from its tree, from the disk cache where a process compiled
    this source before (:mod:`autoparser.disk_cache`: 0.1 ms instead of 10–20)."""
    key = digest(source)
    saved = disk_cache.load("jinja", key)
    if saved is not None:
        try:
            code, names, scan, parts, tail = saved
            if isinstance(names, frozenset) and isinstance(scan, ContextScan):
                env = make_environment()
                template = env.template_class.from_code(env, marshal.loads(code), env.make_globals(None), None)
                return template, names, scan, parts, tail
        except Exception:  # not what this code writes (damaged, tampered with): compiled again below
            pass
    compiled, code = _compile_source(source)
    disk_cache.save("jinja", key, (marshal.dumps(code), *compiled[1:]))
    return compiled


def _compile_source(source: str) -> tuple[_Compiled, CodeType]:
    env = make_environment()
    parser = jinja2.parser.Parser(env, source)
    try:
        tree = parser.parse()  # parsed once: both the compiled template and the name scan use the tree
    except (RecursionError, MemoryError) as err:
        raise _too_complex(err, parser.stream.current.lineno) from None
    try:
        walked = walk_tree(tree)  # (once, for every reading below; before the guards rewrite the tree)
        names = frozenset(node.name for node in walked.of(jinja2.nodes.Name) if node.ctx == "load")
        scan = scan_context(tree, walked)
        parts = loops_over_content(tree, walked)
        tail = generation_tail(tree, walked)
        add_guards(tree)
        freeze_children(tree)  # (the tree is final: the code generator walks it many times)
        # Jinja folds constant expressions (filters included) while compiling: bound that like a render.
        with Budget(DEFAULT_LIMITS):
            code = env.compile(tree)
        template = env.template_class.from_code(env, code, env.make_globals(None), None)
        return (template, names, scan, parts, tail), code
    except (RecursionError, MemoryError, SyntaxError) as err:
        # Deep nesting: the tree walks (name scan, guards, Jinja's code generator) recurse, and Python refuses
        # more than 100 indentation levels or 20 nested loops in the generated code (SyntaxError here is Python's).
        raise _too_complex(err, _deepest_line(tree)) from None


def _too_complex(err: BaseException, line: int) -> jinja2.TemplateSyntaxError:
    detail = err.msg if isinstance(err, SyntaxError) else str(err) or type(err).__name__
    return jinja2.TemplateSyntaxError(f"template too deeply nested to compile ({detail})", line)


def _deepest_line(tree: jinja2.nodes.Node) -> int:
    """The line of the most deeply nested node (where a "nested too deeply" error belongs). Iterative on purpose."""
    best_depth, best_line = -1, 1
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > best_depth and getattr(node, "lineno", None):
            best_depth, best_line = depth, node.lineno
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return best_line


def compile_template(source: str) -> jinja2.Template:
    """Compile ``source`` once (templates are re-used for every request)."""
    return _compile(source)[0]


def variables_read(source: str) -> frozenset[str]:
    """Every variable name the template reads (inputs such as ``messages``, ``tools``, ``functions`` and locals)."""
    return _compile(source)[1]


def context_scan(source: str) -> ContextScan:
    """The context variables the template reads and the constants it compares them with (:mod:`.scan`)."""
    return _compile(source)[2]


def loops_over_message_content(source: str) -> bool:
    """Whether the template loops over a message's content (it reads content parts: vLLM's rule, see
    :mod:`.content_loops`), read from the tree parsed to compile it."""
    return _compile(source)[3]


def generation_variables(source: str) -> tuple[str, ...] | None:
    """The context variables the template's generation prompt is a function of, where it is one (it is then what
    the prompt with ``add_generation_prompt`` adds at the end of the prompt without: :func:`.scan.generation_tail`),
    else None."""
    return _compile(source)[4]


def clear_compile_cache() -> None:
    _compile.cache_clear()


def render_bounded(template: jinja2.Template, context: Mapping[str, Any], limits: RenderLimits) -> str:
    """Render ``template`` with ``context`` under ``limits``; raises :class:`~.limits.LimitExceeded` past them.

    This is :meth:`jinja2.Template.render` — root render function, new context, ``handle_exception`` to rewrite
    the traceback — except that the output is consumed chunk by chunk (Jinja compiles templates to generators)
    to count its characters. Past the limit, the error is thrown *into* the generator, at the output statement
    it stopped on, so that the rewritten traceback gives it a template line. (``Template.generate`` would do the
    same with one more generator layer per chunk: 1% of a typical render.) The deadline is not checked here:
    output only keeps coming from loops and calls, and the guards check it there (see :mod:`.guards`).
    """
    with Budget(limits) as budget:
        # Typed as an Iterator by Jinja; it is the template's generator function, which throw() needs.
        chunks = cast("Generator[str, None, None]", template.root_render_func(template.new_context(dict(context))))
        parts: list[str] = []
        append = parts.append
        size = 0
        max_size = budget.max_size
        try:
            for chunk in chunks:
                size += len(chunk)
                if size > max_size:
                    chunks.throw(budget.too_big(size, "the rendered text"))
                append(chunk)
        except Exception:
            template.environment.handle_exception()  # always raises
        return "".join(parts)
