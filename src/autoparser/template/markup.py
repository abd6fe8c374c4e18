"""Marker names and pairs as chat templates write them: which closer an opener takes, which markers speak of reasoning.

Shared by the reasoning-switch probe (:mod:`.switches`: does a prompt leave a reasoning block open, or close one?) and
the reasoning analysis (an opener the generation prompt writes and nothing ever closes gets its closer by pairing).
"""

from __future__ import annotations

import re

__all__ = ["closes", "names_reasoning", "paired_closer"]

# The closer a template's opener takes by the common conventions, one rule per bracket style (``paired_closer``).
_ANGLE = re.compile(r"<(?P<name>[A-Za-z_][\w:.-]*)>")
_SPECIAL = re.compile(r"<\|(?P<name>[A-Za-z_][\w:.-]*)\|>")
_SQUARE = re.compile(r"\[(?P<name>[A-Za-z_][\w:. -]*)\]")
# START_X / BEGIN_X / begin_of_x / x_start / x_begin: the opening half of an X_START…X_END style pair.
_LEADING = re.compile(r"(?P<word>start|begin)(?P<joint>(?:_of)?[_ ])(?P<rest>.+)", re.IGNORECASE)
_TRAILING = re.compile(r"(?P<rest>.+?[_ ])(?P<word>start|begin)", re.IGNORECASE)
_CLOSING = re.compile(r"(?:end|stop|close)(?:_of)?[_ ]|.+[_ ](?:end|stop|close)$", re.IGNORECASE)
_CLOSER_FORM = re.compile(r"</[^>]+>|\[/[^\]]+\]|<\|/[^>]+\|>")
_REASONING_NAME = re.compile(r"(?:^|[^a-z])(?:think|thinking|thought|thoughts|reason|reasoning)(?:$|[^a-z])", re.I)


def paired_closer(opener: str) -> str:
    """The closer of ``opener`` by the pairing conventions templates write (``""`` when it is no opener): ``<x>`` →
    ``</x>`` (``<x:think>`` → ``</x:think>``), ``[X]`` → ``[/X]``, ``[BEGIN X]`` → ``[END X]``, ``<|START_X|>`` →
    ``<|END_X|>``, ``<|begin_of_x|>`` → ``<|end_of_x|>``, ``<|x_start|>`` → ``<|x_end|>``, else ``<|x|>`` → ``<|/x|>``.
    The end word takes the case of the start word."""
    core = opener.strip()
    for pattern, wrap in ((_ANGLE, "<{}>"), (_SPECIAL, "<|{}|>"), (_SQUARE, "[{}]")):
        match = pattern.fullmatch(core)
        if match is None:
            continue
        name = match["name"]
        if _CLOSING.match(name):
            return ""  # already a closer (`<|END_X|>`, `<|x_end|>`)
        if pattern is not _ANGLE:
            leading, trailing = _LEADING.fullmatch(name), _TRAILING.fullmatch(name)
            if leading is not None:
                return wrap.format(_same_case("end", leading["word"]) + leading["joint"] + leading["rest"])
            if trailing is not None:
                return wrap.format(trailing["rest"] + _same_case("end", trailing["word"]))
        return wrap.format("/" + name)
    return ""


def _same_case(word: str, like: str) -> str:
    return word.upper() if like.isupper() else word.capitalize() if like[:1].isupper() else word


def names_reasoning(marker: str) -> bool:
    """Whether a marker's name says reasoning (*think*, *thought*, *reasoning*: ``<x:think>``, ``[THINK]``,
    ``<|begin_of_thought|>``), as the prose phase classifies stated markers."""
    return _REASONING_NAME.search(marker.strip("<>[]|/ ")) is not None


def closes(marker: str) -> bool:
    """Whether ``marker`` is the closing half of a pair (``</x>``, ``[/X]``, ``<|/x|>``, ``<|END_X|>``,
    ``<|x_end|>``, ``[END X]``)."""
    core = marker.strip()
    if _CLOSER_FORM.fullmatch(core):
        return True
    for pattern in (_SPECIAL, _SQUARE):
        match = pattern.fullmatch(core)
        if match is not None:
            return _CLOSING.match(match["name"]) is not None
    return False
