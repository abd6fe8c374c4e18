"""Reasoning switches: the template variables that turn reasoning on or off, or set its effort, found by probing.

Templates name their switch as they please: ``enable_thinking`` (Qwen3), ``thinking`` (DeepSeek-V3.1, Hermes 4,
Granite 3.3), ``reasoning`` (Command A Reasoning), ``thinking_mode`` = ``"enabled"``/``"disabled"`` (MiniMax-M3),
``thinking_option`` = ``"on"``/``"off"`` (Ling), ``thinking_budget`` = 0 (Seed-OSS), effort levels in
``reasoning_effort`` (gpt-oss, GLM-5.2, Solar Open) or ``thinking_effort`` (Kimi K3). None of these names is known
here. :func:`probe_switches` finds them:

* **Candidates** (:func:`switch_candidates`, from the Jinja tree): every variable the template reads from its context,
  other than the render inputs (messages, tools, ...), that it tests as a boolean (``if thinking``, ``thinking is
  true``) or compares with, or defaults to, a constant (``== "enabled"``, ``in ["low", "minimal"]``,
  ``default(false)``, ``set x = x if x is defined else "high"``); an on/off word implies its opposite (``"yes"``:
  ``"no"``). A variable with an effort level among its constants is also tried with every level of
  :data:`EFFORT_LEVELS`.
* **Probe**: one user message and the generation prompt, rendered with each value and with the variable undefined.
  The variable is a switch when two values render differently and the change speaks of reasoning: a marker or a word
  (*think*, *thought*, *reason*) in the lines that changed, or a block the prompt leaves open with one value and
  closes with the other.
* **Toggle or effort**: a variable with effort levels among its values that change the prompt is an *effort* switch.
  Otherwise it is a *toggle*, with an on and an off value: two values whose prompts end the same, one inside a block
  it opened and one with that block closed, are on and off whatever the block is called; else a value whose prompt
  leaves a reasoning block open is on, one whose prompt closes one is off; failing that, a value that renders
  exactly as another toggle's on or off value (``skip_thinking=True`` as ``reasoning=False``); failing that, the
  spelling (``True``, ``"on"``, ``"enabled"``; ``False``, ``"off"``, ``"disabled"``, ``"none"``, ``0``).
* **Default**: a toggle is off by default only when the variable left undefined renders as its off value (the rule
  ``ChatTemplate.apply`` uses for ``enable_thinking``); an effort switch's default is the level that renders as the
  undefined variable.

:func:`switch_context` turns a request (thinking on or off, an effort level) into the template variables that say it,
for analysis renders and for ``ChatTemplate.apply``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jinja2

from .environment import context_scan
from .markup import closes, names_reasoning, paired_closer
from .scan import Value

if TYPE_CHECKING:
    from .probing import ProbeRenderer

__all__ = [
    "EFFORT_LEVELS",
    "ReasoningSwitch",
    "SwitchCandidate",
    "probe_switches",
    "requested_thinking",
    "switch_candidates",
    "switch_context",
]

# OpenAI's reasoning_effort values (and DeepSeek V4's "max"); "none" turns reasoning off.
EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# Render inputs with a meaning of their own: never a reasoning switch.
_INPUTS = frozenset(
    {
        *("messages", "tools", "add_generation_prompt", "bos_token", "eos_token", "documents", "functions"),
        *("continue_final_message", "raise_exception", "strftime_now", "namespace", "dict", "range", "loop"),
        *("datetime", "date_string", "custom_tools", "builtin_tools", "tools_in_user_message", "tool_choice"),
    }
)
_MAX_CANDIDATES = 24  # a bound on probe renders for templates with many context variables
_ON_WORDS = frozenset({"on", "enabled", "enable", "yes", "true", "think", "/think", "thinking"})
_OFF_WORDS = frozenset({"off", "disabled", "disable", "no", "false", "none", "no_think", "/no_think", "nothink"})
# A spelling the template compares with implies its opposite (`== "yes"` alone: "no" turns it off).
_OPPOSITES = {"on": "off", "enabled": "disabled", "enable": "disable", "yes": "no", "true": "false"}
_OPPOSITES |= {off: on for on, off in _OPPOSITES.items()}
_TALKS_REASONING = re.compile(r"(?:^|[^a-z])(?:think|thinking|thought|thoughts|reason|reasoning)(?:$|[^a-z])", re.I)
_LAST_MARKER = re.compile(r"(?:<[^<>]*>|\[[^\[\]]*\])\s*\Z")
_USER = [{"role": "user", "content": "What is the capital of France?"}]


@dataclass(frozen=True, slots=True)
class ReasoningSwitch:
    """A template variable that turns reasoning on or off (``kind="toggle"``: ``on``/``off`` values) or sets its
    effort (``kind="effort"``: ``values`` are its levels). ``values``: what the probe found to change the prompt, as
    the template spells them. ``default``: a toggle's state with the variable undefined (True: reasoning on); an
    effort switch's level then (None when no level renders so)."""

    variable: str
    kind: str
    values: tuple[Value, ...]
    on: Value | None = None
    off: Value | None = None
    default: Value | None = None

    def state(self, value: Any) -> bool | None:
        """Whether setting a toggle to ``value`` turns reasoning on (None: a value the probe does not know)."""
        if self.kind != "toggle":
            return None
        if _same(value, self.on):
            return True
        if _same(value, self.off):
            return False
        return None


@dataclass(frozen=True, slots=True)
class SwitchCandidate:
    """A context variable the template reads, with the constants it compares it with or defaults it to."""

    variable: str
    values: tuple[Value, ...]
    tested: bool  # the template tests it as a boolean


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# --- candidates: the Jinja tree -----------------------------------------------------------------------------------


def switch_candidates(source: str) -> tuple[SwitchCandidate, ...]:
    """The context variables of ``source`` that may be switches (see the module docstring), in source order."""
    try:
        scan = context_scan(source)
    except jinja2.TemplateSyntaxError:
        return ()
    values: dict[str, list[Value]] = {}
    tested: set[str] = set()
    for name, found, test in scan.constraints:
        if test:
            tested.add(name)
        known = values.setdefault(name, [])
        known.extend(v for v in found if not any(_same(v, k) for k in known))
    candidates = []
    for name in scan.names:
        known = values.get(name, [])
        if name in _INPUTS or (not known and name not in tested):
            continue
        opposites = [_OPPOSITES[v.lower()] for v in known if isinstance(v, str) and v.lower() in _OPPOSITES]
        known = known + [o for o in opposites if not any(_same(o, v) for v in known)]
        if any(isinstance(v, str) and v.lower() in EFFORT_LEVELS[1:] for v in known):
            known = known + [level for level in EFFORT_LEVELS if level not in known]
        if name in tested or any(isinstance(v, bool) for v in known):
            known = known + [b for b in (True, False) if not any(_same(b, v) for v in known)]
        candidates.append(SwitchCandidate(name, tuple(known), name in tested))
    return tuple(candidates[:_MAX_CANDIDATES])


# --- the probe ---------------------------------------------------------------------------------------------------


def probe_switches(renderer: ProbeRenderer, source: str) -> tuple[ReasoningSwitch, ...]:
    """The reasoning switches of the template ``renderer`` renders (see the module docstring). Effort levels some
    templates read only while thinking is on (DeepSeek V4) are probed again with the toggles on."""
    candidates = switch_candidates(source)
    switches = _probe(renderer, candidates, {})
    toggles = [s for s in switches if s.kind == "toggle"]
    found = {s.variable for s in switches}
    efforts = [c for c in candidates if c.variable not in found and any(_is_level(v) for v in c.values)]
    if toggles and efforts:
        context = switch_context(toggles, True, skip=())
        switches += tuple(s for s in _probe(renderer, efforts, context) if s.kind == "effort")
    order = [c.variable for c in candidates]
    return tuple(sorted(switches, key=lambda s: order.index(s.variable)))


def _probe(
    renderer: ProbeRenderer, candidates: Sequence[SwitchCandidate], context: Mapping[str, Any]
) -> tuple[ReasoningSwitch, ...]:
    def render(variables: Mapping[str, Any]) -> str | None:
        merged = {**context, **variables}
        return renderer.render(_USER, add_generation_prompt=True, enable_thinking=None, variables=merged)

    default = render({})
    if default is None:
        return ()
    probed: list[tuple[SwitchCandidate, dict[int, str]]] = []
    for candidate in candidates:
        renders = {i: r for i, v in enumerate(candidate.values) if (r := render({candidate.variable: v})) is not None}
        if len({*renders.values(), default}) > 1:
            probed.append((candidate, renders))
    # Toggles with evidence in the prompt first, so that the others can agree with them.
    states: dict[str, bool] = {}  # a render -> the reasoning state it shows
    switches: list[ReasoningSwitch] = []
    for candidate, renders in sorted(probed, key=lambda item: not _has_block_evidence(item[1].values())):
        switch = _classify(candidate, renders, default, states)
        if switch is None:
            continue
        switches.append(switch)
        for i, text in renders.items():
            state = switch.state(candidate.values[i])
            if state is not None:
                states.setdefault(text, state)
    return tuple(switches)


def _speaks_of_reasoning(*renders: str) -> bool:
    """Whether two of ``renders`` differ in lines that speak of reasoning (a marker or a word)."""
    first = renders[0]
    return any(
        _TALKS_REASONING.search(line) for other in renders[1:] if other != first for line in _changed(first, other)
    )


def _changed(a: str, b: str) -> list[str]:
    """The lines of ``a`` and ``b`` that hold their difference: each side's changed text, extended to whole lines
    (nothing of a side that only lacks what the other inserts)."""
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    lines = []
    for text in (a, b):
        if prefix >= len(text) - suffix:
            continue
        start = text.rfind("\n", 0, prefix + 1) + 1  # (a difference that starts with a line break starts a line)
        end = text.find("\n", len(text) - suffix)
        lines.append(text[start : end if end >= 0 else len(text)])
    return lines


def _block_state(text: str) -> bool | None:
    """True when a prompt ends inside a reasoning block it opened, False when it ends by closing one."""
    match = _LAST_MARKER.search(text)
    if match is None:
        return None
    marker = match.group().strip()
    if not names_reasoning(marker):
        return None
    if closes(marker):
        return False
    return True if paired_closer(marker) else None


def _paired_block(renders: dict[int, str]) -> tuple[int | None, int | None]:
    """Two values whose prompts end the same, one inside a block it opened and one with that block closed (``<x>``
    and ``<x></x>``, ``<x>`` and ``</x>``): on and off, whatever the block is called."""
    for i, text in renders.items():
        match = _LAST_MARKER.search(text)
        closer = paired_closer(match.group().strip()) if match is not None else ""
        if not closer:
            continue
        stem = text[: match.start()] if match is not None else text
        for j, other in renders.items():
            if j != i and other.rstrip().endswith(closer) and other.startswith(stem):
                return i, j
    return None, None


def _has_block_evidence(renders: Iterable[str]) -> bool:
    return any(_block_state(text) is not None for text in renders)


def _spelled_state(value: Value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if value.lower() in _ON_WORDS:
        return True
    if value.lower() in _OFF_WORDS:
        return False
    return None


def _classify(
    candidate: SwitchCandidate, renders: dict[int, str], default: str, states: dict[str, bool]
) -> ReasoningSwitch | None:
    values = candidate.values
    effort = _effort(candidate, renders, default)
    if effort is not None:
        return effort
    on, off = _paired_block(renders)
    structural = on is not None
    for evidence in (_block_state, states.get):
        for i, text in renders.items():
            state = evidence(text)
            if state is True and on is None:
                on = i
            elif state is False and off is None:
                off = i
    for i in renders:
        state = _spelled_state(values[i])
        if state is True and on is None and i != off:
            on = i
        elif state is False and off is None and i != on:
            off = i
    if on is None or off is None or renders[on] == renders[off]:
        return None
    if not structural and not _speaks_of_reasoning(renders[on], renders[off]):
        return None
    changed = (values[i] for i, text in renders.items() if text != default)
    shown = tuple(dict.fromkeys((values[on], values[off], *changed)))
    return ReasoningSwitch(
        candidate.variable, "toggle", shown, values[on], values[off], default=renders[off] != default
    )


def _effort(candidate: SwitchCandidate, renders: dict[int, str], default: str) -> ReasoningSwitch | None:
    """An effort switch: levels that render differently from each other, where the change speaks of reasoning. Its
    default is the level rendered as the variable left undefined: one the template itself names (``set x = x if x is
    defined else "high"``), else one the prompt writes (GLM-5.2's ``Reasoning Effort: Max``), else none."""
    levels = {i: v for i, v in enumerate(candidate.values) if i in renders and _is_level(v)}
    distinct = {renders[i] for i in levels}
    if len(distinct) < 2 or not _speaks_of_reasoning(*distinct):
        return None
    at_default = [v for i, v in levels.items() if renders[i] == default]
    lines = [line for i in levels if renders[i] != default for line in _changed(default, renders[i])[:1]]
    named = [v for v in at_default if any(re.search(rf"\b{re.escape(v)}\b", line, re.I) for line in lines)]
    own = [v for v in at_default if v in candidate.values[:1]]
    level = next(iter(own or named), None)
    shown = [v for i, v in levels.items() if renders[i] != default or v == level]
    ordered = sorted(shown, key=lambda v: EFFORT_LEVELS.index(v.lower()) if v.lower() in EFFORT_LEVELS else 99)
    return ReasoningSwitch(candidate.variable, "effort", tuple(ordered), default=level)


def _is_level(value: Value) -> bool:
    return isinstance(value, str) and value.lower() in EFFORT_LEVELS


# --- requests ----------------------------------------------------------------------------------------------------


def switch_context(
    switches: Sequence[ReasoningSwitch],
    thinking: bool | None,
    effort: str | None = None,
    *,
    skip: Sequence[str] = ("enable_thinking",),
) -> dict[str, Any]:
    """The template variables that put ``switches`` in the requested state: each toggle whose default is not
    ``thinking`` gets its on or off value (None: toggles stay undefined), an effort switch gets ``effort`` (None: it
    stays undefined). Variables in ``skip`` are left to the caller (``enable_thinking`` is a render argument)."""
    context: dict[str, Any] = {}
    for switch in switches:
        if switch.variable in skip:
            continue
        if switch.kind == "toggle" and thinking is not None and switch.default is not thinking:
            context[switch.variable] = switch.on if thinking else switch.off
        elif switch.kind == "effort" and effort is not None:
            context[switch.variable] = effort
    return context


def requested_thinking(switches: Sequence[ReasoningSwitch], variables: Mapping[str, Any]) -> bool | None:
    """Whether ``variables`` (a request's ``chat_template_kwargs``) turn reasoning on or off through one of the
    template's toggles, or an effort of ``"none"``; None when they set none of them."""
    for switch in switches:
        if switch.variable not in variables or variables[switch.variable] is None:
            continue
        value = variables[switch.variable]
        if switch.kind == "effort":
            if isinstance(value, str) and value.lower() == "none":
                return False
            continue
        state = switch.state(value)
        if state is None and isinstance(value, bool | int):
            state = bool(value) if _same(bool(switch.on), True) else not bool(value)
        if state is not None:
            return state
    return None
