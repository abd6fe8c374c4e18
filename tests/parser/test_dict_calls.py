"""Calls whose arguments are a dict in the template's own syntax (TAG_WITH_DICT, Gemma 4's family): learned from any
template's rendering of calls — the delimiter token around strings, the separators, the call's markers and name
prefix, the spelling of booleans and null — so a new model with another token works with no code.

Templates: Gemma 4 (both bundled templates: their generic analysis, and their calls through the generic parser must
read as the dedicated format reads them) and two synthetic templates under other tokens (tests/data/templates/):
``dict-tokens.jinja`` (``<|call_start|>invoke:NAME{k:<str>v</str>,…}<|call_end|>``, Python booleans) and
``dict-section.jinja`` (a ``<tool_calls>`` section, ``func NAME{k=«v»;…}`` one per line).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.analysis.model import DictValues, ToolFormatMode
from autoparser.parser.assemble import build_generic_parser
from autoparser.parser.calls.tools_dict import GEMMA, args_to_json
from autoparser.peg import json_scan
from autoparser.peg.json_scan import DictSyntax, dict_flavor, scan_json
from autoparser.reading.streaming import parse_output

from ..robustness.promises import char_chunks, check_parse, check_stream, random_chunks
from ..support.grammar_check import full_verdicts, verdicts
from ..support.helpers import WEATHER_TOOL
from ..support.outputs import FULL_ARGS, TOOLS, outputs
from ..support.outputs import chat as output_chat

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
TOKENS = str(TEMPLATES / "dict-tokens.jinja")
SECTION = str(TEMPLATES / "dict-section.jinja")
GEMMAS = ["google-gemma-4-31B-it", "google-gemma-4-31B-it-interleaved"]
USER = [{"role": "user", "content": "What is the weather?"}]
GEMMA_VALUES = DictValues('<|"|>', '<|"|>', ":", ",", "true", "None")
TOKENS_VALUES = DictValues("<str>", "</str>", ":", ",", "True", "None")


def _load(template: str) -> ChatTemplate:
    return ChatTemplate.from_file(template) if template.endswith(".jinja") else ChatTemplate.load(template)


def _params(template: str, tools: list[dict[str, Any]] = TOOLS, **kwargs: Any) -> ChatParams:
    return _load(template).apply(USER, tools=tools, parallel_tool_calls=True, **kwargs)


def _calls(params: ChatParams, text: str) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in params.parse(text).tool_calls]


def _rendered_call(template: str, arguments: dict[str, Any], name: str = "get_weather") -> str:
    """The assistant turn the template renders for one call (the model's part: after the generation prompt)."""
    tmpl = _load(template)
    call = {"id": "call00001", "type": "function", "function": {"name": name, "arguments": arguments}}
    prompt = tmpl.render(USER, TOOLS, add_generation_prompt=True)
    full = tmpl.render([*USER, {"role": "assistant", "content": "", "tool_calls": [call]}], TOOLS)
    assert full.startswith(prompt)
    return full[len(prompt) :]


# --- the analysis ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "markers", "name_prefix", "values"),
    [
        (GEMMAS[0], ("", "", "<|tool_call>", "<tool_call|>"), "call:", GEMMA_VALUES),
        (GEMMAS[1], ("", "", "<|tool_call>", "<tool_call|>"), "call:", GEMMA_VALUES),
        (TOKENS, ("", "", "<|call_start|>", "<|call_end|>"), "invoke:", TOKENS_VALUES),
        (SECTION, ("<tool_calls>", "</tool_calls>", "", ""), "func ", DictValues("«", "»", "=", ";", "true", "null")),
    ],
    ids=["gemma4", "gemma4-interleaved", "tokens", "section"],
)
def test_the_analysis_learns_the_dict_syntax(
    template: str, markers: tuple[str, ...], name_prefix: str, values: DictValues
) -> None:
    analysis = _load(template).analysis
    tools, fmt = analysis.tools, analysis.tools.format
    assert fmt.mode is ToolFormatMode.TAG_WITH_DICT
    assert (fmt.section_start.strip(), fmt.section_end, fmt.per_call_start, fmt.per_call_end) == markers
    assert tools.function.name_prefix == name_prefix
    assert tools.dict_values == values
    # The delimiter tokens are preserved tokens; a name prefix that is text is not.
    assert {values.quote_open, values.quote_close} <= set(analysis.preserved_tokens)
    assert name_prefix.strip() not in analysis.preserved_tokens


def test_gemma4_keeps_its_dedicated_format() -> None:
    for name in GEMMAS:
        assert _load(name).analysis.format == "gemma4"


# --- parsing and streaming the synthetic templates -------------------------------------------------------------------


@pytest.mark.parametrize("template", [TOKENS, SECTION], ids=["tokens", "section"])
def test_every_json_type_round_trips(template: str) -> None:
    """The template's own rendering of a call with every JSON type (a hostile string, nested objects, a list with
    null and booleans, padded text) parses back to the arguments, parsed and streamed."""
    params = _params(template)
    text = _rendered_call(template, FULL_ARGS).rstrip()
    for marker in _load(template).analysis.end_of_turn:
        text = text.removesuffix(marker.strip())  # the end of the turn is not the model's call
    message, failures = check_parse(params, text, words=["Pa", "PAR", "rain", "deep"])
    assert message is not None and not failures, failures
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get_weather", FULL_ARGS)]
    assert (message.content, message.warnings) == ("", ())
    for pieces in (char_chunks(text), random_chunks(text, 1), random_chunks(text, 2)):
        assert not check_stream(params, pieces)


TOKENS_CALLS = (
    "<|call_start|>invoke:get{city:<str>Oslo</str>}<|call_end|><|call_start|>invoke:ping{}<|call_end|>",
    [("get", {"city": "Oslo"}), ("ping", {})],
)
SECTION_CALLS = (
    "<tool_calls>\nfunc get{city=«Oslo»}\nfunc get_weather{days=2;metric=true;tags=[«a»;«b»]}\n</tool_calls>",
    [("get", {"city": "Oslo"}), ("get_weather", {"days": 2, "metric": True, "tags": ["a", "b"]})],
)
CASES = [(TOKENS, TOKENS_CALLS), (SECTION, SECTION_CALLS)]


@pytest.mark.parametrize(("template", "case"), CASES, ids=["tokens", "section"])
def test_parallel_calls_after_text(template: str, case: tuple[str, list[tuple[str, Any]]]) -> None:
    params = _params(template)
    text = "Let me check.\n" + case[0]
    message, failures = check_parse(params, text, words=["check", "Oslo"])
    assert message is not None and not failures, failures
    assert (message.content, message.warnings) == ("Let me check.", ())
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == case[1]
    for pieces in (char_chunks(text), random_chunks(text, 3)):
        assert not check_stream(params, pieces)


@pytest.mark.parametrize(("template", "case"), CASES, ids=["tokens", "section"])
def test_every_truncation_keeps_the_promises(template: str, case: tuple[str, list[tuple[str, Any]]]) -> None:
    params = _params(template)
    text = case[0]
    for cut in range(1, len(text) + 1):
        prefix = text[:cut]
        message, failures = check_parse(params, prefix, words=["Oslo"])
        assert message is not None and not failures, (prefix, failures)
        for call in message.tool_calls:  # a call cut off keeps its text as written, never invented JSON
            assert call.name in ("get", "get_weather", "ping")
        assert not check_stream(params, char_chunks(prefix)), prefix


def test_python_spellings_and_json_strings_read_as_json() -> None:
    params = _params(TOKENS)
    text = '<|call_start|>invoke:get_weather{metric:False,note:null,city:"Pa\\"ris",tags:[],options:{}}<|call_end|>'
    assert _calls(params, text) == [
        ("get_weather", {"metric": False, "note": None, "city": 'Pa"ris', "tags": [], "options": {}})
    ]


def test_undeclared_tool_and_broken_dict() -> None:
    params = _params(TOKENS)
    message = params.parse("<|call_start|>invoke:lookup{q:<str>x</str>}<|call_end|>")
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("lookup", {"q": "x"})]
    assert [w.message for w in message.warnings] == ["tool 'lookup' is not declared in the request"]
    broken = "<|call_start|>invoke:get{city:<str>Oslo</str>,,}<|call_end|>"
    message, failures = check_parse(params, broken, words=["Oslo"])
    assert message is not None and not failures, failures
    assert message.warnings  # the call broke: kept as far as it goes, or content, but never silently


def test_no_tools_no_calls() -> None:
    params = _load(TOKENS).apply(USER)
    text = "<|call_start|>invoke:get{city:<str>Oslo</str>}<|call_end|>"
    assert params.parse(text).tool_calls == ()


# --- grammars ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "good", "bad"),
    [
        (TOKENS, "<|call_start|>invoke:get_weather{city:<str>Paris</str>,days:2}<|call_end|>",
         "<|call_start|>invoke:get_weather{city:<str>Rome</str>,days:2}<|call_end|>"),
        (SECTION, "<tool_calls>\nfunc get_weather{city=«Paris»;days=2}\n</tool_calls>",
         "<tool_calls>\nfunc get_weather{city=«Paris»;days=«2»}\n</tool_calls>"),
    ],
    ids=["tokens", "section"],
)  # fmt: skip
def test_grammars_follow_the_schema_in_the_template_syntax(template: str, good: str, bad: str) -> None:
    for tool_choice in ("auto", "required"):
        params = _params(template, [WEATHER_TOOL], tool_choice=tool_choice)
        assert all(verdicts(params, good).values()), (tool_choice, params.grammar)
        assert not any(verdicts(params, bad).values()), tool_choice
    params = _params(template, [WEATHER_TOOL])
    assert all(full_verdicts(params, "Sure. " + good).values())
    assert params.structural_tag is not None, params.structural_tag_reason


# --- Gemma 4 through the generic path ----------------------------------------------------------------------------

GEMMA_EXTRA = [
    '<|tool_call>call:get_weather{city:<|"|>Pa, "ris" {x}<|"|>,days:3,metric:true,note:None,'
    "options:{depth:{levels:[1,false,None,2.5]}}}<tool_call|>",
    'Checking.<|tool_call>call:get{city:<|"|>Oslo<|"|>}<tool_call|><|tool_call>call:ping{}<tool_call|>',
    '<|tool_call>call:get{city:<|"|>Osl',  # cut off
    '<|tool_call>call:lookup{q:<|"|>x<|"|>}<tool_call|>',  # undeclared
]


@pytest.mark.parametrize("template", GEMMAS)
def test_gemma4_calls_read_alike_through_the_generic_parser(template: str) -> None:
    """The generic parser built from Gemma 4's own analysis reads every call as the dedicated format does (names,
    arguments, undeclared and cut-off calls). Content and reasoning are what the dedicated format is kept for: the
    ``<|channel>thought`` block Gemma writes anywhere (between calls too) and the ``<|tool_response>`` hand-off."""
    params = output_chat(template)
    generic = build_generic_parser(_load(template).analysis, params._generated.request)
    texts = [o.text for o in outputs(template) if o.calls] + GEMMA_EXTRA
    assert len(texts) > len(GEMMA_EXTRA)
    for text in texts:
        dedicated = params.parse(text)
        mine = parse_output(generic, text)
        assert [(c.name, c.arguments) for c in mine.tool_calls] == [(c.name, c.arguments) for c in dedicated.tool_calls]


# --- the pieces ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("syntax", "text", "expected"),
    [
        (GEMMA, '{a:<|"|>x, y<|"|>,n:-1.5e3,b:true,c:None,l:[1,<|"|>s<|"|>],d:{k:v w}}',
         {"a": "x, y", "n": -1.5e3, "b": True, "c": None, "l": [1, "s"], "d": {"k": "v w"}}),
        (DictSyntax("<str>", "</str>"), "{a:<str>{x}:[,]</str>,b:False}", {"a": "{x}:[,]", "b": False}),
        (DictSyntax("«", "»", "=", ";"), "{a=«1;2»;b=[1;2];c={d=e}}", {"a": "1;2", "b": [1, 2], "c": {"d": "e"}}),
    ],
    ids=["gemma", "angle-tokens", "guillemets"],
)  # fmt: skip
def test_args_to_json(syntax: DictSyntax, text: str, expected: dict[str, Any]) -> None:
    assert json.loads(args_to_json(text, syntax)) == expected
    flavor = dict_flavor(syntax)
    assert scan_json(text, 0, "object", flavor, False) == (json_scan.OK, len(text))
    # Cut anywhere, the scanner asks for more input rather than failing.
    for cut in range(1, len(text)):
        assert scan_json(text[:cut], 0, "object", flavor, True)[0] == json_scan.MORE, text[:cut]


def test_dict_syntax_rejects_ambiguous_tokens() -> None:
    for quote in ('"', "{", " x", ""):
        with pytest.raises(ValueError):
            DictSyntax(quote, quote)
    with pytest.raises(ValueError):
        DictSyntax("<s>", "</s>", ":", ":")
    assert dict_flavor(GEMMA) == "gemma"


# --- seeded damage (the fuzz of tests/robustness/ runs on bundled templates only) --------------------------------


def _damaged(text: str, rng: random.Random, sentinel: str) -> str:
    """``text`` with one random piece of damage: a span deleted, duplicated or replaced by the sentinel, or the
    sentinel inserted."""
    a = rng.randrange(len(text))
    b = min(len(text), a + rng.randint(1, 8))
    kind = rng.randrange(4)
    if kind == 0:
        return text[:a] + text[b:]
    if kind == 1:
        return text[:b] + text[a:b] + text[b:]
    if kind == 2:
        return text[:a] + sentinel + text[b:]
    return text[:a] + sentinel + text[a:]


@pytest.mark.parametrize(("template", "case"), CASES, ids=["tokens", "section"])
def test_damaged_outputs_keep_the_promises(template: str, case: tuple[str, list[tuple[str, Any]]]) -> None:
    params = _params(template)
    base = "Checking.\n" + case[0] + "\nDone."
    rng = random.Random(f"dict:{template}")
    failures = []
    for index in range(80):
        sentinel = f"zq{index}x"
        text = _damaged(base, rng, sentinel)
        message, found = check_parse(params, text, words=[sentinel, "Oslo", "Checking", "Done"])
        failures += [(text, f) for f in found]
        if message is not None:
            failures += [(text, f) for f in check_stream(params, random_chunks(text, index), message)]
    assert not failures, failures[:3]
