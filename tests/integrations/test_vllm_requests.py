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

Each reason says whose doing the difference is (``by``): vLLM's (what its serving does to a request: tools dumped
with ``None`` fields, contents wrapped as parts, null contents turned into ``''`` or ``[]``, arguments parsed, a
call's fields in the order of OpenAI's type, a model's image placeholder) or autoparser's (a deliberate choice of the
request normalisation, ``autoparser.requests``: call ids mapped, past reasoning as a thinking block or under
``thinking`` too, request data printed as JSON, a tool result as a list where the template iterates over it, image
parts a template cannot show refused).

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
from pathlib import Path

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
        """What needs a reason: the diff's hunks, or one pair of the raising side's error and the other's prompt."""
        kind = self.kind
        if kind == "differs":
            assert self.vllm is not None and self.apply is not None
            return hunks(self.vllm, self.apply)
        if kind == "vLLM raises":
            return [(self.vllm_error or "", self.apply or "")]
        if kind == "apply raises":
            return [(self.vllm or "", self.apply_error or "")]
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
    the reason is that this side raises (``"vllm"`` or ``"apply"``); its pattern is searched in the error, the
    other's in the other side's prompt."""

    text: str
    templates: tuple[str, ...]
    variants: tuple[str, ...] = ALL
    vllm: str = ""
    apply: str = ""
    raises: str | None = None
    only: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a template's own variants, instead of variants
    by: str = "vLLM"  # whose doing the difference is: "vLLM" (what it does to a request) or "autoparser" (a choice)
    flags: int = re.S

    def explains(self, outcome: Outcome, hunk: tuple[str, str]) -> bool:
        side = {"vLLM raises": "vllm", "apply raises": "apply"}.get(outcome.kind)
        if side != self.raises:
            return False
        return bool(re.search(self.vllm, hunk[0], self.flags) and re.search(self.apply, hunk[1], self.flags))

    def covers(self, template: str, variant_name: str) -> bool:
        return template in self.templates and variant_name in self.only.get(template, self.variants)


EMPTY = r"\A\Z"
NO_IMAGE = tuple(v for v in VARIANT_NAMES if v != "image_parts")
BASE_TOOLS = tuple(v for v in VARIANT_NAMES if v not in ("complete_tools", "plain"))  # tools without optional fields
BASE_TEXT = tuple(v for v in BASE_TOOLS if v != "image_parts")  # the same, for templates that refuse the image
COMPLETE_TOOLS = ("complete_tools", "plain")  # every field given
NULL_CONTENT = tuple(v for v in NO_IMAGE if v not in ("content_with_calls", "plain"))  # the calling turn's is null
SINGLE = ("single_call",)
AUTOPARSER_DEFAULTS = r'\A\Z|\A\{"type": "object", "properties": \{\}\}\Z'  # "" and parameters taking nothing

REASONS: dict[str, Reason] = {
    # --- tools --------------------------------------------------------------------------------------------------
    "none-as-null": Reason(
        "vLLM hands templates its own dump of each tool (`[tool.model_dump() for tool in request.tools]`), so a "
        'tool sent without `description` or `parameters` arrives with `"description": None` / `"parameters": None`; '
        "templates printing tools as JSON (`{{ tool | tojson }}`, `{{ tool.function | tojson }}`, `{{ tools | "
        "tojson }}`, Llama's and Cogito's `{{- t | tojson(indent=4) }}`, Kimi K2 Thinking's `{{ tools | "
        "tojson(separators=(',', ':')) }}`, Kimi K3's own `json_sorted(tool_list)` macro, mistral.rs's Mistral Nemo "
        '`\'"\' + key + \'": \' + val|tojson` for each field) print `"description": null`, `"parameters": null` '
        "where apply() prints the tool as the client sent it.",
        (
            "Bielik-11B-v3.0-Instruct",
            "EssentialAI-rnj-1-instruct",
            "GLM-4.6",
            "GLM-4.7-Flash",
            "GLM-5.2",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
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
            "axolotl-exaone4",
            "axolotl-falcon_h1",
            "deepseek-ai-DeepSeek-V3.2",
            "deepseek-ai-DeepSeek-V4",
            "hfjs-LiquidAI-LFM2.5-VL-450M",
            "hfjs-moonshotai-Kimi-K2-Thinking",
            "ibm-granite-granite-3.3-2B-Instruct",
            "ibm-granite-granite-4.0",
            "inclusionai-ling-3.0-flash",
            "llamacpp-Kimi-K3",
            "meta-llama-Llama-3.1-8B-Instruct",
            "meta-llama-Llama-3.2-3B-Instruct",
            "meta-llama-Llama-3.3-70B-Instruct",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "mistralai-Ministral-3-14B-Reasoning-2512",
            "mistralrs-mistral_nemo_tool_call",
            "moonshotai-Kimi-K2",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
            "nvidia-Nemotron-Mini-4B-Instruct",
            "ollama-cogito-3b",
            "ollama-granite3-dense-2b",
            "ollama-qwen3-next-80b",
            "ollama-testdata-laguna_v8",
            "stepfun-ai-Step-3.5-Flash",
            "trl-qwen3_instruct_2507",
            "unsloth-mistral-Devstral-Small-2507",
            "upstage-Solar-Open-100B",
            "vllm-template_minicpmv45",
            "vllm-tool_chat_template_granite",
            "vllm-tool_chat_template_llama4_json",
            "vllm-tool_chat_template_mistral3",
            "vllm-tool_chat_template_mistral_parallel",
            "vllm-tool_chat_template_qwen2_5_coder",
            "vllm-tool_chat_template_xlam_qwen",
        ),
        BASE_TEXT,
        vllm=r'(description|parameters)"?: ?null',
        apply=EMPTY,
        only={
            **dict.fromkeys(
                (
                    "GLM-5.2",
                    "MiniMax-M3",
                    "Qwen3.5-4B",
                    "Reka-Edge",
                    "StepFun3.5-Flash",
                    "hfjs-LiquidAI-LFM2.5-VL-450M",
                    "mistralai-Ministral-3-14B-Reasoning-2512",
                    "moonshotai-Kimi-K2",
                    "stepfun-ai-Step-3.5-Flash",
                    "vllm-tool_chat_template_llama4_json",
                    "vllm-tool_chat_template_mistral3",
                ),
                BASE_TOOLS,  # templates with a place for the image
            ),
            # one call only: the others raise on both sides ("This model only supports single tool-calls at once!")
            "meta-llama-Llama-3.1-8B-Instruct": SINGLE,
            "meta-llama-Llama-3.2-3B-Instruct": SINGLE,
            "meta-llama-Llama-3.3-70B-Instruct": SINGLE,
            "unsloth-mistral-Devstral-Small-2507": ("content_with_calls",),  # see null-content-no-parts
        },
    ),
    "none-as-text": Reason(
        "The same `None` description and parameters (see `none-as-null`) printed as text: Gemma 4's and "
        "DiffusionGemma's `{description:<|\"|>{{- tool_data['function']['description'] -}}<|\"|>`, Command R+'s and "
        "MiniCPM3's `{{- tool.description }}` print `None`; Nemotron 3 Nano's (and Ollama's copy) and Qwen3-Coder's "
        "`{%- if tool.description is defined %}` holds for `None`, so `'\\n<description>' ~ (tool.description | "
        "trim)` prints `<description>None</description>`; Command A's, Command A Reasoning's and Command R7B's "
        '`"description": "{{ tool[\'function\'][\'description\'] }}", "parameters": {{ '
        "tool['function']['parameters']|tojson }}` print `\"None\"` and `null`. apply() prints nothing there, or "
        'the defaults it gives a template that cannot do without (`""`, `{"type": "object", "properties": {}}`).',
        (
            "Cohere2MoE",
            "CohereForAI-c4ai-command-r-plus-tool_use",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "Qwen3-Coder",
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "hfjs-CohereLabs-command-a-reasoning-08-2025",
            "ollama-testdata-nemotron3nano",
            "openbmb-MiniCPM3-4B",
            "trl-diffusion_gemma",
        ),
        BASE_TEXT,
        vllm=r"\bNone\b|\Anull\Z",
        apply=AUTOPARSER_DEFAULTS,
        only={
            **dict.fromkeys(
                (
                    "Cohere2MoE",
                    "google-gemma-4-31B-it",
                    "google-gemma-4-31B-it-interleaved",
                    "ollama-testdata-nemotron3nano",
                    "trl-diffusion_gemma",
                ),
                BASE_TOOLS,
            ),
            # the others: vLLM raises first (null-content-no-parts)
            "hfjs-CohereLabs-command-a-reasoning-08-2025": ("content_with_calls",),
        },
    ),
    "tools-as-json": Reason(
        "Templates that print the tool list as text (Apriel's `{% for tool in tools %}{{ tool|string }}{% endfor "
        "%}`, Hammer's `{{- tools|string }}`, SmolLM3's (Hugging Face's revision) `(tool | string)`): vLLM's dicts "
        "print as Python reprs (`{'type': 'function', 'function': {'name': 'get_weather', 'description': None, ...`, "
        "its `None` fields included, see `none-as-null`), apply() hands over request data that prints as JSON "
        '(`{"type": "function", "function": {"name": "get_weather", ...`, the tool as sent), as every tool list the '
        "model saw in training was.",
        (
            "Apriel-1.6-15b-Thinker-fixed",
            "MadeAgents-Hammer2.1",
            "hfjs-HuggingFaceTB-SmolLM3-3B",
            "unsloth-Apriel-1.5",
        ),
        NO_IMAGE,
        vllm=r"\A[^\"]*'[^\"]*\Z",  # Python's quotes (and None) ...
        apply=r"\A[^']*\"[^']*\Z",  # ... where JSON's are
        only=dict.fromkeys(("Apriel-1.6-15b-Thinker-fixed", "unsloth-Apriel-1.5"), ALL),  # a place for the image
        by="autoparser",
    ),
    "none-raises": Reason(
        "The same `None` (see `none-as-null`) where the template adds the description to a string or reads the "
        "parameters' properties: Hermes 2/3 Pro's `{{- \" - \" + tool.description + ...`, Apertus's and gpt-oss's "
        '`{{- "// " + tool.description + "\\n" }}`, LongCat\'s `"Description: " + tool.function.description`, '
        'functionary v3.1\'s `"\' to \'"|safe + t["function"]["description"]`, functionary v3.2\'s '
        "`function.get('description', '')` (the key is there, with `None`), Seed-OSS's "
        "`item.function.parameters.properties.items()`, vLLM's own DeepSeek V3.1 tool template's `'\\nDescription: ' "
        "+ tool.function.description`: vLLM answers 400, apply() renders the tool as sent (or with its defaults).",
        (
            "Apertus-8B-Instruct",
            "ByteDance-Seed-OSS",
            "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            "meetkai-functionary-medium-v3.1",
            "meetkai-functionary-medium-v3.2",
            "meituan-longcat-LongCat-Flash-Chat",
            "openai-gpt-oss-120b",
            "vllm-tool_chat_template_deepseekv31",
        ),
        BASE_TEXT,
        vllm=r"NoneType|'None' has no attribute",
        raises="vllm",
        # content_with_calls: both raise (the template refuses content next to reasoning in a calling turn)
        only={"openai-gpt-oss-120b": tuple(v for v in BASE_TEXT if v != "content_with_calls")},
    ),
    "no-functions": Reason(
        'FireFunction\'s template reads a `functions` variable (`system_prompt_suffix + "\\n" + functions`), '
        "which its own serving stack supplied: vLLM passes none and answers `'functions' is undefined`; apply() "
        "passes the tools as that JSON.",
        ("fireworks-ai-llama-3-firefunction-v2",),
        NO_IMAGE,
        vllm=r"'functions' is undefined",
        apply=r"Available functions as JSON spec:\n\[",
        raises="vllm",
    ),
    "tojson-generator": Reason(
        "vLLM renders with transformers' Jinja environment, whose `tojson` cannot serialise the generator `map` "
        "returns: `{{tools | map(attribute='function') | tojson(indent=2)}}` fails with `Object of type generator "
        "is not JSON serializable`; autoparser's `tojson` takes it as the list it stands for.",
        ("llama-cpp-deepseek-r1",),
        NO_IMAGE,
        vllm=r"Object of type generator is not JSON serializable",
        apply=r'function tools to satisfy the user\'s requests: \[\n  \{\n    "name": "get_weather"',
        raises="vllm",
    ),
    # --- messages -----------------------------------------------------------------------------------------------
    "wrapped-content": Reason(
        "For a template vLLM detects as looping over content parts (format `openai`), `parse_chat_messages` hands "
        "over every content as parts, wrapping a string as `[{'type': 'text', 'text': ...}]`; where the template "
        "uses a content without checking for a list it prints the Python list: Gemma 4's system turn `{{- "
        "messages[0]['content'] | trim -}}` prints `[{'type': 'text', 'text': 'You are a weather assistant.'}]`; "
        "Kimi K2's calling turn `{%- if message['content'] -%}{{ message['content'] }}` prints its parts (and the "
        "plain request's `''` as `[{'type': 'text', 'text': ''}]`); Cogito's (Ollama's) `{%- set system_message = "
        "messages[0]['content']|trim %}` prints the system parts; Llama 4's tool preamble `{%- set "
        "first_user_message = messages[0]['content']|trim %}` prints the user's parts (their separator where apply() "
        "joins them with a newline, and the newline of a string escaped: `\\n`); Nemotron 3 Nano's (Ollama's "
        "copy) `{%- set sys_content = system_message | string %}` prints the system parts, and its answers, skipping "
        '`{%- if content is string -%}` ... `{%- set content = "<think></think>" ~ content -%}` for the list, '
        "print `content | default('', true) | string` without the empty thinking block (and the plain request's "
        "calling turn without the newline after it). apply() gives these roles strings.",
        (
            "google-gemma-4-31B-it",
            "google-gemma-4-31B-it-interleaved",
            "meta-llama-Llama-4-Scout-17B-16E-Instruct",
            "moonshotai-Kimi-K2",
            "ollama-cogito-3b",
            "ollama-testdata-nemotron3nano",
        ),
        vllm=r"\{'type': 'text', 'text': '|'\}\]|\A\\n|\A\Z",
        apply=r"\A(\n?|\nfor|<think></think>)\Z",  # (\nfor: Llama 4's escaped newline; \n: Nemotron's newline)
        only={
            "meta-llama-Llama-4-Scout-17B-16E-Instruct": NO_IMAGE,  # image_parts: see image-in-repr
            "moonshotai-Kimi-K2": ("content_with_calls", "plain"),
            "ollama-cogito-3b": NO_IMAGE,  # image_parts: see image-dropped
        },
    ),
    "wrapped-content-raises": Reason(
        "The same wrapping (see `wrapped-content`) where the template adds a string to the system content: "
        "Cogito's `{{- messages[0]['content'] + \"\\n\\n\" }}` fails on the list, and vLLM answers "
        '`can only concatenate list (not "str") to list`.',
        ("deepcogito-cogito-v1-preview-qwen-14B",),
        NO_IMAGE,
        vllm=r'can only concatenate list \(not "str"\) to list',
        apply=r"You are a weather assistant\.",
        raises="vllm",
    ),
    "null-content-no-parts": Reason(
        "For a template vLLM detects as looping over content parts, `parse_chat_messages` turns `content: null` "
        "into no parts (`[]`): Devstral's assistant branch `{%- if message['content'] is string %}` ... `{%- else "
        "%}{{- message['content'][0]['text'] }}` fails with `list object has no element 0` (the calling turn of "
        "content_with_calls and plain has a part, and renders); Command A Reasoning's calling turn `{% elif "
        "message.thinking or message.content[0].thinking %}` fails the same way, the reasoning being under vLLM's "
        "`reasoning` / `reasoning_content`, not `thinking` (see `thinking-alias`).",
        ("hfjs-CohereLabs-command-a-reasoning-08-2025", "unsloth-mistral-Devstral-Small-2507"),
        tuple(v for v in VARIANT_NAMES if v not in ("content_with_calls", "plain")),
        # no_reasoning: both raise (apply's '' fails the same way: see empty-content-indexed)
        only={
            "hfjs-CohereLabs-command-a-reasoning-08-2025": tuple(
                v for v in VARIANT_NAMES if v not in ("no_reasoning", "content_with_calls", "plain")
            )
        },
        vllm=r"list object has no element 0",
        raises="vllm",
    ),
    "null-content-empty-turn": Reason(
        "For a template taking strings vLLM turns the calling turn's `content: null` into `''`, which these "
        "templates (showing no calls of past turns) render as an empty assistant turn: DeepSeek-R1-Distill-Qwen's "
        "`{%- if message['role'] == 'assistant' and message['content'] is not none -%}` ... "
        "`{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}`, RWKV's `{%- if message['role'] == 'assistant' "
        "and message['content'] is  not none -%}` ... `'Assistant: ' + content|trim + '\\n\\n'`; apply() keeps "
        "the `None` and the turn is left out.",
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "llama-cpp-rwkv-world"),
        NULL_CONTENT,
        vllm=r"Assistant",
        apply=EMPTY,
    ),
    "arguments-dict": Reason(
        "vLLM parses a call's JSON-string `arguments` into a dict (`_postprocess_messages`); templates that add "
        "them to a string fail on the dict: functionary v3.2's `'>>>' + tool_call['function']['name'] + '\\n' + "
        "tool_call['function']['arguments']`, functionary v2.2's `'<|from|>assistant\\n<|recipient|>' + "
        "tool_call['function']['name'] + '\\n<|content|>' + tool_call['function']['arguments']`, R1 1776's "
        "(Ollama's) `'```json' + '\\n' + tool['function']['arguments']`; apply() hands a template that reads "
        "arguments as text the client's JSON text.",
        ("hfjs-meetkai-functionary-medium-v2.2", "meetkai-functionary-medium-v3.2", "ollama-r1-1776-671b"),
        NO_IMAGE,
        vllm=r'can only concatenate str \(not "dict"\) to str',
        apply=r"(>>>|<\|recipient\|>|<｜tool▁sep｜>)get_weather\n(<\|content\|>|```json\n)?"
        r'\{"city": "Paris", "days": 2\}',
        raises="vllm",
        # the others: vLLM fails on the None description first (none-raises)
        only={"meetkai-functionary-medium-v3.2": COMPLETE_TOOLS},
    ),
    "call-key-order": Reason(
        "vLLM validates each past call into OpenAI's typed message, whose `Function` declares `arguments` before "
        "`name`, and hands the template that order; a template that prints a call's function object whole prints "
        "the arguments first: Cogito's (Ollama's), mistral.rs's Mistral Nemo and vLLM's own Mistral and xLAM "
        "templates' `{%- set out = tool_call.function|tojson %}`, vLLM's own Granite template's "
        "`message.tool_calls|map(attribute='function')|list|tojson(indent=4)` print `{\"arguments\": {...}, "
        '"name": "get_weather"}`; apply() keeps the order the client sent (`name`, then `arguments`). The hunks '
        "are the name moving and the brackets and commas around it.",
        (
            "mistralrs-mistral_nemo_tool_call",
            "ollama-cogito-3b",
            "vllm-tool_chat_template_granite",
            "vllm-tool_chat_template_mistral3",
            "vllm-tool_chat_template_mistral_parallel",
            "vllm-tool_chat_template_xlam_qwen",
        ),
        NO_IMAGE,
        vllm=r'name": "get_weather"|\A[\s,{}]*\Z',
        apply=r'name": "get_weather"|\A[\s,{}]*\Z',
        only={"vllm-tool_chat_template_mistral3": ALL},  # it has a place for the image
    ),
    "call-ids": Reason(
        "Mistral's templates reject a call id that is not 9 alphanumerics (`{%- if not tool_call.id is defined or "
        'tool_call.id|length != 9 %}{{- raise_exception("Tool call IDs should be alphanumeric strings with length '
        "9!\") }}`); vLLM passes the client's ids (its `truncate_tool_call_ids` runs only in its Mistral tokenizer "
        "mode) and answers 400, apply() maps them to ids of that shape, the same in the call and its result.",
        (
            "Mistral-Small-3.2-24B-Instruct-2506",
            "hfjs-mistralai-Mistral-Nemo-Instruct-2407-old",
            "mistralai-Mistral-Nemo-Instruct-2407",
        ),
        NO_IMAGE,
        vllm=r"Tool call IDs should be alphanumeric strings with length 9!",
        apply=r'("call_id": "|\[TOOL_RESULTS\])[A-Za-z0-9]{9}\b',
        raises="vllm",
        only={"Mistral-Small-3.2-24B-Instruct-2506": VARIANT_NAMES},  # it has a place for the image
        by="autoparser",
    ),
    "reasoning-block": Reason(
        "apply() hands past reasoning to Ministral as a typed content block, the only way this template shows it "
        "(`{%- elif block['type'] == 'thinking' %}{{- '[THINK]' + block['thinking'] + '[/THINK]' }}`); vLLM passes "
        "it as `reasoning` / `reasoning_content`, which the template does not read, and the reasoning is lost.",
        ("mistralai-Ministral-3-14B-Reasoning-2512",),
        tuple(v for v in VARIANT_NAMES if v not in ("no_reasoning", "plain")),
        vllm=EMPTY,
        apply=r"THINK\]",
        by="autoparser",
    ),
    "thinking-alias": Reason(
        "apply() hands past reasoning to the template under every name templates read (`reasoning_content`, "
        "`reasoning`, and `thinking`, as transformers aliases them); vLLM passes `reasoning` and `reasoning_content` "
        "only. Command A Reasoning reads `thinking` (`{% elif message.thinking or message.content[0].thinking "
        "%}<|START_THINKING|>{{ print_thinking(message) }}<|END_THINKING|>`): in vLLM's prompt the reasoning is "
        "lost.",
        ("hfjs-CohereLabs-command-a-reasoning-08-2025",),
        ("content_with_calls",),  # the others: vLLM raises first (null-content-no-parts)
        vllm=EMPTY,
        apply=r"\ASTART_THINKING\|>Two cities, so two calls\.<\|END_THINKING\|><\|\Z",
        by="autoparser",
    ),
    "tool-result-list": Reason(
        "Command A Reasoning iterates over a tool result, reading it as a list of documents (`{%- for content in "
        'tool_msg.content %}"{{ loop.index0 }}": {{ content|tojson }}`): vLLM hands it the string (text parts '
        'joined), printed a character at a time (`"0": "s", "1": "u", ...`); apply() passes a list holding the '
        "text (`tool_result_list`).",
        ("hfjs-CohereLabs-command-a-reasoning-08-2025",),
        ("content_with_calls",),  # the others: vLLM raises first (null-content-no-parts)
        vllm=r'\A\w"(,\s+"\d+": "[^"]*")*,\s+"\d+": "\w\Z',
        apply=r"\A(sunny, 24C|light rain, 18C)\Z",
        by="autoparser",
    ),
    "empty-content-indexed": Reason(
        "Command A Reasoning reads the first content part of a calling turn without reasoning (`{% elif "
        "message.thinking or message.content[0].thinking %}`) and shows no content of such a turn: vLLM wraps the "
        "plain request's `''` as one text part and renders (with its tool results a character at a time, see "
        "`tool-result-list`); apply() gives the role the string it takes for a turn that does not show parts, and "
        "the template fails on `''[0]` (`str object has no element 0`: it renders calls only after reasoning).",
        ("hfjs-CohereLabs-command-a-reasoning-08-2025",),
        ("plain",),
        vllm=r"<\|CHATBOT_TOKEN\|><\|START_ACTION\|>\[",
        apply=r"str object has no element 0",
        raises="apply",
        by="autoparser",
    ),
    "named-ids": Reason(
        "Kimi K2 Thinking's first revision writes a call's id where its name goes and never the name (`{%- set "
        "formatted_id = tool_call['id'] -%}<|tool_call_begin|>{{ formatted_id }}`, `## Return of {{ tool_call_id "
        "}}`): apply() gives ids in another shape the model's own `functions.NAME:INDEX`, the same in the call and "
        "its result; vLLM passes them as sent, leaving the model without the name of the function called.",
        ("hfjs-moonshotai-Kimi-K2-Thinking",),
        NO_IMAGE,
        vllm=r"\A(call_|toolu_|[0-9a-f]{8}-)[\w-]+\Z",
        apply=r"\Afunctions\.get_weather:\d\Z",
        by="autoparser",
    ),
    "developer-as-string": Reason(
        "DiffusionGemma names the developer role (`messages[0]['role'] in ['system', 'developer']`), so it keeps "
        "it; apply() gives a `developer` message its text as a string (it probes the content shape of the system, "
        "user and assistant roles), printed with `{{- messages[0]['content'] | trim -}}`; vLLM passes parts, "
        "printed with a space after each (`{{- item['text'] | trim + ' '-}}`).",
        ("trl-diffusion_gemma",),
        ("developer",),
        vllm=r"\A \Z",
        apply=EMPTY,
        by="autoparser",
    ),
    # --- images -------------------------------------------------------------------------------------------------
    "image-placeholder": Reason(
        "For a template vLLM detects as taking string content, `parse_chat_messages` puts the model's image "
        "placeholder (the harness's tiny Idefics3 has `<image>`; a real model has its own) in front of the joined "
        "text (`_get_full_multimodal_text_prompt`, `interleave_mm_strings` off): `<image>\\nWeather in Paris and "
        "Tokyo\\nfor the next 2 days?`. apply() knows no model and refuses the image part (`RequestError`: the "
        "template reads this role's content as a string).",
        (
            "Bielik-11B-v3.0-Instruct",
            "CohereForAI-c4ai-command-r-plus-tool_use",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            "EssentialAI-rnj-1-instruct",
            "GigaChat3-10B-A1.8B",
            "GigaChat3.1-10B-A1.8B",
            "HuggingFaceTB-SmolLM3-3B",
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "LGAI-EXAONE-EXAONE-Deep-32B",
            "LGAI-EXAONE-K-EXAONE-236B-A23B",
            "MadeAgents-Hammer2.1",
            "MiMo-VL",
            "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "NVIDIA-Nemotron-Nano-v2",
            "NousResearch-Hermes-4-14B",
            "Qwen-QwQ-32B",
            "Qwen-Qwen2.5-7B-Instruct",
            "Qwen-Qwen3-0.6B",
            "Qwen3-Coder",
            "axolotl-command_a",
            "axolotl-exaone4",
            "axolotl-falcon_h1",
            "axolotl-metharme",
            "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            "deepseek-ai-DeepSeek-V3.1",
            "deepseek-ai-DeepSeek-V3.2",
            "deepseek-ai-DeepSeek-V4",
            "hfjs-Deci-DeciLM-7B-instruct",
            "hfjs-HuggingFaceTB-SmolLM3-3B",
            "hfjs-moonshotai-Kimi-K2-Thinking",
            "ibm-granite-granite-3.3-2B-Instruct",
            "inclusionai-ling-3.0-flash",
            "llama-cpp-rwkv-world",
            "llamacpp-Kimi-K3",
            "microsoft-Phi-3.5-mini-instruct",
            "microsoft-Phi-4-reasoning",
            "mistralrs-mistral_nemo_tool_call",
            "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
            "nvidia-Nemotron-Mini-4B-Instruct",
            "ollama-dbrx-132b",
            "ollama-deepseek-coder-v2-16b",
            "ollama-dolphin-mixtral-8x7b",
            "ollama-falcon2-11b",
            "ollama-glm4-9b",
            "ollama-granite-code-3b",
            "ollama-granite3-dense-2b",
            "ollama-index-chatqa",
            "ollama-llama-pro-latest",
            "ollama-llava-phi3-3.8b",
            "ollama-marco-o1-7b",
            "ollama-nuextract-3.8b",
            "ollama-olmo2-7b",
            "ollama-openchat-7b",
            "ollama-phi4-14b",
            "ollama-qwen-0.5b",
            "ollama-qwen3-next-80b",
            "ollama-sailor2-1b",
            "ollama-smallthinker-3b",
            "ollama-testdata-laguna_v8",
            "ollama-yi-coder-1.5b",
            "openbmb-MiniCPM3-4B",
            "openinstruct-olmo_thinker",
            "trl-qwen3_instruct_2507",
            "upstage-Solar-Open-100B",
            "vllm-template_falcon",
            "vllm-template_minicpmv45",
            "vllm-template_teleflm",
            "vllm-tool_chat_template_granite",
            "vllm-tool_chat_template_mistral_parallel",
            "vllm-tool_chat_template_qwen2_5_coder",
            "vllm-tool_chat_template_xlam_qwen",
        ),
        ("image_parts",),
        vllm=r"<image>\nWeather in Paris and Tokyo\nfor the next 2 days\?",
        apply=r"an image part, which template '[^']*' cannot show \(reads this role's content as a string\)",
        raises="apply",
        by="autoparser",
    ),
    "image-dropped": Reason(
        "For a template vLLM detects as looping over content parts, the image becomes `{'type': 'image'}`, which "
        "these templates skip (GLM's and MiniMax M2's `visible_text`: `{%- if item is mapping and item.type == "
        "'text' -%}{{- item.text }}`; Granite 4's `{%- if entry.type== 'text' %}`; Cogito's (Ollama's) `{%- if "
        "item.type == 'text' %}`): vLLM's prompt silently lacks the image, apply() refuses it (`RequestError`: the "
        "template has no place for image parts).",
        ("GLM-4.6", "GLM-4.7-Flash", "MiniMax-M2", "ibm-granite-granite-4.0", "ollama-cogito-3b"),
        ("image_parts",),
        vllm=r"\A(?!.*image).*Weather in Paris and Tokyo",
        apply=r"an image part, which template '[^']*' cannot show \(has no place for image parts\)",
        raises="apply",
        by="autoparser",
    ),
    "image-in-repr": Reason(
        "Llama 4 moves the first user message into its tool preamble (`{%- set first_user_message = "
        "messages[0]['content']|trim %}`), printing vLLM's parts whole, the image as the text `{'type': 'image'}`: "
        "the prompt holds no image. apply() gives the user role strings for that reason (see `wrapped-content`) and "
        "refuses the image part (`RequestError`: the template reads this role's content as a string).",
        ("meta-llama-Llama-4-Scout-17B-16E-Instruct",),
        ("image_parts",),
        vllm=r"\{'type': 'image'\}",
        apply=r"an image part, which template '[^']*' cannot show \(reads this role's content as a string\)",
        raises="apply",
        by="autoparser",
    ),
    "image-unread": Reason(
        'ShieldGemma (Ollama\'s) shows only the last user message (`"Human Question: " + messages[-1].content`): '
        "the message vLLM gave its image placeholder (see `image-placeholder`) never reaches the prompt, which is "
        "the one without the image; apply() refuses the image part (`RequestError`: the template reads this role's "
        "content as a string).",
        ("ollama-shieldgemma-27b",),
        ("image_parts",),
        vllm=r"\A(?!.*<image>).*Human Question: Thanks! And Berlin tomorrow\?",
        apply=r"an image part, which template '[^']*' cannot show \(reads this role's content as a string\)",
        raises="apply",
        by="autoparser",
    ),
}


def all_reasons() -> dict[str, Reason]:
    return REASONS


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
    for rid, reason in all_reasons().items():
        assert reason.vllm or reason.apply, f"{rid}: a reason names what it explains"
        assert reason.raises in (None, "vllm", "apply"), rid
        assert reason.by in ("vLLM", "autoparser"), rid
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


def doc_section() -> str:
    """Markdown for docs/requests.md: templates x variants (✓ = byte-identical), the counts and the reasons by id."""
    lines = list(_rows())
    counts: dict[str, int] = {}
    for template, variant_name in CELLS:
        kind = outcome(template, variant_name).kind
        counts[kind] = counts.get(kind, 0) + 1
    lines += ["", ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items())), ""]
    for by, title in (("vLLM", "vLLM's own doing"), ("autoparser", "autoparser's choices")):
        lines += [f"**Reasons: {title}**", ""]
        lines += [f"- `{rid}`: {reason.text}" for rid, reason in REASONS.items() if reason.by == by]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def parity_table() -> str:
    """:func:`doc_section`, then what both sides raise."""
    lines = [doc_section(), "**Both raise** (vLLM / apply)", ""]
    for template in TEMPLATES:
        for variant_name in VARIANT_NAMES:
            result = outcome(template, variant_name)
            if result.kind == "both raise":
                errors = (" ".join((error or "").split()) for error in (result.vllm_error, result.apply_error))
                lines.append(f"- {template} / {variant_name}: " + " / ".join(errors))
    return "\n".join(lines)


def test_the_vllm_table_in_docs_is_current() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "requests.md").read_text(encoding="utf-8")
    assert doc_section() in doc, "paste `python -m tests.integrations.test_vllm_requests --doc` (vLLM environment)"


if __name__ == "__main__":
    import sys

    print(doc_section() if "--doc" in sys.argv else parity_table())
