"""transformers' own response parser, driven by ``TemplateAnalysis.to_response_template()``, against autoparser.

Two sets of outputs, over every generic template that has a response template:

* the dev corpus (tests/data/llamacpp-cases.jsonl): transformers' ``tokenizer.parse_response`` against
  ``params.parse()`` on each case;
* the round-trip outputs (tests/support/outputs.py: what each template itself renders for content, reasoning and
  calls with every argument type): transformers against the message that went into the rendering.

Both are read the way the corpus judges messages: content and reasoning with surrounding whitespace trimmed, each
call's name and arguments as JSON values, and a call's id where both sides know one. A case on which they differ
needs a stated reason (:func:`corpus_reason`, :data:`ROUNDTRIP_REASONS`); tests/test_transformers_integration.py
fails on a difference without a reason and on a reason without a difference. ``python -m tests.support.hf_agreement``
prints the agreement table of docs/integrations.md (the test checks that the page shows the current one).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from autoparser import ChatMessage, ChatTemplate, bundled_templates
from autoparser.errors import ResponseTemplateError

from .corpus import CASES, apply_case
from .outputs import TOOLS, Output, chat, outputs

__all__ = [
    "BOS",
    "DOC",
    "EOS",
    "ROUNDTRIP_REASONS",
    "Reading",
    "Verdict",
    "corpus_cases",
    "corpus_reason",
    "corpus_verdicts",
    "local_tokenizer",
    "read_autoparser",
    "read_transformers",
    "render_table",
    "response_template",
    "roundtrip_outputs",
    "roundtrip_verdict",
    "roundtrip_verdicts",
]

BOS, EOS = "<s>", "</s>"  # the local tokenizer's special tokens, for templates that print them
DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
_WS = " \t\n\r\v\f"

# Corpus cases that differ for a reason of their kind (see corpus_reason), then one by one.
REASONING_NONE = (
    "reasoning_format none keeps the reasoning block in the content; a response template always separates it"
)
PARTIAL = "a reply cut off inside a JSON body: transformers' json parser raises (autoparser returns the partial call)"
_CLOSED_AGAIN = (
    "thinking off reaches the template's own switch (`reasoning`), so the prompt closes the block; the reply closes "
    "it again: autoparser reads that as an empty block, a response template keeps it as text"
)
CORPUS_REASONS = {
    "Qwen3.5-4B_011": "the model repeats the prompt's `<think>`: autoparser drops the second opener, transformers "
    "keeps it in the reasoning (so does the corpus's reference, see the corpus XFAIL)",
    "mistralai-Ministral-3-14B-Reasoning-2512_007": "a json_schema answer in a ```json fence: autoparser returns "
    "the JSON inside it, a response template cannot unwrap it",
    "Cohere2MoE_006": _CLOSED_AGAIN,
    "Cohere2MoE_007": _CLOSED_AGAIN,
}

# Round-trip outputs on which transformers does not read back what the template rendered.
_NANO_V2 = (
    "the analysis reads the prompt's `<think>` as Nemotron-Nano-v2's content wrapper, not as a reasoning block, so "
    "the reasoning stays in the content (a gap of the analysis; autoparser's parser has it too)"
)
_BARE_JSON = (
    "bare JSON calls written back to back: a regular expression cannot find where one JSON object ends, so "
    "transformers' json parser sees them as one invalid value and raises"
)
ROUNDTRIP_REASONS = {
    "NVIDIA-Nemotron-Nano-v2:one": _NANO_V2,
    "NVIDIA-Nemotron-Nano-v2:prefix": _NANO_V2,
    "NVIDIA-Nemotron-Nano-v2:three": _NANO_V2,
    "NVIDIA-Nemotron-Nano-v2:reasoning+call": _NANO_V2,
    "vllm-tool_chat_template_llama4_json:prefix": _BARE_JSON,
    "vllm-tool_chat_template_llama4_json:three": _BARE_JSON,
    "meta-llama-Llama-4-Scout-17B-16E-Instruct:prefix": _BARE_JSON,
    "meta-llama-Llama-4-Scout-17B-16E-Instruct:three": _BARE_JSON,
    "meta-llama-Llama-4-Scout-17B-16E-Instruct:content+call": "the content sits inside "
    "`<|python_start|>…<|python_end|>`, which the analysis takes for the call section's start marker",
}


@functools.cache
def local_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer built here (no download): every byte is a token, so any text round-trips through
    ``encode``/``decode`` and transformers' token-id paths can be exercised too."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    model = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    model.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=model, bos_token=BOS, eos_token=EOS, clean_up_tokenization_spaces=False
    )


@functools.cache
def response_template(template: str) -> dict[str, Any] | None:
    """The template's response template, or None when it has none (dedicated formats, inexpressible shapes)."""
    try:
        return ChatTemplate.load(template).analysis.to_response_template()
    except ResponseTemplateError:
        return None


@dataclass(frozen=True)
class Reading:
    """A message as compared: trimmed content and reasoning, and (name, arguments, id) per call."""

    content: str
    reasoning: str
    calls: tuple[tuple[str, Any, str], ...]

    def without_ids(self, keep: tuple[bool, ...]) -> Reading:
        """The reading with the ids of the calls not in ``keep`` blanked (an id only one side knows)."""
        calls = tuple((n, a, i if k else "") for (n, a, i), k in zip(self.calls, keep, strict=False))
        return Reading(self.content, self.reasoning, calls + self.calls[len(calls) :])


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_autoparser(message: ChatMessage) -> Reading:
    calls = tuple((c.name, _json_value(c.arguments), "" if c.id_generated else c.id) for c in message.tool_calls)
    return Reading(message.content.strip(_WS), message.reasoning_content.strip(_WS), calls)


def read_transformers(message: dict[str, Any]) -> Reading:
    calls = tuple(
        (c["function"]["name"], c["function"]["arguments"], c.get("id", "")) for c in message.get("tool_calls") or ()
    )
    return Reading(
        (message.get("content") or "").strip(_WS), (message.get("reasoning_content") or "").strip(_WS), calls
    )


@dataclass(frozen=True)
class Verdict:
    key: str
    template: str
    agrees: bool
    detail: str  # what each side read, when they differ


def _transformers(text: str, template: str, prefix: str, tools: Any) -> Reading | str:
    """transformers' reading of ``text`` (the tokenizer's own ``parse_response``), or the error it raised."""
    tokenizer = local_tokenizer()
    try:
        return read_transformers(
            tokenizer.parse_response(text, response_template(template), prefix=prefix, tools=tools)
        )
    except Exception as err:  # transformers raises ValueError/KeyError on what its parsers cannot read
        return f"transformers raised {type(err).__name__}: {str(err)[:200]}"


def _compare(key: str, template: str, theirs: Reading | str, ours: Reading) -> Verdict:
    if isinstance(theirs, str):
        return Verdict(key, template, False, f"{theirs}; autoparser: {ours}")
    # Ids count where both know one: the response template names an id where the format's markup holds it, and
    # autoparser may generate ids the model did not write.
    keep = tuple(bool(a[2] and b[2]) for a, b in zip(theirs.calls, ours.calls, strict=False))
    theirs, ours = theirs.without_ids(keep), ours.without_ids(keep)
    return Verdict(key, template, theirs == ours, "" if theirs == ours else f"transformers: {theirs}; ours: {ours}")


def corpus_cases() -> list[dict[str, Any]]:
    """The corpus cases of templates that have a response template."""
    return [c for c in CASES if response_template(c["template"].removesuffix(".jinja")) is not None]


@functools.cache
def _corpus_verdicts() -> tuple[Verdict, ...]:
    verdicts = []
    for case in corpus_cases():
        template = case["template"].removesuffix(".jinja")
        _, params = apply_case(case)
        ours = read_autoparser(params.parse(case["input"], partial=case["is_partial"]))
        theirs = _transformers(case["input"], template, params.prompt, case["params"]["tools"] or None)
        verdicts.append(_compare(case["id"], template, theirs, ours))
    return tuple(verdicts)


def corpus_verdicts() -> list[Verdict]:
    return list(_corpus_verdicts())


def corpus_reason(case: dict[str, Any]) -> str | None:
    """Why transformers may read ``case`` differently from ``params.parse()``, if it may."""
    analysis = ChatTemplate.load(case["template"]).analysis
    if case["is_partial"]:
        return PARTIAL
    if case["params"]["reasoning_format"] == "none" and analysis.reasoning.enabled:
        return REASONING_NONE
    return CORPUS_REASONS.get(case["id"])


def _expected(output: Output) -> Reading:
    calls = tuple((c.name, c.arguments, c.id) for c in output.calls)
    return Reading(output.content.strip(_WS), output.reasoning.strip(_WS), calls)


def roundtrip_outputs(templates: Iterable[str] | None = None) -> list[Output]:
    """The outputs of ``templates`` (default: every bundled one) that have a response template."""
    names = bundled_templates() if templates is None else templates
    return [o for t in names if response_template(t) is not None for o in outputs(t)]


_ROUNDTRIP_VERDICTS: dict[str, Verdict] = {}  # by output key


def roundtrip_verdict(output: Output) -> Verdict:
    """How transformers reads back one round-trip output (once per process)."""
    found = _ROUNDTRIP_VERDICTS.get(output.key)
    if found is None:
        prompt = chat(output.template).prompt
        theirs = _transformers(output.text, output.template, prompt, TOOLS)
        found = _ROUNDTRIP_VERDICTS[output.key] = _compare(output.key, output.template, theirs, _expected(output))
    return found


def roundtrip_verdicts() -> list[Verdict]:
    return [roundtrip_verdict(o) for o in roundtrip_outputs()]


def _reasons(verdicts: list[Verdict], reason_of: dict[str, str]) -> str:
    by_reason: dict[str, list[str]] = {}
    for v in verdicts:
        if not v.agrees:
            by_reason.setdefault(reason_of.get(v.key, "(no reason)"), []).append(v.key.split(":")[-1])
    return "<br>".join(f"{', '.join(keys)}: {reason}" for reason, keys in by_reason.items()).replace("|", "\\|")


def render_table() -> str:
    """The agreement table (markdown), one row per template that has a response template."""
    corpus = corpus_verdicts()
    roundtrip = roundtrip_verdicts()
    case_reasons = {c["id"]: corpus_reason(c) or "(no reason)" for c in corpus_cases()}
    rows = [
        "| template | corpus: agree / cases | round trip: agree / outputs | why not |",
        "|---|---|---|---|",
    ]
    for template in (t for t in bundled_templates() if response_template(t) is not None):
        mine = [v for v in corpus if v.template == template]
        trips = [v for v in roundtrip if v.template == template]
        cell = f"{sum(v.agrees for v in mine)} / {len(mine)}" if mine else "–"
        reasons = "<br>".join(r for r in (_reasons(mine, case_reasons), _reasons(trips, ROUNDTRIP_REASONS)) if r)
        rows.append(f"| {template} | {cell} | {sum(v.agrees for v in trips)} / {len(trips)} | {reasons} |")
    agree_c, agree_r = sum(v.agrees for v in corpus), sum(v.agrees for v in roundtrip)
    rows.append(f"| **all** | **{agree_c} / {len(corpus)}** | **{agree_r} / {len(roundtrip)}** | |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render_table(), end="")
