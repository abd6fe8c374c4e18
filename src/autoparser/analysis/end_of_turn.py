"""End-of-turn analysis: the marker(s) a template writes after the assistant's answer (``<|im_end|>``, ``</s>``,
``<|eot_id|>``, ``<end_of_turn>``, MiniMax's ``[e~[``, ...).

A model ends its turn by writing that marker; servers usually stop generation on it and strip it, but not all do,
and a stop-string setup may leave it in the output. Knowing it lets the parser drop it from the end of the answer
instead of returning it as content.

Two renders isolate it: the conversation ending in an assistant answer, and the same followed by another user
turn. What follows the answer in both (their common prefix, in whole markers) is what closes the turn; when the
template writes nothing after a final answer, it is what precedes the next turn's header (the ending that text
shares with what introduces the first user turn). The template's ``eos_token`` counts too when the template uses it
(the model emits it; bundled templates are loaded without one, so pass it to ``ChatTemplate.load`` to have it).
"""

from __future__ import annotations

import re

from . import needles
from .diff import common_prefix_len
from .patterns import MARKER, marker_positions
from .variants import VariantRenderer

__all__ = ["analyze_end_of_turn"]

_NEXT_USER = "U_NEXT_USER_MSG END_U"
_MARKUP = re.compile(r"[<>\[\]|]")
_ONLY_MARKERS = re.compile(rf"(?:\s|{MARKER})+")


def analyze_end_of_turn(
    renderer: VariantRenderer, eos_token: str, source: str, generation_prompt: str
) -> tuple[str, ...]:
    """The end-of-turn markers (whitespace trimmed, in the order the template writes them), then ``eos_token``.
    ``generation_prompt`` (how an assistant turn opens) tells a turn's opening marker from a closing one."""
    answer = [needles.USER, needles.assistant()]
    final = renderer.render(answer)
    followed = renderer.render([*answer, {"role": "user", "content": _NEXT_USER}])
    first = renderer.render([needles.USER])
    markers: list[str] = []
    if final and followed and first and needles.ASSISTANT_MSG in final and needles.ASSISTANT_MSG in followed:
        final_tail = _after(final, needles.ASSISTANT_MSG)
        next_tail = _after(followed, needles.ASSISTANT_MSG)
        if _NEXT_USER in next_tail and needles.USER_MSG in first:
            next_tail = next_tail[: next_tail.index(_NEXT_USER)]
            if final_tail.strip():
                closing = _shared_closing(final_tail, next_tail)
            else:
                closing = _without_header(next_tail, first[: first.index(needles.USER_MSG)])
            markers = _markers(closing)
            if not markers and final_tail.strip():
                markers = _distinct_closings(final_tail, next_tail, generation_prompt)
    if eos_token.strip() and "eos_token" in source and eos_token.strip() not in markers:
        markers.append(eos_token.strip())
    return tuple(markers)


def _after(text: str, needle: str) -> str:
    return text[text.rindex(needle) + len(needle) :]


def _shared_closing(final_tail: str, next_tail: str) -> str:
    """What follows the answer both when it ends the conversation and before the next turn, in whole markers.
    Where both go on and part right after a marker (``<|im_start|>`` + ``assistant`` / ``user``: a template that
    appends a turn after the last answer), that marker opens the next turn's header, so it is left out."""
    shared = common_prefix_len(final_tail, next_tail)
    cut = next((m.start() for m in marker_positions(final_tail) if m.start() < shared < m.end()), shared)
    closing = final_tail[:cut]  # (not up to the middle of a marker the two spell differently)
    both_go_on = len(closing) < len(final_tail.rstrip()) and len(closing) < len(next_tail.rstrip())
    found = marker_positions(closing)
    if both_go_on and found and found[-1].end() == len(closing):
        closing = closing[: found[-1].start()]
    return closing


def _distinct_closings(final_tail: str, next_tail: str, generation_prompt: str) -> list[str]:
    """A template that closes a final answer with one marker and an answer followed by another turn with another
    (gpt-oss: ``<|return|>``, ``<|end|>``): both, when the final one is all the template writes after the answer
    and the other is not how a turn opens."""
    if not _ONLY_MARKERS.fullmatch(final_tail):
        return []
    final = _markers(final_tail)
    following = marker_positions(next_tail)
    openers = marker_positions(generation_prompt)
    opener = openers[0].group() if openers else ""
    if following and following[0].start() == len(next_tail) - len(next_tail.lstrip()):
        first = following[0].group()
        if first != opener and first not in final:
            return [*final, first]
    return final


def _without_header(between: str, before_user: str) -> str:
    """``between`` (from an answer to the next user message, for a template that writes nothing after a final
    answer) without the user turn's header: the longest ending it shares with the text before the first user
    message, cut back to where a marker starts."""
    shared = 0
    while shared < min(len(between), len(before_user)) and between[-1 - shared] == before_user[-1 - shared]:
        shared += 1
    cut = len(between) - shared
    starts = [m.start() for m in marker_positions(between) if m.start() >= cut]
    return between[: starts[0]] if starts else between[:cut]


def _markers(text: str) -> list[str]:
    """The markers of ``text``: its ``<...>``/``[...]`` markers and any other whitespace-separated token that
    looks like markup (MiniMax's ``[e~[``), not words."""
    found: list[str] = []
    for token in text.split():
        parts = [m.group() for m in marker_positions(token)]
        if not parts or "".join(parts) != token:
            parts = [token] if len(token) >= 2 and _MARKUP.search(token) else []
        found += [part for part in parts if part not in found]
    return found
