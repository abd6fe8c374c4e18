"""Render limits: a hostile chat template fails fast instead of hanging the process or eating its memory.

Templates come from model hubs, so a template can be written to loop ``100000 × 100000`` times, to recurse, or to
build a string of ten gigabytes. The Jinja sandbox blocks access to Python internals but bounds neither time nor
size, so every render runs under a :class:`RenderLimits` budget, checked cooperatively wherever the template
hands control back (:mod:`.guards` wires the checks into Jinja):

* **time** (``timeout``): a wall-clock deadline, checked at the start of every ``{% for %}`` and per item of a
  large one (so nested small loops are checked at least every thousand inner iterations), after every call
  (macros, methods, recursive ``loop()``: a runaway recursion keeps returning from its leaves) and in the
  ``*``/``**`` operators. Output only keeps coming from loops and calls, so that covers it. No signals or
  threads are involved: rendering works on any thread.
* **size** (``max_output``): the rendered text, and every value the template keeps or hands on — ``{% set %}``
  and ``{% with %}`` values, macro arguments, call results — must stay under the limit, so no chain of steps can
  grow a value past it. The operations that turn a *number* into a big allocation are refused before they
  allocate: ``str * n`` and ``list * n``, the width of ``center``/``ljust``/``rjust``/``zfill``/``expandtabs``
  and of the ``center``/``indent`` filters. Counts taken from a number (``batch``, ``slice``) are capped at
  the sandbox's ``MAX_RANGE`` like ``range()``, and integers at :data:`MAX_INT_BITS` bits.

What stays out of reach is a single builtin call that is expensive on inputs that are each within the limit
(``[big] * n | join``, ``big | replace('', big)``, a ``'%999999999d'`` format width): the next check comes only
after it returns, and Python's ``MemoryError`` from it becomes a ``TemplateError``. Hard guarantees need OS
limits around the process (``RLIMIT_AS``, a cgroup, a worker process that can be killed).

The active budget lives in a :class:`~contextvars.ContextVar`, so concurrent renders on different threads (or
tasks) each see their own. Outside a bounded render every check is skipped: the environment is plain Jinja.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, Literal

from jinja2.sandbox import MAX_RANGE

from ..cache import Deferred, quick_deadline

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_INT_BITS",
    "SIZED",
    "UNCHECKED_ITEMS",
    "Budget",
    "LimitExceeded",
    "RenderLimits",
    "active_budget",
    "monotonic",
]

LimitName = Literal["timeout", "max_output"]

#: Integers a template computes may not exceed this many bits (about 20,000 decimal digits; Python refuses to
#: print more than 4,300 digits anyway). Multiplying or raising numbers beyond that costs real CPU time.
MAX_INT_BITS: Final = 1 << 16

#: Loops over at most this many items (of a list, dict, str...) run unwrapped after one deadline check at their
#: start, so nested small loops are checked at least every ``UNCHECKED_ITEMS`` inner iterations. Larger ones, and
#: generators (which have no length), are checked per item.
UNCHECKED_ITEMS: Final = 1000

#: What a size check measures: text, and the containers a template can build.
SIZED: Final = (str, list, tuple, dict)


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Bounds for rendering a chat template; ``None`` switches a bound off.

    * ``timeout``: wall-clock seconds for one render of a conversation.
    * ``max_output``: characters (items, for lists) of the rendered prompt and of every value the template
      builds on the way.
    * ``analysis_timeout``: wall-clock seconds for *all* the renders of an analysis together (it renders about
      20 small probe conversations); each of them is also held to ``timeout``.

    Why these defaults: real conversations can be slow to render. ``google-gemma-4-31B-it`` is quadratic in the
    number of messages (each message scans the ones before it), so 1,000 messages take about 3 s and 2,000 about
    13 s, in transformers too; 30 s covers its whole context window. Analysis probes are tiny and fixed — the
    slowest bundled template is analysed in about 0.2 s, one of its renders takes under 1 ms — so a hostile
    template is caught by analysis within 5 s. 64 Mi characters is about 16M tokens, above the largest context
    window of any model.
    """

    timeout: float | None = 30.0
    max_output: int | None = 64 * 1024 * 1024
    analysis_timeout: float | None = 5.0

    def __post_init__(self) -> None:
        for field in ("timeout", "max_output", "analysis_timeout"):
            value = getattr(self, field)
            if value is not None and not value > 0:
                raise ValueError(f"RenderLimits.{field} must be positive or None, got {value!r}")


#: The limits a template renders with unless it is given others (``JinjaChatTemplate(..., limits=...)``).
DEFAULT_LIMITS: Final = RenderLimits()


class LimitExceeded(Exception):  # an internal signal: callers turn it into RenderLimitError
    """A render ran past one of its :class:`RenderLimits`.

    Raised inside template code so that Jinja's traceback rewriting can name the template line. Deliberately
    not a ``TypeError``/``LookupError``/``AttributeError``: the sandbox swallows those during attribute lookup.
    """

    def __init__(self, limit: LimitName, message: str) -> None:
        super().__init__(message)
        self.limit: LimitName = limit


class Budget:
    """The deadline and size limit of one render; ``with Budget(limits) as budget:`` makes it the active one.

    The checks run dozens of times per render, so the hot ones are plain attribute reads with no helper layers
    (a Python call costs about as much as the check itself), and this class is its own context manager (a
    ``@contextmanager`` generator costs about as much as all the checks of a typical render).
    """

    __slots__ = ("_token", "deadline", "limits", "max_size", "quick")

    def __init__(self, limits: RenderLimits) -> None:
        self.limits = limits
        self.deadline = math.inf if limits.timeout is None else monotonic() + limits.timeout
        self.max_size: float = math.inf if limits.max_output is None else limits.max_output
        # In quick mode (autoparser.cache.quick) the render ends at the quick deadline if that comes first, with
        # Deferred: the caller renders again without it.
        quick = quick_deadline()
        self.quick = False
        if quick is not None and quick < self.deadline:
            self.deadline, self.quick = quick, True

    def __enter__(self) -> Budget:
        """Make this the active budget of the current thread or task (renders and compiles run in a ``with``)."""
        self._token = _active.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _active.reset(self._token)

    def check_time(self) -> None:
        if monotonic() > self.deadline:
            raise self.timed_out()

    def check_size(self, value: Any) -> None:
        # issubclass(type(...)) rather than isinstance: isinstance falls back to ``value.__class__``, which on a
        # Jinja namespace runs its Python-level __getattribute__ and makes the check ten times slower.
        if issubclass(type(value), SIZED) and len(value) > self.max_size:
            raise self.too_big(len(value))

    def check_width(self, size: object) -> None:
        """Before building about ``size`` characters from a numeric width."""
        if isinstance(size, int) and size > self.max_size:
            raise self.too_big(size, "a padded string")

    def check_repeat(self, left: Any, right: Any) -> None:
        """Before ``left * right``: sequence repetition and big-integer products are checked before they run."""
        if isinstance(left, int) and isinstance(right, (str, list, tuple)):
            left, right = right, left
        if isinstance(left, (str, list, tuple)) and isinstance(right, int):
            if len(left) * right > self.max_size:
                raise self.too_big(len(left) * right, "a repeated sequence")
        elif isinstance(left, int) and isinstance(right, int):
            _check_bits(left.bit_length() + right.bit_length())

    @staticmethod
    def check_power(left: Any, right: Any) -> None:
        """Before ``left ** right``: integer results beyond :data:`MAX_INT_BITS` are refused."""
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            _check_bits(left.bit_length() * right)

    @staticmethod
    def check_count(count: object) -> None:
        """Item counts a filter takes from a number (``batch``, ``slice``) are capped like ``range()``."""
        if isinstance(count, int) and count > MAX_RANGE:
            raise OverflowError(f"count {count} is larger than the sandbox allows (MAX_RANGE = {MAX_RANGE})")

    def checked(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """``iterable``, with the deadline checked before every item."""
        for item in iterable:
            if monotonic() > self.deadline:
                raise self.timed_out()
            yield item

    def timed_out(self) -> Exception:
        if self.quick:
            return Deferred("the render did not finish within the quick deadline")
        return LimitExceeded(
            "timeout",
            f"rendering took longer than the time limit of {self.limits.timeout:g} s "
            "(raise it with limits=RenderLimits(timeout=...) if the template is trusted)",
        )

    def too_big(self, size: float, what: str = "a value") -> LimitExceeded:
        return LimitExceeded(
            "max_output",
            f"{what} of {size:,.0f} characters or items exceeds the size limit of {self.max_size:,.0f} "
            "(raise it with limits=RenderLimits(max_output=...) if the template is trusted)",
        )


def _check_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        # OverflowError, like the sandbox's refusal of huge ranges: a hostile number, not a tunable limit.
        raise OverflowError(f"integer result would exceed {MAX_INT_BITS} bits")


_active: ContextVar[Budget | None] = ContextVar("autoparser_render_budget", default=None)
monotonic: Final = time.monotonic  # bound once: the deadline checks are hot

#: The budget of the render running in this thread or task (``None`` outside bounded renders).
active_budget: Final = _active.get
