"""The public names are a contract: `__all__` lists exactly what the packages export."""

from __future__ import annotations

import subprocess
import sys

import pytest

import autoparser
from autoparser import errors, peg


def test_peg_all_is_sorted_and_complete() -> None:
    assert peg.__all__ == sorted(peg.__all__)
    for name in peg.__all__:
        assert hasattr(peg, name), name


def test_issue_combinator_names_exist() -> None:
    names = [
        "eps", "start", "end", "literal", "any", "chars", "sequence", "choice", "optional", "zero_or_more",
        "one_or_more", "repeat", "peek", "negate", "space", "until", "until_one_of", "rest", "rule", "ref",
        "trigger_rule", "atomic", "tag", "schema", "json", "object", "array", "string", "string_content",
        "number", "bool", "null", "member", "python_value", "to_gbnf",
    ]
    for name in names:
        assert callable(getattr(peg, name)), name


def test_errors_hierarchy() -> None:
    assert issubclass(errors.GrammarError, errors.AutoparserError) and issubclass(errors.GrammarError, ValueError)
    assert issubclass(errors.SchemaError, errors.GrammarError)
    assert issubclass(errors.PatternError, errors.SchemaError)
    assert issubclass(errors.ParseError, errors.AutoparserError)
    assert issubclass(errors.ResponseTemplateError, errors.AutoparserError)
    assert issubclass(errors.ResponseTemplateError, NotImplementedError)


def test_cli_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autoparser", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"autoparser {autoparser.__version__}"


def test_merge_deltas_one_chunk_per_feed() -> None:
    """Merging each feed's deltas into one chunk delta loses nothing: a client ends with the same message."""
    from autoparser import ChatTemplate, merge_deltas
    from autoparser.message import apply_deltas

    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
        for name in ("get", "get_weather")
    ]
    params = ChatTemplate.load("Qwen3.5-4B").apply([{"role": "user", "content": "Hi"}], tools=tools)
    text = (
        "Plan.\n</think>\n\nChecking.\n<tool_call>\n<function=get>\n<parameter=city>\nOslo\n</parameter>\n"
        "</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    for size in (1, 7, 40, len(text)):
        stream = params.stream()
        merged, every = [], []
        for pos in range(0, len(text), size):
            deltas = stream.feed(text[pos : pos + size])
            every.extend(deltas)
            merged.append(merge_deltas(deltas))
        final = stream.finish()
        every.extend(final)
        merged.append(merge_deltas(final))
        for delta in merged:
            indexes = [call.index for call in delta.tool_calls]
            assert indexes == sorted(set(indexes))  # one fragment per call per chunk
        assert apply_deltas(merged) == apply_deltas(every)
        got = apply_deltas(merged)
        assert [c.name for c in got.tool_calls] == ["get", "get_weather"]
        assert (got.reasoning_content, got.content) == ("Plan.", "Checking.")
    assert merge_deltas([]).to_openai() == {}


def test_messages_the_parser_builds_are_the_frozen_dataclasses() -> None:
    """built_message() and built_call() (the slots' own setters, no frozen ``__setattr__``) make the very objects the
    dataclasses' constructors make: same type, fields, equality, hash, immutability, pickling."""
    import dataclasses
    import pickle

    from autoparser import message as m

    call = m.built_call("f", '{"a": 1}', "call_1", True, m.CallStatus.CUT_OFF)
    warning = m.ParseWarning(3, "w")
    built = m.built_message("text", "thought", (call,), (warning,))
    made = m.ChatMessage(
        "assistant", "text", "thought", (m.ToolCall("f", '{"a": 1}', "call_1", True, m.CallStatus.CUT_OFF),), (warning,)
    )
    assert type(built) is m.ChatMessage and type(call) is m.ToolCall
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert (call.id_generated, call.status) == (True, m.CallStatus.CUT_OFF)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.content = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "g"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(built)) == built
    assert dataclasses.replace(built, content="other").content == "other"
