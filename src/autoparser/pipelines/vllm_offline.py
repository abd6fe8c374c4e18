"""vLLM's offline inference: the ``RequestOutput`` list of ``LLM.generate`` or ``LLM.chat``, read into messages.

>>> from autoparser.pipelines.vllm_offline import parse_outputs
>>> outputs = llm.chat(conversations, sampling_params, tools=tools)                 # doctest: +SKIP
>>> parsed = parse_outputs(outputs, "path/to/model", tools=tools)                   # doctest: +SKIP
>>> parsed[0].messages[0].tool_calls, parsed[0].to_openai()["choices"][0]           # doctest: +SKIP

Each ``RequestOutput`` holds the prompt vLLM rendered and one ``CompletionOutput`` per sample (``n``); each sample's
text becomes a :class:`~autoparser.ChatMessage`. The parser for a request comes from its conversation when given
(``messages``: one for every output, or one per output, as passed to ``LLM.chat``), else from its prompt
(``ChatTemplate.params_for_prompt``: only the prompt's end, the generation prompt, shapes the parser, so prompts
vLLM rendered from the same template read alike). vLLM is not imported: the outputs are read by their attributes
(``request_id``, ``prompt``, ``outputs[i].text``, ``outputs[i].finish_reason``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..batch import BatchParser, parser_for
from ..message import ChatMessage
from ..params import ChatParams

__all__ = ["ParsedOutput", "parse_outputs"]


@dataclass(frozen=True)
class ParsedOutput:
    """One request's samples read into messages, with what vLLM said about them."""

    request_id: str
    prompt: str | None
    messages: tuple[ChatMessage, ...]
    finish_reasons: tuple[str | None, ...]

    def to_openai(self, *, reasoning_field: str = "reasoning_content") -> dict[str, Any]:
        """The request as an OpenAI ``chat.completion``: one choice per sample, ``finish_reason`` "tool_calls"
        for a sample that stopped after calling tools (as vLLM's server reports it)."""
        choices = []
        for index, (message, reason) in enumerate(zip(self.messages, self.finish_reasons, strict=True)):
            if message.tool_calls and reason == "stop":
                reason = "tool_calls"
            choices.append(
                {"index": index, "message": message.to_openai(reasoning_field=reasoning_field), "finish_reason": reason}
            )
        return {"id": self.request_id, "object": "chat.completion", "choices": choices}


def parse_outputs(
    outputs: Iterable[Any],
    template: Any,
    *,
    messages: Sequence[Mapping[str, Any]] | Sequence[Sequence[Mapping[str, Any]]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **options: Any,
) -> list[ParsedOutput]:
    """Each ``RequestOutput`` of ``outputs`` read into a :class:`ParsedOutput`, in order. ``template`` as for
    :class:`~autoparser.batch.BatchParser` (the model's template: a path, a name, a ``ChatTemplate``); ``tools``:
    the tools the requests declared; ``options``: ``apply`` options (``enable_thinking``, ``reasoning_format``, ...)
    as the requests were made. A request's parser is built once per distinct conversation or generation prompt."""
    outputs = list(outputs)
    parser = parser_for(template, tools=tools, **options)
    conversations = _conversations(messages, len(outputs))
    by_prompt: dict[str, ChatParams] = {}
    parsed = []
    for index, output in enumerate(outputs):
        prompt = getattr(output, "prompt", None)
        if conversations is not None:
            params = parser.params_for(conversations[index], None)
        else:
            params = _for_prompt(parser, prompt or "", tools, options, by_prompt)
        samples = list(output.outputs)
        parsed.append(
            ParsedOutput(
                str(output.request_id),
                prompt,
                tuple(params.parse(sample.text) for sample in samples),
                tuple(getattr(sample, "finish_reason", None) for sample in samples),
            )
        )
    return parsed


def _conversations(messages: Any, count: int) -> list[Any] | None:
    """One conversation per output: ``messages`` as given for every output, or a list of them, one each."""
    if messages is None:
        return None
    if messages and isinstance(messages[0], Mapping):
        return [messages] * count
    if len(messages) != count:
        raise ValueError(f"messages: {len(messages)} conversations for {count} outputs")
    return list(messages)


_PROMPT_OPTIONS = (
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_format",
    "enable_thinking",
    "json_schema",
    "chat_template_kwargs",
    "undeclared_tools",
    "reasoning_effort",
)


def _for_prompt(
    parser: BatchParser, prompt: str, tools: Any, options: Mapping[str, Any], cache: dict[str, ChatParams]
) -> ChatParams:
    """The parser for the reply to a rendered ``prompt``, cached by the generation prompt it ends with (the longest
    cached one: ``params_for_prompt`` takes the longest of the template's that ends the prompt)."""
    found = [gp for gp in cache if prompt.endswith(gp)]
    if found:
        return cache[max(found, key=len)]
    asked = {k: v for k, v in options.items() if k in _PROMPT_OPTIONS}
    params = parser.template.params_for_prompt(prompt, tools=tools, **asked)
    if params.generation_prompt:
        cache[params.generation_prompt] = params
    return params
