"""What a wire format's encoder is: the same reply events (:mod:`.events`), written in one protocol's framing.

The server's streamed and whole replies are protocol-neutral (``app._StreamedReply``/``_CompleteReply``): they read
the upstream, feed the request's parser, turn its deltas into events, and hand them to the request's encoder. An
encoder keeps whatever it needs to number and close what it opened (block indexes, sequence numbers, item ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..message import ChatMessage
from .chunks import Usage
from .events import Event
from .upstream import UpstreamError

__all__ = ["Encoder"]


class Encoder(Protocol):
    """One reply, written in one protocol."""

    def start(self) -> bytes:
        """What a streamed reply begins with, before any event (the role chunk, ``response.created``,
        ``message_start``...)."""
        ...

    def events(self, events: Sequence[Event]) -> bytes:
        """What one read of the upstream added (may be nothing)."""
        ...

    def end(self, events: Sequence[Event], failure: UpstreamError | None) -> bytes:
        """The last events (the parser's held-back text, every block closed, :class:`~.events.ReplyEnded` last) and
        the stream's end; after ``failure``, the protocol's error event instead of a normal end."""
        ...

    def whole(
        self, message: ChatMessage, finish: str | None, usage: Usage | None, stop_word: str | None = None
    ) -> dict[str, Any]:
        """The body of a non-streamed reply (``stop_word``: the stop string that ended it, where the upstream
        said: :attr:`~.upstream.Piece.stop_word`)."""
        ...
