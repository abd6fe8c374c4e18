"""``BatchParser``: one template and request options, any number of rows, each read into an OpenAI message.

The costly part of parsing a reply is knowing how to read it: the template's analysis and the parser built for the
request's shape (``ChatTemplate.apply``). Both happen once per distinct request, not per row: a row without a
``messages`` / ``tools`` field of its own uses the batch's default request (built once), and a row with one uses the
``ChatParams`` cached under that request's JSON (or the field's own text, when the field holds JSON text). Every row
then costs one ``ChatParams.parse()`` plus the conversion of its message.

A row whose request cannot be rendered (``RequestError``, ``TemplateError``), that holds no reply, or whose parse
fails for any other reason gets an ``error`` and no message; the rows around it are parsed as usual.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..api import ChatTemplate
from ..params import ChatParams
from .fields import MissingText, text_reader

__all__ = ["OUTPUT_FIELDS", "BatchParser", "Outcome", "failure"]

# The fields every output row has, in this order; the kept input fields follow them.
OUTPUT_FIELDS = ("message", "warnings", "call_statuses", "error")
DEFAULT_MESSAGES: tuple[dict[str, str], ...] = ({"role": "user", "content": "Hi"},)

# (the OpenAI message or None, parse warnings, each call's status, the error or None): a plain tuple, built per row
Outcome = tuple[dict[str, Any] | None, list[str], list[str], str | None]

_KEY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def failure(error: str) -> Outcome:
    """The outcome of a row that could not be parsed."""
    return None, [], [], error


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


class _Failed:
    """A cached request that cannot be applied: each row asking for it fails with the same error."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


class BatchParser:
    """Reads model replies into OpenAI messages for one template, row after row.

    ``template``: a :class:`~autoparser.ChatTemplate`, or a bundled template's name or a path
    (``ChatTemplate.from_pretrained``). ``messages`` / ``tools``: the request the replies answer, for rows without
    a ``messages_field`` / ``tools_field`` of their own (default: one user message, no tools). ``text_field``: where
    a row's reply is (a name or dotted path; OpenAI completion and chat-completion records are recognised without
    it, see :mod:`autoparser.batch.fields`). ``keep``: input fields copied into each output row.
    ``reasoning_field``: the message's key for reasoning (``"reasoning_content"`` or ``"reasoning"``). Other
    keyword arguments go to ``ChatTemplate.apply`` (``reasoning_format``, ``enable_thinking``, ``tool_choice``,
    ``parallel_tool_calls``, ``undeclared_tools``, ``chat_template_kwargs``, ...).

    Picklable, small: the caches are left behind and rebuilt where it is unpickled (a worker process), so each
    worker builds the analysis once.
    """

    def __init__(
        self,
        template: ChatTemplate | str | Path,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        text_field: str = "text",
        messages_field: str | None = "messages",
        tools_field: str | None = "tools",
        keep: Sequence[str] = (),
        reasoning_field: str = "reasoning_content",
        cache_size: int = 4096,
        **apply_options: Any,
    ) -> None:
        self.template = template if isinstance(template, ChatTemplate) else _resolve(template)
        self.messages = [dict(m) for m in messages] if messages is not None else [dict(m) for m in DEFAULT_MESSAGES]
        self.tools = [dict(t) for t in tools] if tools is not None else None
        self.text_field = text_field
        self.messages_field = messages_field
        self.tools_field = tools_field
        self.keep = tuple(keep)
        clash = sorted(set(self.keep) & set(OUTPUT_FIELDS))
        if clash:
            raise ValueError(f"keep: {', '.join(clash)} would be overwritten by the output field of that name")
        if reasoning_field not in ("reasoning_content", "reasoning"):
            raise ValueError(f"reasoning_field must be 'reasoning_content' or 'reasoning', not {reasoning_field!r}")
        self.reasoning_field = reasoning_field
        self.cache_size = cache_size
        self.apply_options = apply_options
        self._setup()

    def _setup(self) -> None:
        self._read_text = text_reader(self.text_field)
        self._default: ChatParams | None = None
        self._cache: dict[tuple[str, str], ChatParams | _Failed] = {}
        self.request_warnings: dict[str, None] = {}  # apply()'s warnings, once each, in the order met

    def __getstate__(self) -> dict[str, Any]:
        names = ("template", "messages", "tools", "text_field", "messages_field", "tools_field", "keep")
        state = {name: getattr(self, name) for name in names}
        state.update(reasoning_field=self.reasoning_field, cache_size=self.cache_size, apply_options=self.apply_options)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    # --- requests ------------------------------------------------------------------------------------------------

    def default_params(self) -> ChatParams:
        """The ``ChatParams`` of the default request (built on first use). Raises what ``apply`` raises: call it
        first to fail before a batch when the default request itself is wrong."""
        if self._default is None:
            self._default = self._apply(self.messages, self.tools)
        return self._default

    def _apply(self, messages: Any, tools: Any) -> ChatParams:
        params = self.template.apply(messages, tools=tools, **self.apply_options)
        for warning in params.warnings:
            self.request_warnings.setdefault(warning, None)
        return params

    def params_for(self, messages: Any = None, tools: Any = None) -> ChatParams:
        """The ``ChatParams`` for a row's request: its own ``messages`` / ``tools`` (lists, or their JSON text),
        each defaulting to the batch's. Cached by the request's JSON; raises what ``apply`` raises."""
        if messages is None and tools is None:
            return self.default_params()
        key = (
            "" if messages is None else messages if messages.__class__ is str else _KEY(messages),
            "" if tools is None else tools if tools.__class__ is str else _KEY(tools),
        )
        cached = self._cache.get(key)
        if cached is None:
            try:
                cached = self._apply(
                    self.messages if messages is None else _loaded(messages, "messages"),
                    self.tools if tools is None else _loaded(tools, "tools"),
                )
            except Exception as err:  # any request the template cannot take fails its rows, never the batch
                cached = _Failed(_error(err))
            if len(self._cache) >= self.cache_size:
                del self._cache[next(iter(self._cache))]  # the oldest request
            self._cache[key] = cached
        if cached.__class__ is _Failed:
            raise _RowFailure(cached.error)  # type: ignore[union-attr]
        return cached  # type: ignore[return-value]

    # --- rows ----------------------------------------------------------------------------------------------------

    def parse_text(self, text: str, messages: Any = None, tools: Any = None) -> Outcome:
        """The outcome of one reply to a request (``messages`` / ``tools`` as in :meth:`params_for`)."""
        try:
            if messages is None and tools is None and self._default is not None:
                params = self._default  # most rows: the batch's own request
            else:
                params = self.params_for(messages, tools)
            message = params.parse(text)
        except _RowFailure as err:
            return failure(err.args[0])
        except Exception as err:
            return failure(_error(err))
        openai = message.to_openai(reasoning_field=self.reasoning_field)
        warnings = [str(w) for w in message.warnings] if message.warnings else []
        statuses = [call.status.value for call in message.tool_calls] if message.tool_calls else []
        return openai, warnings, statuses, None

    def outcome(self, row: Mapping[str, Any]) -> Outcome:
        """The outcome of one row (a mapping: a JSON object, a row of a table)."""
        try:
            text = self._read_text(row)
        except MissingText as err:
            return failure(f"no reply: {err}")
        except Exception as err:
            return failure(_error(err))
        messages = row.get(self.messages_field) if self.messages_field else None
        tools = row.get(self.tools_field) if self.tools_field else None
        return self.parse_text(text, messages, tools)

    def parse_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """One output row: ``message``, ``warnings``, ``call_statuses``, ``error``, then the ``keep`` fields."""
        message, warnings, statuses, error = self.outcome(row)
        out = {"message": message, "warnings": warnings, "call_statuses": statuses, "error": error}
        for name in self.keep:
            out[name] = row.get(name)
        return out

    def parse_rows(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
        """The output row of each input row, in order, lazily."""
        return map(self.parse_row, rows)


class _RowFailure(Exception):
    """A row's request failed (cached): the row gets this error."""


def _loaded(value: Any, what: str) -> Any:
    """A request field given as JSON text, read; lists as they are."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as err:
            raise ValueError(f"the row's {what} field is not valid JSON: {err}") from None
    return value


def _resolve(spec: str | Path) -> ChatTemplate:
    """A path (a model directory, a Hugging Face config, a ``.jinja`` file) or a bundled template's name."""
    path = Path(spec)
    if path.exists():
        return ChatTemplate.from_pretrained(path)
    return ChatTemplate.load(str(spec))
