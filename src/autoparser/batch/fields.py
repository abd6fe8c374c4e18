"""What a batch row holds: the model's reply, and optionally the request it answers.

A row is a mapping (a JSON object of a JSONL line, a row of an Arrow table). The reply is read from one field
(``text`` by default, or a dotted path such as ``output.text`` or ``choices.0.text``); when the row has no such field,
the OpenAI record shapes are recognised, so a file of API replies parses as it is:

* a completion (``/v1/completions``): ``choices[0].text``;
* a chat completion (``/v1/chat/completions``, from an engine serving without a parser): ``choices[0].message.content``;
* either one inside an OpenAI Batch API output line: ``response.body.choices[0]...``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MissingText", "text_reader", "without_nulls"]

TextReader = Callable[[Mapping[str, Any]], str]


class MissingText(LookupError):
    """The row holds no reply where the options say (nor an OpenAI record): the row fails, the batch goes on."""


def text_reader(field: str = "text") -> TextReader:
    """A function reading the reply of a row from ``field`` (a name, or a dotted path whose numeric steps index
    lists), falling back on the OpenAI record shapes. It raises :class:`MissingText` for a row without a reply."""
    steps = tuple(int(step) if step.isdigit() else step for step in field.split("."))
    if len(steps) == 1:
        name = field

        def read(row: Mapping[str, Any]) -> str:
            text = row.get(name)
            if text.__class__ is str:  # the fast path: a plain str in the named field
                return text  # type: ignore[return-value]
            return _checked(text, field) if text is not None else _openai_text(row, field)

        return read

    def read_path(row: Mapping[str, Any]) -> str:
        value: Any = row
        for step in steps:
            value = _step(value, step)
            if value is None:
                return _openai_text(row, field)
        return _checked(value, field)

    return read_path


def _step(value: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return value[step] if isinstance(value, list | tuple) and -len(value) <= step < len(value) else None
    return value.get(step) if isinstance(value, Mapping) else None


def _checked(text: Any, field: str) -> str:
    """The reply as a str: a str, or the text of a list of OpenAI content parts."""
    if isinstance(text, str):
        return text
    if isinstance(text, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in text):
        return "".join(str(p.get("text", "")) for p in text)
    raise MissingText(f"the {field!r} field holds {type(text).__name__}, not text")


def _openai_text(row: Mapping[str, Any], field: str) -> str:
    """``choices[0].text`` or ``choices[0].message.content``, of the row or of its Batch API ``response.body``."""
    choices = row.get("choices")
    if choices is None:
        body = _step(_step(row, "response"), "body")
        choices = _step(body, "choices")
    choice = _step(choices, 0)
    if isinstance(choice, Mapping):
        text = choice.get("text")
        if text is None:
            text = _step(choice.get("message"), "content")
        if text is not None:
            return _checked(text, "choices[0]")
        raise MissingText("the OpenAI record's choices[0] holds no text (no 'text', no 'message.content')")
    raise MissingText(f"the row has no {field!r} field (nor OpenAI choices)")


def without_nulls(value: Any) -> Any:
    """A request field read from Arrow structs (a Parquet column, a ``datasets`` or Ray batch) without the null
    fields Arrow gives every struct: Arrow cannot tell an absent key from a null one, and templates test
    ``'tool_calls' in message``. JSON text and other values are returned as they are."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_nulls(v) for v in value]
    return value
