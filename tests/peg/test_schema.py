"""JSON Schema → GBNF: every keyword checked with llguidance on accepted and rejected documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.errors import PatternError, SchemaError
from autoparser.peg.lowering.gbnf_syntax import RuleSet
from autoparser.peg.lowering.json_schema import JsonSchemaConverter
from tests.support.llg import gbnf_accepts


def grammar(schema: Any, name: str = "s") -> str:
    rules = RuleSet()
    rules.define("root", JsonSchemaConverter(rules).convert(schema, name))
    return rules.render()


def raw_grammar(schema: Any, name: str = "s") -> str | None:
    rules = RuleSet()
    expr = JsonSchemaConverter(rules).convert_raw_string(schema, name)
    if expr is None:
        return None
    rules.define("root", expr)
    return rules.render()


def as_llguidance_writes(value: Any, **options: Any) -> str:
    """JSON text with non-ASCII characters as themselves and DEL escaped (the only spelling both llguidance's
    ``%json`` and the GBNF accept)."""
    return json.dumps(value, ensure_ascii=False, **options).replace("\x7f", "\\u007f")


def accepts(schema: Any, value: Any) -> bool:
    """Accepted in compact, default and indented JSON form (asserting they all agree). Non-ASCII text is written
    as itself: JSON as llguidance's ``%json`` writes it, with ``\\u`` escapes only for control characters."""
    g = grammar(schema)
    forms = {as_llguidance_writes(value), as_llguidance_writes(value, separators=(",", ":")),
             as_llguidance_writes(value, indent=2)}
    results = {form: gbnf_accepts(g, form) for form in forms}
    assert len(set(results.values())) == 1, results
    return next(iter(results.values()))


def check(schema: Any, good: list[Any], bad: list[Any], bad_text: tuple[str, ...] = ()) -> None:
    for value in good:
        assert accepts(schema, value), value
    for value in bad:
        assert not accepts(schema, value), value
    for text in bad_text:
        assert not gbnf_accepts(grammar(schema), text), text


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
def test_empty_schema_accepts_any_json(value: Any) -> None:
    for schema in ({}, True, {"description": "anything", "title": "x", "$schema": "s", "default": 1}):
        g = grammar(schema)
        text, pretty = as_llguidance_writes(value), as_llguidance_writes(value, indent=2)
        assert gbnf_accepts(g, text) and gbnf_accepts(g, pretty)


def test_empty_schema_is_the_generic_value_rule() -> None:
    rules = RuleSet()
    assert JsonSchemaConverter(rules).convert({}, "s") == "value"
    check({}, [], [], bad_text=("", "[1,]", "{", '{"a" 1}', "01", "1.", "tru", '"\x01"', "1 ", " 1"))


def test_scalar_types() -> None:
    check({"type": "string"}, ["", "a b", 'q"\\\n\x01é😀'], [1, None, ["a"]], bad_text=('"a', "'a'"))
    assert gbnf_accepts(grammar({"type": "string"}), '"\\u001f\\u007F\\b\\t"')  # control characters escaped
    for spelled in ('"\\u00e9"', '"\\/"', '"\\ud83d\\ude00"'):  # llguidance writes these as themselves
        assert not gbnf_accepts(grammar({"type": "string"}), spelled)
    check({"type": "number"}, [0, -1, 1.5, 1e-7, 12345678901234567890, -0.25], ["1", None, True],
          bad_text=("01", "1.", ".5", "+1", "1e", "--1", "NaN"))
    check({"type": "integer"}, [0, -7, 10**30], [1.5, "1", True], bad_text=("1.0", "01", "-"))
    check({"type": "boolean"}, [True, False], [0, "true", None])
    check({"type": "null"}, [None], [0, "null", False])


def test_type_lists_and_nullable() -> None:
    check({"type": ["string", "null"]}, ["x", None], [1, False])
    check({"type": ["integer", "number"]}, [1, 1.5], ["1"])
    check({"type": ["string", "null"], "maxLength": 2}, ["ab", None], ["abc"])
    check({"type": "integer", "nullable": True}, [3, None], ["3"])


def test_properties_required_and_order() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["b"],
    }
    good = [{"b": "x"}, {"a": 1, "b": "x"}, {"b": "x", "c": True}, {"a": 1, "b": "x", "c": False}]
    bad = [{}, {"a": 1}, {"b": 1}, {"b": "x", "d": 1}, {"b": "x", "a": 1}, {"a": 1, "b": "x", "c": 1}]
    check(schema, good, bad, bad_text=('{"b":"x",}', '{,"b":"x"}', '{"b":"x"', '{"b":"x","b":"y"}'))


def test_all_optional_properties() -> None:
    schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    check(schema, [{}, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}], [{"c": 1}, [], {"b": 2, "a": 1}],
          bad_text=("{,}", '{"a":1,}', '{"a":1 "b":2}'))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flags=st.lists(st.booleans(), min_size=1, max_size=7), data=st.data())
def test_member_subsets(flags: list[bool], data: st.DataObject) -> None:
    """Any subset of members in schema order is accepted iff it holds every required one (with
    more than three optional members the object tails become helper rules)."""
    names = [f"p{i}" for i in range(len(flags))]
    extra = data.draw(st.booleans())
    schema = {"properties": {n: {"type": "integer"} for n in names}, "additionalProperties": extra,
              "required": [n for n, req in zip(names, flags, strict=True) if req]}
    present = data.draw(st.lists(st.booleans(), min_size=len(flags), max_size=len(flags)))
    value: dict[str, Any] = {n: i for i, n in enumerate(names) if present[i]}
    if extra and data.draw(st.booleans()):
        value["zz"] = [1]
    assert accepts(schema, value) == all(p or not req for p, req in zip(present, flags, strict=True))


def test_additional_properties() -> None:
    props = {"a": {"type": "integer"}}
    check({"type": "object", "properties": props, "additionalProperties": True},
          [{"a": 1}, {"a": 1, "x": [1, {}]}, {"x": None}, {}], [{"a": "s"}, {"x": 1, "a": 1}])
    check({"type": "object", "properties": props, "additionalProperties": False}, [{"a": 1}], [{"x": 1}])
    check({"type": "object", "properties": props, "additionalProperties": {"type": "string"}},
          [{"a": 1, "x": "s", "y": "t"}, {"ab": "s"}, {"": "s"}], [{"x": 1}, {"a": 1, "a2": 2}])
    # An extra key may not repeat a declared name (it would bypass the declared schema).
    assert not gbnf_accepts(grammar({"properties": props, "additionalProperties": True}), '{"a":"x"}')
    check({"type": "object"}, [{}, {"k": [1]}], [[], "x"])
    check({"type": "object", "additionalProperties": {"type": "integer"}}, [{}, {"k": 1}], [{"k": "1"}])
    check({"type": "object", "additionalProperties": False}, [{}], [{"k": 1}])
    check({"type": "object", "required": ["id"]}, [{"id": 1}, {"id": 1, "x": 2}], [{}, {"x": 2}])
    check({"properties": {"a": {}}, "unevaluatedProperties": {"type": "null"}}, [{"z": None}], [{"z": 1}])


def test_unusual_property_names() -> None:
    schema = {"properties": {'we"ird/~ key': {"type": "integer"}, "é": {"type": "integer"},
                             "get_data": {"type": "string"}, "get-data": {"type": "integer"}},
              "additionalProperties": True}
    check(schema, [{'we"ird/~ key': 1}, {"é": 2}, {"get_data": "x", "get-data": 1}],
          [{"get_data": 1}, {"get-data": "x"}, {"é": "x"}])
    assert gbnf_accepts(grammar(schema), '{"\\u00e9": 3}')


def test_arrays() -> None:
    check({"type": "array"}, [[], [1, "a", None]], [{}, "[]"], bad_text=("[1,]", "[,1]", "[1 2]"))
    check({"type": "array", "items": {"type": "integer"}}, [[], [1], [1, 2, 3]], [["a"], [1.5]])
    check({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
          [[1, 2], [1, 2, 3]], [[], [1], [1, 2, 3, 4]])
    check({"type": "array", "minItems": 1}, [[None]], [[]])
    check({"type": "array", "maxItems": 1}, [[], [{}]], [[1, 2]])
    check({"type": "array", "maxItems": 0}, [[]], [[1]])
    check({"type": "array", "items": False}, [[]], [[1]])


def test_prefix_items() -> None:
    tup = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}
    check(tup, [[], ["a"], ["a", 1]], [[1], ["a", "b"], ["a", 1, 2]])
    check({**tup, "minItems": 2}, [["a", 1]], [["a"]])
    check({"prefixItems": [{"type": "string"}], "items": {"type": "null"}, "minItems": 1, "maxItems": 3},
          [["a"], ["a", None, None]], [[], [None], ["a", 1], ["a", None, None, None]])
    check({"prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "null"}], "maxItems": 2},
          [["a", 1]], [["a", 1, None]])
    check({"items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
          [[1, "a", "b"]], [["a"], [1, 2]])


def test_parts_nothing_matches_are_dropped() -> None:
    never = {"type": "integer", "minimum": 3, "maximum": 1}
    check({"anyOf": [never, {"type": "null"}, False]}, [None], [2])
    check({"properties": {"a": never, "b": {"type": "null"}}}, [{}, {"b": None}], [{"a": 2}])
    check({"type": "object", "additionalProperties": never}, [{}], [{"a": 2}])
    check({"type": "array", "items": never}, [[]], [[2]])
    check({"prefixItems": [{"type": "null"}, never, {}]}, [[], [None]], [[None, 2]])
    with pytest.raises(SchemaError):
        grammar({"type": "array", "items": never, "minItems": 1})
    with pytest.raises(SchemaError):
        grammar({"anyOf": [never, False]})


def test_enum_and_const() -> None:
    check({"enum": ["red", 2, None, True, [1, "x"], {"k": "v"}]},
          ["red", 2, None, True], ["blue", 3, False, "2"])
    g = grammar({"enum": [[1, "x"], {"k": "v"}]})
    assert gbnf_accepts(g, '[1,"x"]') and gbnf_accepts(g, '{"k":"v"}')
    assert not gbnf_accepts(g, '[1, "x"]')  # const/enum compare the compact JSON text
    check({"type": "string", "enum": ["a", 1, "b"]}, ["a", "b"], [1])
    mixed = ["s", 1, 2.5, 3.0, True, None, [1], {"k": 1}]
    check({"type": ["integer", "boolean"], "enum": mixed}, [1, 3.0, True], ["s", 2.5, None, [1], {"k": 1}])
    check({"type": ["number", "null", "array"], "enum": mixed}, [1, 2.5, None], ["s", True, {"k": 1}])
    assert gbnf_accepts(grammar({"type": ["number", "null", "array"], "enum": mixed}), "[1]")
    check({"type": "object", "enum": mixed}, [], [[1], 1])
    assert gbnf_accepts(grammar({"type": "object", "enum": mixed}), '{"k":1}')
    assert gbnf_accepts(grammar({"type": "array", "enum": mixed}), "[1]")
    assert not gbnf_accepts(grammar({"type": "array", "enum": mixed}), "1")
    check({"const": "fixed"}, ["fixed"], ["other", None])
    check({"const": {"a": [1, 2]}, "type": "object"}, [], [{"a": [1]}])
    assert gbnf_accepts(grammar({"const": {"a": [1, 2]}}), '{"a":[1,2]}')
    check({"enum": ["é"]}, ["é"], ["e"])
    assert gbnf_accepts(grammar({"enum": ["é"]}), '"\\u00e9"')
    check({"const": None}, [None], [0])


def test_any_of_and_one_of() -> None:
    for key in ("anyOf", "oneOf"):
        schema = {key: [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "string"}}}]}
        check(schema, [1, {}, {"x": "s"}], ["1", {"x": 1}, None])
    check({"anyOf": [{"type": "string"}, {"type": "string"}]}, ["x"], [1])


def test_all_of_merges_objects() -> None:
    schema = {
        "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
        "allOf": [
            {"$ref": "#/$defs/base"},
            {"properties": {"name": {"type": "string"}, "id": {"minimum": 1}}, "required": ["name"]},
        ],
    }
    check(schema, [{"id": 1, "name": "x"}], [{"id": 0, "name": "x"}, {"id": 1}, {"name": "x"}, {"id": 1, "name": 2}])
    check({"allOf": [{"type": ["integer", "string"]}, {"type": ["number", "null"]}]}, [3], ["3", None, 1.5])
    check({"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 3}]}, ["ab", "abc"], ["a", "abcd"])
    check({"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}, ["b", "c"], ["a", "d"])
    check({"allOf": [{"const": "b"}, {"enum": ["b", "c"]}]}, ["b"], ["c"])
    check({"allOf": [{"const": "b"}, {"const": "b"}]}, ["b"], ["c"])
    check({"allOf": [{"type": "array", "items": {"type": "integer"}}, {"maxItems": 1}]}, [[1]], [[1, 2], ["a"]])
    check({"allOf": [{"additionalProperties": False}, {"properties": {"a": {}}}]}, [{"a": 1}], [{"b": 1}])
    check({"allOf": [{}, True, {"type": "integer"}]}, [1], ["1"])
    check({"allOf": [{"properties": {"a": True}}, {"properties": {"a": {"type": "null"}}}]}, [{"a": None}], [{"a": 1}])
    check({"allOf": [{"properties": {"a": {"type": "null"}}}, {"properties": {"a": {}}}]}, [{"a": None}], [{"a": 1}])
    check({"allOf": [{"properties": {"a": {"type": "null"}}}, {"properties": {"a": False}}]}, [{}], [{"a": None}])
    check({"allOf": [{"type": "integer", "minimum": 2, "exclusiveMinimum": True},
                     {"minimum": 2, "exclusiveMinimum": True}]}, [3], [2])
    check({"allOf": [{"type": "object", "x-vendor": 1, "title": "a"}, {"x-vendor": 2, "title": "b"}]}, [{}], [1])


def test_all_of_distributes_over_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "required": ["kind"],
        "anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                  {"properties": {"b": {"type": "integer"}}, "required": ["b"]}],
    }
    check(schema, [{"kind": "x", "a": 1}, {"kind": "x", "b": 1}], [{"kind": "x"}, {"a": 1}])
    check({"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"oneOf": [{"type": "string"}]}]},
          ["x"], [1])


def test_refs_and_recursion() -> None:
    tree = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["value"],
    }
    check(tree, [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}],
          [{"value": 1, "children": [{}]}, {"value": 1, "children": [{"value": "x"}]}])
    linked = {
        "definitions": {"node": {"type": ["object", "null"], "properties": {"next": {"$ref": "#/definitions/node"}}}},
        "$ref": "#/definitions/node",
    }
    check(linked, [None, {}, {"next": {"next": None}}], [{"next": 1}])
    check({"properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}}}, [{"a": "x", "b": "y"}],
          [{"b": 1}])
    check({"$defs": {"a~b/c": {"type": "null"}}, "$ref": "#/$defs/a~0b~1c"}, [None], [1])
    check({"$defs": {"x y": {"type": "null"}}, "$ref": "#/$defs/x%20y"}, [None], [1])
    check({"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/anyOf/0"}}]}, [None, [None]], [[1]])
    check({"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "$ref": "#/$defs/n"}, [None], [1])
    check({"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "minimum": 5}, [5], [4])


def test_string_lengths() -> None:
    check({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "a\nc", "😀😀"], ["a", "abcd", 12])
    check({"type": "string", "maxLength": 0}, [""], ["a"])
    check({"type": "string", "minLength": 1}, ["a"], [""])
    check({"minLength": 1}, ["a"], [""])
    check({"type": "string", "maxLength": 10**9}, ["a" * 50], [1])  # huge bounds are dropped
    with pytest.raises(SchemaError, match="not supported"):
        grammar({"type": "string", "minLength": 10**9})


def test_formats() -> None:
    check({"type": "string", "format": "date"}, ["2024-02-29", "1999-12-31"],
          ["2024-13-01", "2024-01-32", "2024-1-01", "24-01-01", "2024-00-10", "2024-01-01T"])
    check({"type": "string", "format": "time"}, ["23:59:60Z", "08:30:00.123+05:30", "00:00:00-00:00"],
          ["24:00:00Z", "12:60:00Z", "12:00:00", "12:00Z"])
    check({"type": "string", "format": "date-time"}, ["2024-05-01T12:00:00Z", "2024-05-01t12:00:00.5+01:00"],
          ["2024-05-01 12:00:00Z", "2024-05-01T25:00:00Z", "2024-05-01"])
    check({"type": "string", "format": "uuid"}, ["123e4567-e89b-12d3-A456-426614174000"],
          ["123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"])
    check({"type": "string", "format": "email"}, ["not checked"], [1])
    check({"properties": {"a": {"format": "date-time"}, "b": {"format": "date"}}},
          [{"a": "2024-05-01T12:00:00Z", "b": "2024-05-01"}], [{"b": "2024-05-01T12:00:00Z"}])


def test_patterns() -> None:
    check({"type": "string", "pattern": "^[A-Z]{2}-\\d+$"}, ["AB-12"], ["ab-12", "AB-", "AB-12x", 12])
    check({"type": "string", "pattern": "\\d"}, ["x1y", "7"], ["xy"])
    check({"pattern": '^a"b\\\\$'}, ['a"b\\'], ["ab"])
    check({"type": "string", "pattern": "^.{2}$", "minLength": 5}, ["ab"], ["abcde"])  # pattern wins


@pytest.mark.parametrize(
    ("bounds", "lo", "hi"),
    [
        ({"minimum": 0, "maximum": 100}, 0, 100),
        ({"minimum": -15, "maximum": 7}, -15, 7),
        ({"minimum": -130, "maximum": -12}, -130, -12),
        ({"minimum": 95}, 95, None),
        ({"maximum": -8}, None, -8),
        ({"maximum": 40}, None, 40),
        ({"exclusiveMinimum": 9, "exclusiveMaximum": 120}, 10, 119),
        ({"minimum": 1.5, "maximum": 20.5}, 2, 20),
        ({"exclusiveMinimum": 1.5, "exclusiveMaximum": 19.5}, 2, 19),
        ({"minimum": 3, "exclusiveMinimum": True, "maximum": 50, "exclusiveMaximum": True}, 4, 49),
        ({"minimum": 0, "exclusiveMinimum": 5, "maximum": 300, "exclusiveMaximum": 250}, 6, 249),
        ({"minimum": 100, "maximum": 199}, 100, 199),
    ],
)
def test_integer_bounds(bounds: dict[str, Any], lo: int | None, hi: int | None) -> None:
    g = grammar({"type": "integer", **bounds})
    edges = [b + d for b in (lo, hi, 0, 9, 10, 99, 100, 999) if b is not None for b in (b, -b) for d in (-1, 0, 1)]
    for n in sorted({*edges, *range(-140, 300, 7), 1234, 99999, -99999}):
        expected = (lo is None or n >= lo) and (hi is None or n <= hi)
        assert gbnf_accepts(g, str(n)) == expected, n
    assert not gbnf_accepts(g, "05") and not gbnf_accepts(g, "-0")


def test_number_bounds_are_ignored() -> None:
    check({"type": "number", "minimum": 0, "multipleOf": 2}, [-1.5, 3], ["1"])


def test_object_inferred_and_value_without_type() -> None:
    check({"properties": {"a": {"enum": [1]}}, "required": ["a"]}, [{"a": 1}], [{"a": 2}, 1])
    check({"items": {"type": "integer"}}, [[1]], [["x"], 1])


# ------------------------------------------------------------------------------------- raw strings
def raw_accepts(schema: dict[str, Any], text: str) -> bool:
    g = raw_grammar(schema)
    assert g is not None
    return gbnf_accepts(g, text)


def test_raw_strings() -> None:
    assert raw_grammar({"type": "string"}) is None
    assert raw_grammar({"type": ["string", "null"], "description": "d"}) is None
    assert raw_grammar({}) is None
    assert raw_grammar({"anyOf": [{"type": "string"}, {"const": "x"}]}) is None
    enum = {"type": "string", "enum": ["a<b", 'q"\\', "multi\nline"]}
    assert all(raw_accepts(enum, t) for t in enum["enum"]) and not raw_accepts(enum, '"a<b"')
    assert raw_accepts({"enum": ["x", 5, None]}, "5") and raw_accepts({"enum": ["x", 5, None]}, "null")
    assert not raw_accepts({"type": "string", "enum": ["x", 5]}, "5")
    assert raw_accepts({"const": "k"}, "k") and not raw_accepts({"const": "k"}, "kk")
    pattern = {"type": "string", "pattern": '^[a-z"]+$'}
    assert raw_accepts(pattern, 'ab"c') and not raw_accepts(pattern, "ab1")
    assert raw_accepts({"format": "date"}, "2024-01-31") and not raw_accepts({"format": "date"}, "2024-01-32")
    length = {"type": ["string", "null"], "minLength": 2, "maxLength": 3}
    assert raw_accepts(length, "a\n") and raw_accepts(length, "é😀\x00")
    assert not raw_accepts(length, "a") and not raw_accepts(length, "abcd")
    alts = {"oneOf": [{"const": "a"}, {"$ref": "#/$defs/b"}], "$defs": {"b": {"pattern": "^b+$"}}}
    assert raw_accepts(alts, "a") and raw_accepts(alts, "bbb") and not raw_accepts(alts, "ab")
    merged = {"allOf": [{"type": "string"}, {"enum": ["a", "b"]}, {"enum": ["b", "c"]}]}
    assert raw_accepts(merged, "b") and not raw_accepts(merged, "a")


def test_raw_value_between_tags() -> None:
    """llguidance discrepancy: it compiles terminal-only GBNF rules to greedy lexemes, and ``root`` is
    never one. With ``root ::= "<v>" value "</v>"`` the value lexeme (e.g. ``raw-char{0,20}``)
    swallows ``</v>``, so llguidance rejects ``<v>abc</v>`` although GBNF accepts it. Keeping the
    tags and the value in one terminal-only rule turns the whole parameter into a single regex, which
    llguidance matches exactly; the PEG lowering should emit raw parameters that way."""
    for schema, good, bad in [
        ({"type": "string", "maxLength": 5}, ["abc", "a</v>"], ["abcdef"]),
        ({"type": "string", "pattern": "^a"}, ["abc", "a</v>b"], ["b"]),
        ({"enum": ["x", "y</v>z"]}, ["x", "y</v>z"], ["y"]),
    ]:
        rules = RuleSet()
        value = JsonSchemaConverter(rules).convert_raw_string(schema, "p")
        rules.define("param", f'"<v>" {value} "</v>"')
        rules.define("root", 'param ( "," param )*')
        text = rules.render()
        for v in good:
            assert gbnf_accepts(text, f"<v>{v}</v>") and gbnf_accepts(text, f"<v>{v}</v>,<v>{v}</v>"), v
        for v in bad:
            assert not gbnf_accepts(text, f"<v>{v}</v>"), v


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"type": "integer"}, "#/type"),
        ({"type": "string", "enum": [1]}, "#/enum"),
        ({"enum": []}, "#/enum"),
        ({"$ref": "#"}, "#/$ref"),
        ({"anyOf": []}, "#/anyOf"),
        (False, "#"),
        ([], "#"),
        ({"pattern": "(?=x)"}, "#/pattern"),
        ({"minLength": -1}, "#/minLength"),
    ],
)
def test_raw_string_errors(schema: Any, path: str) -> None:
    with pytest.raises(SchemaError) as info:
        JsonSchemaConverter(RuleSet()).convert_raw_string(schema, "s")
    assert info.value.path == path and path in str(info.value)


# ------------------------------------------------------------------------------------------ errors
ERRORS = [
    (False, "#"),
    ("string", "#"),
    ({"type": "strin"}, "#/type"),
    ({"type": []}, "#/type"),
    ({"type": 5}, "#/type"),
    ({"properties": {"location": {"type": "text"}}}, "#/properties/location/type"),
    ({"properties": {"a": False}, "required": ["a"]}, "#/properties/a"),
    ({"properties": []}, "#/properties"),
    ({"required": "a"}, "#/required"),
    ({"properties": {}, "required": ["x"], "additionalProperties": False}, "#/required"),
    ({"$ref": "#/$defs/missing"}, "#/$ref"),
    ({"$ref": "http://example.com/s.json"}, "#/$ref"),
    ({"$ref": "#anchor"}, "#/$ref"),
    ({"$ref": 3}, "#/$ref"),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "#/$defs/b/$ref"),
    ({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, "#/$defs/a/allOf/0/$ref"),
    ({"enum": []}, "#/enum"),
    ({"enum": "a"}, "#/enum"),
    ({"type": "integer", "enum": ["a"]}, "#/enum"),
    ({"const": {1, 2}}, "#/const"),
    ({"const": float("nan")}, "#/const"),
    ({"anyOf": {}}, "#/anyOf"),
    ({"oneOf": [{"type": "x"}]}, "#/oneOf/0/type"),
    ({"allOf": {}}, "#/allOf"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "#/allOf/1/type"),
    ({"allOf": [{"pattern": "a"}, {"pattern": "b"}]}, "#/allOf/1/pattern"),
    ({"allOf": [{"enum": ["a"]}, {"enum": ["b"]}]}, "#"),
    ({"allOf": [{"const": "a"}, {"enum": ["b"]}]}, "#"),
    ({"allOf": [{"const": 1}, {"const": True}]}, "#/allOf/1/const"),
    ({"not": {"type": "string"}}, "#/not"),
    ({"allOf": [{"type": "string"}, {"type": 1}]}, "#/allOf/1/type"),
    ({"allOf": [{"properties": {}}, {"properties": []}]}, "#/allOf/1/properties"),
    ({"allOf": [{"required": []}, {"required": "a"}]}, "#/allOf/1/required"),
    ({"allOf": [{"enum": [1]}, {"enum": 1}]}, "#/allOf/1/enum"),
    ({"allOf": [{"minimum": True}, {"minimum": 2}]}, "#/allOf/1/minimum"),
    ({"allOf": [{"anyOf": []}]}, "#/allOf/0/anyOf"),
    ({"properties": {"a": {"if": {}}}}, "#/properties/a/if"),
    ({"patternProperties": {"^x": {}}}, "#/patternProperties"),
    ({"type": "string", "minLength": 3, "maxLength": 2}, "#"),
    ({"type": "string", "maxLength": "3"}, "#/maxLength"),
    ({"type": "string", "minLength": 1.5}, "#/minLength"),
    ({"type": "array", "minItems": True}, "#/minItems"),
    ({"type": "array", "items": False, "minItems": 1}, "#"),
    ({"type": "array", "prefixItems": {}}, "#/prefixItems"),
    ({"type": "array", "items": "x"}, "#/items"),
    ({"type": "integer", "minimum": 5, "maximum": 4}, "#"),
    ({"type": "integer", "minimum": "5"}, "#/minimum"),
    ({"type": "integer", "maximum": float("inf")}, "#/maximum"),
    ({"type": "string", "pattern": "a(b"}, "#/pattern"),
    ({"properties": {"x/y": {"pattern": "\\1"}}}, "#/properties/x~1y/pattern"),
]


@pytest.mark.parametrize(("schema", "path"), ERRORS)
def test_errors_name_the_schema_path(schema: Any, path: str) -> None:
    with pytest.raises(SchemaError) as info:
        JsonSchemaConverter(RuleSet()).convert(schema, "s")
    assert info.value.path == path
    assert f"schema {path}:" in str(info.value)


def test_pattern_errors_are_pattern_errors() -> None:
    with pytest.raises(PatternError) as info:
        JsonSchemaConverter(RuleSet()).convert({"pattern": "ab\\b"}, "s")
    assert info.value.position == 2


def test_deep_nesting_is_a_schema_error() -> None:
    schema: dict[str, Any] = {}
    for _ in range(3000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(SchemaError, match="too deeply"):
        JsonSchemaConverter(RuleSet()).convert(schema, "s")


SCHEMA_KEYS = st.sampled_from([
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum", "const",
    "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "pattern", "format", "minItems",
    "maxItems", "minimum", "maximum", "exclusiveMinimum", "$defs", "nullable", "x",
])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.sampled_from(
    ["string", "object", "array", "integer", "null", "#", "#/$defs/a", "#/properties", "^a+$", "date", "(", "a"])
SCHEMAS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SCHEMA_KEYS | st.text(max_size=2), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=250, deadline=None)
@given(SCHEMAS)
def test_arbitrary_schemas_raise_only_schema_errors(schema: Any) -> None:
    for method in ("convert", "convert_raw_string"):
        rules = RuleSet()
        try:
            expr = getattr(JsonSchemaConverter(rules), method)(schema, "s")
        except SchemaError:
            continue
        if expr is not None:
            rules.define("root", expr)
            rules.render()  # every referenced rule is defined


# ---------------------------------------------------------------------------------------- naming
def test_rule_names() -> None:
    rules = RuleSet()
    conv = JsonSchemaConverter(rules)
    weather = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 9}}}
    name = conv.convert(weather, "tool-get_weather-schema")
    assert name == "tool-get-weather-schema"
    assert "tool-get-weather-schema-city-kv" in rules.body(name)
    assert conv.convert(weather, "tool-get_weather-schema") == name  # same schema, same rules
    other = conv.convert({"type": "object", "properties": {"city": {"type": "integer"}}}, "tool-get_weather-schema")
    assert other == "tool-get-weather-schema-2"
    rules.define("root", f"{name} | {other}")
    text = rules.render()
    assert "json-ws ::= [ \\t\\n\\r]{0,64}" in text
    assert gbnf_accepts(text, '{"city":"Paris"}') and gbnf_accepts(text, '{"city":7}')
    assert not gbnf_accepts(text, '{"city":"Paris is big"}')


def test_generic_rules_are_shared_and_collision_free() -> None:
    rules = RuleSet()
    rules.define(rules.reserve("value"), '"not json"')
    expr = JsonSchemaConverter(rules).convert({"type": "array"}, "s")
    rules.define("root", expr)
    text = rules.render()
    assert expr == "array" and "value-2" in text
    assert gbnf_accepts(text, "[1,[2]]") and not gbnf_accepts(text, '["not json"')
