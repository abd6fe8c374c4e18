"""Why a bundled template does not round-trip a case: data for tests/robustness/test_roundtrip.py and the table in
docs/roundtrip.md. One line each, saying *why*.

Keys per template: a case of ``outputs.CASES``, or a group: :data:`CALLS` (every call case), :data:`REASONING`
(reasoning+content and reasoning+call), :data:`ALL`. The most specific key wins. ``NOT_RENDERED`` explains cases
the template cannot render; ``FAILS`` explains rendered cases that do not parse back. A reason starting with
"pending:" names a parser gap being worked on (issue 11). The test fails on a gap without a reason, and on a reason
without a gap: a case that starts to round-trip must lose its entry here (then regenerate docs/roundtrip.md).
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
_FINAL_THINKING_DROPPED = "history drops a final answer's reasoning (kept only next to calls: see reasoning+call)"

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
    "deepcogito-cogito-v1-preview-qwen-14B": {
        REASONING: "enable_thinking only adds 'Enable deep thinking subroutine.' to the system prompt; no reasoning "
        "markers in the template (`<think>` known from the model; tested on its own)",
    },
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
    "openinstruct-olmo_thinker": {
        CALLS: "never renders `tool_calls`: it writes calls only from its own `function_calls` text field, which no "
        "server sends",
    },
    "unsloth-Apriel-1.5": {
        REASONING: "renders `<thinking>` only from a `thought` field no server sends; the reasoning stated in the "
        "system prompt (up to `[BEGIN FINAL RESPONSE]`) is never rendered (read from the prompt; tested on its own)",
    },
    "unsloth-mistral-Devstral-Small-2507": {REASONING: _NO_REASONING},
    "upstage-Solar-Open-100B": {
        "content+call": _DROPS_CONTENT,
        REASONING: "reasoning is its own assistant message (`<|think|>…<|end|>`, then `<|begin|>assistant`), not "
        "part of the turn",
    },
}

FAILS: dict[str, dict[str, str]] = {
    "MiniMax-M3": {
        "one call": "the template leaves out an argument set to None (`note`: nothing to read back) and writes an "
        "empty object in an untyped value (`options.empty`) as an empty element, like an empty string (read as \"\")",
    },
    "NVIDIA-Nemotron-Nano-v2": {
        CALLS: "the prompt opens `<think>` (history strips up to `</think>`) and the final turn continues inside "
        "it, so the analysis reads `<think>` as the content wrapper; reading it as reasoning instead breaks the "
        "reference corpus (case NVIDIA-Nemotron-Nano-v2_001 and its grammar expect no reasoning), which decides",
    },
}
