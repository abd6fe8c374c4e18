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
from .modes import BlockMode, CallIdPosition, ContentMode, ReasoningMode, ToolFormatMode
from .response_template import build_response_template

__all__ = [
    "ArgumentMarkers",
    "BlockAttribute",
    "BlockFormat",
    "BlockMode",
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
    without it come one per line). ``implied_end``: a closer the template does not always write after its calls:
    its own pairs imply it (``[/TOOL_CALLS]`` where it writes ``[INST]…[/INST]``; see analysis/calls/closers.py), or
    it writes it only after several calls (``implied_end_written``; analysis/calls/tool_format.py): optional markup,
    which grammars allow only where the template writes it. ``stated_word``: a marker word the template's
    instructions prescribe before the calls (``callfn[{…}]``) although its renders of history write the calls without
    it (analysis/calls/prose.py): optional markup too."""

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
    implied_end_written: bool = False
    stated_word: str = ""


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
    ``"json"`` (``true``/``false``/``null``: values rendered with ``tojson``), ``"both"`` (Python's at the top, JSON's
    inside a dict: LFM2.5-VL prints dicts with ``tojson``), or ``""`` when the template renders no boolean (it refuses
    non-string values). ``raw_strings``: the template puts the quotes around a string without
    escaping anything in it (LFM2.5-VL: ``title="Q3 "sync" review"``), so a quote inside a string is the string's
    own. ``separator``: what the template writes between two keyword arguments (``", "``; ``" "`` where it writes
    ``f(a=1 b=2)``). Parsers accept every spelling; grammars follow these.
    """

    quote: str = '"'
    keywords: str = ""
    raw_strings: bool = False
    separator: str = ", "


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
class BlockAttribute:
    """An attribute the template writes in ``tag`` headers besides the tool's or argument's name: ``index="1"``
    (``values`` ``("#",)``: any number), ``type="string"`` (the values seen), ``role="assistant"``. A parser reads
    these silently and reports any other attribute or value."""

    tag: str
    name: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BlockFormat:
    """A reply written as headed blocks (:class:`BlockMode`; analysis/calls/blocks.py learns it): what opens a
    block's header, what ends it, what closes a block, and which header value says what a block holds.

    Header values are tags (TAGGED: ``think``, ``response``, ``tools``, ``call``, ``argument``) or, ADDRESSED, what
    follows the opener on the header's line: a recipient (``all``) or a role suffix (``/think`` after
    ``<|im_start|>assistant``; ``""``: the answer's header has none). A call names its tool in the attribute
    ``name_attribute`` of its header (``tool="get_weather"``), or by its header value itself: TAGGED where ``call``
    is ``""``, ADDRESSED always, after the prefix ``call`` (``/tool:`` in ``assistant/tool:get_weather``; ``""``:
    the value is the name). Its arguments are ``argument`` blocks named by ``key_attribute`` (``key="city"``,
    the value raw text typed by the tool's schema), or, where ``argument`` is ``""``, the block's body as JSON.
    ``block_end``: ADDRESSED, the marker that closes every block whatever its value (``<|im_end|>``: each block a
    message of its own); ``""``: a block runs to the next header. ``call_end``: what closes a call's block where it
    is another marker (``<|call|>``; ``""``: ``block_end``).
    ``turn``: the tag of the block the whole turn sits in, which the generation prompt opens (``message``): its
    closer ends the turn. ``separator``: what the template writes between blocks (``"\\n"``), layout.
    ``attributes``: the other attributes of headers (:class:`BlockAttribute`); ``quote``: the quote around
    attribute values (``"``; ``""``: unquoted or mixed); ``type_attribute``: the argument attribute that names the
    value's JSON type, ``type_names`` how (``(("integer", "number"), ...)``); ``json_block``: the tag of a block
    inside a call holding its arguments as JSON, as the template writes arguments given as JSON text (``json``;
    ``""``: it writes them as it writes objects).
    """

    mode: BlockMode = BlockMode.NONE
    open: str = ""
    header_end: str = ""
    close_open: str = ""
    close_end: str = ""
    separator: str = ""
    reasoning: str = ""
    content: str = ""
    section: str = ""
    call: str = ""
    name_attribute: str = ""
    argument: str = ""
    key_attribute: str = ""
    turn: str = ""
    attributes: tuple[BlockAttribute, ...] = ()
    quote: str = ""
    json_block: str = ""
    type_attribute: str = ""
    type_names: tuple[tuple[str, str], ...] = ()
    block_end: str = ""
    call_end: str = ""

    @property
    def enabled(self) -> bool:
        return self.mode is not BlockMode.NONE

    def header(self, tag: str) -> str:
        """The header of a ``tag`` block without attributes (``<|open|>think<|sep|>``)."""
        return self.open + tag + self.header_end

    def closer(self, tag: str) -> str:
        """The closer of a ``tag`` block (``<|close|>think<|sep|>``; ``""`` where blocks have none)."""
        return self.close_open + tag + self.close_end if self.close_open else ""

    @property
    def call_closer(self) -> str:
        """ADDRESSED: what closes a call's block (``""``: it runs to the next header)."""
        return self.call_end or self.block_end


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
    # The reply as headed blocks, where the template writes it so (analysis/calls/blocks.py): then the parser and
    # grammar are built from this, and the marker fields above describe the same blocks as far as markers can.
    blocks: BlockFormat = field(default_factory=BlockFormat)
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
