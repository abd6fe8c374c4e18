"""Arrow and Parquet: record batches in, record batches out, Parquet files written in parts that survive a kill.

Reading takes only the columns a batch needs (the reply's, the request's, the kept ones), in record batches of a
chunk's rows. Each batch becomes rows (:func:`batch_rows`), and their outcomes a record batch of fixed types
(:func:`encode_batch`): ``message`` is a struct of the OpenAI message's fields (absent ones null), ``warnings`` and
``call_statuses`` lists of strings, ``error`` a string; kept columns keep their Arrow type.

A Parquet file is readable only once its footer is written, so a run writes its output as numbered part files in
``OUTPUT.parts/`` (each written whole, then renamed into place) and joins them into ``OUTPUT`` at the end; a resumed
run keeps every part already there (:class:`ParquetParts`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .fields import without_nulls
from .formats import BatchError, pyarrow
from .parser import BatchParser, Outcome

__all__ = [
    "ParquetParts",
    "ParquetReader",
    "batch_rows",
    "empty_schema",
    "encode_batch",
    "needed_columns",
    "output_schema",
]

_TEXT_FALLBACKS = ("choices", "response")  # where OpenAI records keep the reply (batch.fields)


def output_schema(reasoning_field: str = "reasoning_content") -> Any:
    """The Arrow schema of the four output columns (kept columns follow them, with their own types)."""
    pa, _ = pyarrow()
    string = pa.string()
    function = pa.struct([("name", string), ("arguments", string)])
    call = pa.struct([("type", string), ("id", string), ("function", function)])
    message = pa.struct(
        [("role", string), ("content", string), (reasoning_field, string), ("tool_calls", pa.list_(call))]
    )
    return pa.schema(
        [
            ("message", message),
            ("warnings", pa.list_(string)),
            ("call_statuses", pa.list_(string)),
            ("error", string),
        ]
    )


def needed_columns(names: Sequence[str], parser: BatchParser) -> list[str]:
    """The columns of a table with ``names`` that ``parser`` reads: the reply's (or the OpenAI record's), the
    request's and the kept ones, in the table's order."""
    wanted = {parser.text_field.split(".", 1)[0], *_TEXT_FALLBACKS, *parser.keep}
    wanted.update(name for name in (parser.messages_field, parser.tools_field) if name)
    return [name for name in names if name in wanted]


def batch_rows(batch: Any, parser: BatchParser) -> list[dict[str, Any]]:
    """The rows of a record batch (or table) as dicts of the columns ``parser`` reads. A request column of
    structs (not JSON text) comes back with the null fields Arrow gives every struct dropped: Arrow cannot tell
    an absent key from a null one, and templates test ``'tool_calls' in message``."""
    pa, _ = pyarrow()
    columns = needed_columns(batch.schema.names, parser)
    rows: list[dict[str, Any]] = batch.select(columns).to_pylist()
    for name in (parser.messages_field, parser.tools_field):
        if name and name in columns and not pa.types.is_string(batch.schema.field(name).type):
            for row in rows:
                row[name] = without_nulls(row[name])
    return rows


def encode_batch(parser: BatchParser, rows: Sequence[Any], outcomes: Sequence[Outcome], source: Any = None) -> Any:
    """The output record batch of a chunk: the four output columns, then the kept ones (taken as they are from
    ``source``, the input record batch, when there is one; else built from the rows' values)."""
    pa, _ = pyarrow()
    schema = output_schema(parser.reasoning_field)
    messages, warnings, statuses, errors = zip(*outcomes, strict=True) if outcomes else ((), (), (), ())
    arrays = [
        pa.array(messages, type=schema.field("message").type),
        pa.array(warnings, type=schema.field("warnings").type),
        pa.array(statuses, type=schema.field("call_statuses").type),
        pa.array(errors, type=pa.string()),
    ]
    names = list(schema.names)
    for name in parser.keep:
        if source is not None and name in source.schema.names:
            arrays.append(source.column(name))
        else:
            arrays.append(_column([row.get(name) if row.__class__ is dict else None for row in rows]))
        names.append(name)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _column(values: list[Any]) -> Any:
    """A column of a JSONL input's kept values, typed as Arrow infers them; values of mixed kinds (a number here,
    a string there) as text: strings as they are, other values as their JSON."""
    pa, _ = pyarrow()
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.array([_text(v) for v in values], type=pa.string())


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _unified(tables: list[Any]) -> tuple[Any, list[Any]]:
    """One schema for the parts, and the parts cast to it: Arrow's promotions (null to any type, int to float),
    and a kept column whose parts disagree otherwise (numbers in one, strings in another) as text."""
    pa, _ = pyarrow()
    try:
        schema = pa.unify_schemas([t.schema for t in tables], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
        names = list(dict.fromkeys(name for t in tables for name in t.schema.names))
        fields = []
        for name in names:
            kinds = [t.schema.field(name) for t in tables if name in t.schema.names]
            try:
                fields.append(pa.unify_schemas([pa.schema([f]) for f in kinds], promote_options="permissive")[0])
            except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
                fields.append(pa.field(name, pa.string()))
        schema = pa.schema(fields)
        tables = [_as_text(t, schema) for t in tables]
    return schema, [t.cast(schema) for t in tables]


def _as_text(table: Any, schema: Any) -> Any:
    """``table`` with the columns ``schema`` makes text, which it holds of another type, written as text."""
    pa, _ = pyarrow()
    for index, name in enumerate(table.schema.names):
        if schema.field(name).type == pa.string() and table.schema.field(name).type != pa.string():
            column = pa.array([_text(v) for v in table.column(name).to_pylist()], type=pa.string())
            table = table.set_column(index, name, column)
    return table


def empty_schema(parser: BatchParser) -> Any:
    """The output's schema before any row is seen: the four output columns, the kept ones of no type yet."""
    pa, _ = pyarrow()
    schema = output_schema(parser.reasoning_field)
    for name in parser.keep:
        schema = schema.append(pa.field(name, pa.null()))
    return schema


class ParquetReader:
    """A Parquet file's rows as record batches of ``chunk_rows`` rows (only the columns a batch reads), after
    skipping ``skip`` rows; each batch comes with the count of rows read through it."""

    def __init__(self, path: str | Path, parser: BatchParser, chunk_rows: int, skip: int = 0) -> None:
        _, pq = pyarrow()
        self.file = pq.ParquetFile(path)
        self.columns = needed_columns(self.file.schema_arrow.names, parser)
        self.chunk_rows = max(chunk_rows, 1)
        self.skip = skip

    @property
    def rows(self) -> int:
        return int(self.file.metadata.num_rows)

    def __iter__(self) -> Iterator[tuple[Any, int]]:
        metadata = self.file.metadata
        groups, first = [], 0  # the row groups from the one holding row `skip` on, and that group's first row
        for index in range(metadata.num_row_groups):
            size = metadata.row_group(index).num_rows
            if first + size <= self.skip and not groups:
                first += size
                continue
            groups.append(index)
        position, drop = first, self.skip - first
        if not groups:
            return
        for batch in self.file.iter_batches(batch_size=self.chunk_rows, row_groups=groups, columns=self.columns):
            if drop:
                cut = min(drop, batch.num_rows)
                batch, drop, position = batch.slice(cut), drop - cut, position + cut
                if not batch.num_rows:
                    continue
            position += batch.num_rows
            yield batch, position


class ParquetParts:
    """Parquet output written as parts: batches gather until ``flush_rows`` rows or ``flush_seconds`` have passed,
    then go to ``OUTPUT.parts/part-NNNNNN.parquet`` (written to a temporary name, then renamed: a part there is
    whole). :meth:`finish` joins the parts into ``OUTPUT`` (their schemas unified: a kept column all null in one
    part takes its type from the others) and removes the folder."""

    def __init__(self, output: str | Path, schema: Any, flush_rows: int = 65536, flush_seconds: float = 10.0) -> None:
        self.output = Path(output)
        self.schema = schema  # the output's columns, for an output of no rows
        self.folder = self.output.with_name(self.output.name + ".parts")
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.parts = 0
        self._pending: list[Any] = []
        self._pending_rows = 0
        self._since = time.monotonic()

    def start(self) -> None:
        """A fresh output: no parts."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    def recover(self, parts: int) -> tuple[int, int]:
        """Resume after ``parts`` checkpointed parts: keep the whole parts written since (a kill between a part's
        rename and the checkpoint), drop unfinished ones; the rows and failed rows of those kept beyond ``parts``."""
        _, pq = pyarrow()
        self.folder.mkdir(parents=True, exist_ok=True)
        for partial in self.folder.glob("*.tmp"):
            partial.unlink()
        found = sorted(self.folder.glob("part-*.parquet"))
        if len(found) < parts or [p.name for p in found] != [_part_name(i) for i in range(len(found))]:
            raise BatchError(f"{self.folder}: the parts do not match the checkpoint ({parts} expected)")
        rows = failed = 0
        for path in found[parts:]:
            errors = pq.read_table(path, columns=["error"]).column("error")
            rows += len(errors)
            failed += len(errors) - errors.null_count
        self.parts = len(found)
        return rows, failed

    def write(self, batch: Any) -> bool:
        """Add a chunk's batch; True when that wrote a part (the rows so far are in parts)."""
        if batch.num_rows:
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
        due = time.monotonic() - self._since >= self.flush_seconds
        if self._pending_rows >= self.flush_rows or (due and self._pending):
            return self.flush()
        return False

    def flush(self) -> bool:
        """Write the gathered batches as the next part; False when there were none."""
        self._since = time.monotonic()
        if not self._pending:
            return False
        pa, pq = pyarrow()
        _, tables = _unified([pa.Table.from_batches([b]) for b in self._pending])
        table = pa.concat_tables(tables)
        path = self.folder / _part_name(self.parts)
        temporary = path.with_name(path.name + ".tmp")
        pq.write_table(table, temporary)
        temporary.replace(path)
        self.parts += 1
        self._pending, self._pending_rows = [], 0
        return True

    def state(self) -> Mapping[str, Any]:
        return {"parts": self.parts}

    def finish(self) -> None:
        """The parts joined into the output file (through a temporary name), and the parts folder removed. The
        parts are read twice (their schemas, then their rows, one at a time), never all at once."""
        self.flush()
        _, pq = pyarrow()
        paths = [self.folder / _part_name(i) for i in range(self.parts)]
        temporary = self.output.with_name(self.output.name + ".tmp")
        if not paths:
            pq.write_table(self.schema.empty_table(), temporary)  # no rows: the columns alone
        else:
            empties = [pq.read_schema(p).empty_table() for p in paths]
            schema, _ = _unified(empties)
            with pq.ParquetWriter(temporary, schema) as writer:
                for path in paths:
                    writer.write_table(_unified([pq.read_table(path), schema.empty_table()])[1][0])
        temporary.replace(self.output)
        shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        """Nothing to close between writes (each part is written whole)."""


def _part_name(index: int) -> str:
    return f"part-{index:06d}.parquet"
