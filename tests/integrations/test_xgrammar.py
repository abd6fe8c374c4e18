"""xgrammar (the version vLLM installs, 0.2.x) on autoparser's structural tags and GBNF grammars.

xgrammar ships with vLLM, so these tests run in .ci/run's vLLM environment (skipped elsewhere, failed there when it
is missing). A byte-level vocabulary built here stands in for a tokenizer: no download.

* Structural tags (``ChatParams.structural_tag``): every tag compiles, passes vLLM's own validation of a
  ``structured_outputs.structural_tag`` request (the check that routes it to xgrammar), accepts what the template
  itself writes (answers, reasoning, calls, text before calls) exactly where the GBNF stand-in of
  tests/grammar/test_structural_tag.py does, and rejects an unknown tool or arguments against the schema.
* GBNF (``full_grammar``, and ``grammar`` for tool_choice required and a named tool): xgrammar's EBNF reader takes
  autoparser's GBNF as it is, and accepts exactly the outputs the strict GBNF recognizer (llama.cpp's reading)
  accepts. That is the claim "GBNF (llama.cpp, xgrammar)" in the docs.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_VLLM"):  # .ci/run's vLLM step: a missing xgrammar is a failure, not a skip
    import xgrammar as xgr
else:
    xgr = pytest.importorskip("xgrammar", reason="xgrammar comes with vLLM; .ci/run runs these tests in its venv")

from autoparser import ChatParams, ChatTemplate
from autoparser.check import recognizer as gbnf_recognizer

from ..grammar.test_full_grammar import TEMPLATE_SPELLINGS
from ..grammar.test_grammar_negative import TEMPLATES as CALL_TEMPLATES
from ..grammar.test_grammar_negative import TOOLS as WEATHER_TOOLS
from ..grammar.test_grammar_negative import USER as WEATHER_USER
from ..grammar.test_grammar_negative import _render_call
from ..grammar.test_structural_tag import ASCII_ESCAPES, TAGGED, tag_gbnf
from ..support.outputs import TOOLS, USER, chat, outputs
from ..support.sample import sampled

_INFO = xgr.TokenizerInfo([bytes([b]) for b in range(256)], xgr.VocabType.RAW)  # one token per byte
_COMPILER = xgr.GrammarCompiler(_INFO, cache_enabled=False)

# The tag's JSON is xgrammar's: it also takes \\u escapes, which the GBNF stand-in (autoparser's JSON) does not. Where
# the template writes them (its tojson escapes non-ASCII text), the case with non-ASCII arguments tells them apart.
_JSON_ESCAPES: dict[str, set[str]] = {name: {"one"} for name in ASCII_ESCAPES}


def _accepts(compiled: Any, text: str) -> bool:
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return bool(matcher.accept_string(text)) and bool(matcher.is_terminated())


def _tag(params: ChatParams) -> Any:
    tag = params.structural_tag
    assert tag is not None, params.structural_tag_reason
    return _COMPILER.compile_structural_tag(json.dumps(tag))


# --- structural tags ------------------------------------------------------------------------------------------------


def test_the_installed_xgrammar_is_0_2() -> None:
    from importlib.metadata import version

    assert version("xgrammar").startswith("0.2."), version("xgrammar")


@pytest.mark.parametrize("name", TAGGED)
def test_the_tag_compiles_and_vllm_takes_it(name: str) -> None:
    tag = chat(name).structural_tag
    assert tag is not None
    xgr.Grammar.from_structural_tag(json.dumps(tag))
    _COMPILER.compile_structural_tag(json.dumps(tag))
    try:
        from vllm.sampling_params import SamplingParams, StructuredOutputsParams
        from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar
    except ImportError:  # xgrammar without vLLM (a developer's own install)
        return
    params = SamplingParams(structured_outputs=StructuredOutputsParams(structural_tag=json.dumps(tag)))
    validate_xgrammar_grammar(params)  # what vLLM's "auto" backend runs before it picks xgrammar


@pytest.mark.parametrize("name", TAGGED)
def test_xgrammar_reads_the_tag_as_the_gbnf_stand_in_does(name: str) -> None:
    """The template's own outputs: accepted by xgrammar exactly where the strict recognizer accepts the tag written
    as GBNF; and accepted, except where the template spells values its grammar does not ask for."""
    params = chat(name)
    compiled = _tag(params)
    stand_in = gbnf_recognizer.Grammar.parse(tag_gbnf(params.structural_tag or {}))
    differ, rejected = [], []
    for output in outputs(name):
        verdict = _accepts(compiled, output.text)
        if verdict != stand_in.accepts(output.text) and output.label not in _JSON_ESCAPES.get(name, set()):
            differ.append(output.label)
        if not verdict:
            rejected.append(output.label)
    assert not differ, differ
    if name in TEMPLATE_SPELLINGS and name not in _JSON_ESCAPES:
        assert rejected, f"{name} is listed in TEMPLATE_SPELLINGS but every output is accepted"
    else:
        assert not rejected, rejected


def _weather_templates() -> list[Any]:
    tagged = set(TAGGED)
    return [t for t in CALL_TEMPLATES if t.values[0] in tagged]


@pytest.mark.parametrize("name", _weather_templates())
def test_the_tag_rejects_an_unknown_tool_and_bad_arguments(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    params = tmpl.apply(WEATHER_USER, tools=WEATHER_TOOLS, enable_thinking=True, parallel_tool_calls=False)
    compiled = _tag(params)
    good = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert good is not None and _accepts(compiled, good), good
    for label, tool, arguments in [
        ("unknown tool", "launch_rocket", {"city": "Paris", "days": 2}),
        ("wrong type", "get_weather", {"city": "Paris", "days": "two"}),
        ("enum violation", "get_weather", {"city": "Berlin", "days": 2}),
        ("missing required", "get_weather", {"city": "Paris"}),
    ]:
        bad = _render_call(tmpl, tool, arguments)
        assert bad is not None and not _accepts(compiled, bad), (label, bad)


def test_text_after_the_calls_is_rejected() -> None:
    """The calls end the reply: the parser would keep trailing text as content with a warning."""
    params = chat("Qwen-Qwen3-0.6B")
    compiled = _tag(params)
    call = '<tool_call>\n{"name": "get", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert _accepts(compiled, "Sure. " + call)
    assert _accepts(compiled, call + "\n" + call)
    assert not _accepts(compiled, call + "\nDone.")
    assert not _accepts(compiled, call + "\nDone." + call)


def test_token_by_token_the_mask_allows_what_the_template_writes() -> None:
    """Driven as vLLM drives it: a bitmask per step, then the sampled token (here: the template's next byte)."""
    params = chat("Qwen3.5-4B")
    matcher = xgr.GrammarMatcher(_tag(params), terminate_without_stop_token=True)
    bitmask = xgr.allocate_token_bitmask(1, _INFO.vocab_size)
    (text,) = [o.text for o in outputs("Qwen3.5-4B") if o.label == "content+call"]
    for byte in text.encode():
        matcher.fill_next_token_bitmask(bitmask)
        assert (int(bitmask[0, byte // 32]) >> (byte % 32)) & 1, text.encode()[: text.encode().index(byte) + 1]
        assert matcher.accept_token(byte)
    assert matcher.is_terminated()


# --- GBNF -----------------------------------------------------------------------------------------------------------


def _gbnf_templates() -> list[str]:
    return [name for name in sampled() if chat(name).full_grammar is not None]  # (the sample's templates)


def _agreement(gbnf: str, texts: dict[str, str]) -> list[str]:
    compiled = _COMPILER.compile_grammar(xgr.Grammar.from_ebnf(gbnf))
    strict = gbnf_recognizer.Grammar.parse(gbnf)
    return [label for label, text in texts.items() if _accepts(compiled, text) != strict.accepts(text)]


@pytest.mark.parametrize("name", _gbnf_templates())
def test_full_grammar_reads_in_xgrammar_as_in_llama_cpp(name: str) -> None:
    params = chat(name)
    texts = {o.label: o.text for o in outputs(name)}
    assert not _agreement(params.full_grammar or "", texts)
    compiled = _COMPILER.compile_grammar(xgr.Grammar.from_ebnf(params.full_grammar or ""))
    rejected = [label for label, text in texts.items() if not _accepts(compiled, text)]
    assert bool(rejected) == (name in TEMPLATE_SPELLINGS), rejected


@pytest.mark.parametrize("name", [n for n in _gbnf_templates() if chat(n).grammar_lazy])
def test_required_and_named_grammars_read_in_xgrammar_as_in_llama_cpp(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    calls = {o.label: o.text for o in outputs(name) if o.calls}
    required = tmpl.apply(
        USER,
        tools=TOOLS,
        reasoning_format="auto",
        parallel_tool_calls=True,
        tool_choice="required",
        enable_thinking=True,
    )
    assert required.grammar is not None and not required.grammar_lazy
    assert not _agreement(required.grammar, calls)
    named = tmpl.apply(
        USER,
        tools=TOOLS,
        reasoning_format="auto",
        tool_choice={"type": "function", "function": {"name": "get"}},
        enable_thinking=True,
        parallel_tool_calls=False,
    )
    one = {o.label: o.text for o in outputs(name) if [c.name for c in o.calls] == ["get"]}
    assert named.grammar is not None
    assert not _agreement(named.grammar, one)
