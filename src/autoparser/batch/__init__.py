"""Parse model replies at any volume: files, iterables of rows, Arrow tables (issue 27; docs/batch.md).

>>> from autoparser.batch import parse_rows
>>> rows = [{"text": "<tool_call>\\n<function=f>\\n</function>\\n</tool_call>"}]
>>> [out] = parse_rows("Qwen3-Coder", rows, tools=[{"type": "function", "function": {"name": "f"}}])
>>> out["message"]["tool_calls"][0]["function"], out["call_statuses"]
({'name': 'f', 'arguments': '{}'}, ['complete'])

* :func:`parse_rows` — rows (mappings: a reply under ``text``, an OpenAI completion or chat-completion record,
  optionally the request under ``messages`` / ``tools``) → output rows, lazily;
* :func:`parse_table` — the same over a ``pyarrow.Table``;
* :func:`parse_file` — JSONL or Parquet file → JSONL or Parquet file, with worker processes, a checkpoint to
  resume from and a progress bar: what ``autoparser batch`` runs;
* :class:`BatchParser` — the parser behind them all, one ``apply()`` per distinct request, for pipelines that
  call it themselves (:mod:`autoparser.pipelines` adapts it to Hugging Face ``datasets``, Ray Data and vLLM).

Every output row holds ``message`` (``ChatMessage.to_openai()``), ``warnings``, ``call_statuses`` and ``error``
(None, or why the row could not be parsed: the batch goes on), then the fields named by ``keep``.
"""

from __future__ import annotations

from .api import parse_file, parse_rows, parse_table, parser_for
from .formats import BatchError
from .parser import OUTPUT_FIELDS, BatchParser
from .runner import BatchSummary, run_batch

__all__ = [
    "OUTPUT_FIELDS",
    "BatchError",
    "BatchParser",
    "BatchSummary",
    "parse_file",
    "parse_rows",
    "parse_table",
    "parser_for",
    "run_batch",
]
