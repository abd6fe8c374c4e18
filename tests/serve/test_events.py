"""The reply's event stream (:mod:`autoparser.serve.events`), fed the parser's deltas for every bundled template's
well-formed outputs, cut into pieces of every shape: blocks open and close one at a time, every block that opens
closes, and the events put together are the message the parser reads — the same reasoning, text and calls, in order,
however the output was cut."""

from __future__ import annotations

import random

import pytest

from autoparser.message import CallStatus, MessageDelta, ToolCallDelta
from autoparser.serve.events import (
    CallArguments,
    CallEnded,
    CallStarted,
    Event,
    ReasoningEnded,
    ReasoningStarted,
    ReasoningText,
    ReplyEnded,
    ReplyEvents,
    TextDelta,
    TextEnded,
    TextStarted,
)
from tests.support.outputs import chat, outputs
from tests.support.sample import sampled

OUTPUTS = [o for template in sampled() for o in outputs(template)]  # every template in CI, a sample elsewhere


def _events(template: str, text: str, cuts: list[int]) -> tuple[list[Event], object]:
    stream = chat(template).stream()
    events = ReplyEvents()
    found: list[Event] = []
    last = 0
    for cut in [*cuts, len(text)]:
        found += events.feed(stream.feed(text[last:cut]))
        last = cut
    found += events.end("stop", None, stream.finish())
    return found, stream.message


def _check(found: list[Event], message: object) -> None:
    open_block: object = None
    reasoning, content = [], []
    calls: dict[int, list[str]] = {}
    ended: dict[int, CallEnded] = {}
    block_text: list[str] = []
    for event in found[:-1]:
        match event:
            case ReasoningStarted() | TextStarted():
                assert open_block is None, found
                open_block, block_text = type(event), []
            case ReasoningText(text=text):
                assert open_block is ReasoningStarted
                reasoning.append(text)
                block_text.append(text)
            case TextDelta(text=text):
                assert open_block is TextStarted
                content.append(text)
                block_text.append(text)
            case ReasoningEnded(text=text) | TextEnded(text=text):
                expected = ReasoningStarted if isinstance(event, ReasoningEnded) else TextStarted
                assert open_block is expected and text == "".join(block_text)
                open_block = None
            case CallStarted(index=index):
                assert open_block is None and index not in calls
                open_block, calls[index] = index, []
            case CallArguments(index=index, text=text):
                assert open_block == index
                calls[index].append(text)
            case CallEnded(index=index):
                assert open_block == index and index not in ended
                assert event.arguments == "".join(calls[index])
                ended[index] = event
                open_block = None
            case _:
                raise AssertionError(f"unexpected {event}")
    assert open_block is None
    assert isinstance(found[-1], ReplyEnded)
    assert found[-1].has_calls == bool(message.tool_calls)  # type: ignore[attr-defined]
    assert "".join(reasoning) == message.reasoning_content  # type: ignore[attr-defined]
    assert "".join(content) == (message.content or "")  # type: ignore[attr-defined]
    got = [(ended[i].id, ended[i].name, ended[i].arguments, ended[i].status) for i in sorted(ended)]
    assert got == [(c.id, c.name, c.arguments, c.status) for c in message.tool_calls]  # type: ignore[attr-defined]
    assert sorted(calls) == list(range(len(calls)))


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: o.key)
def test_events_put_together_are_the_message_however_the_output_is_cut(output) -> None:  # type: ignore[no-untyped-def]
    text = output.text
    rng = random.Random(output.key)
    cuttings = [[], list(range(1, len(text)))[:150], sorted(rng.sample(range(1, len(text)), min(5, len(text) - 1)))]
    for cuts in cuttings:
        _check(*_events(output.template, text, cuts))


def test_several_calls_in_one_delta_are_each_opened_and_closed_in_order() -> None:
    """Three calls completed by one upstream read: three blocks, in order, none merged or dropped."""
    calls = tuple(
        ToolCallDelta(i, f"call_{i}", "f", f'{{"n": {i}}}', CallStatus.COMPLETE if i < 2 else None) for i in range(3)
    )
    events = ReplyEvents()
    found = events.feed([MessageDelta("Sure.", "think", calls)])
    found += events.end("stop", None, [MessageDelta(tool_calls=(ToolCallDelta(2, status=CallStatus.CUT_OFF),))])
    kinds = [type(e).__name__ for e in found]
    assert kinds == [
        "ReasoningStarted", "ReasoningText", "ReasoningEnded", "TextStarted", "TextDelta", "TextEnded",
        "CallStarted", "CallArguments", "CallEnded", "CallStarted", "CallArguments", "CallEnded",
        "CallStarted", "CallArguments", "CallEnded", "ReplyEnded",
    ]  # fmt: skip
    ends = [e for e in found if isinstance(e, CallEnded)]
    assert [(e.index, e.arguments, e.status) for e in ends] == [
        (0, '{"n": 0}', CallStatus.COMPLETE),
        (1, '{"n": 1}', CallStatus.COMPLETE),
        (2, '{"n": 2}', CallStatus.CUT_OFF),
    ]


def test_reasoning_after_text_opens_a_second_block() -> None:
    events = ReplyEvents()
    found = events.feed([MessageDelta(reasoning_content="a"), MessageDelta(content="b")])
    found += events.feed([MessageDelta(reasoning_content="c")])
    found += events.end(None, None)
    assert [type(e).__name__ for e in found] == [
        "ReasoningStarted", "ReasoningText", "ReasoningEnded", "TextStarted", "TextDelta", "TextEnded",
        "ReasoningStarted", "ReasoningText", "ReasoningEnded", "ReplyEnded",
    ]  # fmt: skip
    assert found[-1] == ReplyEnded(None, False, None, ())
