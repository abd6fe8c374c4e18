"""A small Hugging Face tokenizer for a bundled template, built on the spot (no downloads), for the serving-stack
tests: a byte-level BPE trained on the given texts, with the template's markers as added special tokens (as real
chat models have them) and the template as its ``chat_template``."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from autoparser import ChatTemplate

__all__ = ["FILLER", "fast_tokenizer", "hf_tokenizer", "markers_of"]

_MARKUP = re.compile(r"^(<[^<>\s]*>|\[[A-Z_/]+\]|<\|[^|]*\|>|<｜[^｜]*｜>)$")
FILLER = (
    'The quick brown fox jumps over the lazy dog. {"city": "Paris", "n": 42, "ok": true} '
    "Let me think about this step by step.\n\nHello, world! What's up? 3.14 [1, 2, 3] <> </> = ; : ' \" \\n"
)


def markers_of(template: ChatTemplate, extra: Sequence[str] = ()) -> list[str]:
    """The markup tokens a model of this template would have as added tokens (whole tags only)."""
    analysis = template.analysis
    fmt = analysis.tools.format
    candidates = {
        analysis.reasoning.start,
        analysis.reasoning.end,
        analysis.content.start,
        analysis.content.end,
        fmt.section_start,
        fmt.section_end,
        fmt.per_call_start,
        fmt.per_call_end,
        *analysis.preserved_tokens,
        *extra,
    }
    return sorted({c.strip() for c in candidates if c and _MARKUP.match(c.strip())}, key=len, reverse=True)


@functools.lru_cache(maxsize=128)
def fast_tokenizer(template_name: str, corpus: tuple[str, ...], extra_markers: tuple[str, ...] = ()) -> str:
    """The tokenizer's JSON (``PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(...))``) for a BPE
    trained on ``corpus`` with the template's markers as special tokens."""
    markers = markers_of(ChatTemplate.load(template_name), extra_markers)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=markers,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([*corpus, FILLER], trainer)
    return bpe.to_str()


def hf_tokenizer(
    template_name: str, corpus: Sequence[str], extra_markers: Sequence[str] = ()
) -> PreTrainedTokenizerFast:
    """A transformers tokenizer of :func:`fast_tokenizer` carrying the template as its chat template."""
    json_text = fast_tokenizer(template_name, tuple(corpus), tuple(extra_markers))
    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json_text))
    fast.chat_template = ChatTemplate.load(template_name).source
    return fast
