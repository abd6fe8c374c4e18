"""Every bundled template × every request variant (tests/support/requests.py): autoparser's prompt against the oracle,
transformers' rendering of the request normalised as vLLM normalises it (tests/support/vllm_like.py).

A :class:`Verdict` per pair, computed once per process and shared by the tests and the table in docs/requests.md
(``python -m tests.support.request_parity`` prints it):

* ``same`` — both render, byte-identical;
* ``fixed`` — autoparser renders, the oracle fails or garbles (a Python/JSON list printed, a text lost), and
  autoparser's prompt is transformers' rendering of autoparser's own normalisation;
* ``differs`` — both render, differently (each needs a stated reason: :data:`DEVIATIONS`);
* ``raises`` — autoparser raises (a TemplateError with the template's own reason, or a RequestError naming the
  field) and so does the oracle, and transformers cannot render autoparser's normalisation either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any
from unittest import mock

from transformers.utils import chat_template_utils

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import RequestError, TemplateError
from autoparser.requests import check_tools, missing_defaults, normalize_messages, request_profile, with_defaults
from autoparser.requests.json_data import as_json_data

from . import vllm_like
from .requests import VARIANTS

__all__ = ["DEVIATIONS", "REPRS", "Verdict", "expected_texts", "parity_table", "verdict", "verdicts"]

# Signs of content printed as a Python or JSON list instead of its text, and of a tool list printed as a Python repr
# (Hammer's and Apriel's `tools|string` under transformers: autoparser's request data prints as JSON).
REPRS = ("{'type': 'text'", '{"type": "text"', "{'type': 'image", '{"type": "image', "{'type': 'function'")

# Where autoparser's prompt differs from a prompt the oracle renders cleanly: template -> reason (all variants).
DEVIATIONS: dict[str, str] = {
    "mistralai-Ministral-3-14B-Reasoning-2512": (
        "the template shows past reasoning only as a typed thinking block ([THINK]...[/THINK]); autoparser passes "
        "reasoning_content as one, vLLM drops it"
    ),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (
        "vLLM turns content null next to calls into '', which the template (testing `content is not none`) renders "
        "as an extra empty assistant turn; autoparser keeps the null"
    ),
    "llama-cpp-rwkv-world": (
        "vLLM turns content null next to calls into '', which the template renders as an empty 'Assistant:' turn "
        "(it shows no calls); autoparser keeps the null, and the turn is left out"
    ),
    "hfjs-moonshotai-Kimi-K2-Thinking": (
        "the template writes a call's id where its name goes and never the name: autoparser gives foreign ids as "
        "functions.NAME:INDEX (the model's own shape), vLLM passes them as sent, leaving the model without the name"
    ),
    "trl-diffusion_gemma": (
        "vLLM passes the system text as parts, which this template prints with a space after each; autoparser "
        "passes the string, trimmed as transformers renders a string system message"
    ),
    "hfjs-CohereLabs-command-a-reasoning-08-2025": (
        "the template iterates over a tool result: vLLM's string is printed one character at a time, autoparser "
        "passes a list holding the text"
    ),
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    template: str
    variant: str
    status: str  # same | fixed | differs | raises
    detail: str = ""  # the error (raises), what the oracle did (fixed), the first difference (differs)
    prompt: str = ""


def expected_texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every text a faithful prompt holds: the contents and text parts of the request's messages."""
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and content:
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if p.get("type") == "text")
    return texts


def _dropped_by_template(template: str, messages: list[dict[str, Any]]) -> set[str]:
    """Texts of assistant turns with calls that the template leaves out even as a plain string (Hermes, Mistral and
    Cohere render only the calls of such a turn)."""
    dropped: set[str] = set()
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        texts = expected_texts([message])
        if not texts:
            continue
        plain = [dict(m) for m in messages]
        plain[i]["content"] = "\n".join(texts)
        try:
            prompt = ChatTemplate.load(template).apply(plain, tools=[]).prompt
        except (TemplateError, RequestError):
            continue
        dropped.update(t for t in texts if t not in prompt)
    return dropped


def _faults(prompt: str, messages: list[dict[str, Any]], template: str = "") -> list[str]:
    faults = [f"{r!r} printed" for r in REPRS if r in prompt]
    dropped = _dropped_by_template(template, messages) if template else set()
    faults += [f"{t!r} missing" for t in expected_texts(messages) if t not in prompt and t not in dropped]
    return faults


def _ours_by_transformers(tmpl: ChatTemplate, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """transformers' rendering of autoparser's own normalisation (tools completed only if as sent fails).

    transformers rebuilds everything a template sees out of plain dicts and lists (``_plain_template_data``); the
    request data autoparser hands over prints as JSON where a template prints it (autoparser/requests/json_data.py),
    so the rebuilt data is given that printing back: the one intended difference."""
    normalized = normalize_messages(messages, request_profile(tmpl), tmpl.name).messages
    tools = check_tools(tools)
    context = tmpl._serving_context(tools)
    plain = getattr(chat_template_utils, "_plain_template_data", None)  # (older transformers pass data as it is)
    keep = mock.patch.object(chat_template_utils, "_plain_template_data", lambda value: as_json_data(plain(value)))
    with keep if plain is not None else contextlib.nullcontext():
        try:
            return vllm_like.render(tmpl.source, normalized, tools, **context)
        except Exception:
            if not missing_defaults(tools):
                raise
            return vllm_like.render(tmpl.source, normalized, with_defaults(tools), **context)


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at {i}: autoparser {a[max(0, i - 30) : i + 50]!r} / oracle {b[max(0, i - 30) : i + 50]!r}"


@functools.cache
def verdict(template: str, variant_name: str) -> Verdict:
    variant = next(v for v in VARIANTS if v.name == variant_name)
    messages, tools = variant.build()
    tmpl = ChatTemplate.load(template)
    try:
        oracle: str | None = vllm_like.render(tmpl.source, vllm_like.vllm_messages(messages, tmpl.source), tools)
        oracle_error = ""
    except vllm_like.NoOracle as err:
        oracle, oracle_error = None, f"no oracle: {err}"
    except Exception as err:
        oracle, oracle_error = None, f"{type(err).__name__}: {err}"
    try:
        ours = tmpl.apply(messages, tools=tools).prompt
    except (TemplateError, RequestError) as err:
        return Verdict(template, variant_name, "raises", str(err))
    if oracle == ours:
        return Verdict(template, variant_name, "same", prompt=ours)
    if oracle is not None and not _faults(oracle, messages, template):
        return Verdict(template, variant_name, "differs", _first_difference(ours, oracle), ours)
    why = oracle_error or "; ".join(_faults(oracle or "", messages, template))
    return Verdict(template, variant_name, "fixed", why, ours)


def verdicts() -> list[Verdict]:
    return [verdict(t, v.name) for t in bundled_templates() for v in VARIANTS]


def parity_table() -> str:
    """The markdown table of docs/requests.md: one row per template, one column per variant."""
    marks = {"same": "✓", "fixed": "✓*", "differs": "≠", "raises": "✗"}
    header = "| template | " + " | ".join(v.name for v in VARIANTS) + " |"
    rows = [header, "|" + "---|" * (len(VARIANTS) + 1)]
    for template in bundled_templates():
        cells = [marks[verdict(template, v.name).status] for v in VARIANTS]
        rows.append(f"| {template} | " + " | ".join(cells) + " |")
    counts = {s: sum(1 for v in verdicts() if v.status == s) for s in marks}
    rows.append("")
    rows.append(
        f"{counts['same']} ✓ same as vLLM + transformers, {counts['fixed']} ✓* rendered where vLLM fails or garbles, "
        f"{counts['differs']} ≠ stated differences, {counts['raises']} ✗ the template cannot render the request "
        f"(of {len(verdicts())})."
    )
    return "\n".join(rows)


if __name__ == "__main__":
    print(parity_table())
    for v in verdicts():
        if v.status != "same":
            print(f"{v.status:8} {v.template:45} {v.variant:16} {v.detail[:200]}")
