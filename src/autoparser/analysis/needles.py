"""The probe data analysis renders: needle strings that cannot occur in a template, dummy tools and calls.

Every needle is distinctive enough that finding it in a render pinpoints where the template put that input,
and the two function names, argument names and values differ in their first characters so character-level
diffs split exactly at them.
"""

from __future__ import annotations

from typing import Any

FUN_FIRST = "FFF_FIRST_FUN_F"
FUN_SECOND = "SSS_SECOND_FUN_S"
ARG_FIRST = "AA_ARG_FST_AA"
ARG_SECOND = "BB_ARG_SND_BB"
USER_MSG = "U_USER_MSG Hello END_U"
ASSISTANT_MSG = "A_ASST_MSG I can help END_A"
THINKING = "REASON_PART I am thinking END_R"
CALL_ID_FIRST = "call00001"
CALL_ID_SECOND = "call00002"
CALL_ID_ALT = "call99999"


def _parameters() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            ARG_FIRST: {"type": "string", "description": "First argument"},
            ARG_SECOND: {"type": "string", "description": "Second argument"},
        },
        "required": [],
    }


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {"name": FUN_FIRST, "description": "Test function foo", "parameters": _parameters()},
    },
    {
        "type": "function",
        "function": {"name": FUN_SECOND, "description": "Test function bar", "parameters": _parameters()},
    },
]

USER: dict[str, Any] = {"role": "user", "content": USER_MSG}


def tool_call(name: str, arguments: dict[str, str], call_id: str = CALL_ID_FIRST) -> dict[str, Any]:
    """A tool call with object arguments (the renderer converts them when a template wants strings)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


BOTH_ARGS = {ARG_FIRST: "XXXX", ARG_SECOND: "YYYY"}
ZERO_ARGS_CALL = tool_call(FUN_FIRST, {})
ONE_ARG_CALL = tool_call(FUN_FIRST, {ARG_FIRST: "XXXX"})
ONE_ARG_OTHER_VALUE_CALL = tool_call(FUN_FIRST, {ARG_FIRST: "YYYY"})
OTHER_ARG_CALL = tool_call(FUN_FIRST, {ARG_SECOND: "YYYY"})
FIRST_CALL = tool_call(FUN_FIRST, BOTH_ARGS)
SECOND_CALL = tool_call(FUN_SECOND, BOTH_ARGS, CALL_ID_SECOND)
FIRST_CALL_ALT_ID = tool_call(FUN_FIRST, BOTH_ARGS, CALL_ID_ALT)


def assistant(content: Any = ASSISTANT_MSG, **fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **fields}


def with_calls(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    """``[user, assistant with these tool calls and empty content]``."""
    return [USER, assistant("", tool_calls=list(calls))]
