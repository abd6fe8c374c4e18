"""Checks of the parser's promises on one output, shared by the tests and ``bench/fuzz.py``.

P1 never crash: ``parse()`` (non-strict), ``feed()`` and ``finish()`` never raise.
P2 nothing lost: every sentinel or payload word still in the output survives in content, reasoning, a call's name
or arguments, or a warning; a complete call does not come back with ``{}`` when the output gave it arguments; lost
or broken calls, and call markers left in the content, carry a warning.
P4 usable calls: every call of a complete parse has arguments that ``json.loads`` reads as an object without
duplicate keys (at any depth), whatever the damage; a call that is not complete says so in its status, with a
warning.
P3 the stream ends equal to ``parse()``: for a chunking, the accumulated deltas equal the parse in content,
reasoning, calls, model-written ids and warnings, and each call gets its name and id once, in its first delta.

Each check returns a list of :class:`Failure` (empty when the promise holds), so callers can report them all.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from autoparser import ChatMessage, ChatParams
from autoparser.check.readback import (
    char_chunks,
    compare_messages,
    delta_protocol,
    marker_cut_chunkings,
    random_chunks,
)
from autoparser.message import MessageDelta, apply_deltas
from autoparser.parser.markers import is_word_marker

__all__ = [
    "Failure",
    "argument_failures",
    "char_chunks",
    "check_parse",
    "check_stream",
    "kept_text",
    "marker_cut_chunkings",
    "random_chunks",
]


@dataclass(frozen=True)
class Failure:
    promise: str  # "P1", "P2" or "P3"
    detail: str

    def __str__(self) -> str:
        return f"{self.promise}: {self.detail}"


def kept_text(message: ChatMessage) -> str:
    """Everything a parse kept: content, reasoning, call names, arguments and model-written ids, warnings."""
    parts = [message.content, message.reasoning_content]
    parts += [c.name + "\x00" + c.arguments + "\x00" + ("" if c.id_generated else c.id) for c in message.tool_calls]
    parts += [w.message for w in message.warnings]
    return "\x00".join(parts)


def id_failures(message: ChatMessage, generated: Sequence[bool] | None = None) -> list[Failure]:
    """One reply, one set of ids: every call has one, and a generated one is unlike every other id of the reply
    (ids the model wrote are kept as written, repeated or not). ``generated`` says which calls' ids were generated
    when the message does not (one accumulated from stream deltas)."""
    ids = [call.id for call in message.tool_calls]
    if generated is None:
        generated = [call.id_generated for call in message.tool_calls]
    failures = [Failure("P3", f"call {i} has no id") for i, call_id in enumerate(ids) if not call_id]
    for index, call_id in enumerate(ids):
        if index < len(generated) and generated[index] and ids.count(call_id) > 1:
            failures.append(Failure("P3", f"generated id {call_id!r} of call {index} is not unique"))
    return failures


def _crash(where: str, error: BaseException) -> Failure:
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    return Failure("P1", f"{where} raised {type(error).__name__}{at}: {str(error)[:160]}")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except RecursionError:
        return True  # nested deeper than the C decoder goes: not a verdict on the text
    except ValueError:
        return False
    return True


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _DuplicateKey(sorted({k for k, _ in pairs if sum(1 for key, _ in pairs if key == k) > 1}))
    return found


def argument_failures(message: ChatMessage) -> list[Failure]:
    """P4 for a complete parse: every call's arguments are a JSON object without duplicate keys; a call whose status
    is not complete comes with a warning."""
    failures = []
    for index, call in enumerate(message.tool_calls):
        which = f"call {index} ({call.name})"
        try:
            value = json.loads(call.arguments, object_pairs_hook=_no_duplicates)
        except RecursionError:
            continue  # nested deeper than the C decoder goes: not a verdict on the text
        except _DuplicateKey as error:
            failures.append(Failure("P4", f"{which} has duplicate keys {error}: {call.arguments!r:.200}"))
            continue
        except ValueError:
            failures.append(Failure("P4", f"{which} has invalid JSON arguments {call.arguments!r:.200}"))
            continue
        if not isinstance(value, dict):
            failures.append(Failure("P4", f"{which} has arguments that are no object: {call.arguments!r:.200}"))
        if call.status != "complete" and not message.warnings:
            failures.append(Failure("P4", f"{which} is {call.status} without a warning"))
    return failures


def _stray(marker: str, content: str) -> bool:
    """Whether ``content`` holds ``marker`` as markup. A marker that is a plain word (FireFunction's ``functools``)
    is a word of the answer unless a bracket follows it (or the output ends with it, which the parser warns about:
    docs/parsing.md)."""
    if not is_word_marker(marker):
        return marker in content
    return re.search(re.escape(marker) + r"\s*[\[{]", content) is not None


_FENCE_TAG = re.compile(r"```[A-Za-z0-9_+-]+")  # a fence and its info string (parser/markers.py, language_tag)


def check_parse(
    params: ChatParams,
    text: str,
    *,
    words: Iterable[str] = (),
    empty_arg_calls: Sequence[str] = ("ping",),
    expected_calls: int | None = None,
    call_markers: Sequence[str] = (),
) -> tuple[ChatMessage | None, list[Failure]]:
    """P1 and P2 for ``parse(text)``.

    ``words``: sentinels and payload words; each one still in ``text`` must be kept. ``empty_arg_calls``: the only
    tools that may come back with ``{}``. ``expected_calls``: when the damage cannot legitimately remove a call,
    fewer calls need a warning. ``call_markers``: call-opening markers; one left in the content needs a warning.
    """
    try:
        message = params.parse(text)
    except Exception as error:
        return None, [_crash("parse()", error)]
    failures: list[Failure] = []
    kept = kept_text(message)
    # A code fence's info string (```json, ```python: models retag the fence a prompt showed them) is markup where the
    # parser reads the fence as structure; a word that stands only there is not lost.
    untagged = _FENCE_TAG.sub("```", text)
    lost = sorted(w for w in set(words) if w in untagged and w not in kept)
    if lost:
        failures.append(Failure("P2", f"lost {lost}"))
    # A call of a tool the request does not declare (a damaged name, say) is returned as written, `{}` too: warned.
    warned_undeclared = {w.message for w in message.warnings if w.message.endswith("is not declared in the request")}
    for call in message.tool_calls:
        empty = call.arguments.strip().replace(" ", "") == "{}"
        undeclared = f"tool {call.name!r} is not declared in the request" in warned_undeclared
        # (a call cut off or repaired says so in its status and a warning, which holds what was left out)
        if call.name not in empty_arg_calls and empty and not undeclared and call.status == "complete":
            failures.append(Failure("P2", f"silent {{}}: {call.name} came back with {call.arguments!r}"))
    warned = bool(message.warnings)
    if not warned:
        broken = [c.name for c in message.tool_calls if not _is_json(c.arguments)]
        if broken:
            failures.append(Failure("P2", f"calls {broken} have invalid JSON arguments and no warning"))
        if expected_calls is not None and len(message.tool_calls) < expected_calls:
            failures.append(Failure("P2", f"{expected_calls - len(message.tool_calls)} call(s) lost without a warning"))
        stray = [m for m in call_markers if _stray(m, message.content)]
        if stray:
            failures.append(Failure("P2", f"call markers {stray} left in the content without a warning"))
    failures += argument_failures(message)
    return message, failures


# --- chunkings: the check's own (autoparser.check.readback), re-exported here for the tests ------------------------


# --- P3 -------------------------------------------------------------------------------------------------------------


def check_stream(params: ChatParams, pieces: Sequence[str], expected: ChatMessage | None = None) -> list[Failure]:
    """P1 for ``feed``/``finish``, and P3: the stream of ``pieces`` ends equal to ``parse("".join(pieces))``."""
    text = "".join(pieces)
    if expected is None:
        try:
            expected = params.parse(text)
        except Exception:
            return []
    stream = params.stream()
    deltas: list[MessageDelta] = []
    try:
        for i, piece in enumerate(pieces):
            try:
                deltas += stream.feed(piece)
            except Exception as error:
                return [_crash(f"feed() of piece {i} ({piece!r:.40})", error)]
        deltas += stream.finish()
    except Exception as error:
        return [_crash("finish()", error)]
    got = apply_deltas(deltas)
    failures = [Failure("P3", problem) for problem in delta_protocol(deltas) + compare_messages(got, expected)]
    failures += id_failures(got, [call.id_generated for call in expected.tool_calls]) + id_failures(expected)
    return failures
