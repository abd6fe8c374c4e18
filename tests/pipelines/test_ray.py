"""Ray Data: ``Dataset.map_batches(RayParser, concurrency=2)`` on a local Ray cluster of two CPUs started here, read
as ``ChatParams.parse()`` reads each reply; the parser is built once per worker."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_PIPELINES"):  # .ci/run's pipelines step: absence is a failure, not a skip
    import ray
    import ray.data
else:
    ray = pytest.importorskip("ray", reason=".ci/run tests the pipelines in an environment of their own")
    pytest.importorskip("ray.data")

from autoparser.pipelines.ray import RayParser, parse_ray_dataset

from ..batch import cases
from ..batch.docs import example
from ..support import outputs

TEMPLATE = "Qwen3-Coder"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local cluster for the module (starting Ray takes seconds): two CPUs, no dashboard."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def test_map_batches_with_two_workers(cluster: None) -> None:
    rows = cases.rows(TEMPLATE) * 6
    dataset = ray.data.from_items([{**row, "n": i} for i, row in enumerate(rows)], override_num_blocks=4)
    options = {"tools": outputs.request_tools(TEMPLATE), "parallel_tool_calls": True, "enable_thinking": True}
    parsed = parse_ray_dataset(
        dataset, TEMPLATE, concurrency=2, batch_size=4, messages=outputs.conversation(TEMPLATE), **options
    )
    got = sorted(parsed.take_all(), key=lambda row: row["n"])
    assert [row["n"] for row in got] == list(range(len(rows)))
    params = cases.params(TEMPLATE)
    for row in got:
        want = params.parse(row["text"])
        assert cases.canonical(row["message"], row["text"]) == cases.canonical(want.to_openai(), row["text"])
        assert list(row["call_statuses"]) == [c.status.value for c in want.tool_calls] and row["error"] is None


def test_the_docs_example(cluster: None, capsys: pytest.CaptureFixture[str]) -> None:
    """The page's two ways: parse_ray_dataset (PyArrow batches), and map_batches by hand with NumPy batches."""
    namespace: dict[str, object] = {}
    exec(example("ray"), namespace)
    assert capsys.readouterr().out.splitlines()[0].startswith("{'role': 'assistant', 'content': 'Answer ")
    got = sorted(namespace["parsed"].take_all(), key=lambda row: row["id"])  # type: ignore[attr-defined]
    assert [row["message"]["content"] for row in got] == [f"Answer {i}." for i in range(100)]


def test_the_parser_is_built_with_the_worker_and_takes_pandas() -> None:
    """The constructor builds the parser (once per actor, before any batch); a pandas batch, and ``append=False``:
    the output columns and the kept ones alone."""
    pandas = pytest.importorskip("pandas")
    worker = RayParser(TEMPLATE, keep=["id"], append=False)
    assert worker.parser._default is not None
    table = worker(pandas.DataFrame({"id": [1, 2], "text": ["One.", "Two."], "other": [0, 0]}))
    assert table.schema.names == ["message", "warnings", "call_statuses", "error", "id"]
    assert [(r["id"], r["message"]["content"]) for r in table.to_pylist()] == [(1, "One."), (2, "Two.")]
