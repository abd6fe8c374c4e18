"""SGLang plugin: a tool-call detector and a reasoning detector named ``autoparser``, built from the chat template.

    pip install sglang autoparser        # the entry point registers both in every SGLang process
    sglang serve --model-path MODEL --tool-call-parser autoparser --reasoning-parser autoparser

:func:`register` puts both into SGLang's registries (``FunctionCallParser.ToolCallParserEnum``,
``ReasoningParser.DetectorMap``); the ``sglang.srt.plugins`` entry point calls it, so no flag is needed. Importing
this module needs SGLang; ``import autoparser`` does not.

SGLang runs the reasoning detector on the reply and hands the tool-call detector only the text after the
reasoning, and the two never see each other: so here each part reads its share, as the vLLM parts do alone
(:mod:`.vllm`). The reasoning detector reports the reasoning and hands on the raw text after the reasoning block
(what any tool-call detector expects); when no tool-call parser reads that text (``tool_call_parser_active`` is
off: no tool parser, no tools, ``tool_choice`` none) it reports the content itself, parsed (content wrappers
removed, call markup left as text). The tool-call detector reads the text it is handed as content and calls.
Formats that mix reasoning and calls (gpt-oss, a Kimi call inside its reasoning) are therefore not fully read.

What each part knows of the request. SGLang builds the reasoning detector inside a ``ReasoningParser`` that holds
the request but does not pass it on, so the detector reads it there (:func:`~.serving.constructing`): its
``chat_template_kwargs`` pick the generation prompt (thinking on or off) and its tools the calls that may end
the reasoning. The tool-call detector gets the tools with every call, the tool choice through
``get_required_tool_parser``, and ``parallel_tool_calls`` only when SGLang asks it for a grammar.
"""

from __future__ import annotations

import importlib

from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

from .sglang_reasoning import AutoparserReasoningDetector
from .sglang_tools import AutoparserDetector

__all__ = ["NAME", "AutoparserDetector", "AutoparserReasoningDetector", "register"]

NAME = "autoparser"


def register() -> None:
    """Register both parts under the name ``autoparser`` (safe to repeat)."""
    FunctionCallParser.ToolCallParserEnum[NAME] = AutoparserDetector
    ReasoningParser.DetectorMap[NAME] = AutoparserReasoningDetector
    # The dependency-free name lists SGLang keeps beside the registries (its CLI reads the registries once they
    # are imported, as here; the lists keep the two in step).
    for module, attribute in (
        ("sglang.srt.function_call.parser_names", "TOOL_CALL_PARSER_NAMES"),
        ("sglang.srt.parser.reasoning_parser_names", "REASONING_PARSER_NAMES"),
    ):
        try:
            names = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):
            continue
        if NAME not in names:
            names.append(NAME)
