"""Hugging Face ``datasets``: ``Dataset.map(DatasetsParser(...), batched=True, num_proc=2)`` over a real dataset,
read as ``ChatParams.parse()`` reads each reply, in order, with failures in their rows."""

from __future__ import annotations

import json
import os

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_PIPELINES"):  # .ci/run's pipelines step: absence is a failure, not a skip
    import datasets
else:
    datasets = pytest.importorskip("datasets", reason=".ci/run tests the pipelines in an environment of their own")

from autoparser.pipelines.datasets import DatasetsParser, parse_dataset

from ..batch import cases
from ..batch.docs import example
from ..support import outputs

TEMPLATE = "Qwen3-Coder"


def _dataset() -> datasets.Dataset:
    rows = cases.rows(TEMPLATE) * 4 + [{"id": "empty", "text": None}]
    return datasets.Dataset.from_list([{**row, "n": i} for i, row in enumerate(rows)])


def test_map_with_two_processes() -> None:
    dataset = _dataset()
    options = {"tools": outputs.request_tools(TEMPLATE), "parallel_tool_calls": True, "enable_thinking": True}
    parsed = parse_dataset(
        dataset, TEMPLATE, num_proc=2, batch_size=3, messages=outputs.conversation(TEMPLATE), **options
    )
    assert parsed.column_names == ["id", "text", "n", "message", "warnings", "call_statuses", "error"]
    assert parsed["n"] == list(range(len(dataset)))  # every row, in order
    params = cases.params(TEMPLATE)
    for row in parsed:
        if row["text"] is None:
            assert row["message"] is None and row["error"].startswith("no reply")
            continue
        want = params.parse(row["text"])
        assert cases.canonical(row["message"], row["text"]) == cases.canonical(want.to_openai(), row["text"])
        assert row["call_statuses"] == [c.status.value for c in want.tool_calls] and row["error"] is None


def test_requests_per_row_and_a_map_of_ones_own() -> None:
    """A ``tools`` column (JSON text) makes each row's request; the function works in ``map`` as it is."""
    weather = [t for t in outputs.request_tools(TEMPLATE) or [] if t["function"]["name"] == "get_weather"]
    call = next(row["text"] for row in cases.rows(TEMPLATE) if "get_weather" in row["text"])
    dataset = datasets.Dataset.from_dict({"text": [call, call], "tools": [json.dumps(weather), "[]"]})
    function = DatasetsParser(TEMPLATE, undeclared_tools="content")
    parsed = dataset.map(function, batched=True, features=function.features(dataset.features))
    with_tool, without = parsed["message"]
    assert with_tool["tool_calls"][0]["function"]["name"] == "get_weather"
    assert without["tool_calls"] is None and "get_weather" in without["content"]
    with pytest.raises(ValueError, match="keep"):
        DatasetsParser(TEMPLATE, keep=["id"])


def test_the_docs_example(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    exec(example("datasets"), namespace)
    assert capsys.readouterr().out.splitlines()[0] == (
        "{'role': 'assistant', 'content': 'Answer 0.', 'reasoning_content': None, 'tool_calls': None}"
    )
    parsed = namespace["parsed"]
    assert parsed["message"][99]["content"] == "Answer 99." and parsed.column_names[-1] == "error"  # type: ignore[index]
