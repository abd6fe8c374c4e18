"""Diff primitives for differential template analysis.

Rendered variants of a template are compared at two levels: first as sequences of *segments* (markers such
as ``<think>`` or ``[TOOL_CALLS]`` versus plain text), so a marker is never split in the middle, then
character by character, but only between text segments. The result is a :class:`DiffSplit`: the common
``prefix`` and ``suffix`` and the differing ``left``/``right`` middles.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NamedTuple

__all__ = [
    "DiffSplit",
    "Segment",
    "SegmentKind",
    "after_common_suffix",
    "after_prompt",
    "calculate_diff_split",
    "common_prefix_len",
    "prune_whitespace_segments",
    "segmentize_markers",
    "until_common_prefix",
]


class SegmentKind(Enum):
    TEXT = "text"
    MARKER = "marker"


class Segment(NamedTuple):
    kind: SegmentKind
    value: str


class DiffSplit(NamedTuple):
    """``L = prefix + left + suffix`` and ``R = prefix + right + suffix``."""

    prefix: str = ""
    suffix: str = ""
    left: str = ""
    right: str = ""


_OPENER = re.compile(r"[<\[]")
_CLOSER = {"<": ">", "[": "]"}


def segmentize_markers(text: str) -> list[Segment]:
    """Split ``text`` into TEXT and MARKER segments.

    A marker runs from ``<`` to the next ``>`` or from ``[`` to the next ``]`` (openers inside are ordinary
    characters, so ``<a<b>`` is one marker); an unclosed marker at the end is text.
    """
    segments: list[Segment] = []
    pos, n = 0, len(text)
    text_start = 0
    while pos < n:
        opener = _OPENER.search(text, pos)
        if opener is None:
            break
        start = opener.start()
        close = text.find(_CLOSER[opener.group()], start + 1)
        if close < 0:
            break  # unclosed: the rest is text
        if start > text_start:
            segments.append(Segment(SegmentKind.TEXT, text[text_start:start]))
        segments.append(Segment(SegmentKind.MARKER, text[start : close + 1]))
        pos = text_start = close + 1
    if text_start < n:
        segments.append(Segment(SegmentKind.TEXT, text[text_start:]))
    return segments


def prune_whitespace_segments(segments: list[Segment]) -> list[Segment]:
    """Drop segments that are only whitespace."""
    return [s for s in segments if s.value.strip()]


def common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons, no per-character loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix_len(a: str, b: str) -> int:
    return common_prefix_len(a[::-1], b[::-1])


def calculate_diff_split(left: str, right: str) -> DiffSplit:
    """Common prefix/suffix of two renders, never splitting a marker (see the module docstring)."""
    sl, sr = segmentize_markers(left), segmentize_markers(right)
    if not sl:
        return DiffSplit(right=right)
    if not sr:
        return DiffSplit(left=left)
    ls, le, rs, re_ = 0, len(sl) - 1, 0, len(sr) - 1
    lfull = rfull = False
    prefix = suffix = ""
    while ls != le and rs != re_:
        advanced = False
        if sl[ls] == sr[rs]:
            prefix += sl[ls].value
            ls += 1
            rs += 1
            advanced = True
        if sl[le] == sr[re_]:
            suffix = sl[le].value + suffix
            if ls != le:
                le -= 1
            else:
                lfull = True
            if rs != re_:
                re_ -= 1
            else:
                rfull = True
            advanced = True
        if not advanced:
            break
    if ls == le and rs != re_:
        if sl[ls] == sr[re_]:
            suffix = sr[re_].value + suffix
            re_ -= 1
            lfull = True
        elif sl[ls] == sr[rs]:
            prefix += sr[rs].value
            rs += 1
            lfull = True
    elif rs == re_ and ls != le:
        if sl[le] == sr[rs]:
            suffix = sl[le].value + suffix
            le -= 1
            rfull = True
        elif sl[ls] == sr[rs]:
            prefix += sl[ls].value
            ls += 1
            rfull = True
    elif ls == le and rs == re_ and sl[ls] == sr[rs] and sl[ls].kind is SegmentKind.MARKER:
        prefix += sl[ls].value
        lfull = rfull = True
    text_suffix_ok = sl[le].kind is SegmentKind.TEXT and sr[re_].kind is SegmentKind.TEXT
    text_prefix_ok = sl[ls].kind is SegmentKind.TEXT and sr[rs].kind is SegmentKind.TEXT
    rem_l = "".join(s.value for s in sl[ls : le if lfull else le + 1])
    rem_r = "".join(s.value for s in sr[rs : re_ if rfull else re_ + 1])
    suffix_len = _common_suffix_len(rem_l, rem_r) if text_suffix_ok else 0
    core_l, core_r = rem_l[: len(rem_l) - suffix_len], rem_r[: len(rem_r) - suffix_len]
    prefix_len = common_prefix_len(core_l, core_r) if text_prefix_ok else 0
    prefix += rem_l[:prefix_len]
    suffix = rem_l[len(rem_l) - suffix_len :] + suffix
    mid_l, mid_r = core_l[prefix_len:], core_r[prefix_len:]
    if not mid_l and not mid_r:
        return DiffSplit(prefix=left)
    if not mid_l and right.startswith(left):
        return DiffSplit(prefix=left, right=right[len(left) :])
    return DiffSplit(prefix=prefix, suffix=suffix, left=mid_l, right=mid_r)


def until_common_prefix(full: str, a: str, b: str) -> str:
    """``full`` up to the first occurrence of the common prefix of ``a`` and ``b`` ("" if none)."""
    common = a[: common_prefix_len(a, b)]
    index = full.find(common) if common else -1
    return full[:index] if index >= 0 else ""


def after_common_suffix(full: str, a: str, b: str) -> str:
    """``full`` after the last occurrence of the common suffix of ``a`` and ``b`` ("" if none)."""
    common = a[len(a) - _common_suffix_len(a, b) :]
    index = full.rfind(common) if common else -1
    return full[index + len(common) :] if index >= 0 else ""


_SPACE = re.compile(r"\s+")
_PIECE_START = re.compile(r"(?<=\s)\S|[<\[]")
_OPEN_TAG_AT_END = re.compile(r"<[A-Za-z][\w:.-]*>\s*\Z")


def after_prompt(text: str, prompts: tuple[str, ...]) -> str:
    """``text`` (the start of an assistant turn in a diff) without the turn header a generation prompt writes.

    A template may render the header of a history turn otherwise than the generation prompt does (Llama 4's JSON
    template opens a turn with calls with a line break more; DeepSeek-V3.1's vLLM template writes ``</think>``
    there without the prompt's indentation), so the header lands in the diff of an answer and a call. The model
    never writes it: the prompt did. Cut the longest end of a prompt (from a marker or a word on) that ``text``
    starts with, whitespace aside; ``text`` as is where none matches.

    A prompt that ends by opening a tag (``<think>\n\n``, Nemotron Nano v2) is left alone: the turn continues
    inside that block, and whether it is reasoning or the answer's wrapper is for the reasoning and content phases
    to say, not a header to drop."""
    best = 0
    for prompt in prompts:
        if _OPEN_TAG_AT_END.search(prompt):
            continue
        starts = [0, *(m.start() for m in _PIECE_START.finditer(prompt))]
        for start in sorted(set(starts)):
            words = _SPACE.split(prompt[start:].strip())
            if not words or words == [""]:
                continue
            pattern = r"\s*" + r"\s*".join(re.escape(w) for w in words) + (r"\s*" if prompt[-1:].isspace() else "")
            match = re.match(pattern, text)
            if match:
                best = max(best, match.end())
                break  # the longest end of this prompt that matches
    return text[best:]
