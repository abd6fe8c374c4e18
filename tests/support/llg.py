"""Check GBNF grammars with a real constrained-decoding engine (llguidance) at the byte level.

llguidance matches tokens; here every byte is a token (ids 0-255, EOS = 256), so a string is accepted
iff the matcher consumes its UTF-8 bytes one by one and ends in an accepting state.

Caveat: llguidance imports GBNF by turning terminal-only rules into greedy lexemes. Where that greedy
lexing disagrees with GBNF semantics (a lexeme that could stop early), use the strict recognizer in
``tests/support/gbnf_recognizer.py`` instead and say so in the test.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

import llguidance
import numpy as np


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


# --- Sampling: random outputs a grammar allows -------------------------------------------------------------------

_JSON_PIECES = ('{"', '": ', '", "', '"}', '": "', ", ", "true", "false", "null", "\n", "  ")
_CLOSERS = frozenset(b'"}]>)\n')


@dataclass(frozen=True, slots=True)
class Sample:
    """One sampled output: ``text`` (None when it did not end within the token limit), and how many tokens."""

    text: str | None
    tokens: int


class _PieceTokenizer:
    """Bytes 0-255, then multi-byte pieces (markers, tool names, JSON punctuation), then EOS: a small vocabulary
    that lets a random walk write markers in one step, as a real tokenizer's added tokens do."""

    bos_token_id = None

    def __init__(self, pieces: tuple[bytes, ...]) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + list(pieces) + [b"<eos>"]
        self.eos_token_id = len(self.tokens) - 1
        self.special_token_ids = [self.eos_token_id]

    def __call__(self, data: bytes) -> list[int]:
        return list(data)


@functools.lru_cache(maxsize=64)
def _piece_tokenizer(pieces: tuple[bytes, ...]) -> tuple[llguidance.LLTokenizer, _PieceTokenizer]:
    vocabulary = _PieceTokenizer(pieces)
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(vocabulary)), vocabulary


class Sampler:
    """Random walks through a grammar with llguidance's matcher: at each step, one of the tokens the grammar allows.

    Choices are weighted so samples stay short and readable: pieces (markers, names) and printable ASCII are
    likely, other bytes rare; the end of output is unlikely before ``budget`` tokens and then strongly preferred,
    with tokens that close things (quotes, brackets, markers). Seeded, so a failure can be replayed.
    """

    def __init__(self, pieces: Iterable[str], *, seed: int = 0, budget: int = 60, limit: int = 1500) -> None:
        unique = sorted({piece.encode() for piece in (*pieces, *_JSON_PIECES) if len(piece.encode()) > 1})
        self.tokenizer, vocabulary = _piece_tokenizer(tuple(unique))
        self._eos = vocabulary.eos_token_id
        self._tokens = vocabulary.tokens
        self._random = random.Random(seed)
        self.budget = budget
        self.limit = limit
        base = np.array([_byte_weight(i) for i in range(256)] + [1.5] * len(unique) + [0.0])
        closing = np.array([1.0 + 19.0 * (i in _CLOSERS) for i in range(256)] + [20.0] * len(unique) + [0.0])
        self._early = base
        self._late = base * closing

    def compile(self, lark: str) -> str:
        grammar = llguidance.grammar_from("lark", lark)
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
        if is_error:
            raise ValueError(f"llguidance rejected the grammar: {messages}\n{lark}")
        return grammar

    def sample(self, grammar: str) -> Sample:
        """One output of the compiled ``grammar`` (see :meth:`compile`)."""
        matcher = llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise ValueError(matcher.get_error())
        out = bytearray()
        vocab = len(self._tokens)
        for step in range(self.limit):
            mask = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")[:vocab]
            if matcher.is_error():
                raise ValueError(matcher.get_error())
            allowed = np.flatnonzero(mask)
            if not len(allowed):
                raise AssertionError(f"the grammar allows no token after {bytes(out)!r}")
            late = step >= self.budget
            weights = (self._late if late else self._early)[allowed].copy()
            eos = np.flatnonzero(allowed == self._eos)
            if len(eos):
                weights[eos[0]] = 50.0 * (1 + step - self.budget) if late else 0.02
            if not weights.sum():
                weights[:] = 1.0
            token = int(self._random.choices(allowed.tolist(), weights=weights.tolist())[0])
            if token == self._eos:
                return Sample(out.decode("utf-8"), step)
            if not matcher.consume_token(token):
                raise AssertionError(f"the matcher refused token {token} it allowed: {matcher.get_error()}")
            out += self._tokens[token]
            if matcher.is_stopped():
                return Sample(out.decode("utf-8"), step + 1)
        return Sample(None, self.limit)


def _byte_weight(byte: int) -> float:
    if byte in (0x20, 0x0A):
        return 0.2
    if 0x21 <= byte < 0x7F:
        return 1.0
    return 0.01
