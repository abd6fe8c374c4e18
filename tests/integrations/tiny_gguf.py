"""A tiny GGUF chat model made here, for a real llama.cpp server in the end-to-end tests (issue 21): no weights are
downloaded.

:func:`write_tiny_gguf` writes a llama-architecture model with random weights (2 layers, 64 wide, 4 heads: well
under 1 MB in f32, loaded by llama-server in a fraction of a second) and a vocabulary for one chat template:

* **Byte-level BPE** (``tokenizer.ggml.model = "gpt2"``, Qwen2's pre-tokenizer): the 256 byte symbols of GPT-2's
  byte-to-unicode map are tokens, so any text is encodable and grammar-constrained sampling can write any
  character (llama.cpp's grammar sampler decodes a token's bytes as UTF-8, carrying a cut character over to the
  next token); merges learned here from the template's own prompt add multi-character tokens, so tokens that
  straddle a grammar literal's boundary come up too.
* **The template's markers as single control tokens**: the analysis's whole-tag markers (reasoning, content,
  tool-call section and per-call markers), ``params.preserved_tokens`` and ``word`` triggers that are whole tags,
  the end-of-turn markers, and the role markers the template's source spells (``<|im_start|>``, ``[INST]``...).
  Control tokens are what real models have, and the strict case for llama.cpp: its server writes a control token
  into a reply only when the request lists it in ``preserved_tokens``, and refuses a ``word`` trigger that is a
  single token without it. (``<function=`` or ``>`` are not whole tags: they stay text, as in Qwen's tokenizer.)
* **bos / eos / end of turn**: eos and eot are the template's first end-of-turn marker (``<|im_end|>``, ``</s>``...;
  ``</s>`` when it has none), so the server stops there (llama.cpp also ends on the other end-of-turn markers it
  knows by name: ``<|eot_id|>``, ``<|im_end|>``, ``<|end|>``...). ``add_bos_token`` is off: the prompt autoparser
  renders (with the template's BOS text, if any) is sent as is.
* ``tokenizer.chat_template`` holds the template's source.
* ``words``: extra text tokens (never produced by the tokenizer, which only merges; the model samples them), for
  tool names and the opening of a bare JSON call.

**Weights.** Random (numpy, seeded), with one designed part: every token embedding shares a constant direction
that the layers leave alone and the output matrix reads, so the logits carry a fixed per-token bias under the
random part. ``marker_logit`` makes the markers, the ``words`` and the end-of-generation tokens likelier than any
one byte (and ``quote_logit`` the ``"``, so free strings end): where a grammar lets the model write free text until
it opens a call (``tool_choice="required"``, a reasoning block the prompt opened) the call comes within tens of
tokens rather than hundreds. ``marker_logit=0, quote_logit=0`` gives a plainly random model; ``noise`` scales the
random part (the logits' spread from context to context).

``python -m tests.integrations.tiny_gguf TEMPLATE OUT.gguf`` writes one from the command line.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from autoparser import ChatTemplate

from .llama_server import EOG_NAMES, markers_for

__all__ = ["TinyModel", "byte_symbols", "write_tiny_gguf"]

# Qwen2's pre-tokenizer (llama.cpp's "qwen2") in Python's re; only used to learn merges, so an approximation does.
_PRE_SPLIT = re.compile(
    r"'(?:[sStTmMdD]|[rR][eE]|[vV][eE]|[lL][lL])|[^\r\n\w]?[^\W\d_]+|\d| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
_SAMPLE_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What's the weather like in Paris? Answer in one sentence, please."},
]


@dataclass(frozen=True)
class TinyModel:
    """A written model: its file, its vocabulary and the ids that matter to a test."""

    path: Path
    tokens: tuple[str, ...]  # token texts (byte symbols for normal tokens, the marker itself for control tokens)
    markers: tuple[str, ...]  # the control tokens, markers of the template
    words: tuple[str, ...]  # the extra text tokens (as the vocabulary spells them: byte symbols)
    eos: str
    eog: tuple[str, ...]  # the tokens llama.cpp ends generation on: eos and the markers it knows by name
    bos: str | None
    merges: tuple[str, ...] = field(repr=False, default=())

    def token_id(self, text: str) -> int:
        """The id of a control token."""
        return self.tokens.index(text)

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode map: the printable symbol standing for each byte 0..255, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def _learn_merges(texts: Iterable[str], count: int, symbols: Sequence[str]) -> list[tuple[str, str]]:
    """Byte-level BPE merges: the ``count`` most frequent adjacent pairs, merged greedily (ties by text)."""
    words: collections.Counter[tuple[str, ...]] = collections.Counter()
    for text in texts:
        for piece in _PRE_SPLIT.findall(text):
            words[tuple(symbols[b] for b in piece.encode("utf-8"))] += 1
    merges: list[tuple[str, str]] = []
    for _ in range(count):
        pairs: collections.Counter[tuple[str, str]] = collections.Counter()
        for word, n in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
        merges.append(best)
        joined: collections.Counter[tuple[str, ...]] = collections.Counter()
        for word, n in words.items():
            out: list[str] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            joined[tuple(out)] += n
        words = joined
    return merges


def _sample_texts(template: ChatTemplate, markers: Sequence[str]) -> list[str]:
    """Text the template renders (a prompt with tools and one without), split at the markers."""
    texts = []
    for tools in (_SAMPLE_TOOLS, None):
        try:
            texts.append(template.apply(_SAMPLE_MESSAGES, tools=tools).prompt)
        except Exception:  # a template that refuses the sample: its merges come from the rest
            continue
    splitter = re.compile("|".join(re.escape(m) for m in markers)) if markers else None
    return [part for text in texts for part in (splitter.split(text) if splitter else [text]) if part]


def write_tiny_gguf(
    template: ChatTemplate | str,
    path: str | Path,
    *,
    params: Any = None,
    extra_markers: Iterable[str] = (),
    words: Iterable[str] = (),
    n_merges: int = 128,
    n_embd: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    n_head_kv: int = 2,
    n_ff: int = 128,
    context_length: int = 16384,
    marker_logit: float = 3.0,
    quote_logit: float = 3.0,
    noise: float = 1.0,
    seed: int = 0,
) -> TinyModel:
    """Write the tiny model for ``template`` (a ChatTemplate or a bundled template's name) to ``path``.

    ``params`` (a ChatParams of a request) adds its preserved tokens and word triggers to the markers;
    ``words`` are text tokens as likely as a marker (tool names, the opening of a bare JSON call), so that a call
    a pattern trigger waits for comes up too."""
    if isinstance(template, str):
        template = ChatTemplate.load(template)
    path = Path(path)
    symbols = byte_symbols()
    markers = markers_for(template, params, extra_markers)
    end_of_turn = [m.strip() for m in template.analysis.end_of_turn if m.strip() in markers]
    eos = end_of_turn[0] if end_of_turn else (template.eos_token.strip() or "</s>")
    if eos not in markers:
        markers.append(eos)
    eog = tuple(dict.fromkeys([eos, *(m for m in markers if m in EOG_NAMES)]))
    bos = template.bos_token.strip() or None

    merges = _learn_merges(_sample_texts(template, markers), n_merges, symbols)
    tokens: list[str] = list(symbols)
    for left, right in merges:
        if left + right not in tokens:
            tokens.append(left + right)
    n_plain = len(tokens)
    for word in words:
        spelled = "".join(symbols[b] for b in word.encode("utf-8"))
        if spelled not in tokens and word not in markers:
            tokens.append(spelled)
    n_normal = len(tokens)
    tokens.extend(markers)
    types = [gguf.TokenType.NORMAL] * n_normal + [gguf.TokenType.CONTROL] * len(markers)
    n_vocab = len(tokens)

    rng = np.random.default_rng(seed)
    head_dim = n_embd // n_head

    def weight(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # The constant direction (dimension 0) carries the bias: every embedding has the same large component there,
    # the layers neither read it (their input matrices' column 0 is zero) nor write it (their output matrices'
    # row 0), so after the final RMS norm it is the same for every context and the output matrix's column 0 is a
    # logit bias. (Were the layers to read it, they would add a context-independent vector of their own, a random
    # per-token bias as large as the designed one.)
    embeddings = weight(n_vocab, n_embd, scale=0.5)
    embeddings[:, 0] = 8.0
    normed = 8.0 / float(np.sqrt((embeddings**2).mean(axis=1)).mean())  # dimension 0 after the RMS norm, about
    output = weight(n_vocab, n_embd, scale=noise / np.sqrt(n_embd))
    bias = np.zeros(n_vocab, dtype=np.float32)
    bias[n_plain:] = marker_logit  # the words and the markers
    bias[tokens.index('"')] = quote_logit  # '"' is its own byte symbol: strings end within tens of tokens
    output[:, 0] = bias / normed

    def reads(rows: int, cols: int) -> np.ndarray:
        matrix = weight(rows, cols, scale=0.1)
        matrix[:, 0] = 0.0
        return matrix

    def writes(rows: int, cols: int) -> np.ndarray:
        matrix = weight(rows, cols, scale=0.1)
        matrix[0, :] = 0.0
        return matrix

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"autoparser tiny random {template.name}")
    writer.add_context_length(context_length)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([f"{left} {right}" for left, right in merges])
    writer.add_eos_token_id(tokens.index(eos))
    writer.add_eot_token_id(tokens.index(eos))
    # Without one llama.cpp's BPE default (id 11, a byte here) would be BOS; never added to prompts either way.
    writer.add_bos_token_id(tokens.index(bos if bos is not None else eos))
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_chat_template(template.source)

    writer.add_tensor("token_embd.weight", embeddings)
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", reads(n_head * head_dim, n_embd))
        writer.add_tensor(f"blk.{i}.attn_k.weight", reads(n_head_kv * head_dim, n_embd))
        writer.add_tensor(f"blk.{i}.attn_v.weight", reads(n_head_kv * head_dim, n_embd))
        writer.add_tensor(f"blk.{i}.attn_output.weight", writes(n_embd, n_head * head_dim))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", reads(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", reads(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", writes(n_embd, n_ff))
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    writer.add_tensor("output.weight", output)

    path.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    merged = tuple(f"{a} {b}" for a, b in merges)
    return TinyModel(path, tuple(tokens), tuple(markers), tuple(tokens[n_plain:n_normal]), eos, eog, bos, merged)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("template", help="a bundled template's name")
    parser.add_argument("out", type=Path, help="the .gguf file to write")
    parser.add_argument("--bos", default="", help="the template's BOS text (e.g. <s> for Mistral)")
    parser.add_argument("--eos", default="", help="the template's EOS text (e.g. </s> for Mistral)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model = write_tiny_gguf(ChatTemplate.load(args.template, args.bos, args.eos), args.out, seed=args.seed)
    print(f"{model.path}: {model.size} bytes, {len(model.tokens)} tokens, eos {model.eos!r}, markers {model.markers}")


if __name__ == "__main__":
    main()
