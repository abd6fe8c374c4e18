"""End-of-turn analysis: the marker(s) a template writes after the assistant's answer (``<|im_end|>``, ``</s>``,
``<|eot_id|>``, ``<end_of_turn>``, MiniMax's ``[e~[``, ...).

A model ends its turn by writing that marker; servers usually stop generation on it and strip it, but not all do,
and a stop-string setup may leave it in the output. Knowing it lets the parser drop it from the end of the answer
instead of returning it as content.

Two renders isolate it: the conversation ending in an assistant answer, and the same followed by another user
turn. What follows the answer in both (their common prefix, in whole markers) is what closes the turn; when the
template writes nothing after a final answer, it is what precedes the next turn's header (the ending that text
shares with what introduces the first user turn), or — where that header is all the two share — what follows a
user's message and an assistant's alike before the next turn opens. The template's ``eos_token`` counts too when the
template uses it (the model emits it; bundled templates are loaded without one, so pass it to ``ChatTemplate.load``
to have it).

Other markers end a turn without the template writing them after the answer (:func:`analyze_stop_markers`): the
marker the template opens the *next* turn with right after an assistant turn — GLM writes no end-of-turn marker,
its next turn just starts with ``<|user|>`` (after an answer) or ``<|observation|>`` (after calls), and the model
stops by writing that token — and, for a template that writes ``eos_token`` but was loaded without one (no tokenizer
config), the usual EOS ``</s>``.
"""

from __future__ import annotations

import re
from typing import Any

from . import needles
from .diff import common_prefix_len
from .patterns import MARKER, marker_positions
from .variants import VariantRenderer

__all__ = ["analyze_end_of_turn", "analyze_stop_markers"]

_NEXT_USER = "U_NEXT_USER_MSG END_U"
_TOOL_RESULT = "T_TOOL_RESULT END_T"
# A marker token: no whitespace, quotes or nested brackets (not a JSON list, not `[Round 1]`).
_TOKEN = re.compile(r"<[^\s<>\[\]\"']+>|\[[^\s<>\[\]\"']+\]")
# The EOS of Llama 2, Mistral and many more: where the template writes ``eos_token`` and none was given, it is the
# likeliest one (a model's ``</s>`` ending the reply; elsewhere it may be HTML's strikethrough, see generate).
DEFAULT_EOS = "</s>"
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
                if not _markers(closing) and needles.USER_MSG in followed:
                    # The header shares its whole text with what ends the turn before the first user message (a
                    # default system turn closed by the same marker): what closes *every* turn is what follows
                    # the user's message and the assistant's alike, up to the next turn's opener.
                    after_user = _after(followed, needles.USER_MSG)
                    after_user = after_user[: after_user.find(needles.ASSISTANT_MSG)]
                    closing = _shared_closing(after_user, next_tail)
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


def analyze_stop_markers(
    renderer: VariantRenderer, end_of_turn: tuple[str, ...], eos_token: str, source: str, tool_calls: bool
) -> tuple[str, ...]:
    """Markers that end an assistant turn although the template does not write them after it (not in
    ``end_of_turn``): the marker that opens the turn following an answer (a user turn) or a call (a tool result),
    when it directly follows the assistant's turn and what closes it — GLM's ``<|user|>`` and ``<|observation|>``,
    Mistral's ``[INST]`` and ``[TOOL_RESULTS]``, ChatML's ``<|im_start|>`` — and ``</s>`` for a template that writes
    ``eos_token`` when it was loaded without one."""
    found: list[str] = []
    answer = [needles.USER, needles.assistant()]
    following = {"role": "user", "content": _NEXT_USER}
    found.append(_next_turn_opener(renderer, answer, following, end_of_turn, needles.ASSISTANT_MSG))
    if tool_calls:
        calls = needles.with_calls(needles.ONE_ARG_CALL)
        result = {
            "role": "tool",
            "tool_call_id": needles.CALL_ID_FIRST,
            "name": needles.FUN_FIRST,
            "content": _TOOL_RESULT,
        }
        found.append(_next_turn_opener(renderer, calls, result, end_of_turn, needles.FUN_FIRST, tools=True))
    if not eos_token.strip() and "eos_token" in source:
        found.append(DEFAULT_EOS)
    return tuple(m for m in dict.fromkeys(found) if m and m not in end_of_turn)


def _next_turn_opener(
    renderer: VariantRenderer,
    turn: list[dict[str, Any]],
    following: dict[str, Any],
    end_of_turn: tuple[str, ...],
    anchor: str,
    *,
    tools: bool = False,
) -> str:
    """The marker the turn after ``turn``'s last message opens with, when nothing but whitespace and the
    end-of-turn markers comes between the two ("" otherwise). Both renders are compared from the last ``anchor``
    (what the last message wrote) on: a template may render the last turn otherwise before it (Qwen3 writes an
    empty reasoning block into the final turn only)."""
    final = renderer.render(turn, tools=tools)
    followed = renderer.render([*turn, following], tools=tools)
    needle = str(following["content"])
    if not final or not followed or needle not in followed or anchor not in final:
        return ""
    final_tail = _after(final, anchor)
    # The last message's own occurrence of the anchor: the one followed by what follows it in the final render (the
    # next turn may repeat it: Solar's tool result names the function).
    before = followed[: followed.index(needle)]
    tails = [before[m.end() :] for m in re.finditer(re.escape(anchor), before)]
    if not tails:
        return ""
    next_tail = max(tails, key=lambda tail: common_prefix_len(final_tail, tail))
    shared = common_prefix_len(final_tail, next_tail)
    for found in marker_positions(next_tail):
        # (not from the middle of a marker; and where both renders go on past a marker, it opens the next turn's
        # header in both: a template that appends a turn after the last message, `<|im_start|>` + `assistant`)
        if found.start() < shared < found.end() or found.end() == shared < len(final_tail.rstrip()):
            shared = found.start()
            break
    rest = next_tail[shared:].lstrip()
    while True:
        closing = next((m for m in end_of_turn if m and rest.startswith(m)), None)
        if closing is None:
            break
        rest = rest[len(closing) :].lstrip()
    opener = _TOKEN.match(rest)
    return opener.group() if opener is not None else ""
