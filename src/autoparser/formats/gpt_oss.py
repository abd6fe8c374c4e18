"""GPT-OSS "harmony" output: a sequence of messages whose header, not a marker, decides what the text is.

A message is ``<|channel|>CHANNEL<|message|>TEXT<|end|>``; later ones are preceded by ``<|start|>assistant``
(the generation prompt supplies the first). The header may name a recipient, ``to=NAME``, either in the role part
(``<|start|>assistant to=functions.f<|channel|>commentary``) or after the channel, and a content type
(``<|constrain|>json``, or just ``json`` as the template renders it). So:

* recipient ``functions.NAME`` of a known tool: a tool call whose message is the JSON arguments, ended by
  ``<|call|>`` (whatever the channel, even ``analysis``);
* recipient ``functions.X`` of a tool the request does not declare: a call too, marked as undeclared (a warning,
  or its text kept as content with ``undeclared_tools="content"``); with tools disabled, or arguments that are not
  a JSON object, the header is reported as UNPARSED and the message text stays content;
* any other recipient (the built-in ``python``/``browser``/``container`` tools, ``assistant``): the message is
  addressed to something the client cannot run, so it is left out of the message, as the reference does, with a
  warning that carries its whole text (nothing is lost silently);
* no recipient: channel ``analysis`` is reasoning, every other channel (``final``, ``commentary`` preambles) is
  content. With ``reasoning_format`` none the analysis message stays in the content *with* its header and end
  marker (the reference's inline reasoning; the separators between messages are dropped);
* a header abandoned before ``<|message|>`` (``<|channel|>commentary to=assistant<|channel|>final...``) is
  dropped.

Everything else (text outside messages, markers that start nothing) is content, so parsing never fails. The
parser reads the output alone: the ``<|start|>assistant`` of the generation prompt carries nothing the parser
needs, and a role recipient at the very start of the output (`` to=functions.f<|channel|>...``) is accepted at
any message boundary.

The grammar (:func:`grammar`) is strict where the parser is lenient: a call is ``[<|channel|>commentary|analysis]
to=functions.NAME[<|channel|>...][ <|constrain|>json| json]<|message|>{arguments}[<|call|>]`` for a tool of the
request, its arguments valid under the tool's schema.
"""

from __future__ import annotations

import dataclasses
import json

from .. import peg as p
from ..analysis.model import TemplateAnalysis
from ..grammar.spec import FormatGrammar, Trigger
from ..parser import tags
from ..parser.assemble import GeneratedParser
from ..parser.calls import undeclared
from ..parser.calls.resync import JSON, recover_call
from ..parser.request import ParseRequest

__all__ = ["build_grammar", "build_parser"]

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
CALL = "<|call|>"
RETURN = "<|return|>"
END_MARKERS = (END, CALL, RETURN)
FUNCTIONS = "functions."

_WORD = "[a-zA-Z0-9_-]"  # channel names and content types
_HARMONY_CHANNELS = ("analysis", "commentary", "final")
_CONTENT_TYPES = ("json", "code", "text")
_RECIPIENT = "[^ \t\r\n<]"  # a recipient runs up to whitespace or the next special token


def _recipient(target: p.Parser) -> p.Parser:
    return p.space() + "to=" + target


def _content_type() -> p.Parser:
    """`` <|constrain|>json`` as models write it, or `` json`` as the template renders it."""
    known = p.choice(*(p.literal(t) for t in _CONTENT_TYPES)) + p.negate(p.chars(_WORD))
    kind = p.choice(known, p.tag(tags.STRAY, p.chars(_WORD)))  # another word: read, but reported
    return p.optional(p.space() + p.optional(p.literal(CONSTRAIN)) + kind)


def _header(recipient: p.Parser | None, channel: p.Parser) -> p.Parser:
    """``[recipient] <|channel|>CHANNEL [recipient] [content type] <|message|>``; with a ``recipient`` parser it
    must appear once (before or after the channel), with None there is none."""
    channel_part = p.literal(CHANNEL) + channel
    addressed = channel_part if recipient is None else p.choice(recipient + channel_part, channel_part + recipient)
    return addressed + _content_type() + p.space() + MESSAGE


def _end_of_message() -> p.Parser:
    """The message's end marker, or the end of the output; a model that skips the marker and starts the next
    message also ends it."""
    return p.choice(*END_MARKERS, p.peek(p.choice(START, CHANNEL)), p.end())


def _channel() -> p.Parser:
    """A channel name: one harmony defines, or any other word — read, but reported (STRAY) rather than lost."""
    known = p.choice(*(p.literal(c) for c in _HARMONY_CHANNELS)) + p.negate(p.chars(_WORD))
    return p.choice(known, p.tag(tags.STRAY, p.chars(_WORD)))


def _tool_call(request: ParseRequest) -> p.Parser:
    """A call of a known tool; its message must be a JSON object. The header, up to the object's opening brace,
    is atomic so the name is reported once it cannot turn out to be a longer name or a message that is not a
    call; the TOOL node spans the end marker, so the call counts as complete only when ``<|call|>`` (or the end
    of the output) is seen."""
    boundary = p.negate(p.chars(_RECIPIENT))
    names = sorted((t.name for t in request.tools), key=len, reverse=True)
    declared = p.tag(tags.TOOL_NAME, p.choice(*(p.literal(n) + boundary for n in names)))
    # `functions.X` of a tool the request does not declare: read as well, and marked (see parser/calls/undeclared.py).
    other = undeclared.not_declared(request.tools, boundary) + p.tag(tags.TOOL_NAME, p.chars(_RECIPIENT))
    other += p.negate(p.end())  # (a name the output ends in may be cut off)
    name = p.choice(declared, *undeclared.alternative(request, other))
    header = _header(_recipient(FUNCTIONS + name), _channel())
    args = p.tag(tags.TOOL_ARGS, p.json_object(canonical=True))
    opening = p.atomic(header + p.space() + p.peek("{")) + p.commit()  # kept as it stood if the rest breaks
    # (the rest of a broken call, up to its end marker or the next message, is left out with a warning)
    call = p.tag(tags.TOOL, opening + args + p.space() + _end_of_message())
    return recover_call(call, (*END_MARKERS, START, CHANNEL), balanced=JSON, closers=(CALL,))


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The harmony parser: ``item* end`` where an item is a message, a separator, or plain text."""
    del analysis  # the format is fixed; nothing in the analysis changes it
    channel = _channel()
    body_stops = [*END_MARKERS, START, CHANNEL]
    body = p.until_one_of(body_stops)
    end_marker = p.choice(*END_MARKERS)

    messages: list[p.Parser] = []
    if request.tools_enabled:
        messages.append(_tool_call(request))
    # A function the request does not offer (or a call whose arguments are not JSON): visible, with a warning.
    to_function = _recipient(FUNCTIONS + p.chars(_RECIPIENT))
    messages.append(p.atomic(p.tag(tags.UNPARSED, _header(to_function, channel))))
    # Messages to built-in tools or other recipients: nothing the client can run. Left out of the message (as the
    # reference does), but not silently: a warning carries the whole message.
    other = _recipient(p.negate(FUNCTIONS) + p.chars(_RECIPIENT))
    messages.append(p.tag(tags.DROPPED, _header(other, channel) + body + p.optional(end_marker)))
    # A header given up before <|message|>: the next header replaces it.
    anyone = p.optional(_recipient(p.chars(_RECIPIENT)))
    abandoned = anyone + CHANNEL + channel + anyone + _content_type() + p.space() + p.peek(p.choice(START, CHANNEL))
    messages.append(abandoned)
    analysis_channel = p.literal("analysis") + p.negate(p.chars(_WORD))
    if request.reasoning_format != "none":
        messages.append(_header(None, analysis_channel) + p.tag(tags.REASONING, body) + p.optional(end_marker))
    else:
        # Inline reasoning keeps its markup, like <think>...</think> in other formats.
        messages.append(
            p.atomic(p.tag(tags.CONTENT, _header(None, analysis_channel)))
            + p.tag(tags.CONTENT, body)
            + p.optional(p.atomic(p.tag(tags.CONTENT, end_marker)))
        )
    messages.append(_header(None, channel) + p.tag(tags.CONTENT, body) + p.optional(end_marker))

    items = [
        p.literal(START) + "assistant",  # message separator
        p.choice(*messages),
        # A call header cut off (or broken) before <|message|>: still worth a warning.
        p.tag(tags.UNPARSED, p.choice(to_function + p.optional(CHANNEL + channel), CHANNEL + channel + to_function)),
        end_marker,  # a stray end marker is markup, not text
        # A marker that starts no message is text, with the text after it (one item: not re-tried at every word).
        p.tag(tags.CONTENT, p.choice(START, CHANNEL) + p.until_one_of(body_stops)),
        p.negate(p.end()) + p.tag(tags.CONTENT, p.until_one_of(body_stops)),
    ]
    parser = (p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(parser, "", (f"to={FUNCTIONS}",), request, "none")


# --- grammar -------------------------------------------------------------------------------------------------------

# Channels a call may name its recipient in (commentary is canonical) and channels of messages a model may write
# before a call or an answer: the same two, which is why the grammar shares the ``<|channel|>CHANNEL`` prefix.
_CHANNELS = ("commentary", "analysis")
_TO_FUNCTIONS = f" to={FUNCTIONS}"

# What starts a call: the recipient, after the role (`` to=``) or after a tool channel. The regexes are matched at
# the start of the output (engines that search the output alone) or right after ``<|start|>assistant`` (later
# messages, or engines whose buffer includes the generation prompt); either way the grammar starts at the recipient
# or channel. ``<|start|>`` is a special token that only opens a message, so they cannot fire inside one.
_CALL_OPENING = r"(?:<\|channel\|>(?:commentary|analysis))? to=functions\."
TRIGGERS = (
    Trigger("pattern", rf"^{_CALL_OPENING}"),
    Trigger("pattern", rf"<\|start\|>assistant({_CALL_OPENING})"),
)
# The reasoning block is the analysis message; the analysis's tags (``<|message|>``/``<|end|>``) would also cover
# final answers and call arguments.
THINKING_TAGS = (f"{CHANNEL}analysis{MESSAGE}", END)
PRESERVED_TOKENS = (START, CHANNEL, CONSTRAIN, MESSAGE, END, CALL, RETURN)

# Writing the grammar for llguidance: it lexes greedily, so two paths must not start with lexemes of which one
# ends (``<|channel|>``) while the other runs on (``<|channel|>commentary<|message|>...``, which GBNF import makes
# one lexeme when a rule holds only terminals). Every choice below therefore puts the shared prefix first and
# branches where the first characters differ: after ``<|channel|>``, after the channel name, after ``functions.``.


def _json_content_type() -> p.Parser:
    """`` <|constrain|>json`` (harmony, the space optional) or `` json`` (the template's rendering), or nothing."""
    return p.optional(p.choice(p.optional(p.literal(" ")) + CONSTRAIN + "json", p.literal(" json")))


def _tools(request: ParseRequest) -> tuple[p.Parser, p.Parser]:
    """The rest of a call message after ``to=functions.``: with the recipient after the role
    (``NAME<|channel|>commentary...``) and after the channel (``NAME...``). Then the content type and the JSON
    arguments, which follow the tool's parameter schema."""
    by_role: list[p.Parser] = []
    by_channel: list[p.Parser] = []
    seen: set[str] = set()
    for tool in request.tools:
        if tool.name in seen:  # a repeated name would define its rules twice
            continue
        seen.add(tool.name)
        name = tool.name
        arguments = p.schema(p.json(), f"tool-{name}-args", tool.parameters or {"type": "object"})
        body = _json_content_type() + MESSAGE + p.space() + arguments
        by_role.append(p.rule(f"tool-{name}", p.literal(name + CHANNEL) + p.choice(*_CHANNELS) + body))
        by_channel.append(p.rule(f"tool-{name}-after-channel", p.literal(name) + body))
    return p.choice(*by_role), p.choice(*by_channel)


def _preamble(rule: str) -> p.Parser:
    """The rest of an analysis/commentary message after its channel name, the next message's
    ``<|start|>assistant``, and then ``rule`` again (whatever may follow the message)."""
    return MESSAGE + p.until(END) + END + START + "assistant" + p.ref(rule)


def _calls(request: ParseRequest, *, preambles: bool) -> p.Parser:
    """The call message(s), after preamble messages when ``preambles`` (tool_choice required). A call usually
    ends the output (``<|call|>`` is a stop token); parallel calls follow each other as
    ``<|call|><|start|>assistant...``."""
    role_tools, channel_tools = _tools(request)
    by_role = p.literal(_TO_FUNCTIONS) + role_tools
    by_channel = p.literal(_TO_FUNCTIONS) + channel_tools
    call = p.rule("tool-call-message", p.choice(by_role, CHANNEL + p.choice(*_CHANNELS) + by_channel))
    first = call
    if preambles:  # after <|channel|>CHANNEL: a preamble's <|message|> or a call's recipient
        turn = p.choice(by_role, CHANNEL + p.choice(*_CHANNELS) + p.choice(_preamble("harmony-turn"), by_channel))
        first = p.rule("harmony-turn", turn)
    tail = p.zero_or_more(p.literal(CALL + START + "assistant") + call) if request.parallel_tool_calls else p.eps()
    return first + tail + p.optional(p.literal(CALL))


def _auto(request: ParseRequest) -> p.Parser:
    """tool_choice auto over the whole output: analysis/commentary messages, then the call message(s) (as for
    required) or the final answer, whose text runs to ``<|return|>`` or ``<|end|>``."""
    role_tools, channel_tools = _tools(request)
    by_role = p.literal(_TO_FUNCTIONS) + role_tools
    by_channel = p.literal(_TO_FUNCTIONS) + channel_tools
    call = p.rule("tool-call-message", p.choice(by_role, CHANNEL + p.choice(*_CHANNELS) + by_channel))
    more = p.zero_or_more(p.literal(CALL + START + "assistant") + call) if request.parallel_tool_calls else p.eps()
    tail = more + p.optional(p.literal(CALL))
    final = p.literal("final") + MESSAGE + p.until_one_of([RETURN, END]) + p.optional(p.choice(RETURN, END))
    after_channel = p.choice(p.choice(*_CHANNELS) + p.choice(_preamble("harmony-auto"), by_channel + tail), final)
    return p.rule("harmony-auto", p.choice(by_role + tail, CHANNEL + after_channel))


def _response(json_schema: str) -> p.Parser:
    """A json_schema answer: preamble messages, then a final message whose text is the JSON value."""
    value = p.schema(p.json(), "response", json.loads(json_schema))
    final = p.literal("final") + _json_content_type() + MESSAGE + p.space() + value
    answer = p.rule("harmony-answer", CHANNEL + p.choice(p.choice(*_CHANNELS) + _preamble("harmony-answer"), final))
    return answer + p.optional(p.choice(RETURN, END))


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """Grammar parts for harmony output (see the module docstring): the lazy section is the call message(s),
    triggered by the recipient; tool_choice required allows analysis/commentary messages before the call."""
    del analysis  # the format is fixed
    common = FormatGrammar(preserved_tokens=PRESERVED_TOKENS, thinking_tags=THINKING_TAGS)
    response = _response(request.json_schema) if request.json_schema is not None else None
    if not request.tools_enabled:
        return dataclasses.replace(common, response=response)
    return dataclasses.replace(
        common,
        section=_calls(request, preambles=False),
        triggers=TRIGGERS,
        required=_calls(request, preambles=True),
        auto=_auto(request),
        response=response,
    )
