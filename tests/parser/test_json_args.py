"""The shown form of raw JSON arguments (reading/json_args.py): closable prefixes, first key wins, strict JSON."""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser.reading.json_args import JsonView, read_json_arguments

from ..support.sample import sweep

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=10,
)
_OBJECTS = st.dictionaries(st.text(max_size=4), _VALUES, max_size=4)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    assert len({k for k, _ in pairs}) == len(pairs), pairs
    return dict(pairs)


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_unique)


def _shown(text: str, cuts: list[int] | None = None) -> tuple[str, JsonView]:
    view = JsonView()
    if not cuts:
        return view.feed(text), view
    pieces, at = [], 0
    for cut in sorted(set(cuts)):
        pieces.append(view.feed(text[at:cut]))
        at = cut
    pieces.append(view.feed(text[at:]))
    return "".join(pieces), view


@settings(max_examples=150, deadline=None)
@given(value=_OBJECTS, indent=st.sampled_from([None, 1]), data=st.data())
def test_every_prefix_closes_into_an_object_and_shows_a_prefix(
    value: dict[str, Any], indent: int | None, data: Any
) -> None:
    """Every prefix shows a prefix of what the next one shows and closes into an object: every prefix in CI;
    elsewhere a seeded third of them and every cut at or inside an escape sequence."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    inside_escapes = {cut for found in re.finditer(r"\\(?:u[0-9a-fA-F]{4}|.)", text) for cut in range(*found.span())}
    previous = ""
    for end in sweep(range(len(text) + 1), keep=inside_escapes, seed=zlib.crc32(text.encode())):
        shown, view = _shown(text[:end])
        assert shown.startswith(previous), (text[:end], shown, previous)  # append-only
        previous = shown
        closed = read_json_arguments(text[:end]).text
        assert isinstance(_loads(closed), dict), (text[:end], closed)
        assert closed == (shown + view.closers() if end else "{}") or end == len(text)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
    assert _shown(text, cuts)[0] == previous  # any chunking
    assert previous == text and read_json_arguments(text).text == text  # a complete object is shown as written


@settings(max_examples=100, deadline=None)
@given(value=_OBJECTS, again=_VALUES, data=st.data())
def test_a_repeated_key_keeps_the_first_at_any_depth(value: dict[str, Any], again: Any, data: Any) -> None:
    if not value:
        return
    key = data.draw(st.sampled_from(sorted(value)))
    text = json.dumps({"outer": value}, ensure_ascii=False)
    member = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(again, ensure_ascii=False)}"
    broken = text[:-2] + ", " + member + "}}"  # the key once more in the inner object
    found = read_json_arguments(broken)
    assert _loads(found.text) == {"outer": value}
    assert found.repaired and any("duplicate key" in note for note in found.notes)
    cuts = data.draw(st.lists(st.integers(0, len(broken)), max_size=6))
    assert _shown(broken, cuts)[0] == found.text


def test_raw_control_characters_are_escaped() -> None:
    found = read_json_arguments('{"a": "line\nbreak\x00"}')
    assert found.text == '{"a": "line\\nbreak\\u0000"}' and not found.repaired
    assert json.loads(found.text) == {"a": "line\nbreak\x00"}


def test_what_waits_for_its_value() -> None:
    for text, shown in [
        ('{"a": 1, "b', '{"a": 1'),
        ('{"a": 1, "b": ', '{"a": 1'),
        ('{"a": tr', "{"),
        ('{"a": -', "{"),
        ('{"a": 1.', '{"a": 1'),
        ('{"a": "x\\u00', '{"a": "x'),
        ('{"a": [1, ', '{"a": [1'),
        ('{"a": {"b": ', '{"a": {'),
    ]:
        assert JsonView().feed(text) == shown, text
        assert isinstance(_loads(read_json_arguments(text).text), dict)


def test_arguments_that_are_no_object() -> None:
    assert read_json_arguments('"{\\"a\\": 1}"').text == '{"a": 1}'  # a JSON string holding the object
    for text in ("null", "[1, 2]", "3", '"text"'):
        found = read_json_arguments(text)
        assert (found.text, found.repaired) == ("{}", True)
        assert text in found.notes[-1]
    assert JsonView().feed("[1, 2]") == ""  # never shown


def test_a_number_is_shown_up_to_each_digit_that_completes_it() -> None:
    """Only prefixes of JSON numbers are read as numbers (``1.e5`` is none, though each of its characters may
    follow the one before in some number): what follows is left out."""
    for text, shown in [
        ('{"a": 12', '{"a": 12'),
        ('{"a": -0.5e+1', '{"a": -0.5e+1'),
        ('{"a": 1.', '{"a": 1'),
        ('{"a": 1.e5}', '{"a": 1'),
        ('{"a": 01}', '{"a": 0'),
        ('{"a": -01}', '{"a": -0'),
    ]:
        for pieces in ([text], list(text)):
            view = JsonView()
            assert "".join(view.feed(piece) for piece in pieces) == shown, (text, pieces)
    found = read_json_arguments('{"a": 1.e5}')
    assert found.text == '{"a": 1}' and found.repaired and "'.e5}'" in found.notes[-1]


def test_a_raw_control_character_in_a_repeated_key_is_left_out_as_written() -> None:
    """A key's raw control character is shown as its escape; left out with its member, it is noted as written."""
    text = '{"k\x01": 1, "k\x01": 2}'
    for pieces in ([text], list(text)):
        view = JsonView()
        shown = "".join(view.feed(piece) for piece in pieces)
        assert shown == '{"k\\u0001": 1}'
        found = view.result(shown)
        assert any(repr('"k\x01": 2') in note for note in found.notes), found.notes  # (raw, not as shown)


def test_arguments_a_parse_found_canonical_are_not_decoded_again(monkeypatch: Any) -> None:
    """The parser's decode of raw JSON arguments already found them strict and without a key twice: the message
    takes them as written (one decode per parse, not two); other arguments are still checked."""
    from autoparser import ChatTemplate
    from autoparser.reading import json_args

    decoded: list[str] = []

    class Counting(json.JSONDecoder):
        def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
            decoded.append(s)
            return super().decode(s, *args, **kwargs)

    monkeypatch.setattr(json_args, "_UNIQUE_KEYS", Counting(object_pairs_hook=json_args._unique))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    params = ChatTemplate.load("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use").apply(
        [{"role": "user", "content": "go"}], tools=tools
    )
    message = params.parse('<tool_call>\n{"name": "f", "arguments": {"a": {"b": [1, "x"]}}}\n</tool_call>')
    assert message.tool_calls[0].arguments == '{"a": {"b": [1, "x"]}}' and not decoded
    message = params.parse('<tool_call>\n{"name": "f", "arguments": {"a": 1, "a": 2}}\n</tool_call>')
    assert message.tool_calls[0].arguments == '{"a": 1}' and decoded
    assert any("duplicate key" in w.message for w in message.warnings)
