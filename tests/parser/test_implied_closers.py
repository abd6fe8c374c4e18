"""Closing markers a template implies by its own convention (analysis/calls/closers.py): a call section opened with
``[X]`` in a template that writes its other pairs ``[Y]…[/Y]`` may be closed by the model with ``[/X]`` (likewise
``<x>`` / ``</x>``, ``<|x|>`` / ``<|/x|>``). The closer is consumed after the calls, never required, and text
elsewhere.

Real templates: Mistral's ``[TOOL_CALLS]`` (Mistral-Nemo's JSON list, Ministral / Devstral / Mistral-Small's
``NAME[ARGS]{…}``); synthetic templates for the angle and token styles (tests/data/templates/closer-*.jinja).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.analysis.calls.closers import implied_end

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.helpers import function_tool

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
WEATHER = function_tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}})
USER = [{"role": "user", "content": "Weather in Paris and Rome?"}]
PARIS = ("get_weather", {"city": "Paris"})
ROME = ("get_weather", {"city": "Rome"})

NEMO_CALL = '{"name": "get_weather", "arguments": {"city": "%s"}, "id": "abcDEF123"}'

# (template, implied closer, one call of Paris as the template writes it, and the same with Rome)
FORMATS = [
    ("mistralai-Mistral-Nemo-Instruct-2407", "[/TOOL_CALLS]", f"[TOOL_CALLS][{NEMO_CALL % 'Paris'}]", ""),
    (
        "mistralai-Ministral-3-14B-Reasoning-2512",
        "[/TOOL_CALLS]",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}',
    ),
    (
        "unsloth-mistral-Devstral-Small-2507",
        "[/TOOL_CALLS]",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}',
    ),
    ("Mistral-Small-3.2-24B-Instruct-2506", "[/TOOL_CALLS]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', ""),
    (
        str(TEMPLATES / "closer-angle.jinja"),
        "</calls>",
        '<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "",
    ),
    (
        str(TEMPLATES / "closer-token.jinja"),
        "<|/call|>",
        '<|call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '<|call|>{"name": "get_weather", "arguments": {"city": "Rome"}}',
    ),
]


def _load(template: str) -> ChatTemplate:
    return ChatTemplate.from_file(template) if template.endswith(".jinja") else ChatTemplate.load(template)


def _params(template: str) -> ChatParams:
    return _load(template).apply(USER, tools=[WEATHER], reasoning_format="auto", parallel_tool_calls=True)


def _id(value: object) -> str:
    return Path(value).stem if isinstance(value, str) and value.endswith(".jinja") else str(value)[:24]


def _assert_streams(params: ChatParams, text: str, markers: list[str]) -> None:
    chunkings = [char_chunks(text), *(random_chunks(text, seed) for seed in range(3))]
    chunkings += marker_cut_chunkings(text, markers)
    failures = [str(f) for pieces in chunkings for f in check_stream(params, pieces)]
    assert not failures, failures[:3]


@pytest.mark.parametrize(("template", "closer", "paris", "rome"), FORMATS, ids=_id)
def test_the_analysis_implies_the_closer(template: str, closer: str, paris: str, rome: str) -> None:
    fmt = _load(template).analysis.tools.format
    assert fmt.implied_end == closer
    assert closer not in _load(template).analysis.preserved_tokens  # not a token of the vocabulary


@pytest.mark.parametrize(("template", "closer", "paris", "rome"), FORMATS, ids=_id)
def test_the_closer_after_the_calls_is_markup(template: str, closer: str, paris: str, rome: str) -> None:
    params = _params(template)
    opener = paris[: paris.index("{") if not paris.startswith("[TOOL_CALLS][") else len("[TOOL_CALLS]")]
    texts = [(f"{paris}{closer}", [PARIS]), (f"Let me check.\n{paris}\n{closer}\n", [PARIS])]
    if rome:
        texts += [(f"{paris}{rome}{closer}", [PARIS, ROME]), (f"{paris}{closer}{rome}{closer}", [PARIS, ROME])]
    for text, calls in texts:
        message, failures = check_parse(params, text, words=["Paris", "Rome", "check"])
        assert message is not None and not failures, failures
        assert (message.warnings, [(c.name, json.loads(c.arguments)) for c in message.tool_calls]) == ((), calls)
        assert message.content == ("Let me check." if text.startswith("Let") else "")
        _assert_streams(params, text, [opener.strip(), closer])
    # Without the closer, as the template writes it: unchanged.
    assert [c.name for c in params.parse(paris).tool_calls] == ["get_weather"]


@pytest.mark.parametrize(("template", "closer", "paris", "rome"), FORMATS, ids=_id)
def test_the_closer_elsewhere_is_text(template: str, closer: str, paris: str, rome: str) -> None:
    params = _params(template)
    text = f"The closer is {closer} in this template."
    message = params.parse(text)
    assert (message.content, message.tool_calls, message.warnings) == (text, (), ())
    _assert_streams(params, text, [closer])


@pytest.mark.parametrize(("template", "closer", "paris", "rome"), FORMATS, ids=_id)
def test_every_truncation_keeps_the_promises(template: str, closer: str, paris: str, rome: str) -> None:
    params = _params(template)
    full = f"{paris}{closer}"
    for cut in range(len(paris), len(full) + 1):
        text = full[:cut]
        message, failures = check_parse(params, text, words=["Paris"])
        assert message is not None and not failures, (text, failures)
        assert [c.name for c in message.tool_calls] == ["get_weather"], text
        assert not check_stream(params, char_chunks(text)), text


@pytest.mark.parametrize(
    ("opener", "source", "closer"),
    [
        ("[TOOL_CALLS]", "[INST]{{ m }}[/INST][TOOL_CALLS]", "[/TOOL_CALLS]"),
        ("<calls>", "<tools></tools><calls>", "</calls>"),
        ("<|call|>\n", "<|tools|>x<|/tools|>", "<|/call|>"),
        ("[TOOL_CALLS]", "<tools></tools>", ""),  # another bracket style says nothing
        ("<|tool_call|>", "<think></think><response></response>", ""),  # Granite 3.3
        ("[TOOL_CALLS]", "[TOOL_CALLS] ... [/TOOL_CALLS]", ""),  # only its own pair: no convention to follow
        ("functools", "[INST][/INST]", ""),  # a word, not a marker
    ],
)
def test_implied_end(opener: str, source: str, closer: str) -> None:
    assert implied_end(opener, source) == closer


def test_templates_that_close_their_calls_imply_nothing() -> None:
    for name in ("Qwen3.5-4B", "ibm-granite-granite-3.3-2B-Instruct", "fireworks-ai-llama-3-firefunction-v2"):
        assert ChatTemplate.load(name).analysis.tools.format.implied_end == "", name
