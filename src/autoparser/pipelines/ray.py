"""Ray Data: parse a column of replies with ``Dataset.map_batches(RayParser, concurrency=N)``.

>>> from autoparser.pipelines.ray import RayParser
>>> parsed = dataset.map_batches(                                             # doctest: +SKIP
...     RayParser, fn_constructor_kwargs={"template": "Qwen3-Coder", "tools": tools},
...     compute=ray.data.ActorPoolStrategy(size=4), batch_format="pyarrow")  # or concurrency=4 (Ray < 2.51)

Ray constructs the class once per worker (an actor), so the template's analysis and the parser of the request are
built once per worker, in its constructor, and every batch after that costs its rows' ``parse()``. A batch comes in
as a ``pyarrow.Table`` (``batch_format="pyarrow"``, the cheapest) or as pandas or NumPy, and leaves as a
``pyarrow.Table``: its own columns, then ``message`` (a struct: the OpenAI message's fields, absent ones null),
``warnings``, ``call_statuses`` and ``error`` (``append=False``: those alone, with the ``keep`` columns).
"""

from __future__ import annotations

from typing import Any

from ..batch import BatchParser, parse_table, parser_for
from ..batch.formats import pyarrow

__all__ = ["RayParser", "parse_ray_dataset"]


class RayParser:
    """The callable class for ``map_batches``: ``template`` and ``options`` as for
    :class:`~autoparser.batch.BatchParser`; ``append``: keep the batch's columns (default)."""

    def __init__(self, template: Any, *, append: bool = True, **options: Any) -> None:
        self.parser: BatchParser = parser_for(template, **options)
        self.parser.default_params()  # the analysis and the default request's parser: once per worker, here
        self.append = append

    def __call__(self, batch: Any) -> Any:
        pa, _ = pyarrow()
        if not isinstance(batch, pa.Table):
            batch = _as_table(batch)
        return parse_table(self.parser, batch, append=self.append, chunk_rows=max(batch.num_rows, 1))


def _as_table(batch: Any) -> Any:
    """A pandas ``DataFrame`` or a dict of NumPy arrays (Ray's other batch formats) as a ``pyarrow.Table``."""
    pa, _ = pyarrow()
    if hasattr(batch, "to_dict") and hasattr(batch, "columns"):  # pandas
        return pa.Table.from_pandas(batch, preserve_index=False)
    return pa.table({name: pa.array(list(values)) for name, values in batch.items()})


def parse_ray_dataset(
    dataset: Any,
    template: Any,
    *,
    concurrency: int = 1,
    batch_size: int | None = 4096,
    num_cpus: float | None = None,
    **options: Any,
) -> Any:
    """``dataset.map_batches(RayParser, ...)`` on a pool of ``concurrency`` workers (actors of ``num_cpus`` CPUs
    each, Ray's default 1 if None), each with its own parser; ``options`` go to :class:`RayParser`."""
    from ray.data import ActorPoolStrategy

    extra = {} if num_cpus is None else {"num_cpus": num_cpus}
    return dataset.map_batches(
        RayParser,
        fn_constructor_kwargs={"template": template, **options},
        compute=ActorPoolStrategy(size=concurrency),
        batch_size=batch_size,
        batch_format="pyarrow",
        **extra,
    )
