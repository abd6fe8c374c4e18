"""Diff primitives: segmentation, diff split with tag-boundary fixing, common prefix/suffix helpers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoparser.analysis.diff import (
    DiffSplit,
    Segment,
    SegmentKind,
    after_common_suffix,
    calculate_diff_split,
    prune_whitespace_segments,
    segmentize_markers,
    until_common_prefix,
)

T, M = SegmentKind.TEXT, SegmentKind.MARKER


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("", []),
        ("plain", [Segment(T, "plain")]),
        ("a<think>b", [Segment(T, "a"), Segment(M, "<think>"), Segment(T, "b")]),
        ("<a<b>", [Segment(M, "<a<b>")]),  # openers inside a marker are ordinary characters
        ("[TOOL_CALLS][ARGS]", [Segment(M, "[TOOL_CALLS]"), Segment(M, "[ARGS]")]),
        ("x<unclosed [y]", [Segment(T, "x<unclosed [y]")]),  # an unclosed marker swallows the rest as text
        ('[{"a": 1}]', [Segment(M, '[{"a": 1}]')]),  # known limitation shared with the reference
        ("<｜tool▁sep｜>名", [Segment(M, "<｜tool▁sep｜>"), Segment(T, "名")]),
    ],
)
def test_segmentize(text: str, segments: list[Segment]) -> None:
    assert segmentize_markers(text) == segments


def test_prune_whitespace_segments() -> None:
    assert prune_whitespace_segments(segmentize_markers("<a>\n \t<b>x")) == [
        Segment(M, "<a>"),
        Segment(M, "<b>"),
        Segment(T, "x"),
    ]


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("", "x", DiffSplit(right="x")),
        ("x", "", DiffSplit(left="x")),
        ("same", "same", DiffSplit(prefix="same")),
        ("abc", "abcdef", DiffSplit(prefix="abc", right="def")),  # left is a prefix: a pure append
        # markers are never split
        ("prefix<tag>", "prefix</tag>suffix", DiffSplit(prefix="prefix", left="<tag>", right="</tag>suffix")),
        # character-level trimming only between text segments
        (
            "prefix<div>content</div>",
            "prefix<div>different</div>",
            DiffSplit(prefix="prefix<div>", suffix="ent</div>", left="cont", right="differ"),
        ),
        (
            "<|im_start|>assistant\n",
            "<|im_start|>assistant\n<think>\n",
            DiffSplit(prefix="<|im_start|>assistant\n", right="<think>\n"),
        ),
        (
            "<s>A_ASST</s>",
            "<s><think>R</think>A_ASST</s>",
            DiffSplit(prefix="<s>", suffix="A_ASST</s>", left="", right="<think>R</think>"),
        ),
    ],
)
def test_calculate_diff_split(left: str, right: str, expected: DiffSplit) -> None:
    assert calculate_diff_split(left, right) == expected


@given(st.text(alphabet="<>[]ab/ \n", max_size=20), st.text(alphabet="<>[]ab/ \n", max_size=20))
def test_diff_split_reassembles_both_sides(left: str, right: str) -> None:
    d = calculate_diff_split(left, right)
    assert d.prefix + d.left + d.suffix == left
    assert d.prefix + d.right + d.suffix == right


def test_common_prefix_and_suffix_helpers() -> None:
    assert until_common_prefix("xxABCyy", "ABCD", "ABCE") == "xx"
    assert until_common_prefix("xxyy", "ABCD", "ABCE") == ""  # not found
    assert until_common_prefix("xx", "AB", "CD") == ""  # nothing in common
    assert after_common_suffix("aXYZbXYZc", "1XYZ", "2XYZ") == "c"  # after the last occurrence
    assert after_common_suffix("abc", "x1", "y2") == ""
