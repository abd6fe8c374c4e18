"""The short path for call replies (parser/regular_calls.py, regular_pythonic.py and regular_tagged.py, through
parser/regular.py) reads exactly what the engine reads, or leaves the reply to it.

On every bundled template whose analysis takes it (the seeded sample outside CI), in the request shapes of
test_regular_replies.py: the template's own outputs, and calls built from its own markers — one and two calls,
content or a reasoning block before them, odd whitespace, a duplicate key (at the top and deeper), arguments written
as a string, NaN, a raw control character, an unknown tool, members in another order or one more, text or the end of
turn after the calls, markers inside argument strings; bare JSON calls (Llama 3) after special tokens, separated by
``;`` or ``,``, in an array; pythonic call lists (LFM2) with every kind of literal, escapes, nested values, values
that are not literals, positional or repeated arguments, other wrappers; tagged calls (Qwen3-Coder, GLM) rendered by
the template with every kind of value, their whitespace and markers changed, dropped or doubled — are parsed whole and
cut around every marker and at a seeded tenth of the other positions. Wherever the short path answers, its message
equals the engine's field by field (generated ids by shape: two parses never share them), warnings included; the
plain shapes must take it. Then seeded random damage (characters inserted, dropped or copied from elsewhere, one to
three times: spaces a model writes, ``\x0b``, quotes, brackets, escapes, special tokens) to every such reply, compared
the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from random import Random

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.model import TemplateAnalysis, ToolFormatMode
from autoparser.parser.assemble import GeneratedParser
from autoparser.parser.markers import core
from autoparser.parser.regular_pythonic import PythonicCalls
from autoparser.parser.regular_tagged import TaggedCalls
from autoparser.reading.streaming import parse_output

from ..support.outputs import outputs, render_calls, request_tools
from ..support.sample import ALL_TEMPLATES, sampled
from .test_regular_replies import PLAIN_CONTENT, PLAIN_REASONING, _cuts, _damaged, _engine, _fields, _shapes

ARGS = {"city": "Paris", "days": 3, "hourly": False, "tags": ["a", "b"], "where": {"lat": 48.8}}


@dataclass(frozen=True)
class _Shape:
    """How a template writes calls: each object in an opener/closer pair, or a JSON array after a section opener."""

    opener: str
    closer: str
    section: str
    start: str  # the reasoning markers' cores
    end: str
    section_end: str = ""
    name_suffix: str = ""  # calls that name their tool in markup: what follows the name
    bare: bool = False  # JSON calls without markers (Llama 3)
    listed: bool = False  # ... in an array
    args_key: str = "arguments"  # the template's key for the arguments

    def calls(self, *objects: str, between: str = "") -> str:
        """Calls written as objects ``{"name": ..., "arguments": ...}`` (in markup, where the template names the
        tool there: objects that are not such JSON are written as they are, in place of the name and arguments)."""
        if self.name_suffix:
            return f"{self.section}{between.join(self._named(o) for o in objects)}{self.section_end}"
        if self.section or self.listed:
            return f"{self.section}[{(',' + between).join(objects)}]"
        return between.join(f"{self.opener}{o}{self.closer}" for o in objects)

    def _named(self, obj: str) -> str:
        try:
            call = json.loads(obj)
            name, args = call["name"], json.dumps(call["arguments"])
        except (ValueError, KeyError, TypeError):
            return f"{self.opener}{obj}{self.closer}"
        return f"{self.opener}{name}{self.name_suffix}{args}{self.closer}"

    @property
    def markers(self) -> list[str]:
        found = (core(self.opener), core(self.closer), self.section, self.section_end, self.name_suffix)
        return [m for m in (*found, self.start, self.end) if m]


def _shape(template: str, analysis: TemplateAnalysis | None = None) -> _Shape:
    """How ``template`` writes calls (``analysis``: the layout its parser reads, where a format presets it)."""
    analysis = analysis or ChatTemplate.load(template).analysis
    fmt = analysis.tools.format
    reasoning = analysis.reasoning
    named = fmt.mode is ToolFormatMode.TAG_WITH_JSON
    bare = fmt.mode is ToolFormatMode.JSON_NATIVE and not (fmt.per_call_start.strip() or fmt.section_start.strip())
    return _Shape(
        fmt.per_call_start,
        fmt.per_call_end,
        core(fmt.section_start),
        core(reasoning.start),
        core(reasoning.end),
        core(fmt.section_end) if named else "",
        core(analysis.tools.function.name_suffix) if named else "",
        bare,
        bare and fmt.tools_array_wrapped,
        fmt.args_field or "arguments",
    )


def _calls(template: str) -> list[str]:
    """Replies with calls in the template's markers, plain and varied."""
    shape = _shape(template)
    start, end = shape.start, shape.end
    tools = request_tools(template) or []
    name = tools[0]["function"]["name"]
    args = json.dumps(ARGS)
    obj = f'{{"name": "{name}", "{shape.args_key}": {args}}}'
    odd = [
        f'{{"name":"{name}","arguments":{{}}}}',
        f' \r\n{{ "name" : "{name}" ,\n "arguments" :\t{{ "a" : [ 1 , 2 ] }} }} \n ',
        f'{{"name": "{name}", "arguments": {{"a": 1, "a": 2}}}}',
        f'{{"name": "{name}", "arguments": {{"a": {{"b": 1, "b": 2}}}}}}',
        f'{{"name": "{name}", "arguments": {json.dumps(args)}}}',
        f'{{"name": "{name}", "arguments": {{"a": NaN}}}}',
        f'{{"name": "{name}", "arguments": {{"a": "x\ny"}}}}',
        f'{{"name": "{name}", "arguments": {{"a": 01}}}}',
        f'{{"name": "{name}", "arguments": {{"a": "\\u00e9\\ud800 é", "b": -0.5E+3, "c": null}}}}',
        f'{{"name": "no_such_tool", "arguments": {args}}}',
        f'{{"name": "{name}x", "arguments": {args}}}',
        f'{{"name": "{name[:1]}\\u{ord(name[1]):04x}{name[2:]}", "arguments": {args}}}',
        f'{{"arguments": {args}, "name": "{name}"}}',
        f'{{"name": "{name}", "arguments": {args}, "id": "a1B2c3D4e"}}',
        f'{{"name": "{name}", "arguments": {args},\n"id" : "call_1"}}',
        f'{{"name": "{name}", "arguments": {args}, "id": "a-b"}}',
        f'{{"name": "{name}", "arguments": {args}, "id": ""}}',
        f'{{"name": "{name}", "arguments": {args}, "id": "a1B2c3D4e", "x": 1}}',
        f'{{"name": "{name}", "parameters": {args}}}',
        f'{{"name": "{name}", "arguments": {{"a": "{" ".join(shape.markers)} ] }} [ {{"}}}}',
    ]
    plain = shape.calls(obj)
    replies = [
        plain,
        shape.calls(obj, obj),
        shape.calls(obj, obj, between="\n"),
        shape.calls(obj, odd[13], between=" \n "),
        f"{PLAIN_CONTENT}\n{plain}",
        f"{PLAIN_CONTENT}\n\n{shape.calls(obj, obj, between=chr(10))}\n",
        f"  {plain} \n\t",
        f"{plain}\x0c",
        *(shape.calls(o) for o in odd),
        f"{plain}\n{PLAIN_CONTENT}",
        f"{plain}<|im_end|>",
        f"{plain}</s>",
        f"{plain}[/TOOL_CALLS]",
        f"{PLAIN_CONTENT} {{x}}\n{plain}",
        f"{PLAIN_CONTENT} {name}(city='Paris')\n{plain}",
    ]
    if shape.name_suffix:
        suffix, begin, finish = shape.name_suffix, core(shape.opener), core(shape.closer)
        for args in ("{}", ' { "a" : [ 1 , 2 ] } ', '{"a": 1, "a": 2}', '"{}"', '{"a": NaN}', '{"a": "x\ny"}', "[1]"):
            replies.append(f"{shape.section}{begin}{name}{suffix}{args}{finish}{shape.section_end}")
        for named in (f" {name}", f"{name} ", "no_such_tool", f"{name}x", f"functions.{name}"):
            replies.append(f"{shape.section}{begin}{named}{suffix}{{}}{finish}{shape.section_end}")
        one = f"{begin}{name}{suffix}{args}{finish}"
        replies += [
            f"{shape.section} {one}{shape.section_end}",
            f"{shape.section}{one}\n{one}{shape.section_end}",
            f"{shape.section}{one} {shape.section_end}",
            f"{shape.section}{one}",
            f"{shape.section}{one}{shape.section_end}{shape.section_end}",
            f"{shape.section}{one}{shape.section_end}{shape.section}{one}{shape.section_end}",
            f"{one}{shape.section_end}",
        ]
    elif shape.bare:
        replies += _bare_calls(shape, obj, name)
    elif shape.section:
        replies += [f"{shape.section} [ {obj} , {obj} ] ", f"{shape.section}\n[\n{obj}\n]", f"{shape.section}[]"]
        replies += [f"{shape.section}{obj}", f"{shape.section}[{obj}]]", f"{shape.section}[{obj},]"]
    else:
        replies += [f"{core(shape.opener)}{obj}{core(shape.closer)}", f"{core(shape.opener)}\x0b{obj}{shape.closer}"]
    replies += _after_reasoning(start, end, plain, shape.calls(obj, obj))
    texts = [o.text for o in outputs(template) if o.calls]
    return list(dict.fromkeys([*texts, *replies]))


def _bare_calls(shape: _Shape, obj: str, name: str) -> list[str]:
    """Bare JSON calls as Llama 3 models write them, and what must stay the engine's: special tokens before them,
    separators, an array where the template writes objects (or objects where it writes an array), text around."""
    token, one = "<|python_tag|>", shape.calls(obj)
    key = shape.args_key
    return [
        f"{token}{one}",
        f"{token}\n{one}\n",
        f"{token}{token}{one}",
        f"<|eot_id|>{one}",
        f"<||>{one}",
        f"<|Python_tag|>{one}",
        f"{token}\x0b{one}",
        f"{token}",
        f"{PLAIN_CONTENT} {token}{one}",
        f"{PLAIN_CONTENT}{one}",
        f"{one};",
        f"{one},",
        f"{one} ; {one}",
        f"{one};{token}{one}",
        f"{one} , {token} {one}",
        f"{one} ;; {one}",
        f"{one}\n\n{one}\n",
        f"{one}\x0b{one}",
        f"{one}{{}}",
        f"{one}[]",
        f"{one}<|eom_id|>",
        f"{one}<|eot_id|>",
        f"[{obj}]",
        f"[{obj}, {obj}]",
        f"{token}[{obj}]",
        f"[ {obj} ]\n[{obj}]",
        f"[{obj}",
        f"{obj}]",
        f"{obj} {obj}",
        f'{{"name": "{name}"}}',
        f'{{"tool_name": "{name}", "{key}": {{}}}}',
        f'{{"name": "{name}", "{key}": {{"a": {{"b": [1, {{"c": "}}]\\"\\u00e9"}}]}}}}}}',
        f'{{"name": "{name}", "{key}": {{}}, "{key}": {{}}}}',
        f'{{"name": "{name}", "arguments": {{}}, "parameters": {{}}}}',
        f'{{"type": "function", "function": {{"name": "{name}", "{key}": {{}}}}}}',
        f'{{"name": "{name}", "{key}": {{}}}} {{"a": 1}}',
        f'{{"a": 1}} {one}',
        f"{PLAIN_CONTENT} {name} {one}",
        f'{PLAIN_CONTENT} "{name}" {one}',
        f"{PLAIN_CONTENT} {name}(x) {one}",
    ]


def _pythonic_calls(template: str, analysis: TemplateAnalysis) -> list[str]:
    """Pythonic call lists (LFM2) in their markers, bare, plain and varied; reasoning blocks before them."""
    reasoning = analysis.reasoning
    start, end = core(reasoning.start), core(reasoning.end)
    learned = (core(analysis.tools.format.section_start), core(analysis.tools.format.section_end))
    opener, closer = learned if learned[0] else ("<|tool_call_start|>", "<|tool_call_end|>")
    name = (request_tools(template) or [])[0]["function"]["name"]
    full = (
        f"{name}(city='Paris', days=3, temp=-1.5e1, metric=True, note=None, tags=['a', \"b\", 0], "
        f"options={{'k': [1, {{\"n\": null, 'm': false}}], 'e': {{}}}}, remark=\"it's \\\"ok\\\"\", unit='C')"
    )
    simple = f'{name}(city="Paris")'

    def listed(*calls: str, between: str = ", ") -> str:
        return f"{opener}[{between.join(calls)}]{closer}"

    def args(text: str) -> str:
        return listed(f"{name}({text})")

    plain = listed(full)
    replies = [
        plain,
        listed(full, simple),
        listed(simple, simple, between=",\n"),
        f"{PLAIN_CONTENT}{plain}",
        f"{PLAIN_CONTENT}\n{plain}\n",
        f"[{full}]",
        f"{PLAIN_CONTENT} [{simple}, {simple}] ",
        f"{opener}[{simple}]",
        f"  {opener} [ {simple} ,\t{simple} ] {closer} \n",
        f"{opener}\n[\n{simple}\n]\n{closer}",
        listed(f"{name}()"),
        listed(f"{name}( )", "ping()"),
        listed("get(city='x')"),
        f"{opener}[]{closer}",
        listed("no_such_tool(a=1)"),
        listed(f"{name}x(a=1)"),
        listed(f"{name}(city='Paris'), "),
        f"{opener}[{simple}; {simple}]{closer}",
        f"{opener}[{simple} {simple}]{closer}",
        f"{opener}[{simple}]]{closer}",
        f"{opener}{simple}{closer}",
        f"{opener}```python\n[{simple}]\n```{closer}",
        f'{opener}[{{"name": "{name}", "arguments": {{}}}}]{closer}',
        f"{opener}\x0b[{simple}]{closer}",
        f"{opener}[{simple}]{closer}\x0c",
        f"{opener}[{simple}]{closer}<|im_end|>",
        f"{opener}[{simple}]{closer} and more",
        f"{opener}[{simple}]{closer}{opener}[{simple}]{closer}",
        f"{opener}[{simple}]</function_calls>",
        f"[{simple}]{closer}",
        f"<|python_start|>[{simple}]<|python_end|>",
        f"<function_calls>\n[{simple}]\n</function_calls>",
        f"{PLAIN_CONTENT} {name}(city='x') {plain}",
        f"{PLAIN_CONTENT} [1] {plain}",
        f"{PLAIN_CONTENT} {name} {plain}",
    ]
    for text in (
        "city='Paris',",
        "city='Paris' days=3",
        "city='Paris'days=3",
        "'Paris'",
        "city='Paris', city='Rome'",
        "city=Paris",
        "city='Paris' + 'x'",
        'city="Q3 "sync" review"',
        "city='a\\nb\\x41\\u00e9\\N{BULLET}\\N{nope}\\q\\'\\ud83d\\ude00'",
        "city='a\nb\tc'",
        "city='\\'",
        "days=01",
        "days=1.",
        "days=.5",
        "days=1_000",
        "days=0x1F",
        "days=-0",
        "days=1e400",
        "metric=Truex",
        "metric=TRUE",
        "options={'a': 1, 'a': 2}",
        "options={'a': {'b': 1, 'b': 2}}",
        "options={1: 2}",
        "tags=[1, 2,]",
        "tags=(1, 2)",
        "tags=[1, (2)]",
        "tags=[[[[]]]]",
        "tags=[1 2]",
        "options={'k': 'v'",
        "city = 'Paris' , days = 3",
        "city\n=\n'Paris'",
        "\x0bcity='Paris'",
        "_x1=None, X=true",
        "é=1",
    ):
        replies.append(args(text))
    replies += _after_reasoning(start, end, plain, plain)
    texts = [o.text for o in outputs(template) if o.calls]
    return list(dict.fromkeys([*texts, *replies]))


# Values of the weather tool's parameters a tagged call may hold (TOOLS in autoparser/check/cases.py): strings with
# markup, layout and odd characters; numbers, booleans and null in and out of their types; containers (the engine's).
_TAGGED_VALUES: list[dict[str, object]] = [
    {"city": "Paris", "days": 3},
    {"city": "", "days": -1, "temp": 1.5, "metric": True, "note": None},
    {"city": " Paris ", "temp": -0.5e3, "metric": False, "note": 7, "unit": "celsius"},
    {"city": "a\nb", "days": "three"},
    {"city": "a\r\nb\n\n", "days": 1.5},
    {"city": "\nParis", "temp": "1e400"},
    {"city": "Paris\n", "metric": "yes"},
    {"city": "Paris\r", "note": "null"},
    {"city": "x < y > z", "remark": "<b>bold</b> & </b"},
    {"city": '\u00e9 \u2028 \x01 \\ "q"', "remark": "\x0b\x0c"},
    {"city": "Paris", "tags": ["a", "b"]},
    {"city": "Paris", "options": {"k": 1}},
    {"city": "Paris", "unknown": 1},
    {"remark": '{"a": 1}', "note": "[1]", "days": "03"},
    {"days": " 3 ", "temp": "NaN", "metric": "True"},
]


def _tagged_calls(template: str, analysis: TemplateAnalysis) -> list[str]:
    """Tagged calls (Qwen3-Coder, GLM, Seed-OSS) as the template renders them, with every kind of value, and varied:
    markers inside values, other layouts and whitespace, dropped or doubled end tags, text around, reasoning before."""
    fmt, args = analysis.tools.format, analysis.tools.arguments
    opener = core(fmt.per_call_start) or core(fmt.section_start)

    def rendered(*calls: tuple[str, dict[str, object]]) -> str:
        text = render_calls(template, calls) or ""
        return text[text.find(opener) :] if opener in text else text

    base = rendered(("get_weather", {"city": "Paris", "days": 3}))
    two = rendered(("get_weather", {"city": "Paris", "days": 3}), ("get", {"city": "x"}))
    function = analysis.tools.function
    written = (fmt.per_call_start, fmt.per_call_end, fmt.section_start, fmt.section_end, args.name_prefix)
    written += (args.name_suffix, args.value_prefix)
    markers = sorted({core(m) for m in (*written, args.value_suffix, function.close, function.name_prefix)} - {""})
    three = rendered(("get", {"city": "y"}), ("ping", {}), ("get", {"city": "z"}))
    replies = [base, two, rendered(("ping", {})), three]
    replies += [rendered(("get_weather", values)) for values in _TAGGED_VALUES]
    replies += [rendered(("get_weather", {"city": f"a {marker} b"})) for marker in markers]
    replies += [rendered(("no_such_tool", {"city": "x"})), rendered(("get_weather", {"city": "x", "city_code": "y"}))]
    replies += [
        f"{PLAIN_CONTENT}\n{base}",
        f"{PLAIN_CONTENT}\n\n{two}\n",
        f"  {base} \n\t",
        f"{base}\x0c",
        f"{base}\n{PLAIN_CONTENT}",
        f"{base}<|im_end|>",
        f"{base}{base}",
        f"{base}\n\n{base}",
        base.replace("\n", "\r\n"),
        base.replace("\n", ""),
        base.replace("\n", "\n\n"),
        base.replace("\n", " "),
        base.replace(">", "> "),
        base.replace("<", " <"),
        base.replace("=", "= "),
        base.replace("get_weather", "get_weather "),
        base.replace("get_weather", " get_weather"),
        base.replace("city", " city"),
        base.replace("city", "city "),
        base.replace("\x0b", ""),
        base.replace(core(args.value_suffix), "", 1),
        base.replace(core(args.value_suffix), core(args.value_suffix) * 2, 1),
        *(base.replace(m, "") for m in (core(fmt.per_call_end), core(fmt.section_end)) if m),
        *(base.replace(m, f"{m}x") for m in (core(fmt.per_call_end), core(fmt.section_end)) if m),
        *(base.replace(m, f"{m}{m}") for m in (core(fmt.per_call_end), core(fmt.section_end)) if m),
        base[:-1],
        f"{core(fmt.per_call_start)}{base}",
        f"{PLAIN_CONTENT} get_weather(city='Paris')\n{base}",
    ]
    for marker in markers:
        replies += [base.replace(marker, "", 1), base.replace(marker, f"{marker}\x0b", 1)]
    reasoning = analysis.reasoning
    replies += _after_reasoning(core(reasoning.start), core(reasoning.end), base, two)
    texts = [o.text for o in outputs(template) if o.calls]
    return list(dict.fromkeys(r for r in [*texts, *replies] if r))


def _after_reasoning(start: str, end: str, calls: str, more: str) -> list[str]:
    """Call replies ``calls`` (and ``more`` after content) behind a reasoning block, opened by the reply or the
    prompt: spaced, tight, empty, calls inside the block, the end marker twice (none where there is no block)."""
    if not end:
        return []
    return [
        reply
        for head in (start, "")
        for reply in (
            f"{head}\n{PLAIN_REASONING}\n{end}\n\n{calls}",
            f"{head}\n{PLAIN_REASONING}\n{end}\n\n{PLAIN_CONTENT}\n{more}",
            f"{head}{PLAIN_REASONING}{end}{calls}",
            f"{head}{end}{calls}",
            f"{head}\n{PLAIN_REASONING} {calls}\n{end}\n\n{calls}",
            f"{head}\n{PLAIN_REASONING}\n{end}\n{end}\n{calls}",
        )
    ]


def _replies(template: str, generated: GeneratedParser) -> tuple[list[str], list[str]]:
    """The call replies to compare on, and the places to cut them near."""
    calls = generated.regular.calls if generated.regular is not None else None
    if isinstance(calls, PythonicCalls):
        assert generated.layout is not None
        shape = _shape(template, generated.layout)
        near = [*shape.markers, *calls.openers, "]", "(", ")", "=", ",", "'", '"', "\\"]
        return _pythonic_calls(template, generated.layout), near
    if isinstance(calls, TaggedCalls):
        analysis = ChatTemplate.load(template).analysis
        near = [calls.opener, calls.closer, calls.section, calls.section_close, calls.key_prefix, calls.key_end]
        texts = _tagged_calls(template, analysis)
        if generated.prefill:  # (the prompt opened a reasoning block: the calls come after its end)
            texts += [f"{core(analysis.reasoning.end)}\n\n{text}" for text in texts]
        return texts, [m for m in (*near, calls.value_suffix, "\n", ">") if m]
    shape = _shape(template)
    return _calls(template), [*shape.markers, "{", "}", "[", "]", '"', "<|", ";", ","]


@pytest.mark.parametrize("template", sampled())
def test_the_short_path_reads_calls_as_the_engine_does(template: str) -> None:
    answered = taken = 0
    for shape, params in _shapes(template):
        generated = params._generated
        regular = generated.regular
        if regular is None or regular.calls is None:
            continue
        taken += 1
        engine = _engine(generated)
        texts, near = _replies(template, generated)
        for text in texts:
            for cut in _cuts(text, near):
                piece = text[:cut]
                fast = regular.read(generated.prefill, piece)
                if fast is None:
                    continue
                answered += int(bool(fast.tool_calls))
                assert _fields(fast) == _fields(parse_output(engine, piece)), f"{shape}: {piece!r}"
                assert _fields(parse_output(generated, piece)) == _fields(fast)
    if taken:
        assert answered, "the short path never read a call"


PLAIN_CALLS = {
    "meta-llama-Llama-3.1-8B-Instruct": {},
    "meta-llama-Llama-3.2-3B-Instruct": {},
    "meta-llama-Llama-3.3-70B-Instruct": {},
    "Qwen-Qwen2.5-7B-Instruct": {},
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {},
    "Qwen-Qwen3-0.6B": {"enable_thinking": True},
    "hfjs-HuggingFaceTB-SmolLM3-3B": {},
    "mistralai-Mistral-Nemo-Instruct-2407": {},
    "deepseek-ai-DeepSeek-V3.1": {},
}


@pytest.mark.parametrize("template", sorted(PLAIN_CALLS))
def test_the_plain_call_shapes_take_the_short_path(template: str) -> None:
    """One call, two, content before, a reasoning block before: read without the engine, as the engine reads them."""
    tmpl = ChatTemplate.load(template)
    tools = request_tools(template)
    params = tmpl.apply([{"role": "user", "content": "hi"}], tools=tools, **PLAIN_CALLS[template])
    generated = params._generated
    assert generated.regular is not None and generated.regular.calls is not None
    shape = _shape(template)
    name = (tools or [])[0]["function"]["name"]
    obj = f'{{"name": "{name}", "{shape.args_key}": {json.dumps(ARGS)}}}'
    replies = {1: [shape.calls(obj), f"{PLAIN_CONTENT}\n{shape.calls(obj)}"], 2: [shape.calls(obj, obj, between="\n")]}
    if shape.bare:  # (Llama 3: after its special token; several calls separated by `;`)
        replies[1].append(f"<|python_tag|>{shape.calls(obj)}")
        replies[2].append(shape.calls(obj, obj, between="; "))
    if params.enable_thinking and shape.end:
        head = "" if generated.prefill else shape.start
        replies[1].append(f"{head}\n{PLAIN_REASONING}\n{shape.end}\n\n{PLAIN_CONTENT}\n{shape.calls(obj)}")
    for count, texts in replies.items():
        for reply in texts:
            message = generated.regular.read(generated.prefill, reply)
            assert message is not None, reply
            assert [json.loads(c.arguments) for c in message.tool_calls] == [ARGS] * count
            assert _fields(message) == _fields(parse_output(_engine(generated), reply))


@pytest.mark.parametrize("template", ["LFM2-8B-A1B", "LFM2.5-Instruct", "hfjs-LiquidAI-LFM2.5-VL-450M"])
def test_the_plain_pythonic_lists_take_the_short_path(template: str) -> None:
    """LFM2's call lists, in its markers or bare, one call or two, content or reasoning before them: read without the
    engine, to the arguments JSON the engine writes."""
    tools = request_tools(template)
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=tools)
    generated = params._generated
    regular = generated.regular
    assert regular is not None and isinstance(regular.calls, PythonicCalls)
    call = "get_weather(city='Paris', days=3, metric=False, note=None, tags=['a', \"b\"], options={'k': [1.5]})"
    expected = {"city": "Paris", "days": 3, "metric": False, "note": None, "tags": ["a", "b"], "options": {"k": [1.5]}}
    replies = {
        1: [
            f"<|tool_call_start|>[{call}]<|tool_call_end|>",
            f"[{call}]",
            f"{PLAIN_CONTENT}<|tool_call_start|>[{call}]<|tool_call_end|>",
            f"<think>\n{PLAIN_REASONING}\n</think>\n\n{PLAIN_CONTENT}\n<|tool_call_start|>[{call}]<|tool_call_end|>",
        ],
        2: [f"<|tool_call_start|>[{call}, {call}]<|tool_call_end|>"],
    }
    for count, texts in replies.items():
        for reply in texts:
            message = regular.read(generated.prefill, reply)
            assert message is not None, reply
            assert [json.loads(c.arguments) for c in message.tool_calls] == [expected] * count
            assert _fields(message) == _fields(parse_output(_engine(generated), reply))


@pytest.mark.parametrize("template", ["openbmb-MiniCPM3-4B", "google-ai-edge-LiteRT-LM-Gemma3n", "llamacpp-Kimi-K3"])
def test_other_call_shapes_keep_the_engine(template: str) -> None:
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=request_tools(template))
    regular = params._generated.regular
    assert regular is None or regular.calls is None


def test_a_request_without_tools_reads_no_calls() -> None:
    params = ChatTemplate.load("Qwen-Qwen2.5-7B-Instruct").apply([{"role": "user", "content": "hi"}])
    regular = params._generated.regular
    assert regular is not None and regular.calls is None


@pytest.mark.parametrize("template", sampled())
def test_damaged_call_replies_read_as_the_engine_reads_them(template: str) -> None:
    """Wherever the short path still answers a damaged reply, it answers as the engine does. (Found this way: spaces
    with a ``\x0b`` before a call's marker, which the engine's space() takes, and a bare array opened by ``[\t`` after
    text, which the engine reads as text and a bare call.)"""
    rng = Random(f"damage:{template}")
    mutants = 60 if ALL_TEMPLATES else 25
    for shape, params in _shapes(template):
        generated = params._generated
        regular = generated.regular
        if regular is None or regular.calls is None:
            continue
        engine = _engine(generated)
        for text in _replies(template, generated)[0]:
            for _ in range(mutants):
                piece = _damaged(text, rng)
                fast = regular.read(generated.prefill, piece)
                if fast is not None:
                    assert _fields(fast) == _fields(parse_output(engine, piece)), f"{shape}: {piece!r}"


TAGGED_CALLS = [
    "Qwen3-Coder",
    "Qwen3.5-4B",
    "GLM-4.6",
    "GLM-4.7-Flash",
    "GLM-5.2",
    "ByteDance-Seed-OSS",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "stepfun-ai-Step-3.5-Flash",
    "MiniMax-M2",
]


@pytest.mark.parametrize("template", TAGGED_CALLS)
def test_the_plain_tagged_calls_take_the_short_path(template: str) -> None:
    """Tagged calls as the template writes them — one call, two, content or reasoning before them — read without the
    engine, to the engine's arguments (a string raw, numbers, booleans and null typed by the schema)."""
    tools = request_tools(template)
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=tools)
    generated = params._generated
    regular = generated.regular
    assert regular is not None and isinstance(regular.calls, TaggedCalls)
    analysis = ChatTemplate.load(template).analysis
    opener = core(analysis.tools.format.per_call_start) or core(analysis.tools.format.section_start)
    values = {"city": "Paris, France", "days": 3, "temp": -1.5, "metric": True, "note": None, "remark": "a <b> c"}

    def rendered(*calls: tuple[str, dict[str, object]]) -> str:
        text = render_calls(template, calls) or ""
        return text[text.find(opener) :]

    reasoning = analysis.reasoning
    closed = f"{core(reasoning.end)}\n\n" if generated.prefill else ""  # (the prompt opened a reasoning block)
    one, two = rendered(("get_weather", values)), rendered(("get_weather", values), ("get_weather", values))
    replies = {1: [one, f"{PLAIN_CONTENT}\n{one}", f"{PLAIN_CONTENT}\n\n{one}\n"], 2: [two]}
    replies = {count: [closed + reply for reply in texts] for count, texts in replies.items()}
    if core(reasoning.end):
        head = "" if generated.prefill else core(reasoning.start)
        replies[1].append(f"{head}\n{PLAIN_REASONING}\n{core(reasoning.end)}\n\n{PLAIN_CONTENT}\n{one}")
    for count, texts in replies.items():
        for reply in texts:
            message = regular.read(generated.prefill, reply)
            assert message is not None, reply
            assert [json.loads(c.arguments) for c in message.tool_calls] == [values] * count
            assert _fields(message) == _fields(parse_output(_engine(generated), reply))
