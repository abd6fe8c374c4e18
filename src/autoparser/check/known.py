"""Documented faults of the bundled templates: why one of them does not render a case, does not read one back, or
writes a case its whole-output grammar does not describe. ``autoparser check`` shows these reasons next to what it
observed (for a template whose source is a bundled one, whatever its file name), and docs/roundtrip.md is its output
over the bundled set. One line each, saying *why*; only faults of the template itself belong here.

Keys per template: a case of :data:`~.cases.CASES`, or a group: :data:`CALLS` (every call case), :data:`REASONING`
(reasoning+content and reasoning+call), :data:`ALL`. The most specific key wins. ``NOT_RENDERED`` explains cases the
template cannot render; ``FAILS`` explains rendered cases that do not read back; ``GRAMMAR`` explains rendered text
the whole-output grammar refuses. A reason starting with "pending:" names a parser gap being worked on.
tests/robustness/test_roundtrip.py fails on a gap without a reason, and on a reason without a gap: a case that starts
to round-trip must lose its entry here (then regenerate docs/roundtrip.md).
"""

from __future__ import annotations

ALL = "*"
CALLS = "calls"
REASONING = "reasoning"

_NO_REASONING = "no reasoning syntax: the template renders no reasoning and its prompt opens no reasoning block"
_NO_CALLS = "never renders assistant tool calls (an empty assistant turn): the template has no call syntax"
_DROPS_CONTENT = "drops the content of a turn with calls"
_FIRST_CALL_ONLY = "renders only the first call of a turn"
_SINGLE_CALL = "raises for more than one call per turn ('only supports single tool-calls at once')"
_CALLS_NEED_THINKING = (
    "raises on a turn with calls and neither reasoning nor text (it reads `message.content[0].thinking` of an empty "
    "string); the model thinks before it calls, which renders (reasoning+call)"
)
_FINAL_THINKING_DROPPED = "history drops a final answer's reasoning (kept only next to calls: see reasoning+call)"
_CLASSIFIER = (
    "a classifier prompt: the conversation to judge (the assistant's reply included) is part of the prompt, and the "
    "model answers Yes/No; no assistant turn is rendered after it"
)
_COGITO = (
    "enable_thinking only adds 'Enable deep thinking subroutine.' to the system prompt; no reasoning markers in the "
    "template (`<think>` known from the model; tested on its own)"
)
_CHAT_ONLY = "a plain chat template: no tools, no call syntax"
_PROMPT_TOOLS = "never renders assistant tool calls (an empty assistant turn); tools are only listed in the prompt"
_PROMPT_SYNTAX = (
    "never renders assistant tool calls (an empty assistant turn); the `<tool_call>` JSON syntax is stated only in "
    "the prompt (read from it; tested on its own)"
)

NOT_RENDERED: dict[str, dict[str, str]] = {
    "Apertus-8B-Instruct": {
        REASONING: "renders reasoning only from content blocks of type 'thoughts' (`<|inner_prefix|>`), which no "
        "server sends",
    },
    "Cohere2MoE": {"content+call": "drops the content of a turn with calls (it renders `tool_plan` instead)"},
    "CohereForAI-c4ai-command-r-plus-tool_use": {REASONING: _NO_REASONING},
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": {
        "content+call": "drops the content of a turn with calls (it renders reasoning_content instead)",
    },
    "EssentialAI-rnj-1-instruct": {REASONING: _NO_REASONING},
    "GigaChat3-10B-A1.8B": {"parallel calls": _FIRST_CALL_ONLY, REASONING: _NO_REASONING},
    "GigaChat3.1-10B-A1.8B": {"parallel calls": _FIRST_CALL_ONLY, REASONING: _NO_REASONING},
    "HuggingFaceTB-SmolLM3-3B": {CALLS: "never renders assistant tool calls (an empty assistant turn)"},
    "Kimi-K2-Instruct": {
        CALLS: "rendering a call raises: the template appends to a list, which the sandbox refuses (as transformers')",
        REASONING: _NO_REASONING,
    },
    "Kimi-K2-Thinking": {
        CALLS: "rendering a call raises: the template appends to a list, which the sandbox refuses (as transformers')",
        "reasoning+content": "history writes `<think></think>` for a final answer (reasoning is kept only next to "
        "calls, which cannot render)",
    },
    "LFM2-8B-A1B": {
        CALLS: "never renders assistant tool calls (an empty assistant turn); the call syntax is only described",
        REASONING: _NO_REASONING,
    },
    "LFM2.5-Instruct": {
        CALLS: "never renders assistant tool calls (an empty assistant turn); real output, a pythonic list often "
        "wrapped in `<|tool_call_start|>`, is tested on its own (tests/parser/test_pythonic.py)",
        REASONING: "reasoning is only `<think>` text inside content (stripped from past turns), never rendered from "
        "reasoning_content",
    },
    "LGAI-EXAONE-EXAONE-Deep-32B": {CALLS: _NO_CALLS},
    "MadeAgents-Hammer2.1": {
        CALLS: "never renders assistant tool calls (an empty assistant turn); the JSON-list syntax is stated only in "
        "the prompt (read from it; tested on its own)",
        REASONING: _NO_REASONING,
    },
    "MiMo-VL": {REASONING: _NO_REASONING},
    "MiroThinker": {
        ALL: "rendering any assistant turn raises: the template sets attributes on messages (`set message.x`), "
        "which only llama.cpp's engine allows",
    },
    "Mistral-Small-3.2-24B-Instruct-2506": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "NVIDIA-Nemotron-Nano-v2": {
        "content+call": "renders content and calls as two separate turns",
        "reasoning+content": "the final turn repeats the prompt's open `<think>` and the content, never "
        "reasoning_content",
    },
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "Qwen-Qwen2.5-7B-Instruct": {REASONING: _NO_REASONING},
    "Qwen3-Coder": {REASONING: _NO_REASONING},
    "deepcogito-cogito-v1-preview-qwen-14B": {REASONING: _COGITO},
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": {CALLS: _NO_CALLS},
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": {
        "content+call": "writes the content after the calls, in a second assistant turn",
    },
    "fireworks-ai-llama-3-firefunction-v2": {REASONING: _NO_REASONING},
    "google-ai-edge-LiteRT-LM-Gemma3n": {REASONING: _NO_REASONING},
    "google-gemma-2-2b-it": {CALLS: _NO_CALLS, REASONING: _NO_REASONING},
    "google-gemma-4-31B-it": {
        "content+call": "writes the content after the calls",
        "reasoning+content": _FINAL_THINKING_DROPPED,
    },
    "google-gemma-4-31B-it-interleaved": {
        "content+call": "writes the content after the calls",
        "reasoning+content": _FINAL_THINKING_DROPPED,
    },
    "hfjs-CohereLabs-command-a-reasoning-08-2025": {
        "one call": _CALLS_NEED_THINKING,
        "parallel calls": _CALLS_NEED_THINKING,
        "content+call": "drops the content of a turn with calls (it renders `tool_plan` or the thinking instead)",
    },
    "ibm-granite-granite-3.3-2B-Instruct": {
        CALLS: "never renders assistant tool calls (an empty assistant turn); `<|tool_call|>` + JSON list is stated "
        "only in the system prompt (read from it; tested on its own)",
    },
    "ibm-granite-granite-4.0": {REASONING: _NO_REASONING},
    "llama-cpp-deepseek-r1": {"content+call": "renders no calls in a turn that has content"},
    "llama-cpp-rwkv-world": {CALLS: _NO_CALLS},
    "meetkai-functionary-medium-v3.1": {REASONING: _NO_REASONING},
    "meetkai-functionary-medium-v3.2": {REASONING: _NO_REASONING},
    "meta-llama-Llama-3.1-8B-Instruct": {
        "parallel calls": _SINGLE_CALL,
        "content+call": _DROPS_CONTENT,
        REASONING: _NO_REASONING,
    },
    "meta-llama-Llama-3.2-3B-Instruct": {
        "parallel calls": _SINGLE_CALL,
        "content+call": _DROPS_CONTENT,
        REASONING: _NO_REASONING,
    },
    "meta-llama-Llama-3.3-70B-Instruct": {
        "parallel calls": _SINGLE_CALL,
        "content+call": _DROPS_CONTENT,
        REASONING: _NO_REASONING,
    },
    "meta-llama-Llama-4-Scout-17B-16E-Instruct": {REASONING: _NO_REASONING},
    "microsoft-Phi-3.5-mini-instruct": {CALLS: _NO_CALLS, REASONING: _NO_REASONING},
    "microsoft-Phi-4-reasoning": {CALLS: _NO_CALLS},
    "mistralai-Mistral-Nemo-Instruct-2407": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "moonshotai-Kimi-K2": {REASONING: _NO_REASONING},
    "nvidia-Nemotron-Mini-4B-Instruct": {
        CALLS: "never renders assistant tool calls (an empty assistant turn); the model's `<toolcall>` syntax is not "
        "in the template (known from its card; tested on its own)",
        REASONING: _NO_REASONING,
    },
    "openai-gpt-oss-120b": {"parallel calls": _FIRST_CALL_ONLY},
    "openbmb-MiniCPM3-4B": {"content+call": "writes the content after the calls"},
    "unsloth-Apriel-1.5": {
        REASONING: "renders `<thinking>` only from a `thought` field no server sends; the reasoning stated in the "
        "system prompt (up to `[BEGIN FINAL RESPONSE]`) is never rendered (read from the prompt; tested on its own)",
    },
    "unsloth-mistral-Devstral-Small-2507": {REASONING: _NO_REASONING},
    "vllm-tool_chat_template_llama4_json": {REASONING: _NO_REASONING},
    "upstage-Solar-Open-100B": {
        "content+call": _DROPS_CONTENT,
        "reasoning+call": "reasoning is its own assistant message (`<|think|>…<|end|>`, then `<|begin|>assistant`), "
        "not part of the turn",
    },
    "axolotl-command_a": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "axolotl-falcon_h1": {CALLS: _PROMPT_SYNTAX, REASONING: _NO_REASONING},
    "axolotl-metharme": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "axolotl-nemotron_h": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "axolotl-pixtral": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "hfjs-CohereForAI-c4ai-command-r-v01": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "hfjs-Deci-DeciLM-7B-instruct": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "hfjs-HuggingFaceTB-SmolLM3-3B": {CALLS: _PROMPT_SYNTAX},
    "hfjs-codellama-CodeLlama-70b-Instruct-hf": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "hfjs-mistralai-Mistral-Nemo-Instruct-2407-old": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "mistralrs-mistral_nemo_tool_call": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "ollama-dbrx-132b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-deepseek-coder-v2-16b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-dolphin-mixtral-8x7b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-falcon2-11b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-glm4-9b": {
        CALLS: "renders an assistant turn only from its content: calls are never rendered (the tools are only "
        "listed in the prompt)",
        REASONING: _NO_REASONING,
    },
    "ollama-granite-code-3b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-granite3-dense-2b": {
        CALLS: "renders calls only from messages of its own role `assistant_tool_call` holding the call text, "
        "which no OpenAI client sends",
        REASONING: _NO_REASONING,
    },
    "ollama-index-chatqa": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-index-starcoder2-instruct": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-llama-pro-latest": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-llama2-7b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-llava-phi3-3.8b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-marco-o1-7b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-nuextract-3.8b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-olmo2-7b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-openchat-7b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-phi4-14b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-qwen-0.5b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-qwen2.5vl-latest": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-sailor2-1b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-shieldgemma-27b": {
        CALLS: _CLASSIFIER,
        REASONING: _CLASSIFIER,
    },
    "ollama-smallthinker-3b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "ollama-yi-coder-1.5b": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "trl-diffusion_gemma": {"content+call": "writes the content after the calls"},
    "trl-idefics3": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "trl-qwen3_instruct_2507": {REASONING: _NO_REASONING},
    "vllm-template_falcon": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "vllm-template_teleflm": {CALLS: _CHAT_ONLY, REASONING: _NO_REASONING},
    "vllm-tool_chat_template_granite": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "vllm-tool_chat_template_mistral3": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "vllm-tool_chat_template_mistral_parallel": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "vllm-tool_chat_template_qwen2_5_coder": {REASONING: _NO_REASONING},
    "vllm-tool_chat_template_xlam_qwen": {"content+call": _DROPS_CONTENT, REASONING: _NO_REASONING},
    "hfjs-moonshotai-Kimi-K2-Thinking": {
        "reasoning+content": "history writes `<think></think>` for a final answer (reasoning is kept only in the turns "
        "after the last answer without calls: see reasoning+call)",
    },
    "ollama-cogito-3b": {REASONING: _COGITO},
    "hfjs-meetkai-functionary-medium-v2.2": {REASONING: _NO_REASONING},
    "openinstruct-olmo_thinker": {
        CALLS: "never renders `tool_calls`: it writes calls only from its own `function_calls` text field, which no "
        "server sends",
    },
    "hfjs-LiquidAI-LFM2.5-VL-450M": {"content+call": "writes the content after the calls"},
}

FAILS: dict[str, dict[str, str]] = {
    "MiniMax-M3": {
        "one call": "the template leaves out an argument set to None (`note`: nothing to read back) and writes an "
        'empty object in an untyped value (`options.empty`) as an empty element, like an empty string (read as "")',
    },
    "NVIDIA-Nemotron-Nano-v2": {
        CALLS: "the prompt opens `<think>` (history strips up to `</think>`) and the final turn continues inside "
        "it, so the analysis reads `<think>` as the content wrapper; reading it as reasoning instead breaks the "
        "reference corpus (case NVIDIA-Nemotron-Nano-v2_001 and its grammar expect no reasoning), which decides",
    },
}

_ASCII_ESCAPES = (
    "the template writes non-ASCII text as \\u escapes (tojson's ensure_ascii); grammars, as llguidance's %json, "
    "ask for the characters themselves"
)
_PYTHON_VALUES = "Python True/None printed into XML parameters; the grammar asks JSON"

GRAMMAR: dict[str, dict[str, str]] = {
    "ByteDance-Seed-OSS": {
        ALL: "the template prints booleans and null the Python way (True, None); the grammar asks JSON"
    },
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": {ALL: _PYTHON_VALUES},
    "Qwen3-Coder": {ALL: _PYTHON_VALUES},
    "Qwen3.5-4B": {ALL: _PYTHON_VALUES},
    "StepFun3.5-Flash": {ALL: _PYTHON_VALUES},
    "stepfun-ai-Step-3.5-Flash": {ALL: _PYTHON_VALUES},
    "google-ai-edge-LiteRT-LM-Gemma3n": {ALL: "a bare (unquoted) string value with a line break in it"},
    "Reka-Edge": {ALL: _ASCII_ESCAPES},
    "meetkai-functionary-medium-v3.2": {ALL: _ASCII_ESCAPES},
    "hfjs-meetkai-functionary-medium-v2.2": {ALL: _ASCII_ESCAPES},
    "ollama-r1-1776-671b": {ALL: _ASCII_ESCAPES},
    "ollama-testdata-nemotron3nano": {ALL: _PYTHON_VALUES},
}
