"""Public entry points: :class:`ChatTemplate` ties rendering, analysis and (later) parsing together."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .analysis.analyzer import analyze_template
from .analysis.model import TemplateAnalysis
from .template.capabilities import TemplateCapabilities
from .template.chat_template import JinjaChatTemplate

__all__ = ["ChatTemplate"]


class ChatTemplate(JinjaChatTemplate):
    """A model's chat template: renders prompts exactly as transformers does and knows how the model writes.

    >>> tmpl = ChatTemplate.load("Qwen3-Coder")
    >>> tmpl.analysis.tools.format.mode.value
    'TAG_WITH_TAGGED'
    """

    __slots__ = ()

    @property
    def analysis(self) -> TemplateAnalysis:
        """The differential analysis of this template (computed on first use, then cached per template source)."""
        return analyze_template(self, self.name)

    @property
    def capabilities(self) -> TemplateCapabilities:
        return self.analysis.capabilities

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        enable_thinking: bool | None = None,
        **extra_context: Any,
    ) -> str:
        """Render like transformers, but pass JSON-string tool-call arguments as objects to templates that
        read arguments as objects (OpenAI clients send strings; such templates would print them quoted)."""
        if self.capabilities.supports_object_arguments:
            messages = [_arguments_as_objects(m) for m in messages]
        return super().render(
            messages,
            tools,
            add_generation_prompt=add_generation_prompt,
            enable_thinking=enable_thinking,
            **extra_context,
        )


def _arguments_as_objects(message: Mapping[str, Any]) -> Mapping[str, Any]:
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    if not calls:
        return message
    converted = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # not JSON: the template gets the text as it came
                call = {**call, "function": {**function, "arguments": json.loads(arguments)}}
        converted.append(call)
    return {**message, "tool_calls": converted}
