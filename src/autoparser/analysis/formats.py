"""Output formats that need a dedicated parser: recognised from distinctive strings in the template source.

The generic analysis describes outputs built from markers around reasoning, content, names and arguments.
A few model families write something else (GPT-OSS's channel headers, Functionary's ``>>>recipient`` lines,
LFM2's Python-call syntax, ...); for those the analysis reports the format's name so the parser generator can
use a dedicated parser. First match wins, as in the reference. See docs/formats.md for the list and which
families the generic analysis covers instead.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEDICATED_FORMATS", "GENERIC", "detect_format"]

GENERIC = "generic"


def _all(*needles: str) -> Callable[[str], bool]:
    return lambda source: all(n in source for n in needles)


DEDICATED_FORMATS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("gpt-oss", _all("<|channel|>")),
    ("functionary-v3.2", _all(">>>all", ">>>${recipient}")),
    ("kimi-k2", _all("<|tool_calls_section_begin|>", "<|tool_call_begin|>")),
    ("mirothinker", _all("</use_mcp_tool>", "</server_name>")),
    ("lfm2", _all("<|tool_list_start|>", "<|tool_list_end|>")),
    ("lfm2.5", lambda s: "List of tools: [" in s and "<|tool_list_start|>" not in s),
    ("minimax-m3", _all("]<]minimax[>[", "<tool_call>", "<invoke name=")),
    ("deepseek-dsml", lambda s: "dsml_token" in s and "DSML" in s and ("function_calls" in s or "tool_calls" in s)),
    ("gemma4", _all("'<|tool_call>call:'")),
)
"""Formats whose output the generic markers cannot describe. The reference also has dedicated handlers for
Ministral/Devstral, Cohere2 MoE and GigaChat3; the generic analysis covers those (docs/formats.md)."""


def detect_format(source: str) -> str:
    """The dedicated format name for a template source, or ``"generic"``."""
    return next((name for name, matches in DEDICATED_FORMATS if matches(source)), GENERIC)
