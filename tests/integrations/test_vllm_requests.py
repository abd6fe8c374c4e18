"""``ChatTemplate.apply()`` against vLLM's own chat rendering, for every bundled template and every request shape of
:mod:`tests.support.requests` (``VARIANTS``).

vLLM renders the request with its own code (:func:`vllm_support.render_chat`: a ``ChatCompletionRequest`` and its
validators, tools as vLLM dumps them, its content-format detector, ``parse_chat_messages`` against a real
``ModelConfig`` of a tiny local multimodal model, ``safe_apply_chat_template`` with a local tokenizer whose template
is the bundled one, bos/eos empty as autoparser renders them, ``add_generation_prompt=True``); autoparser renders the
same client request with the default ``ChatTemplate.load(name).apply(messages, tools=tools).prompt``. Neither is
given a thinking switch: each template keeps its own default.

Per (template, variant):

* both render, byte for byte the same prompt: the goal;
* both raise: fine (both messages are listed under the parity table);
* they differ, or only one raises: every difference needs a stated reason. A difference is a hunk of the
  token-level diff of the two prompts (or the one error); a :class:`Reason` covers cells (templates x variants) and
  names what it explains with a pattern on each side of a hunk. The test fails on a hunk no covering reason
  explains, and on a stale reason: a covered cell where it explains nothing (including cells that now match).

:data:`REASONS` are vLLM's own doing: they stay true whatever ``apply()`` does. :data:`PENDING` are differences of
``apply()``'s rendering before the request normalisation (``autoparser.requests``) lands: each should go stale
with it (then delete it) or become a reason here.

``python -m tests.integrations.test_vllm_requests`` prints the parity table (markdown), see :func:`parity_table`.
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_VLLM"):  # .ci/run's vLLM step: a missing vLLM is a failure, not a skip
    import vllm  # noqa: F401
else:
    pytest.importorskip("vllm", reason="vLLM is not installed here; .ci/run runs these tests in its own vLLM venv")

from vllm.renderers.hf import _detect_content_format

from autoparser import ChatTemplate, bundled_templates

from ..support.requests import VARIANTS, variant
from . import vllm_support as vs

TEMPLATES: tuple[str, ...] = tuple(bundled_templates())
VARIANT_NAMES: tuple[str, ...] = tuple(v.name for v in VARIANTS)
ALL = VARIANT_NAMES


# --- the two renders -----------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|\s|[^\w\s]")
_GAP = 3  # differences fewer tokens apart than this are one hunk


def hunks(a: str, b: str) -> list[tuple[str, str]]:
    """The differences between ``a`` and ``b`` as ``(a_side, b_side)`` text pairs, from a diff of their tokens
    (words, single whitespace characters, single punctuation), differences closer than ``_GAP`` tokens merged."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    merged: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if merged and i1 - merged[-1][1] < _GAP and j1 - merged[-1][3] < _GAP:
            merged[-1][1], merged[-1][3] = i2, j2
        else:
            merged.append([i1, i2, j1, j2])
    return [("".join(ta[i1:i2]), "".join(tb[j1:j2])) for i1, i2, j1, j2 in merged]


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


@dataclass(frozen=True)
class Outcome:
    """Both renders of one (template, variant): a prompt or the error message of each side."""

    vllm: str | None
    vllm_error: str | None
    apply: str | None
    apply_error: str | None
    content_format: str | None  # vLLM's, when it got that far

    @property
    def kind(self) -> str:
        if self.vllm is not None and self.apply is not None:
            return "same" if self.vllm == self.apply else "differs"
        if self.vllm is None and self.apply is None:
            return "both raise"
        return "vLLM raises" if self.vllm is None else "apply raises"

    @functools.cached_property
    def hunks(self) -> list[tuple[str, str]]:
        """What needs a reason: the diff's hunks, or the one side's error (the other side empty)."""
        kind = self.kind
        if kind == "differs":
            assert self.vllm is not None and self.apply is not None
            return hunks(self.vllm, self.apply)
        if kind == "vLLM raises":
            return [(self.vllm_error or "", "")]
        if kind == "apply raises":
            return [("", self.apply_error or "")]
        return []


@functools.cache
def outcome(template: str, variant_name: str) -> Outcome:
    tmpl = ChatTemplate.load(template)
    vllm_prompt = vllm_error = apply_prompt = apply_error = content_format = None
    messages, tools = variant(variant_name).build()
    logging.disable(logging.WARNING)  # vLLM logs every template it rejects
    try:
        rendered = vs.render_chat(vs.render_tokenizer(tmpl.source), messages, tools)
        vllm_prompt, content_format = rendered.prompt, rendered.content_format
    except Exception as err:  # what vLLM answers with a 400
        vllm_error = _error(err)
    finally:
        logging.disable(logging.NOTSET)
    messages, tools = variant(variant_name).build()  # fresh: neither side may see what the other did
    try:
        apply_prompt = tmpl.apply(messages, tools=tools).prompt
    except Exception as err:
        apply_error = _error(err)
    return Outcome(vllm_prompt, vllm_error, apply_prompt, apply_error, content_format)


# --- reasons -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    """Why the cells ``templates`` x ``variants`` differ. It explains a hunk whose vLLM side matches ``vllm`` and
    whose apply side matches ``apply`` (regular expressions, searched; empty matches anything). ``raises``:
    the reason is that this side raises (``"vllm"`` or ``"apply"``); its pattern is searched in the error."""

    text: str
    templates: tuple[str, ...]
    variants: tuple[str, ...] = ALL
    vllm: str = ""
    apply: str = ""
    raises: str | None = None
    flags: int = field(default=re.S)

    def explains(self, outcome: Outcome, hunk: tuple[str, str]) -> bool:
        side = {"vLLM raises": "vllm", "apply raises": "apply"}.get(outcome.kind)
        if side != self.raises:
            return False
        return bool(re.search(self.vllm, hunk[0], self.flags) and re.search(self.apply, hunk[1], self.flags))

    def covers(self, template: str, variant_name: str) -> bool:
        return template in self.templates and variant_name in self.variants


# vLLM's own doing: true whatever apply() renders.
REASONS: dict[str, Reason] = {}

# apply()'s rendering before the request normalisation: each should go stale when it lands, or move to REASONS.
PENDING: dict[str, Reason] = {}


def all_reasons() -> dict[str, Reason]:
    return {**REASONS, **PENDING}


def covering(template: str, variant_name: str) -> dict[str, Reason]:
    return {rid: r for rid, r in all_reasons().items() if r.covers(template, variant_name)}


def explained(template: str, variant_name: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The cell's hunks no covering reason explains, and how many hunks each covering reason explains."""
    result = outcome(template, variant_name)
    reasons = covering(template, variant_name)
    uses = dict.fromkeys(reasons, 0)
    unexplained = []
    for hunk in result.hunks:
        found = [rid for rid, r in reasons.items() if r.explains(result, hunk)]
        for rid in found:
            uses[rid] += 1
        if not found:
            unexplained.append(hunk)
    return unexplained, uses


# --- tests ---------------------------------------------------------------------------------------------------------

CELLS = [(t, v) for t in TEMPLATES for v in VARIANT_NAMES]


@pytest.mark.parametrize(("template", "variant_name"), CELLS, ids=[f"{t}-{v}" for t, v in CELLS])
def test_apply_renders_as_vllm(template: str, variant_name: str) -> None:
    result = outcome(template, variant_name)
    unexplained, uses = explained(template, variant_name)
    stale = sorted(rid for rid, n in uses.items() if n == 0)
    problems = [f"{result.kind}; content format {result.content_format}"]
    problems += [f"unexplained: vLLM {v!r} / apply {a!r}" for v, a in unexplained]
    problems += [f"stale reason {rid!r}: it explains nothing here" for rid in stale]
    assert not unexplained and not stale, "\n".join(problems)


def test_the_reasons_are_well_formed() -> None:
    assert not REASONS.keys() & PENDING.keys()
    for rid, reason in all_reasons().items():
        assert reason.vllm or reason.apply, f"{rid}: a reason names what it explains"
        assert reason.raises in (None, "vllm", "apply"), rid
        assert set(reason.templates) <= set(TEMPLATES), f"{rid}: {set(reason.templates) - set(TEMPLATES)}"
        assert set(reason.variants) <= set(VARIANT_NAMES), f"{rid}: {set(reason.variants) - set(VARIANT_NAMES)}"
        assert len(set(reason.templates)) == len(reason.templates), f"{rid}: a template listed twice"


@pytest.mark.parametrize("template", TEMPLATES)
def test_content_format_agrees_with_vllms_detector(template: str) -> None:
    try:
        from autoparser.requests import content_format  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        pytest.skip("autoparser.requests.content_format is not on this branch yet")
    source = ChatTemplate.load(template).source
    assert content_format(source) == _detect_content_format(source, default="string")


def test_the_harness_runs_vllms_media_path() -> None:
    """The image part is decoded and tracked: a ``{"type": "image"}`` part for a template that loops over content
    parts, the model's placeholder in front of the text for one that takes strings."""
    messages, tools = variant("image_parts").build()
    openai = vs.render_chat(vs.render_tokenizer(ChatTemplate.load("Qwen3.5-4B").source), messages, tools)
    assert openai.content_format == "openai"
    assert openai.mm_data is not None and len(openai.mm_data["image"]) == 1
    assert {"type": "image"} in openai.conversation[1]["content"]
    messages, tools = variant("image_parts").build()
    string = vs.render_chat(vs.render_tokenizer(ChatTemplate.load("Qwen-Qwen3-0.6B").source), messages, tools)
    assert string.content_format == "string"
    assert string.conversation[1]["content"] == "<image>\nWeather in Paris and Tokyo\nfor the next 2 days?"


# --- the parity table ----------------------------------------------------------------------------------------------


def _cell(template: str, variant_name: str) -> str:
    result = outcome(template, variant_name)
    kind = result.kind
    if kind == "same":
        return "✓"
    if kind == "both raise":
        return "both raise"
    _unexplained, uses = explained(template, variant_name)
    ids = [rid for rid, n in uses.items() if n] + (["?"] if _unexplained else [])
    return f"{kind} ({', '.join(ids)})"


def _rows() -> Iterator[str]:
    yield "| template | " + " | ".join(VARIANT_NAMES) + " |"
    yield "|---|" + "---|" * len(VARIANT_NAMES)
    for template in TEMPLATES:
        yield f"| {template} | " + " | ".join(_cell(template, v) for v in VARIANT_NAMES) + " |"


def parity_table() -> str:
    """Markdown: templates x variants (✓ = byte-identical), the reasons by id, and what both sides raise."""
    lines = list(_rows())
    counts: dict[str, int] = {}
    for template, variant_name in CELLS:
        kind = outcome(template, variant_name).kind
        counts[kind] = counts.get(kind, 0) + 1
    lines += ["", ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items())), ""]
    sections = (("Reasons (vLLM's own doing)", REASONS), ("Pending (apply() before the normalisation)", PENDING))
    for title, table in sections:
        lines += [f"**{title}**", ""]
        lines += [f"- `{rid}`: {reason.text}" for rid, reason in table.items()]
        lines.append("")
    lines += ["**Both raise** (vLLM / apply)", ""]
    for template in TEMPLATES:
        for variant_name in VARIANT_NAMES:
            result = outcome(template, variant_name)
            if result.kind == "both raise":
                lines.append(f"- {template} / {variant_name}: {result.vllm_error} / {result.apply_error}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(parity_table())
