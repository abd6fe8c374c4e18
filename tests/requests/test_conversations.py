"""OpenAI requests as clients send them, on every bundled template: ``apply()``'s prompt is transformers' rendering of
the request normalised as vLLM normalises it (tests/support/vllm_like.py), or — where that fails or garbles —
transformers' rendering of autoparser's own normalisation, faithful to every text of the request; or a TemplateError
or RequestError that says why, where transformers cannot render it either way.

The verdicts and the table in docs/requests.md come from tests/support/request_parity.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import RequestError, TemplateError

from ..support import request_parity as parity
from ..support import vllm_like
from ..support.requests import VARIANTS

DOC = Path(__file__).parents[2] / "docs" / "requests.md"
PAIRS = [(t, v.name) for t in bundled_templates() for v in VARIANTS]

# Templates that cannot render a request, and the words their error must hold (the template's own reason).
CANNOT = {
    "Kimi-K2-Instruct": "sandbox refuses",  # calls list.append on any tool-call history
    "Kimi-K2-Thinking": "sandbox refuses",
    "MiroThinker": "cannot assign attribute",  # sets attributes on messages with tool calls
    "google-gemma-2-2b-it": "System role not supported",
    "meta-llama-Llama-3.1-8B-Instruct": "only supports single tool-calls",
    "meta-llama-Llama-3.2-3B-Instruct": "only supports single tool-calls",
    "meta-llama-Llama-3.3-70B-Instruct": "only supports single tool-calls",
    "google-ai-edge-LiteRT-LM-Gemma3n": "can only concatenate str",  # joins argument values as strings: 2 raises
    "openai-gpt-oss-120b": "Cannot pass both content and thinking",  # a turn with calls holds one or the other
    # Chat templates of models without tools: a tool turn, or a system message, is no role they know.
    "axolotl-nemotron_h": "Unexpected role: tool",
    "axolotl-pixtral": "roles must alternate",
    "hfjs-codellama-CodeLlama-70b-Instruct-hf": "roles must alternate",
    "ollama-llama2-7b": "roles must alternate",
    "ollama-index-starcoder2-instruct": "System messages are not allowed",
    "hfjs-CohereForAI-c4ai-command-r-v01": "'NoneType' object is not iterable",  # tools in Cohere's own format only
    "trl-idefics3": "has no element 0",  # reads every message's first content part: a calling turn has none
    # Renders calls only after reasoning: a calling turn without it reads `message.content[0].thinking` of a string.
    "hfjs-CohereLabs-command-a-reasoning-08-2025": "has no element 0",
}
# Templates transformers cannot render whatever the request, which autoparser's renderer does (template/environment.py).
RENDERER_LENIENT = {"llama-cpp-deepseek-r1": "tools | map(...) | tojson: transformers cannot serialise the generator"}


@pytest.mark.parametrize(("template", "variant"), PAIRS)
def test_request_renders_as_vllm_and_transformers_would(template: str, variant: str) -> None:
    verdict = parity.verdict(template, variant)
    messages, _ = next(v for v in VARIANTS if v.name == variant).build()
    if verdict.status == "same":
        return
    if verdict.status == "raises":
        if "RequestError" in verdict.detail or verdict.detail.startswith("messages["):
            assert variant == "image_parts", verdict.detail  # only media parts are refused
            return
        assert template in CANNOT, f"unexpected render failure: {verdict.detail}"
        assert CANNOT[template] in verdict.detail
        return
    # fixed or differs: the prompt holds every text of the request, and no content printed as a list
    faults = parity._faults(verdict.prompt, messages, template)
    assert not faults, f"{verdict.status}: {faults}"
    if verdict.status == "differs":
        assert template in parity.DEVIATIONS, f"unexplained difference from vLLM + transformers: {verdict.detail}"
    elif template in RENDERER_LENIENT:
        assert "generator" in verdict.detail, verdict.detail
    else:
        tmpl = ChatTemplate.load(template)
        _, tools = next(v for v in VARIANTS if v.name == variant).build()
        assert verdict.prompt == parity._ours_by_transformers(tmpl, messages, tools)


@pytest.mark.parametrize("template", sorted(CANNOT))
def test_templates_that_cannot_render_fail_in_transformers_too(template: str) -> None:
    """Each listed template fails with autoparser's normalisation under transformers as well (nothing autoparser
    could have done), and renders again once the offending part is gone (the list cannot hide a bug)."""
    tmpl = ChatTemplate.load(template)
    failing = [v for v in VARIANTS if parity.verdict(template, v.name).status == "raises" and v.name != "image_parts"]
    assert failing, f"{template} renders every variant now: drop it from CANNOT"
    for variant in failing:
        messages, tools = variant.build()
        with pytest.raises(Exception):  # noqa: B017 - whatever transformers raises
            parity._ours_by_transformers(tmpl, messages, tools)


def test_stated_deviations_are_current() -> None:
    stale = [t for t in parity.DEVIATIONS if all(parity.verdict(t, v.name).status != "differs" for v in VARIANTS)]
    assert not stale, f"deviations stated for templates that no longer differ: {stale}"


def test_parity_table_in_docs_is_current() -> None:
    assert parity.parity_table() in DOC.read_text(encoding="utf-8"), "paste `python -m tests.support.request_parity`"


def test_most_requests_match_vllm_exactly() -> None:
    """A floor, so that a change that quietly stops matching vLLM shows up as a number, not only as new reasons."""
    counts = {s: sum(1 for t, v in PAIRS if parity.verdict(t, v).status == s) for s in ("same", "fixed", "raises")}
    assert counts["same"] >= 780, counts
    assert counts["raises"] <= 250, counts  # (the 134 templates include 35 plain chat ones: no tools, no tool turns)


def test_oracle_sees_the_garbling_autoparser_avoids() -> None:
    """The oracle is not autoparser in disguise: on Gemma 4 it prints the system message as a Python list."""
    messages, tools = VARIANTS[0].build()
    source = ChatTemplate.load("google-gemma-4-31B-it").source
    assert "{'type': 'text'" in vllm_like.render(source, vllm_like.vllm_messages(messages, source), tools)
    assert "{'type': 'text'" not in ChatTemplate.load("google-gemma-4-31B-it").apply(messages, tools=tools).prompt


@pytest.mark.parametrize("bad", [{"type": "function", "function": {"name": "f"}}, "f", 3])
def test_tools_of_the_wrong_type_are_named(bad: object) -> None:
    with pytest.raises(RequestError, match=r"^tools: must be a list"):
        ChatTemplate.load("Qwen3.5-4B").apply([{"role": "user", "content": "hi"}], tools=bad)  # type: ignore[arg-type]


def test_errors_are_template_errors_or_request_errors() -> None:
    assert issubclass(RequestError, ValueError) and not issubclass(RequestError, TemplateError)
