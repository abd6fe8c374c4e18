"""The conformance corpus (tests/data/llamacpp-cases.jsonl) and its judging rules (see the corpus README)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoparser import ChatMessage, ChatParams, ChatTemplate

DATA = Path(__file__).parent.parent / "data"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in (DATA / "llamacpp-cases.jsonl").read_text(encoding="utf-8").splitlines() if line
]
_ASCII_SPACE = " \t\n\v\f\r"


def apply_case(case: dict[str, Any]) -> tuple[ChatTemplate, ChatParams]:
    params = case["params"]
    tmpl = ChatTemplate.load(case["template"])
    chat = tmpl.apply(
        params["messages"],
        tools=params["tools"] or None,
        tool_choice=params["tool_choice"],
        parallel_tool_calls=params["parallel_tool_calls"],
        reasoning_format=params["reasoning_format"],
        enable_thinking=params["enable_thinking"],
        json_schema=params["json_schema"],
    )
    return tmpl, chat


def canonical_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return ""


@dataclass(frozen=True)
class Judged:
    content: str
    reasoning: str
    calls: tuple[tuple[str, str, str], ...]


def judged(message: ChatMessage, *, stream_ids: bool = False, output: str = "") -> Judged:
    """The message as the corpus judges it. Ids generated for calls the model wrote without one are judged as ""
    (what the corpus expects there) once they are checked to be non-empty and unique. ``stream_ids``: the message
    was accumulated from stream deltas, which do not say which ids were generated; an id that is not in the
    model's ``output`` was."""
    ids = [call.id for call in message.tool_calls]
    assert all(ids) and len(set(ids)) == len(ids), f"call ids must be non-empty and unique: {ids}"
    calls = []
    for call in message.tool_calls:
        call_id = call.id
        if call.id_generated or (stream_ids and call_id not in output):
            call_id = ""
        calls.append((call.name, canonical_json(call.arguments), call_id))
    return Judged(message.content.strip(_ASCII_SPACE), message.reasoning_content.strip(_ASCII_SPACE), tuple(calls))


def expected(case: dict[str, Any]) -> Judged:
    exp = case["expect"]
    calls = tuple((c["name"], canonical_json(c["arguments"]), c.get("id", "")) for c in exp["tool_calls"])
    return Judged(exp["content"].strip(_ASCII_SPACE), exp["reasoning_content"].strip(_ASCII_SPACE), calls)
