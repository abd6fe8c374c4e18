"""Check GBNF grammars with a real constrained-decoding engine (llguidance) at the byte level.

llguidance matches tokens; here every byte is a token (ids 0-255, EOS = 256), so a string is accepted
iff the matcher consumes its UTF-8 bytes one by one and ends in an accepting state.

Caveat: llguidance imports GBNF by turning terminal-only rules into greedy lexemes. Where that greedy
lexing disagrees with GBNF semantics (a lexeme that could stop early), use the strict recognizer in
``tests/support/gbnf_recognizer.py`` instead and say so in the test.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import llguidance


class _ByteTokenizer:
    eos_token_id = 256
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids: ClassVar[list[int]] = [256]

    def __call__(self, data: bytes) -> list[int]:
        return list(data)


@functools.cache
def byte_tokenizer() -> llguidance.LLTokenizer:
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))


@functools.lru_cache(maxsize=512)
def compile_gbnf(gbnf: str) -> str:
    """Convert GBNF text to an llguidance grammar; raises ValueError when llguidance rejects it."""
    grammar = llguidance.grammar_from("gbnf", gbnf)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, byte_tokenizer())
    if is_error:
        raise ValueError(f"llguidance rejected the grammar: {messages}\n{gbnf}")
    return grammar


@functools.lru_cache(maxsize=512)
def compile_lark(lark: str) -> str:
    """Wrap Lark text as an llguidance grammar; raises ValueError when llguidance rejects it."""
    grammar = llguidance.grammar_from("lark", lark)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, byte_tokenizer())
    if is_error:
        raise ValueError(f"llguidance rejected the grammar: {messages}\n{lark}")
    return grammar


def _consume(grammar: str, text: str) -> llguidance.LLMatcher | None:
    matcher = llguidance.LLMatcher(byte_tokenizer(), grammar, log_level=0)
    if matcher.is_error():
        raise ValueError(matcher.get_error())
    for byte in text.encode("utf-8"):
        if not matcher.consume_token(byte):
            return None
    return matcher


def matches(grammar: str, text: str) -> bool:
    """True iff the compiled grammar accepts exactly ``text``."""
    matcher = _consume(grammar, text)
    return matcher is not None and matcher.is_accepting()


def prefix_matches(grammar: str, text: str) -> bool:
    """True iff ``text`` can be continued into a string the compiled grammar accepts."""
    return _consume(grammar, text) is not None


def gbnf_accepts(gbnf: str, text: str) -> bool:
    """True iff llguidance, loading ``gbnf``, accepts exactly ``text``."""
    return matches(compile_gbnf(gbnf), text)
