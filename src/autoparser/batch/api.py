"""The batch as Python calls: over an iterable of rows, an Arrow table, or files (what ``autoparser batch`` runs).

Each takes the template (a :class:`~autoparser.ChatTemplate`, a bundled name, a path) or a ready
:class:`~autoparser.batch.parser.BatchParser`, and the options of ``BatchParser`` as keywords.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..api import ChatTemplate
from .arrow import batch_rows, encode_batch
from .formats import pyarrow
from .parser import OUTPUT_FIELDS, BatchParser
from .runner import BatchSummary, run_batch

__all__ = ["Template", "parse_file", "parse_rows", "parse_table", "parser_for"]

Template = ChatTemplate | str | Path | BatchParser


def parser_for(template: Template, **options: Any) -> BatchParser:
    """``template`` as a :class:`BatchParser` (a ready one as it is, when no options are given)."""
    if isinstance(template, BatchParser):
        if options:
            raise TypeError("options go to BatchParser(...) when a BatchParser is given")
        return template
    return BatchParser(template, **options)


def parse_rows(template: Template, rows: Iterable[Mapping[str, Any]], **options: Any) -> Iterator[dict[str, Any]]:
    """Each row's output row (``message``, ``warnings``, ``call_statuses``, ``error``, the ``keep`` fields), in
    order, lazily: rows are read as they are needed.

    >>> from autoparser.batch import parse_rows
    >>> [out] = parse_rows("Qwen3-Coder", [{"text": "Hello!"}])
    >>> out["message"], out["error"]
    ({'role': 'assistant', 'content': 'Hello!'}, None)
    """
    return parser_for(template, **options).parse_rows(rows)


def parse_table(template: Template, table: Any, *, append: bool = False, chunk_rows: int = 8192, **options: Any) -> Any:
    """A ``pyarrow.Table`` (or ``RecordBatch``) of replies → a ``pyarrow.Table`` of output rows: the columns
    ``message`` (a struct: the OpenAI message, absent fields null), ``warnings``, ``call_statuses``, ``error`` and the
    ``keep`` columns, of their input type. ``append``: the input's columns first, then the output's (a table
    already holding one of those names is refused)."""
    pa, _ = pyarrow()
    parser = parser_for(template, **options)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if append:
        taken = sorted(set(OUTPUT_FIELDS) & set(table.schema.names))
        if taken:
            raise ValueError(f"append: the table already has a column named {', '.join(taken)}")
    outputs = []
    for batch in table.to_batches(max_chunksize=chunk_rows):
        rows = batch_rows(batch, parser)
        outputs.append(encode_batch(parser, rows, [parser.outcome(row) for row in rows], batch))
    if outputs:
        result = pa.Table.from_batches(outputs)
    else:
        from .arrow import empty_schema

        result = empty_schema(parser).empty_table()
    if not append:
        return result
    for name in OUTPUT_FIELDS:
        table = table.append_column(result.schema.field(name), result.column(name))
    return table


def parse_file(
    template: Template,
    input: str | Path,
    output: str | Path,
    *,
    workers: int = 1,
    resume: bool = False,
    chunk_rows: int = 1000,
    input_format: str | None = None,
    output_format: str | None = None,
    progress: bool | None = False,
    flush_seconds: float = 10.0,
    on_warning: Callable[[str], None] | None = None,
    **options: Any,
) -> BatchSummary:
    """``input`` (JSONL or Parquet) parsed into ``output`` (JSONL or Parquet), as ``autoparser batch`` does: see
    :func:`autoparser.batch.runner.run_batch` for the arguments. No progress bar unless ``progress``."""
    return run_batch(
        parser_for(template, **options),
        input,
        output,
        workers=workers,
        resume=resume,
        chunk_rows=chunk_rows,
        input_format=input_format,
        output_format=output_format,
        progress=progress,
        flush_seconds=flush_seconds,
        on_warning=on_warning,
    )
