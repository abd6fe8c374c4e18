"""The analysis result: what a template says about how its model writes reasoning, content and tool calls.

Every part is a frozen dataclass; each analyzer owns one part. ``TemplateAnalysis.to_dict()`` gives a
JSON-serialisable view (enums as their names) for the CLI, tests and users.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..template.capabilities import TemplateCapabilities
from ..template.switches import ReasoningSwitch
from .modes import CallIdPosition, ContentMode, ReasoningMode, ToolFormatMode
from .response_template import build_response_template

__all__ = [
    "ArgumentMarkers",
    "CallIdMarkers",
    "CallIdPosition",
    "ContentAnalysis",
    "ContentMode",
    "DictValues",
    "FunctionMarkers",
    "GenerationPrompts",
    "PythonicValues",
    "ReasoningAnalysis",
    "ReasoningMode",
    "ReasoningSwitch",
    "TemplateAnalysis",
    "ToolFormat",
    "ToolFormatMode",
    "ToolsAnalysis",
]


@dataclass(frozen=True, slots=True)
class ReasoningAnalysis:
    """Reasoning markers. ``start``/``end`` keep the whitespace the template puts around them."""

    mode: ReasoningMode = ReasoningMode.NONE
    start: str = ""
    end: str = ""
    # The template renders reasoning only from typed {"type": "thinking"} content blocks (Ministral 3).
    in_content_blocks: bool = False

    @property
    def enabled(self) -> bool:
        return self.mode is not ReasoningMode.NONE


@dataclass(frozen=True, slots=True)
class ContentAnalysis:
    mode: ContentMode = ContentMode.PLAIN
    start: str = ""
    end: str = ""


@dataclass(frozen=True, slots=True)
class ToolFormat:
    """Where calls sit (section / per-call markers) and, for JSON calls, the field names.

    ``tools_array_wrapped``: the calls are in a ``[...]`` list (JSON arrays, and pythonic lists; pythonic calls
    without it come one per line). ``implied_end``: the closer the template never writes after its calls but its own
    pairs imply (``[/TOOL_CALLS]`` where it writes ``[INST]…[/INST]``; see analysis/calls/closers.py): optional
    markup."""

    mode: ToolFormatMode = ToolFormatMode.NONE
    section_start: str = ""
    section_end: str = ""
    per_call_start: str = ""
    per_call_end: str = ""
    fun_name_is_key: bool = False
    tools_array_wrapped: bool = False
    function_field: str = "function"
    name_field: str = "name"
    args_field: str = "arguments"
    id_field: str = ""
    gen_id_field: str = ""
    parameter_order: tuple[str, ...] = ()
    implied_end: str = ""


@dataclass(frozen=True, slots=True)
class FunctionMarkers:
    """Markup around a function name (``<function=`` NAME ``>\\n``) and the marker closing the call body."""

    name_prefix: str = ""
    name_suffix: str = ""
    close: str = ""


@dataclass(frozen=True, slots=True)
class ArgumentMarkers:
    """Markup of tagged arguments: ``name_prefix NAME name_suffix value_prefix VALUE value_suffix``.

    ``value_lead`` / ``value_trail`` are the whitespace the template writes right before / after a value (Qwen3-Coder:
    ``"\n"`` each, Seed-OSS: none): layout, not data, so a parser removes exactly that and keeps the value's own
    spaces. (The line break before the value is also the end of ``name_suffix``; ``value_suffix`` is trimmed.)"""

    start: str = ""
    end: str = ""
    name_prefix: str = ""
    name_suffix: str = ""
    value_prefix: str = ""
    value_suffix: str = ""
    separator: str = ""
    value_lead: str = ""
    value_trail: str = ""


@dataclass(frozen=True, slots=True)
class CallIdMarkers:
    position: CallIdPosition = CallIdPosition.NONE
    prefix: str = ""
    suffix: str = ""


@dataclass(frozen=True, slots=True)
class PythonicValues:
    """How a template spells the argument values of PYTHONIC calls.

    ``quote``: the quote around strings (``"`` or ``'``), or ``""`` when the template writes them bare
    (``city=Paris``: Gemma 3n concatenates the values). ``keywords``: ``"python"`` (``True``/``False``/``None``),
    ``"json"`` (``true``/``false``/``null``: values rendered with ``tojson``), or ``""`` when the template renders
    no boolean (it refuses non-string values). Parsers accept every spelling; grammars follow these.
    """

    quote: str = '"'
    keywords: str = ""


@dataclass(frozen=True, slots=True)
class DictValues:
    """How TAG_WITH_DICT calls spell their argument dict (Gemma 4: ``{city:<|"|>Paris<|"|>,days:2,on:true}``).

    Keys are bare; a string is raw text between ``quote_open`` and ``quote_close`` (a delimiter token: nothing is
    escaped); ``colon`` separates a key from its value, ``comma`` the members and list items; numbers are bare JSON
    numbers; ``true`` and ``null`` are the template's spellings of a boolean and of null (``true``/``True``,
    ``null``/``None``; ``""``: it renders none). Parsers accept either spelling; grammars follow the template's.
    """

    quote_open: str = ""
    quote_close: str = ""
    colon: str = ":"
    comma: str = ","
    true: str = ""
    null: str = ""


@dataclass(frozen=True, slots=True)
class ToolsAnalysis:
    format: ToolFormat = field(default_factory=ToolFormat)
    function: FunctionMarkers = field(default_factory=FunctionMarkers)
    arguments: ArgumentMarkers = field(default_factory=ArgumentMarkers)
    call_id: CallIdMarkers = field(default_factory=CallIdMarkers)
    pythonic: PythonicValues = field(default_factory=PythonicValues)
    dict_values: DictValues = field(default_factory=DictValues)


@dataclass(frozen=True, slots=True)
class GenerationPrompts:
    """What the template appends for the assistant's turn, with thinking enabled and disabled."""

    thinking: str = ""
    no_thinking: str = ""


@dataclass(frozen=True, slots=True)
class TemplateAnalysis:
    """Everything learned from one template.

    ``format`` is ``"generic"`` when the markers below describe the output completely, otherwise the name of a
    dedicated output format (see docs/formats.md) whose parser knows the rest.
    """

    template: str
    format: str
    capabilities: TemplateCapabilities
    reasoning: ReasoningAnalysis
    content: ContentAnalysis
    tools: ToolsAnalysis
    generation_prompts: GenerationPrompts
    preserved_tokens: tuple[str, ...] = ()
    workarounds: tuple[str, ...] = ()
    # Parts ("reasoning", "content", "tools") learned from the template's instruction text, not from a render.
    prose: tuple[str, ...] = ()
    # Markers the template writes after the assistant's answer (``<|im_end|>``, ``</s>``): a model ends its turn
    # with them, so at the end of an output they are not content (see analysis/end_of_turn.py).
    end_of_turn: tuple[str, ...] = ()
    # Markers that end a turn although the template does not write them after the answer: the marker the next turn
    # opens with (GLM's ``<|user|>`` / ``<|observation|>``), ``</s>`` where the template writes an unknown
    # ``eos_token``. Like ``end_of_turn``, markup where they end an output (see analysis/end_of_turn.py).
    stop_markers: tuple[str, ...] = ()
    # How ids generated for calls the model wrote without one look: "openai" (``call_`` + 24 alphanumerics) or
    # "alnum9" (Mistral's templates accept nothing else; see analysis/calls/call_ids.py).
    id_format: str = "openai"
    # The template variables that turn reasoning on or off or set its effort, whatever their names (``thinking``,
    # ``reasoning``, ``thinking_mode``, ``reasoning_effort``, ...): probed, see template/switches.py.
    switches: tuple[ReasoningSwitch, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (enums become their names, tuples lists)."""
        return _plain(self)

    def to_response_template(self) -> dict[str, Any]:
        """A Hugging Face transformers ``response_template`` (``tokenizer.response_template``, read by
        ``tokenizer.parse_response`` and ``get_response_parser``) for this template's output; see
        docs/integrations.md. Raises ``ResponseTemplateError`` (a ``NotImplementedError``) for dedicated formats
        and shapes the declarative format cannot express, saying why."""
        return build_response_template(self)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
