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

import pytest

from autoparser import ChatTemplate
from autoparser.parser.markers import core
from autoparser.reading.streaming import parse_output

from ..support.outputs import outputs, request_tools
from ..support.sample import sampled
from .test_regular_replies import PLAIN_CONTENT, PLAIN_REASONING, _cuts, _engine, _fields, _shapes

ARGS = {"city": "Paris", "days": 3, "hourly": False, "tags": ["a", "b"], "where": {"lat": 48.8}}


def _markers(template: str) -> tuple[str, str, str, str]:
    """The call opener and closer as the template writes them, and the reasoning markers' cores."""
    analysis = ChatTemplate.load(template).analysis
    fmt = analysis.tools.format
    return fmt.per_call_start, fmt.per_call_end, core(analysis.reasoning.start), core(analysis.reasoning.end)


def _calls(template: str) -> list[str]:
    """Replies with calls in the template's markers, plain and varied."""
    opener, closer, start, end = _markers(template)
    tools = request_tools(template) or []
    name = tools[0]["function"]["name"]
    args = json.dumps(ARGS)

    def call(body: str, before: str = opener, after: str = closer) -> str:
        return f"{before}{body}{after}"

    plain = call(f'{{"name": "{name}", "arguments": {args}}}')
    replies = [
        plain,
        f"{plain}\n{plain}",
        plain + plain,
        f"{PLAIN_CONTENT}\n{plain}",
        f"{PLAIN_CONTENT}\n\n{plain}\n{plain}\n",
        f"  {plain} \n\t",
        call(f'{{"name":"{name}","arguments":{{}}}}', core(opener), core(closer)),
        call(f' \r\n{{ "name" : "{name}" ,\n "arguments" :\t{{ "a" : [ 1 , 2 ] }} }} \n ', core(opener), core(closer)),
        call(f'{{"name": "{name}", "arguments": {args}}}', core(opener) + "\x0b", core(closer)),
        f"{plain}\x0c",
        call(f'{{"name": "{name}", "arguments": {{"a": 1, "a": 2}}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": {{"b": 1, "b": 2}}}}}}'),
        call(f'{{"name": "{name}", "arguments": {json.dumps(args)}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": NaN}}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": "x\ny"}}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": 01}}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": "\\u00e9\\ud800 é", "b": -0.5E+3, "c": null}}}}'),
        call(f'{{"name": "no_such_tool", "arguments": {args}}}'),
        call(f'{{"name": "{name}x", "arguments": {args}}}'),
        call(f'{{"name": "{name[:1]}\\u{ord(name[1]):04x}{name[2:]}", "arguments": {args}}}'),
        call(f'{{"arguments": {args}, "name": "{name}"}}'),
        call(f'{{"name": "{name}", "arguments": {args}, "id": "call_1"}}'),
        call(f'{{"name": "{name}", "parameters": {args}}}'),
        call(f'{{"name": "{name}", "arguments": {{"a": "{core(closer)} {core(opener)} {end or "x"}"}}}}'),
        f"{plain}\n{PLAIN_CONTENT}",
        f"{plain}<|im_end|>",
        f"{plain}</s>",
        f"{PLAIN_CONTENT} {{x}}\n{plain}",
        f"{PLAIN_CONTENT} {name}(city='Paris')\n{plain}",
    ]
    if end:
        for head in (start, ""):
            replies += [
                f"{head}\n{PLAIN_REASONING}\n{end}\n\n{plain}",
                f"{head}\n{PLAIN_REASONING}\n{end}\n\n{PLAIN_CONTENT}\n{plain}\n{plain}",
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
        opener, closer, start, end = _markers(template)
        near = [m for m in (core(opener), core(closer), start, end, "{", "}", '"') if m]
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
}


@pytest.mark.parametrize("template", sorted(PLAIN_CALLS))
def test_the_plain_call_shapes_take_the_short_path(template: str) -> None:
    """One call, two, content before, a reasoning block before: read without the engine, as the engine reads them."""
    tmpl = ChatTemplate.load(template)
    tools = request_tools(template)
    params = tmpl.apply([{"role": "user", "content": "hi"}], tools=tools, **PLAIN_CALLS[template])
    generated = params._generated
    assert generated.regular is not None and generated.regular.calls is not None
    opener, closer, start, end = _markers(template)
    name = (tools or [])[0]["function"]["name"]
    plain = f'{opener}{{"name": "{name}", "arguments": {json.dumps(ARGS)}}}{closer}'
    replies = [plain, f"{plain}\n{plain}", f"{PLAIN_CONTENT}\n{plain}"]
    if params.enable_thinking and end:
        head = "" if generated.prefill else start
        replies.append(f"{head}\n{PLAIN_REASONING}\n{end}\n\n{PLAIN_CONTENT}\n{plain}")
    for reply in replies:
        message = generated.regular.read(generated.prefill, reply)
        assert message is not None, reply
        assert [json.loads(c.arguments) for c in message.tool_calls] == [ARGS] * reply.count(core(opener))
        assert _fields(message) == _fields(parse_output(_engine(generated), reply))


@pytest.mark.parametrize(
    "template", ["mistralai-Mistral-Nemo-Instruct-2407", "meta-llama-Llama-3.1-8B-Instruct", "Qwen3-Coder"]
)
def test_other_call_shapes_keep_the_engine(template: str) -> None:
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=request_tools(template))
    regular = params._generated.regular
    assert regular is None or regular.calls is None


def test_a_request_without_tools_reads_no_calls() -> None:
    params = ChatTemplate.load("Qwen-Qwen2.5-7B-Instruct").apply([{"role": "user", "content": "hi"}])
    regular = params._generated.regular
    assert regular is not None and regular.calls is None
