"""The modes an analysis chooses between: how reasoning is delimited, how content is wrapped, the tool-call
format, where a call's id goes. Re-exported by :mod:`.model`; they live apart so that what reads an analysis
(:mod:`.response_template`) needs no import of the model that offers it as a method."""

from __future__ import annotations

from enum import Enum

__all__ = ["BlockMode", "CallIdPosition", "ContentMode", "ReasoningMode", "ToolFormatMode"]


class ReasoningMode(Enum):
    """How reasoning is delimited.

    TAG_BASED: the model may open and close a block (``<think>...</think>``). DELIMITER: there is only an end
    marker; everything before it is reasoning. FORCED_OPEN: the generation prompt (thinking enabled) already
    opened the block, so output starts inside it. FORCED_CLOSED: as FORCED_OPEN, and with thinking disabled the
    prompt closes the block instead. TOOLS_ONLY: the template shows reasoning only next to tool calls.
    """

    NONE = "NONE"
    TAG_BASED = "TAG_BASED"
    DELIMITER = "DELIMITER"
    FORCED_OPEN = "FORCED_OPEN"
    FORCED_CLOSED = "FORCED_CLOSED"
    TOOLS_ONLY = "TOOLS_ONLY"


class ContentMode(Enum):
    """PLAIN: content is bare text. ALWAYS_WRAPPED: content sits between start/end markers.
    WRAPPED_WITH_REASONING: wrapped when reasoning precedes it (Granite). END_DELIMITED: content ends at a marker.
    """

    PLAIN = "PLAIN"
    ALWAYS_WRAPPED = "ALWAYS_WRAPPED"
    WRAPPED_WITH_REASONING = "WRAPPED_WITH_REASONING"
    END_DELIMITED = "END_DELIMITED"


class ToolFormatMode(Enum):
    """NONE: no tool calls. JSON_NATIVE: each call is a JSON object holding the name and arguments.
    TAG_WITH_JSON: markup carries the name, the arguments are a JSON object. TAG_WITH_TAGGED: markup carries the
    name and each argument (``<parameter=x>value</parameter>``). PYTHONIC: calls are Python calls with keyword
    arguments (``get_weather(city="Paris", days=2)``), in a ``[...]`` list or one per line, inside the section
    markers (which may hold a code fence: ``<|tool_call_start|>\n```python\n`` ... ``\n```\n<|tool_call_end|>``).
    TAG_WITH_DICT: markup carries the name, the arguments are a dict in the template's own syntax, bare keys and
    strings between a delimiter token (``call:get_weather{city:<|"|>Paris<|"|>,days:2}``; :class:`DictValues`).
    """

    NONE = "NONE"
    JSON_NATIVE = "JSON_NATIVE"
    TAG_WITH_JSON = "TAG_WITH_JSON"
    TAG_WITH_TAGGED = "TAG_WITH_TAGGED"
    PYTHONIC = "PYTHONIC"
    TAG_WITH_DICT = "TAG_WITH_DICT"


class CallIdPosition(Enum):
    NONE = "NONE"
    PRE_FUNC_NAME = "PRE_FUNC_NAME"
    BETWEEN_FUNC_AND_ARGS = "BETWEEN_FUNC_AND_ARGS"
    POST_ARGS = "POST_ARGS"


class BlockMode(Enum):
    """How a reply written as headed blocks (a header value, not a marker, says what a block is) spells them.

    NONE: it is not. TAGGED: each block is ``open TAG [attributes] header_end … close_open TAG close_end``
    (``<|open|>think<|sep|>…<|close|>think<|sep|>``); the tag says what the block is, attributes name a call's tool
    and an argument. ADDRESSED: each block is ``open VALUE header_end …`` and runs to a block end or the next header;
    the value is a recipient (``<|from|>assistant\n<|recipient|>get_weather\n<|content|>{…}``: one recipient means
    the user, any other is a tool the block calls) or a role suffix (``<|im_start|>assistant/think``,
    ``<|im_start|>assistant/tool:get_weather``, none for the answer).
    """

    NONE = "NONE"
    TAGGED = "TAGGED"
    ADDRESSED = "ADDRESSED"
