"""The short path for call replies (parser/regular_calls.py, through parser/regular.py) reads exactly what the engine
reads, or leaves the reply to it.

On every bundled template whose analysis takes it (the seeded sample outside CI), in the request shapes of
test_regular_replies.py: the template's own outputs, and calls built from its own markers — one and two calls,
content or a reasoning block before them, odd whitespace, a duplicate key (at the top and deeper), arguments written
as a string, NaN, a raw control character, an unknown tool, members in another order or one more, text or the end of
turn after the calls, markers inside argument strings — are parsed whole and cut around every marker and at a
seeded tenth of the other positions. Wherever the short path answers, its message equals the engine's field by field
(generated ids by shape: two parses never share them), warnings included; the plain shapes must take it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.model import ToolFormatMode
from autoparser.parser.markers import core
from autoparser.reading.streaming import parse_output

from ..support.outputs import outputs, request_tools
from ..support.sample import sampled
from .test_regular_replies import PLAIN_CONTENT, PLAIN_REASONING, _cuts, _engine, _fields, _shapes

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

    def calls(self, *objects: str, between: str = "") -> str:
        """Calls written as objects ``{"name": ..., "arguments": ...}`` (in markup, where the template names the
        tool there: objects that are not such JSON are written as they are, in place of the name and arguments)."""
        if self.name_suffix:
            return f"{self.section}{between.join(self._named(o) for o in objects)}{self.section_end}"
        if self.section:
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


def _shape(template: str) -> _Shape:
    analysis = ChatTemplate.load(template).analysis
    fmt = analysis.tools.format
    reasoning = analysis.reasoning
    named = fmt.mode is ToolFormatMode.TAG_WITH_JSON
    return _Shape(
        fmt.per_call_start,
        fmt.per_call_end,
        core(fmt.section_start),
        core(reasoning.start),
        core(reasoning.end),
        core(fmt.section_end) if named else "",
        core(analysis.tools.function.name_suffix) if named else "",
    )


def _calls(template: str) -> list[str]:
    """Replies with calls in the template's markers, plain and varied."""
    shape = _shape(template)
    start, end = shape.start, shape.end
    tools = request_tools(template) or []
    name = tools[0]["function"]["name"]
    args = json.dumps(ARGS)
    obj = f'{{"name": "{name}", "arguments": {args}}}'
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
    elif shape.section:
        replies += [f"{shape.section} [ {obj} , {obj} ] ", f"{shape.section}\n[\n{obj}\n]", f"{shape.section}[]"]
        replies += [f"{shape.section}{obj}", f"{shape.section}[{obj}]]", f"{shape.section}[{obj},]"]
    else:
        replies += [f"{core(shape.opener)}{obj}{core(shape.closer)}", f"{core(shape.opener)}\x0b{obj}{shape.closer}"]
    if end:
        for head in (start, ""):
            replies += [
                f"{head}\n{PLAIN_REASONING}\n{end}\n\n{plain}",
                f"{head}\n{PLAIN_REASONING}\n{end}\n\n{PLAIN_CONTENT}\n{shape.calls(obj, obj)}",
                f"{head}{PLAIN_REASONING}{end}{plain}",
                f"{head}{end}{plain}",
                f"{head}\n{PLAIN_REASONING} {plain}\n{end}\n\n{plain}",
                f"{head}\n{PLAIN_REASONING}\n{end}\n{end}\n{plain}",
            ]
    texts = [o.text for o in outputs(template) if o.calls]
    return list(dict.fromkeys([*texts, *replies]))


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
        near = [*_shape(template).markers, "{", "}", "[", "]", '"']
        for text in _calls(template):
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
    obj = f'{{"name": "{name}", "arguments": {json.dumps(ARGS)}}}'
    replies = {1: [shape.calls(obj), f"{PLAIN_CONTENT}\n{shape.calls(obj)}"], 2: [shape.calls(obj, obj, between="\n")]}
    if params.enable_thinking and shape.end:
        head = "" if generated.prefill else shape.start
        replies[1].append(f"{head}\n{PLAIN_REASONING}\n{shape.end}\n\n{PLAIN_CONTENT}\n{shape.calls(obj)}")
    for count, texts in replies.items():
        for reply in texts:
            message = generated.regular.read(generated.prefill, reply)
            assert message is not None, reply
            assert [json.loads(c.arguments) for c in message.tool_calls] == [ARGS] * count
            assert _fields(message) == _fields(parse_output(_engine(generated), reply))


@pytest.mark.parametrize("template", ["meta-llama-Llama-3.1-8B-Instruct", "Qwen3-Coder", "LFM2.5-Instruct"])
def test_other_call_shapes_keep_the_engine(template: str) -> None:
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=request_tools(template))
    regular = params._generated.regular
    assert regular is None or regular.calls is None


def test_a_request_without_tools_reads_no_calls() -> None:
    params = ChatTemplate.load("Qwen-Qwen2.5-7B-Instruct").apply([{"role": "user", "content": "hi"}])
    regular = params._generated.regular
    assert regular is not None and regular.calls is None
