"""Driving real vLLM the way its chat serving does, with a tokenizer built here (no downloads).

* :func:`tokenizer_for` trains a small byte-level BPE on the texts of a template's cases, with the template's
  markers as added special tokens (as real chat models have them), saves it with the chat template as a
  transformers tokenizer directory and loads it through vLLM's own ``get_tokenizer``.
* :func:`make_parser` composes the per-request ``Parser`` exactly as vLLM's serving does
  (``ParserManager.get_parser`` with the plugin's names, constructed with the request's tools and
  ``chat_template_kwargs``), after running the request through ``adjust_request`` as vLLM's renderer does.
* :func:`complete` and :func:`stream` call it as ``chat_completion`` serving does: ``parse`` for a complete
  reply; ``parse_delta`` per detokenized step with the prompt's token ids and ``finished`` on the last step.
* :func:`render_chat` renders a request's prompt with vLLM's own code, step by step as its chat serving does
  (``OnlineRenderer.render_chat`` -> ``preprocess_chat`` -> ``HfRenderer.render_messages``), against
  :func:`model_config` (a real ``ModelConfig`` of a tiny local multimodal model) and :func:`render_tokenizer`.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
from vllm.config import ModelConfig
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser import ParserManager
from vllm.renderers.chat_utils import parse_chat_messages
from vllm.renderers.hf import resolve_chat_template_content_format, safe_apply_chat_template
from vllm.tokenizers import get_tokenizer

from autoparser import ChatTemplate

from ..support.tokenizer import FILLER, hf_tokenizer


@functools.lru_cache(maxsize=128)
def tokenizer_for(template_name: str, corpus: tuple[str, ...], extra_markers: tuple[str, ...] = ()) -> Any:
    """vLLM's tokenizer for a BPE trained on ``corpus`` with the template's markers as special tokens."""
    return _load_tokenizer(hf_tokenizer(template_name, corpus, extra_markers))


def _load_tokenizer(fast: PreTrainedTokenizerFast) -> Any:
    """``fast`` saved to a directory and loaded by vLLM's ``get_tokenizer`` (with a model config beside it:
    without one vLLM logs an error and retries after 2 s)."""
    directory = Path(tempfile.mkdtemp(prefix="autoparser-tok-"))
    fast.save_pretrained(directory)
    text_model = {"architectures": ["LlamaForCausalLM"], **_TINY_MODEL["text_config"]}
    (directory / "config.json").write_text(json.dumps(text_model), encoding="utf-8")
    return get_tokenizer(str(directory))


def request_for(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    **fields: Any,
) -> ChatCompletionRequest:
    body: dict[str, Any] = {"model": "local", "messages": messages, **fields}
    if tools:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    return ChatCompletionRequest.model_validate(body)


def make_parser(
    tokenizer: Any, request: ChatCompletionRequest, *, tools: bool = True, reasoning: bool | str = True
) -> Any:
    """The per-request vLLM ``Parser`` for the plugin (``tools``/``reasoning``: which of its parts are on; a
    string ``reasoning`` names another reasoning parser of vLLM's)."""
    parser_cls = ParserManager.get_parser(
        tool_parser_name="autoparser" if tools else None,
        reasoning_parser_name=reasoning if isinstance(reasoning, str) else "autoparser" if reasoning else None,
        enable_auto_tools=tools,
        tokenizer=tokenizer,
    )
    kwargs = request.chat_template_kwargs or {}
    # The renderer adjusts the request with a parser of its own, then serving builds the one that parses.
    parser_cls(tokenizer, request.tools, model_config=None, chat_template_kwargs=kwargs).adjust_request(request)
    return parser_cls(tokenizer, request.tools, chat_template_kwargs=kwargs, model_config=None)


def prompt_ids(tokenizer: Any, request: ChatCompletionRequest) -> list[int]:
    """The prompt, rendered with the tokenizer's template (as transformers renders it, plus the date variables
    serving stacks pass) and tokenized."""
    if not tokenizer.chat_template:
        return tokenizer.encode("User: hi\nAssistant:", add_special_tokens=False)
    template = ChatTemplate(tokenizer.chat_template)
    rendered = template.apply(
        request.messages,
        [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else None,
        chat_template_kwargs=request.chat_template_kwargs,
    ).prompt
    return tokenizer.encode(rendered, add_special_tokens=False)


@dataclass
class Reply:
    """A reply as an OpenAI client assembles it from what vLLM returned."""

    content: str = ""
    reasoning: str = ""
    calls: list[dict[str, str]] = field(default_factory=list)
    protocol_errors: list[str] = field(default_factory=list)


def complete(tokenizer: Any, request: ChatCompletionRequest, text: str, **parts: Any) -> Reply:
    """A non-streaming reply, parsed as ``chat_completion_full_generator`` does."""
    parser = make_parser(tokenizer, request, **parts)
    request.resolve_reasoning_ended(parser, prompt_ids(tokenizer, request))
    ids = tokenizer.encode(text, add_special_tokens=False)
    reasoning, content, calls = parser.parse(
        text, request, enable_auto_tools=parts.get("tools", True), model_output_token_ids=ids
    )
    reply = Reply(content or "", reasoning or "")
    for call in calls or []:
        reply.calls.append({"id": call.id or "", "name": call.name, "arguments": call.arguments})
    return reply


def detokenized_steps(tokenizer: Any, text: str, tokens_per_step: Sequence[int] = (1,)) -> list[tuple[str, list[int]]]:
    """The text the detokenizer emits per step (a step holds back a cut UTF-8 character), with its token ids."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    steps: list[tuple[str, list[int]]] = []
    emitted = ""
    at = 0
    size_index = 0
    while at < len(ids):
        size = tokens_per_step[size_index % len(tokens_per_step)]
        size_index += 1
        chunk = ids[at : at + size]
        at += len(chunk)
        decoded = tokenizer.decode(ids[:at], skip_special_tokens=False)
        if decoded.endswith("\ufffd") and at < len(ids):
            steps.append(("", chunk))
            continue
        steps.append((decoded[len(emitted) :], chunk))
        emitted = decoded
    assert emitted == text, "the test tokenizer must round-trip the output"
    return steps


def stream(
    tokenizer: Any, request: ChatCompletionRequest, text: str, tokens_per_step: Sequence[int] = (1,), **parts: Any
) -> Reply:
    """A streamed reply: ``parse_delta`` per detokenized step, as ``chat_completion_stream_generator`` does."""
    parser = make_parser(tokenizer, request, **parts)
    prompt = prompt_ids(tokenizer, request)
    steps = detokenized_steps(tokenizer, text, tokens_per_step)
    reply = Reply()
    for i, (delta_text, delta_ids) in enumerate(steps):
        delta = parser.parse_delta(
            delta_text=delta_text,
            delta_token_ids=delta_ids,
            request=request,
            prompt_token_ids=prompt,
            finished=i == len(steps) - 1,
        )
        if delta is not None:
            _accumulate(reply, delta)
    return reply


def _accumulate(reply: Reply, delta: Any) -> None:
    reply.content += delta.content or ""
    reply.reasoning += delta.reasoning or ""
    seen = {call["index"] for call in reply.calls}
    indices = [part.index for part in delta.tool_calls]
    if len(indices) != len(set(indices)):
        reply.protocol_errors.append(f"one delta carries call indices {indices}")
    for part in delta.tool_calls:
        function = part.function
        if part.index not in seen:
            if part.index != len(reply.calls):
                reply.protocol_errors.append(f"call {part.index} arrived after {len(reply.calls)} calls")
            if not part.id or function is None or not function.name:
                reply.protocol_errors.append(f"call {part.index}'s first delta lacks its id or name")
            reply.calls.append({"index": part.index, "id": part.id or "", "name": function.name or "", "arguments": ""})
            seen.add(part.index)
        elif part.id is not None or (function is not None and function.name is not None):
            reply.protocol_errors.append(f"call {part.index} got its id or name again")
        if function is not None and function.arguments:
            reply.calls[part.index]["arguments"] += function.arguments


# --- prompts as vLLM's chat serving renders them --------------------------------------------------------------------

# A tiny Idefics3 (SmolVLM's architecture): multimodal, so image parts take vLLM's media path (the image is decoded,
# counted against the model's limit and becomes {"type": "image"} or the model's placeholder "<image>"); its model
# module imports without torchvision (which .ci/run uninstalls) and its processor needs no files besides the
# tokenizer. No weights: ModelConfig reads config.json only.
_TINY_MODEL: dict[str, Any] = {
    "architectures": ["Idefics3ForConditionalGeneration"],
    "model_type": "idefics3",
    "image_token_id": 0,
    "torch_dtype": "float32",
    "text_config": {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 1,
        "vocab_size": 600,
        "max_position_embeddings": 4096,
    },
    "vision_config": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 1,
        "image_size": 28,
        "patch_size": 14,
    },
}


@functools.lru_cache(maxsize=2)
def _tiny_bpe(special: tuple[str, ...]) -> str:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=list(special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([FILLER], trainer)
    return bpe.to_str()


def _tiny_tokenizer(special: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """A small byte-level BPE with bos/eos as autoparser renders them (empty strings, defined)."""
    bpe = Tokenizer.from_str(_tiny_bpe(special))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="", eos_token="")


@functools.lru_cache(maxsize=1)
def model_config() -> ModelConfig:
    """vLLM's ``ModelConfig`` of a tiny local model directory (see ``_TINY_MODEL``): what ``parse_chat_messages``
    hands its multimodal tracker and ``safe_apply_chat_template`` reads, built by vLLM itself."""
    directory = Path(tempfile.mkdtemp(prefix="autoparser-model-"))
    _tiny_tokenizer(("<image>",)).save_pretrained(directory)
    (directory / "config.json").write_text(json.dumps(_TINY_MODEL), encoding="utf-8")
    return ModelConfig(model=str(directory))


@functools.cache
def render_tokenizer(source: str) -> Any:
    """vLLM's tokenizer (``get_tokenizer`` of a local directory) whose chat template is ``source``."""
    fast = _tiny_tokenizer()
    fast.chat_template = source
    return _load_tokenizer(fast)


@dataclass
class Rendered:
    """A prompt as vLLM renders it, with what it was rendered from."""

    prompt: str
    content_format: str
    conversation: list[dict[str, Any]]
    mm_data: dict[str, Any] | None


def render_chat(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **fields: Any
) -> Rendered:
    """The prompt vLLM 0.32's chat serving renders for this request (no ``--chat-template``, default
    ``--chat-template-content-format auto``, no default template kwargs), raising what it raises.

    The steps are ``OnlineRenderer.render_chat`` / ``preprocess_chat`` / ``HfRenderer.render_messages`` with vLLM's
    own functions (``HfRenderer`` itself needs a ``VllmConfig``, which cannot infer a device here)."""
    request = request_for(messages, tools, **fields)  # the request's validators run (reasoning_content -> reasoning)
    tool_dicts = None if request.tools is None else [tool.model_dump() for tool in request.tools]
    config = model_config()
    mm_config = config.multimodal_config
    params = request.build_chat_params(None, "auto").with_defaults(
        {"tools": tool_dicts, "tokenize": False},
        default_media_io_kwargs=mm_config.media_io_kwargs if mm_config else None,
        default_mm_processor_kwargs=getattr(request, "mm_processor_kwargs", None),
    )
    content_format = resolve_chat_template_content_format(
        chat_template=params.chat_template,
        tools=params.chat_template_kwargs.get("tools"),
        given_format=params.chat_template_content_format,
        tokenizer=tokenizer,
        model_config=config,
    )
    conversation, mm_data, _uuids = parse_chat_messages(
        request.messages,
        config,
        content_format=content_format,
        media_io_kwargs=params.media_io_kwargs,
        mm_processor_kwargs=params.mm_processor_kwargs,
    )
    prompt = safe_apply_chat_template(config, tokenizer, conversation, **params.get_apply_chat_template_kwargs())
    assert isinstance(prompt, str)
    return Rendered(prompt, content_format, conversation, mm_data)
