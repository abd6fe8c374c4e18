"""Headed blocks (analysis/calls/blocks.py): a reply whose blocks a header *value* names, learned from the renders.

Two real templates (Kimi K3's tagged blocks, Functionary v2.2's addressed ones), Functionary v3.2's ``>>>`` (its
parser stays the dedicated format, but the analysis learns the same idea), and two synthetic templates that spell
the ideas with other tokens, tags, attribute names, quotes and switches (tests/data/templates/blocks-*.jinja).
Role suffixes (``<|im_start|>assistant/think``, ``<turn>model:get_weather``, ``<|start|>assistant.tool.NAME``) are
addressed blocks too, whose value follows the role: no bundled template writes them, three synthetic ones do
(tests/data/templates/suffix-*.jinja). No other bundled template may be read as blocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.analysis.model import BlockAttribute, BlockMode, ContentMode, ReasoningMode, ToolFormatMode

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
TAGGED = str(TEMPLATES / "blocks-tagged.jinja")
ADDRESSED = str(TEMPLATES / "blocks-addressed.jinja")
SLASH = str(TEMPLATES / "suffix-slash.jinja")
COLON = str(TEMPLATES / "suffix-colon.jinja")
DOT = str(TEMPLATES / "suffix-dot.jinja")
RECIPIENT = str(TEMPLATES / "suffix-recipient.jinja")
BLOCK_TEMPLATES = {"llamacpp-Kimi-K3", "hfjs-meetkai-functionary-medium-v2.2", "meetkai-functionary-medium-v3.2"}


def _load(template: str) -> ChatTemplate:
    return ChatTemplate.from_file(template) if template.endswith(".jinja") else ChatTemplate.load(template)


@pytest.mark.parametrize(
    ("template", "frame", "roles", "attributes"),
    [
        (
            "llamacpp-Kimi-K3",
            ("<|open|>", "<|sep|>", "<|close|>", "<|sep|>", '"'),
            ("think", "response", "tools", "call", "tool", "argument", "key", "message", "json"),
            (BlockAttribute("call", "index", ("#",)), BlockAttribute("message", "role", ("assistant",))),
        ),
        (
            TAGGED,
            ("[BLOCK]", "[/HEAD]", "[BLOCK]/", "[/HEAD]", "'"),
            ("thought", "answer", "actions", "invoke", "name", "param", "name", "turn", "payload"),
            (BlockAttribute("invoke", "n", ("#",)), BlockAttribute("turn", "who", ("model",))),
        ),
    ],
)
def test_tagged_blocks(template: str, frame: tuple[str, ...], roles: tuple[str, ...], attributes: tuple) -> None:
    blocks = _load(template).analysis.blocks
    assert blocks.mode is BlockMode.TAGGED
    assert (blocks.open, blocks.header_end, blocks.close_open, blocks.close_end, blocks.quote) == frame
    found = (
        blocks.reasoning, blocks.content, blocks.section, blocks.call, blocks.name_attribute, blocks.argument,
        blocks.key_attribute, blocks.turn, blocks.json_block,
    )  # fmt: skip
    assert found == roles
    assert set(attributes) <= set(blocks.attributes)


@pytest.mark.parametrize(
    ("template", "spelled"),
    [
        ("llamacpp-Kimi-K3", ("string", "number", "number", "boolean", "null", "array", "object")),
        (TAGGED, ("text", "int", "float", "bool", "none", "list", "map")),
    ],
)
def test_the_argument_type_attribute_and_its_spellings(template: str, spelled: tuple[str, ...]) -> None:
    blocks = _load(template).analysis.blocks
    assert blocks.type_attribute in ("type", "kind")
    kinds = ("string", "integer", "number", "boolean", "null", "array", "object")
    assert dict(blocks.type_names) == dict(zip(kinds, spelled, strict=True))


@pytest.mark.parametrize(
    ("template", "opener", "header_end", "separator", "content", "reasoning"),
    [
        ("hfjs-meetkai-functionary-medium-v2.2", "<|from|>assistant\n<|recipient|>", "\n<|content|>", "\n", "all", ""),
        ("meetkai-functionary-medium-v3.2", ">>>", "\n", "", "all", ""),
        (ADDRESSED, "<|turn|>assistant to=", "<|body|>", "\n", "user", "scratchpad"),
    ],
)
def test_addressed_blocks(
    template: str, opener: str, header_end: str, separator: str, content: str, reasoning: str
) -> None:
    blocks = _load(template).analysis.blocks
    assert blocks.mode is BlockMode.ADDRESSED
    assert (blocks.open, blocks.header_end, blocks.separator) == (opener, header_end, separator)
    assert (blocks.content, blocks.reasoning, blocks.call, blocks.argument) == (content, reasoning, "", "")
    assert (blocks.block_end, blocks.call_end) == ("", "")  # a block runs to the next header


@pytest.mark.parametrize(
    ("template", "opener", "header_end", "values", "ends", "separator"),
    [
        (SLASH, "<|im_start|>assistant", "\n", ("", "/think", "/tool:"), ("<|im_end|>", ""), "\n"),
        (COLON, "<turn>model", "\n", ("", ":thought", ":"), ("</turn>", ""), "\n"),
        (DOT, "<|start|>assistant", "<|message|>", ("", ".analysis", ".tool."), ("<|end|>", ""), ""),
        (
            RECIPIENT,
            "<|start|>assistant",
            "<|message|>",
            ("", ":reasoning", " to=functions."),
            ("<|end|>", "<|call|>"),
            "",
        ),
    ],
)
def test_role_suffixes_are_addressed_blocks(
    template: str, opener: str, header_end: str, values: tuple[str, str, str], ends: tuple[str, str], separator: str
) -> None:
    """The role is part of the opener; what follows it on the header's line says what the block is: nothing for the
    answer, a suffix for reasoning, a prefix and the tool's name for a call. Each block is closed by a marker of its
    own, which is what separates the blocks (a call's may be another: ``<|call|>``)."""
    blocks = _load(template).analysis.blocks
    assert blocks.mode is BlockMode.ADDRESSED
    assert (blocks.open, blocks.header_end, (blocks.block_end, blocks.call_end), blocks.separator) == (
        opener,
        header_end,
        ends,
        separator,
    )
    assert (blocks.content, blocks.reasoning, blocks.call) == values
    assert (blocks.section, blocks.argument, blocks.close_open) == ("", "", "")


def test_the_marker_fields_describe_role_suffixes() -> None:
    analysis = _load(SLASH).analysis
    assert (analysis.reasoning.start, analysis.reasoning.end) == ("<|im_start|>assistant/think\n", "<|im_end|>")
    assert analysis.content.mode is ContentMode.ALWAYS_WRAPPED
    assert (analysis.content.start, analysis.content.end) == ("<|im_start|>assistant\n", "<|im_end|>")
    calls, function = analysis.tools.format, analysis.tools.function
    assert calls.mode is ToolFormatMode.TAG_WITH_JSON
    assert (calls.per_call_start, function.name_prefix, function.name_suffix, calls.per_call_end) == (
        "<|im_start|>assistant",
        "/tool:",
        "\n",
        "<|im_end|>",
    )
    assert analysis.preserved_tokens == ("<|im_start|>", "<|im_end|>")
    # The colon template's prompt opens the reasoning block when thinking is on: the model writes inside it.
    colon = _load(COLON).analysis
    assert colon.reasoning.mode is ReasoningMode.FORCED_OPEN
    assert colon.generation_prompts.thinking.endswith("<turn>model:thought\n")
    # A call's own block end is its end marker.
    recipient = _load(RECIPIENT).analysis
    assert (recipient.content.end, recipient.tools.format.per_call_end) == ("<|end|>", "<|call|>")
    assert recipient.preserved_tokens == ("<|start|>", "<|message|>", "<|end|>", "<|call|>")


def test_the_marker_fields_describe_the_blocks() -> None:
    """Where markers can say it (the grammar's reasoning tags, the prefill, the report), they say the blocks'."""
    analysis = ChatTemplate.load("llamacpp-Kimi-K3").analysis
    assert analysis.reasoning.mode is ReasoningMode.FORCED_OPEN
    assert (analysis.reasoning.start, analysis.reasoning.end) == ("<|open|>think<|sep|>", "<|close|>think<|sep|>")
    assert analysis.content.mode is ContentMode.ALWAYS_WRAPPED
    assert (analysis.content.start, analysis.content.end) == ("<|open|>response<|sep|>", "<|close|>response<|sep|>")
    assert analysis.tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED
    assert analysis.tools.format.section_start == "<|open|>tools<|sep|>"
    assert analysis.preserved_tokens == ("<|open|>", "<|sep|>", "<|close|>")
    # The answer's closer is the answer block's, not the turn's end: a turn with calls ends without it.
    assert analysis.end_of_turn == ("<|close|>message<|sep|><|end_of_msg|>",)
    addressed = ChatTemplate.from_file(ADDRESSED).analysis
    assert (addressed.reasoning.start, addressed.reasoning.end) == (
        "<|turn|>assistant to=scratchpad<|body|>",
        "<|turn|>assistant to=",
    )


def test_functionary_v2_renders_calls_once_the_result_names_its_tool() -> None:
    """Its template writes ``'<|from|>' + message['name']`` for a tool result: the capability probe retries with it."""
    caps = ChatTemplate.load("hfjs-meetkai-functionary-medium-v2.2").analysis.capabilities
    assert caps.supports_tool_calls and caps.supports_parallel_tool_calls and not caps.supports_object_arguments


def test_no_other_bundled_template_is_read_as_blocks() -> None:
    found = {name for name in bundled_templates() if ChatTemplate.load(name).analysis.blocks.enabled}
    assert found == BLOCK_TEMPLATES
