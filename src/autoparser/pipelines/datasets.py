"""Hugging Face ``datasets``: parse a column of replies with ``Dataset.map(batched=True, num_proc=N)``.

>>> from autoparser.pipelines.datasets import parse_dataset
>>> parsed = parse_dataset(dataset, "Qwen3-Coder", tools=tools, num_proc=4)      # doctest: +SKIP
>>> parsed[0]["message"]["tool_calls"][0]["function"]["name"]                   # doctest: +SKIP

:class:`DatasetsParser` is the function ``map`` calls: a batch (a dict of columns) in, the columns ``message``,
``warnings``, ``call_statuses`` and ``error`` out (``map`` adds them to the dataset's own). It pickles small (the
template and the options), so each of ``num_proc`` processes builds the analysis once, and ``datasets`` can hash it
for its cache. ``message`` has fixed fields (``role``, ``content``, the reasoning field, ``tool_calls``: null where
the message has none), so every batch and every process writes the same column type (:meth:`DatasetsParser.features`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..batch import OUTPUT_FIELDS, BatchParser, parser_for
from ..batch.fields import without_nulls

__all__ = ["DatasetsParser", "parse_dataset"]


class DatasetsParser:
    """``Dataset.map(DatasetsParser(template, **options), batched=True)``: ``template`` and ``options`` as for
    :class:`~autoparser.batch.BatchParser` (``keep`` aside: ``map`` keeps the dataset's columns itself)."""

    def __init__(self, template: Any, **options: Any) -> None:
        if options.get("keep"):
            raise ValueError("keep: Dataset.map keeps the dataset's columns (remove_columns drops them)")
        self.parser: BatchParser = parser_for(template, **options)

    def __call__(self, batch: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        parser = self.parser
        names = [n for n in (parser.text_field.split(".", 1)[0], "choices", "response") if n in batch]
        requests = [n for n in (parser.messages_field, parser.tools_field) if n and n in batch]
        size = len(next(iter(batch.values()))) if batch else 0
        columns = {n: batch[n] for n in names}
        structs = {n: batch[n] for n in requests}
        out: dict[str, list[Any]] = {name: [] for name in OUTPUT_FIELDS}
        empty = _empty_message(parser.reasoning_field)
        for i in range(size):
            row = {n: c[i] for n, c in columns.items()}
            for n, c in structs.items():
                row[n] = without_nulls(c[i])
            message, warnings, statuses, error = parser.outcome(row)
            out["message"].append(None if message is None else {**empty, **message})
            out["warnings"].append(warnings)
            out["call_statuses"].append(statuses)
            out["error"].append(error)
        return out

    def features(self, base: Any = None) -> Any:
        """The ``datasets.Features`` of the dataset after ``map``: ``base`` (the dataset's ``features``) and the
        output columns; ``map(..., features=...)`` then writes every batch with these types."""
        from datasets import Features, List, Value

        text = Value("string")
        call = {"type": text, "id": text, "function": {"name": text, "arguments": text}}
        message = {"role": text, "content": text, self.parser.reasoning_field: text, "tool_calls": List(call)}
        added = {"message": message, "warnings": List(text), "call_statuses": List(text), "error": text}
        return Features({**(base or {}), **added})


def _empty_message(reasoning_field: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, reasoning_field: None, "tool_calls": None}


def parse_dataset(
    dataset: Any, template: Any, *, num_proc: int | None = None, batch_size: int = 1000, **options: Any
) -> Any:
    """``dataset`` with the output columns added: ``dataset.map(DatasetsParser(template, **options),
    batched=True, num_proc=num_proc, features=...)``."""
    function = DatasetsParser(template, **options)
    return dataset.map(
        function,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        features=function.features(dataset.features),
        desc="autoparser",
    )
