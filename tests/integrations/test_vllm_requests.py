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
    only: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a template's own variants, instead of variants
    flags: int = re.S

    def explains(self, outcome: Outcome, hunk: tuple[str, str]) -> bool:
        side = {"vLLM raises": "vllm", "apply raises": "apply"}.get(outcome.kind)
        if side != self.raises:
            return False
        return bool(re.search(self.vllm, hunk[0], self.flags) and re.search(self.apply, hunk[1], self.flags))

    def covers(self, template: str, variant_name: str) -> bool:
        return template in self.templates and variant_name in self.only.get(template, self.variants)


EMPTY = r"\A\Z"
BASE_TOOLS = tuple(v for v in VARIANT_NAMES if v not in ("complete_tools", "plain"))  # tools without optional fields
COMPLETE_TOOLS = ("complete_tools", "plain")  # tools with every field, description after parameters
PARTS = tuple(v for v in VARIANT_NAMES if v != "plain")  # requests with text parts
SINGLE = ("single_call",)

# vLLM's own doing: true whatever apply() renders.
REASONS: dict[str, Reason] = {
    "none-as-null": Reason(
        "vLLM hands templates its own dump of each tool (`[tool.model_dump() for tool in request.tools]`), so a "
        'tool sent without `description` or `parameters` arrives with `"description": None` / `"parameters": None`; '
        "templates printing tools as JSON (`{{ tool | tojson }}`, `{{ tool.function | tojson }}`, `{{ tools | "
        'tojson }}`, Llama\'s `{{- t | tojson(indent=4) }}`) print `"description": null`, `"parameters": null` '
        "where apply() prints the tool as the client sent it.",
        (
            "EssentialAI-rnj-1-instruct",
            "GLM-4.6",
            "GLM-4.7-Flash",
            "GLM-5.2",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
            "MiniMax-M2",
            "MiniMax-M3",
            "Qwen3.5-4B",
            "Reka-Edge",
            "Spark2.5",
            "StepFun3.5-Flash",
            "deepseek-ai-DeepSeek-V4",
            "ibm-granite-granite-4.0",
            "meta-llama-Llama-3.1-8B-Instruct",
            "meta-llama-Llama-3.2-3B-Instruct",
            "meta-llama-Llama-3.3-70B-Instruct",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "mistralai-Ministral-3-14B-Reasoning-2512",
            "moonshotai-Kimi-K2",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
            "stepfun-ai-Step-3.5-Flash",
        ),
        BASE_TOOLS,
        vllm=r'(description|parameters)"?: null',
        apply=EMPTY,
        only={  # the other variants raise on both sides, or on apply()'s (see PENDING)
            "Spark2.5": tuple(v for v in BASE_TOOLS if v != "image_parts"),
            "deepseek-ai-DeepSeek-V4": SINGLE,
            "meta-llama-Llama-3.1-8B-Instruct": SINGLE,
            "meta-llama-Llama-3.2-3B-Instruct": SINGLE,
            "meta-llama-Llama-3.3-70B-Instruct": SINGLE,
        },
    ),
    "none-as-text": Reason(
        "The same `None` description and parameters (see `none-as-null`) printed as text: Apriel's `{{ tool|string "
        "}}` prints `'description': None` and `'parameters': None`; Gemma 4's `{description:<|\"|>{{- "
        "tool_data['function']['description'] -}}<|\"|>` prints `None` (apply(): nothing); Nemotron 3 Nano's `{%- if "
        "tool.description is defined %}` holds for `None`, so `'\\n<description>' ~ (tool.description | trim)` "
        "prints `<description>None</description>` (apply(): no description line).",
        (
            "Apriel-1.6-15b-Thinker-fixed",
            "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "unsloth-Apriel-1.5",
        ),
        BASE_TOOLS,
        vllm=r"\bNone\b",
        apply=EMPTY,
    ),
    "key-order": Reason(
        "vLLM's dump orders a function's fields as its model declares them: `name`, `description`, `parameters`. "
        "The complete tools give `description` after `parameters`, and templates that print a tool as JSON or as a "
        "Python dict (`{{ tool | tojson }}`, `{{ tool|string }}`, `{{ tools | tojson }}`) keep the order they get: "
        'vLLM\'s prompt has `"description": "Get the weather forecast for a city."` before the parameters, '
        "apply()'s after them.",
        (
            "Apriel-1.6-15b-Thinker-fixed",
            "Bielik-11B-v3.0-Instruct",
            "EssentialAI-rnj-1-instruct",
            "GLM-4.6",
            "GLM-4.7-Flash",
            "GLM-5.2",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
            "MadeAgents-Hammer2.1",
            "MiMo-VL",
            "MiniMax-M2",
            "MiniMax-M3",
            "NVIDIA-Nemotron-Nano-v2",
            "NousResearch-Hermes-4-14B",
            "Qwen-QwQ-32B",
            "Qwen-Qwen2.5-7B-Instruct",
            "Qwen-Qwen3-0.6B",
            "Qwen3.5-4B",
            "Reka-Edge",
            "Spark2.5",
            "StepFun3.5-Flash",
            "deepseek-ai-DeepSeek-V3.2",
            "deepseek-ai-DeepSeek-V4",
            "ibm-granite-granite-3.3-2B-Instruct",
            "ibm-granite-granite-4.0",
            "inclusionai-ling-3.0-flash",
            "meetkai-functionary-medium-v3.1",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "mistralai-Ministral-3-14B-Reasoning-2512",
            "moonshotai-Kimi-K2",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
            "nvidia-Nemotron-Mini-4B-Instruct",
            "stepfun-ai-Step-3.5-Flash",
            "unsloth-Apriel-1.5",
            "unsloth-mistral-Devstral-Small-2507",
            "upstage-Solar-Open-100B",
        ),
        COMPLETE_TOOLS,
        vllm=r"\A\Z|description.{0,12}Get the weather forecast",
        apply=r"\A\Z|description.{0,12}Get the weather forecast",
        only={  # complete_tools: apply() raises on the user's text parts (see PENDING)
            name: ("plain",)
            for name in (
                "Bielik-11B-v3.0-Instruct",
                "MadeAgents-Hammer2.1",
                "MiMo-VL",
                "NVIDIA-Nemotron-Nano-v2",
                "NousResearch-Hermes-4-14B",
                "Qwen-QwQ-32B",
                "Qwen-Qwen2.5-7B-Instruct",
                "Qwen-Qwen3-0.6B",
                "deepseek-ai-DeepSeek-V3.2",
                "deepseek-ai-DeepSeek-V4",
                "ibm-granite-granite-3.3-2B-Instruct",
                "inclusionai-ling-3.0-flash",
                "meetkai-functionary-medium-v3.1",
                "nvidia-Nemotron-Mini-4B-Instruct",
                "unsloth-mistral-Devstral-Small-2507",
                "upstage-Solar-Open-100B",
            )
        },
    ),
    "image-placeholder": Reason(
        "For a template vLLM detects as taking string content, `parse_chat_messages` replaces an image part with "
        "the model's placeholder (the harness's tiny Idefics3 has `<image>`; a real model has its own) in front of "
        "the joined text (`_get_full_multimodal_text_prompt`, `interleave_mm_strings` off): `<image>\\nWeather in "
        "Paris and Tokyo\\nfor the next 2 days?`. apply() knows no model.",
        (
            "EssentialAI-rnj-1-instruct",
            "GigaChat3-10B-A1.8B",
            "GigaChat3.1-10B-A1.8B",
            "HuggingFaceTB-SmolLM3-3B",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
            "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "llama-cpp-rwkv-world",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
        ),
        ("image_parts",),
        vllm=r"image>\n",
    ),
    "wrapped-content": Reason(
        "For a template vLLM detects as looping over content parts (format `openai`), `parse_chat_messages` turns "
        "every string content into `[{'type': 'text', 'text': ...}]`; where the template uses a content without "
        "checking for a list it gets the Python list: Gemma 4's system turn `{{- messages[0]['content'] | trim -}}` "
        "prints `[{'type': 'text', 'text': 'You are a weather assistant.'}]`, and its `{%- elif not "
        "(ns_tr_out.flag and not message.get('content')) -%}` takes the calling turn's `''` (a one-part list) as "
        "content and closes the turn with `<turn|>`; Llama 4's `{%- set first_user_message = "
        "messages[0]['content']|trim %}` prints the plain request's user string as a list (its newline as `\\n`); "
        "Kimi K2's `{%- if message['content'] -%}{{ message['content'] }}` prints the calling turn's `''` as "
        "`[{'type': 'text', 'text': ''}]`.",
        (
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "moonshotai-Kimi-K2",
        ),
        vllm=r"\[\{'type': 'text', 'text': '|'\}\]|\\n|<turn\|>",
        only={"meta-llama-Llama-4-Scout-17B-16E-Instruct": ("plain",), "moonshotai-Kimi-K2": ("plain",)},
    ),
    "wrapped-content-raises": Reason(
        "The same wrapping (see `wrapped-content`) where the template adds a string to the system content: "
        "Cogito's `{{- messages[0]['content'] + \"\\n\\n\" }}` fails on the list, and vLLM answers "
        '`can only concatenate list (not "str") to list`.',
        ("deepcogito-cogito-v1-preview-qwen-14B",),
        vllm=r'can only concatenate list \(not "str"\) to list',
        raises="vllm",
    ),
    "null-content-no-parts": Reason(
        "For a template vLLM detects as looping over content parts, `parse_chat_messages` turns `content: null` "
        "into no parts (`[]`): Devstral's assistant branch `{%- if message['content'] is string %}` ... `{%- else "
        "%}{{- message['content'][0]['text'] }}` fails with `list object has no element 0` (the plain request's "
        "`''` is one part, and renders).",
        ("unsloth-mistral-Devstral-Small-2507",),
        PARTS,
        vllm=r"list object has no element 0",
        raises="vllm",
    ),
    "tojson-generator": Reason(
        "vLLM renders with transformers' Jinja environment, whose `tojson` cannot serialise the generator `map` "
        "returns: `{{tools | map(attribute='function') | tojson(indent=2)}}` fails with `Object of type generator "
        "is not JSON serializable`; autoparser's `tojson` takes it as the list it stands for.",
        ("llama-cpp-deepseek-r1",),
        ("plain",),  # the others: apply() also raises, on the user's text parts
        vllm=r"Object of type generator is not JSON serializable",
        raises="vllm",
    ),
    "no-functions": Reason(
        'FireFunction\'s template reads a `functions` variable (`system_prompt_suffix + "\\n" + functions`), '
        "which its own serving stack supplied: vLLM passes none and answers `'functions' is undefined`; apply() "
        "passes the tools as that JSON.",
        ("fireworks-ai-llama-3-firefunction-v2",),
        vllm=r"'functions' is undefined",
        raises="vllm",
    ),
}

# apply()'s own doing before the request normalisation (autoparser.requests) lands: each should go stale with it
# (then delete it), or be kept on purpose (then say so in its text).
PENDING: dict[str, Reason] = {
    "thinking-default": Reason(
        "apply() passes `enable_thinking=True` (its default today); vLLM leaves the variable undefined, so the "
        "template's own default holds: Gemma 4's `{%- if enable_thinking is defined and enable_thinking -%}` "
        "(`<|think|>`, and `<|channel>thought\\n<channel|>` when off), Qwen-style `{%- if not enable_thinking -%}"
        "{{- '</think>' -}}`, Command R7B's `<|START_THINKING|><|END_THINKING|>`, DeepSeek's `{%- if not thinking "
        "is defined -%}{%- if enable_thinking is defined -%}`, LongCat's `/think_on`, Apertus's "
        "`enabled`/`disabled`, Bielik's thinking instruction and `<think>`, Reka's and RWKV's ` <think>`.",
        (
            "Apertus-8B-Instruct",
            "Bielik-11B-v3.0-Instruct",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            "Qwen-QwQ-32B",
            "Reka-Edge",
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            "deepseek-ai-DeepSeek-V3.1",
            "deepseek-ai-DeepSeek-V3.2",
            "deepseek-ai-DeepSeek-V4",
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "llama-cpp-rwkv-world",
            "meituan-longcat-LongCat-Flash-Chat",
        ),
        vllm=r"\A\Z|think|THINK|thought|disabled|\AASSISTANT:\Z|\A/\Z",
        apply=r"\A\Z|think|THINK|thought|enabled|Zanim",
        only={
            "Apertus-8B-Instruct": ("plain",),
            "Bielik-11B-v3.0-Instruct": ("plain",),
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use": COMPLETE_TOOLS,
            "Qwen-QwQ-32B": ("plain",),
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": ("plain",),
            "deepseek-ai-DeepSeek-V3.1": ("plain",),
            "deepseek-ai-DeepSeek-V3.2": ("plain",),
            "deepseek-ai-DeepSeek-V4": ("single_call", "plain"),
            "meituan-longcat-LongCat-Flash-Chat": COMPLETE_TOOLS,
        },
    ),
    "date-string": Reason(
        "apply() passes today's `date_string`; vLLM passes none, so Llama 3.1's `{%- if not date_string is defined "
        '%}{%- set date_string = "26 Jul 2024" %}` holds.',
        ("meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.3-70B-Instruct"),
        SINGLE,
        vllm=r"26 Jul 2024",
    ),
    "text-parts-printed": Reason(
        "apply() passes text parts as the client sent them (a list); vLLM joins them with `\\n` (every message for "
        "a template taking strings, tool messages for every template). Templates print the list: as a Python list "
        "(`{{ message['content'] }}`, `message['content']|trim`), as JSON (LFM2's `content | tojson`, K-EXAONE's "
        "`msg.content | tojson`), or part by part as dicts (GLM's `{{ tr.output if tr.output is defined else tr "
        "}}`).",
        (
            "CohereForAI-c4ai-command-r-plus-tool_use",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            "GLM-4.6",
            "GLM-4.7-Flash",
            "GigaChat3-10B-A1.8B",
            "GigaChat3.1-10B-A1.8B",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
            "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "Spark2.5",
            "deepseek-ai-DeepSeek-V4",
            "llama-cpp-rwkv-world",
            "meituan-longcat-LongCat-Flash-Chat",
            "meta-llama-Llama-3.1-8B-Instruct",
            "meta-llama-Llama-3.2-3B-Instruct",
            "meta-llama-Llama-3.3-70B-Instruct",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "mistralai-Ministral-3-14B-Reasoning-2512",
            "moonshotai-Kimi-K2",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
        ),
        PARTS,
        apply=r"""\{['"]type['"]: ['"](text|image_url)['"]|\A['"]?\}\]?\Z""",
        only={
            "CohereForAI-c4ai-command-r-plus-tool_use": ("complete_tools",),
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use": ("complete_tools",),
            "GLM-4.6": tuple(v for v in PARTS if v != "single_call"),
            "GLM-4.7-Flash": tuple(v for v in PARTS if v != "single_call"),
            "LGAI-EXAONE-K-EXAONE-236B-A23B": tuple(v for v in PARTS if v != "single_call"),
            "Spark2.5": tuple(v for v in PARTS if v not in ("single_call", "image_parts")),
            "deepseek-ai-DeepSeek-V4": SINGLE,
            "meituan-longcat-LongCat-Flash-Chat": ("complete_tools",),
            "meta-llama-Llama-3.1-8B-Instruct": SINGLE,
            "meta-llama-Llama-3.2-3B-Instruct": SINGLE,
            "meta-llama-Llama-3.3-70B-Instruct": SINGLE,
            "meta-llama-Llama-4-Scout-17B-16E-Instruct": tuple(v for v in PARTS if v != "single_call"),
            "mistralai-Ministral-3-14B-Reasoning-2512": tuple(v for v in PARTS if v != "single_call"),
            "moonshotai-Kimi-K2": tuple(v for v in PARTS if v != "single_call"),
        },
    ),
    "text-parts-raise": Reason(
        "The same text parts (see `text-parts-printed`) where the template takes the content as a string: "
        "`'<|im_start|>' + message.role + '\\n' + message.content` and the like fail with `can only concatenate str "
        "(not \"list\") to str`, `message['content'].strip()` with `'list object' has no attribute 'strip'`, "
        'Apertus\'s `{{- raise_exception("Invalid user message: " + message.role) -}}`.',
        (
            "Apertus-8B-Instruct",
            "Bielik-11B-v3.0-Instruct",
            "ByteDance-Seed-OSS",
            "LGAI-EXAONE-EXAONE-Deep-32B",
            "MadeAgents-Hammer2.1",
            "MiMo-VL",
            "NVIDIA-Nemotron-Nano-v2",
            "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            "NousResearch-Hermes-4-14B",
            "Qwen-QwQ-32B",
            "Qwen-Qwen2.5-7B-Instruct",
            "Qwen-Qwen3-0.6B",
            "Qwen3-Coder",
            "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            "deepseek-ai-DeepSeek-V3.1",
            "deepseek-ai-DeepSeek-V3.2",
            "deepseek-ai-DeepSeek-V4",
            "ibm-granite-granite-3.3-2B-Instruct",
            "inclusionai-ling-3.0-flash",
            "meetkai-functionary-medium-v3.1",
            "microsoft-Phi-3.5-mini-instruct",
            "microsoft-Phi-4-reasoning",
            "nvidia-Nemotron-Mini-4B-Instruct",
            "openai-gpt-oss-120b",
            "openbmb-MiniCPM3-4B",
            "upstage-Solar-Open-100B",
        ),
        PARTS,
        apply=r"""not "list"|'list object'|Invalid user message""",
        raises="apply",
        only={  # the other variants raise on both sides (tools without description or parameters)
            name: ("complete_tools",)
            for name in (
                "Apertus-8B-Instruct",
                "ByteDance-Seed-OSS",
                "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
                "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
                "meetkai-functionary-medium-v3.1",
                "openai-gpt-oss-120b",
            )
        }
        | {"deepseek-ai-DeepSeek-V4": tuple(v for v in PARTS if v != "single_call")},
    ),
    "text-parts-dropped": Reason(
        "The same text parts (see `text-parts-printed`) where the template keeps string content only: SmolLM3's "
        '`{%- set content = message.content if message.content is string else "" -%}` renders the user\'s turn '
        "(and a tool result) empty.",
        ("EssentialAI-rnj-1-instruct", "HuggingFaceTB-SmolLM3-3B"),
        PARTS,
        vllm=r"Weather in Paris|light rain",
        apply=EMPTY,
    ),
    "text-parts-joined": Reason(
        "The same text parts (see `text-parts-printed`) where the template has a list path of its own, unlike "
        "vLLM's `\\n`-joined string: K-EXAONE joins the parts with nothing (`Tokyofor`), MiniMax M2's tool branch "
        "`{%- for tr in message.content -%}` closes each part with `'\\n</response>'`, GLM 4.6/4.7's "
        "`<|observation|>{% for tr in m.content %}` opens the observation again.",
        ("GLM-4.6", "GLM-4.7-Flash", "LGAI-EXAONE-K-EXAONE-236B-A23B", "MiniMax-M2"),
        tuple(v for v in PARTS if v != "single_call"),
        vllm=r"Tokyo\nfor|\A\Z|\Atool_response>\Z",
        apply=r"Tokyofor|\A\n\Z|\|observation\|>",
    ),
    "image-part": Reason(
        "vLLM turns an `image_url` part into `{'type': 'image'}` (what HF templates take); apply() passes the "
        "`image_url` part, which these templates skip (`{%- elif item['type'] == 'image' -%}`): vLLM's prompt has "
        "the template's image token (`Tokyo<im_patch>for`, `<|image|>`, `]<]image[>[`), Llama 4's printed list "
        "`{'type': 'image'}` where apply()'s has the whole `image_url` part.",
        (
            "MiniMax-M3",
            "StepFun3.5-Flash",
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "stepfun-ai-Step-3.5-Flash",
        ),
        ("image_parts",),
        vllm=r"<im_patch>|<\|image\|>|\]<\]image\[>\[|\Aimage'\Z",
        apply=r"\ATokyofor\Z|image_url",
    ),
    "null-content": Reason(
        "For a template taking strings vLLM turns `content: null` into `''`; apply() passes `None`: LFM2's `{%- if "
        "content is not string -%}{%- set content = content | tojson -%}` prints `null`, RWKV's `{%- if "
        "message['role'] == 'assistant' and message['content'] is  not none -%}` skips the calling turn.",
        ("LFM2-8B-A1B", "LFM2.5-Instruct", "llama-cpp-rwkv-world"),
        (*BASE_TOOLS, "complete_tools"),
        vllm=r"\A\Z|\n\nAssistant: \Z",
        apply=r"\Anull\Z|'\}\]\Z",
    ),
    "system-folded": Reason(
        "Phi-4-reasoning's template has no system turn (it prints its own and loops over user and assistant "
        "messages only): vLLM's prompt drops the system message, apply() folds it into the first user message.",
        ("microsoft-Phi-4-reasoning",),
        ("plain",),
        apply=r"You are a weather assistant",
    ),
    "reasoning-block": Reason(
        "apply() hands past reasoning to Ministral as a typed content block (`{%- elif block['type'] == "
        "'thinking' %}{{- '[THINK]' + block['thinking'] + '[/THINK]' }}`); vLLM passes it as `reasoning` / "
        "`reasoning_content`, which this template does not read.",
        ("mistralai-Ministral-3-14B-Reasoning-2512",),
        ("full", "single_call", "image_parts", "complete_tools", "foreign_ids", "developer"),
        vllm=EMPTY,
        apply=r"THINK\]",
    ),
    "arguments-dict": Reason(
        "vLLM parses a call's JSON-string `arguments` into a dict (`_postprocess_messages`); functionary v3.2 "
        "concatenates them as a string (`'>>>' + tool_call['function']['name'] + '\\n' + "
        "tool_call['function']['arguments']`) and fails on the dict, where apply() passes the client's string.",
        ("meetkai-functionary-medium-v3.2",),
        ("plain",),
        vllm=r'not "dict"',
        raises="vllm",
    ),
    "missing-tool-fields": Reason(
        "apply() passes the tools as the client sent them, without `description` / `parameters`; these templates "
        "read both (Command A's `\"parameters\": {{ tool['function']['parameters']|tojson }}`, Command R+'s "
        "`tool.parameter_definitions`) and fail on the undefined value, where vLLM's `None` renders (see "
        "`none-as-null`).",
        (
            "Cohere2MoE",
            "CohereForAI-c4ai-command-r-plus-tool_use",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
        ),
        BASE_TOOLS,
        apply=r"Undefined is not JSON serializable|has no attribute '(parameters|description)'",
        raises="apply",
    ),
}


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
