"""``autoparser.batch`` over rows and Arrow tables: the messages ``ChatParams.parse()`` reads, row by row, from the
shapes rows come in (a text field, OpenAI records, a request of their own), and failures that stay in their row."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.batch import BatchParser, parse_rows, parse_table

from . import cases

pa = pytest.importorskip("pyarrow")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
CALL = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize("template", cases.TEMPLATES)
def test_rows_read_as_parse_reads_them(template: str) -> None:
    """Every case the template renders comes out of the batch as ``parse()`` reads it, and as it was rendered."""
    rows = cases.rows(template)
    assert len(rows) >= 2
    params, expected = cases.params(template), cases.expected(template)
    out = list(parse_rows(cases.parser(template, keep=["id"]), rows))
    assert [o["id"] for o in out] == [r["id"] for r in rows]  # one row per row, in order
    for row, result in zip(rows, out, strict=True):
        assert result["error"] is None
        message = params.parse(row["text"])
        assert cases.canonical(result["message"], row["text"]) == cases.canonical(message.to_openai(), row["text"])
        assert cases.judged(result["message"]) == expected[row["id"]]
        assert result["call_statuses"] == ["complete"] * len(message.tool_calls)
        assert result["warnings"] == [str(w) for w in message.warnings]


def test_openai_records_are_recognised() -> None:
    """Completions, chat completions and the Batch API's lines give their reply without --text-field."""
    chat = {"choices": [{"index": 0, "message": {"role": "assistant", "content": CALL}, "finish_reason": "stop"}]}
    rows: list[dict[str, Any]] = [
        {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": CALL}]},
        {"id": "chatcmpl-1", "object": "chat.completion", **chat},
        {"custom_id": "r1", "response": {"status_code": 200, "body": chat}},
        {"choices": [{"message": {"content": [{"type": "text", "text": CALL}]}}]},  # content as text parts
        {"text": CALL, "choices": [{"text": "not this"}]},  # the text field first
    ]
    out = list(parse_rows("Qwen3-Coder", rows, tools=[WEATHER]))
    for result in out:
        assert result["error"] is None
        assert result["message"]["tool_calls"][0]["function"] == {
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        }
        assert result["call_statuses"] == ["complete"]


def test_text_field_path_and_missing_replies() -> None:
    rows: list[dict[str, Any]] = [
        {"output": {"samples": ["Hello", "other"]}},
        {"output": {"samples": []}},
        {"output": 3},
        {"choices": [{"message": {"content": None, "tool_calls": []}}]},
        {"text": 42},
    ]
    out = list(parse_rows("Qwen3-Coder", rows, text_field="output.samples.0"))
    assert out[0]["message"] == {"role": "assistant", "content": "Hello"} and out[0]["error"] is None
    assert [o["message"] for o in out[1:]] == [None] * 4
    assert (
        out[1]["error"] == out[2]["error"] == "no reply: the row has no 'output.samples.0' field (nor OpenAI choices)"
    )
    assert "choices[0] holds no text" in out[3]["error"]
    [number] = parse_rows("Qwen3-Coder", rows[4:])
    assert number["error"] == "no reply: the 'text' field holds int, not text"


def test_rows_with_their_own_request() -> None:
    """A row's ``messages`` / ``tools`` (lists, or their JSON text) make its request; the others take the batch's.
    Each distinct request is applied once; a request the template cannot take fails its rows only."""
    tmpl = ChatTemplate.load("Qwen3-Coder")
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    rows: list[dict[str, Any]] = [
        {"text": CALL},  # the batch's request: no tools
        {"text": CALL, "tools": [WEATHER]},
        {"text": CALL, "tools": json.dumps([WEATHER])},  # the same request as JSON text
        {"text": CALL, "tools": [TIME]},  # get_weather undeclared here
        {"text": CALL, "messages": asked, "tools": [WEATHER, TIME]},
        {"text": CALL, "messages": [{"content": "no role"}]},
        {"text": CALL, "messages": "[not json"},
        {"text": "Fine.", "tools": [WEATHER]},
    ]
    parser = BatchParser(tmpl, undeclared_tools="content")
    out = list(parser.parse_rows(rows))
    default = [{"role": "user", "content": "Hi"}]
    requests = [
        (default, None),
        (default, [WEATHER]),
        (default, [WEATHER]),
        (default, [TIME]),
        (asked, [WEATHER, TIME]),
    ]
    for (messages, tools), row, result in zip(requests, rows, out, strict=False):
        want = tmpl.apply(messages, tools=tools, undeclared_tools="content").parse(row["text"]).to_openai()
        assert cases.canonical(result["message"], CALL) == cases.canonical(want, CALL)
    assert "tool_calls" not in out[0]["message"] and "tool_calls" not in out[3]["message"]
    assert out[1]["message"]["tool_calls"] and out[4]["message"]["tool_calls"]
    assert out[5]["error"].startswith("RequestError: ") and out[5]["message"] is None
    assert out[6]["error"].startswith("ValueError: the row's messages field is not valid JSON")
    assert out[7]["message"] == {"role": "assistant", "content": "Fine."} and out[7]["error"] is None
    # requests applied: [WEATHER] as a list and as JSON text are two keys; each once, whatever the rows
    assert len(parser._cache) == 6


def test_keep_and_its_clashes() -> None:
    out = list(parse_rows("Qwen3-Coder", [{"id": 7, "meta": {"a": [1]}, "text": "Hi"}, {"x": 1}], keep=["id", "meta"]))
    assert [(o["id"], o["meta"]) for o in out] == [(7, {"a": [1]}), (None, None)]
    assert list(out[0]) == ["message", "warnings", "call_statuses", "error", "id", "meta"]
    with pytest.raises(ValueError, match="error would be overwritten"):
        BatchParser("Qwen3-Coder", keep=["error"])


def test_a_default_request_the_template_refuses_is_raised_before_the_rows() -> None:
    parser = BatchParser("Qwen3-Coder", messages=[{"content": "no role"}])
    with pytest.raises(ValueError, match="role"):
        parser.default_params()


def test_cut_off_and_repaired_calls_have_their_status() -> None:
    cut = CALL[: CALL.index("Paris") + 3]
    out = list(parse_rows("Qwen3-Coder", [{"text": cut}], tools=[WEATHER]))
    assert out[0]["call_statuses"] == ["cut_off"]
    assert json.loads(out[0]["message"]["tool_calls"][0]["function"]["arguments"]) == {"city": "Par"}


def test_the_parser_pickles_small_and_parses_alike() -> None:
    """Worker processes (and datasets, Ray) receive the parser pickled: without its caches, rebuilt there."""
    parser = cases.parser("Qwen3-Coder", keep=["id"])
    rows = cases.rows("Qwen3-Coder")
    before = list(parser.parse_rows(rows))
    copy = pickle.loads(pickle.dumps(parser))
    assert copy._default is None and len(pickle.dumps(parser)) < 20_000
    after = list(copy.parse_rows(rows))
    assert [cases.canonical(o["message"], r["text"]) for o, r in zip(after, rows, strict=True)] == [
        cases.canonical(o["message"], r["text"]) for o, r in zip(before, rows, strict=True)
    ]


@pytest.mark.parametrize("template", ["Qwen3-Coder", "Qwen3.5-4B"])
def test_tables_read_as_rows_do(template: str) -> None:
    """``parse_table`` gives what ``parse_rows`` gives, in typed columns; ``append`` keeps the input's columns."""
    rows = cases.rows(template)
    table = pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]})
    parser = cases.parser(template, keep=["id"])
    out = parse_table(parser, table, chunk_rows=3)
    assert out.schema.names == ["message", "warnings", "call_statuses", "error", "id"]
    assert out.schema.field("id").type == pa.string()
    expected = list(parser.parse_rows(rows))
    for got, want, row in zip(out.to_pylist(), expected, rows, strict=True):
        assert cases.canonical(got["message"], row["text"]) == cases.canonical(want["message"], row["text"])
        assert (got["warnings"], got["call_statuses"], got["error"], got["id"]) == (
            want["warnings"],
            want["call_statuses"],
            None,
            row["id"],
        )
    appended = parse_table(cases.parser(template), table.append_column("n", pa.array(range(len(rows)))), append=True)
    assert appended.schema.names == ["id", "text", "n", "message", "warnings", "call_statuses", "error"]
    with pytest.raises(ValueError, match="already has a column named call_statuses, error, message"):
        parse_table(parser, out, append=True)


def test_table_requests_as_structs_or_json_text() -> None:
    """A ``tools`` column of structs reads as the tools it holds (Arrow's nulls for absent keys dropped); of
    strings, as JSON text."""
    texts = [CALL, CALL, "Hi"]
    tools = [[WEATHER], [WEATHER, TIME], None]
    as_structs = parse_table("Qwen3-Coder", pa.table({"text": texts, "tools": tools}))
    as_text = parse_table(
        "Qwen3-Coder", pa.table({"text": texts, "tools": [json.dumps(t) if t else None for t in tools]})
    )
    tmpl = ChatTemplate.load("Qwen3-Coder")
    hi = [{"role": "user", "content": "Hi"}]
    for out in (as_structs, as_text):
        for text, tool_list, got in zip(texts, tools, out.to_pylist(), strict=True):
            want = tmpl.apply(hi, tools=tool_list).parse(text).to_openai()
            assert cases.canonical(got["message"], CALL) == cases.canonical(want, CALL)
            assert got["error"] is None


def test_an_empty_table() -> None:
    out = parse_table("Qwen3-Coder", pa.table({"text": pa.array([], pa.string())}), keep=["id"])
    assert out.num_rows == 0 and out.schema.names == ["message", "warnings", "call_statuses", "error", "id"]
