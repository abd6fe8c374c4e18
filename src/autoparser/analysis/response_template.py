"""A Hugging Face transformers ``response_template`` built from a template analysis.

transformers (5.x) parses a chat model's reply with a declarative *response template* (``tokenizer.
response_template``, read by ``tokenizer.parse_response`` and ``tokenizer.get_response_parser``): named *fields*
that are regions of the output, each opened and closed by a literal or a regular expression, whose text is read by
a content parser (``text``, ``json``, ``xml-inline``) and reshaped by a ``transform`` that may use the named groups
of the opening pattern. At most one field has no opener: it collects whatever lies outside the others. A
``start_anchor`` cuts the prompt (passed as ``prefix``) down to the part of the assistant turn the template already
wrote, so a reasoning block the generation prompt opened is seen.

This module writes such a template from the analysed markers of a *generic* format:

* ``reasoning_content``: the reasoning block, at the start of the reply only (``\\A``), as the generated parser
  reads it; a block the generation prompt opened is reached through the anchor.
* ``tool_calls``: JSON-native calls (per call, a section of calls, a JSON array, or bare objects), name + JSON
  arguments in markup, or name + tagged arguments (``xml-inline``), with the call id where the opening markup
  holds it. Pythonic calls have no content parser in transformers.
* ``content``: everything else. Markup that is neither content nor a call's own opener (content wrappers such as
  ``<|START_RESPONSE|>``, the section markers around calls that have their own opener) and trailing whitespace end
  a piece of it without becoming part of it; the pieces are joined.

transformers streams with partial matches of each delimiter, and a delimiter that can already match completely is
taken at once: so no delimiter here ends in an optional part (``</invoke>(</minimax:tool_call>)?`` would be taken
before the section end arrives), and markers that may or may not follow a call are left to the content field.

Dedicated formats (docs/formats.md) and generic shapes the declarative format cannot express raise
:class:`ResponseTemplateError` with the reason. Only patterns are produced here: the ``regex`` module that
transformers compiles them with is not a dependency of autoparser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ResponseTemplateError
from .modes import CallIdPosition, ContentMode, ReasoningMode, ToolFormatMode

if TYPE_CHECKING:
    from .model import ReasoningAnalysis, TemplateAnalysis, ToolsAnalysis

__all__ = ["build_response_template"]

# Why a dedicated format has no response template (docs/formats.md describes each format).
_DEDICATED = {
    "gpt-oss": "a message's channel (analysis, final, commentary) and recipient header decide whether its text is "
    "reasoning, content or a call; a response template's regions are chosen by their opening marker alone",
    "functionary-v3.2": "every block starts with a bare recipient line (`>>>all` is content, `>>>NAME` a call): "
    "there is no marker that tells text from a call",
    "kimi-k2": "the call id `functions.NAME:INDEX` embeds the name and a running index and the section markers are "
    "optional; the dedicated parser handles both",
    "mirothinker": "the template cannot render a tool call, so the analysis learns none of the `<use_mcp_tool>` "
    "layout; only the dedicated format module states it",
    "lfm2": 'arguments are Python keyword arguments (`[f(a="v", b=1)]`); transformers has no content parser for '
    "Python call syntax",
    "lfm2.5": 'calls are bare Python call lists (`[f(a="v")]`) without markers; transformers has no content '
    "parser for Python call syntax",
    "minimax-m3": "arguments are nested XML elements typed only by the tool's schema, which transformers' "
    "xml-inline parser (one flat level of tags) cannot read",
    "deepseek-dsml": 'each parameter carries `string="true"` or `string="false"` that decides whether its value '
    "is raw text or JSON; transformers' xml-inline parser cannot switch on it",
    "gemma4": "arguments use Gemma's own dict syntax (bare keys, `<|\"|>` quotes) that only a dedicated parser "
    "reads exactly (transformers ships its own approximate template for the gemma4 model type)",
}

_NAME = r"[\w.:-]+"  # a tool name: what the generated parser accepts, plus any Unicode word character
_ID = r"[^\s<>\[\]{}\"']*"  # a call id is a short token: it never runs across markup, brackets or lines
_KEY = re.compile(r"\w+")  # transformers' transform placeholders only reach keys made of word characters


def build_response_template(analysis: TemplateAnalysis) -> dict[str, Any]:
    """The transformers ``response_template`` dict for ``analysis`` (see the module docstring).

    Raises :class:`ResponseTemplateError` for dedicated formats and generic shapes it cannot express.
    """
    if analysis.format != "generic":
        why = _DEDICATED.get(analysis.format, "its output has a structure the analysed markers do not describe")
        raise ResponseTemplateError(
            f"template {analysis.template!r} uses the dedicated output format {analysis.format!r}, which a "
            f"response template cannot express: {why}"
        )
    if analysis.blocks.enabled:
        raise ResponseTemplateError(
            f"template {analysis.template!r} writes its reply as headed blocks ({analysis.blocks.mode.value}), which "
            "a response template cannot express: a header's value (a tag or recipient), not a marker, says what a "
            "block is, and its attributes name the tool and the arguments"
        )
    fields: dict[str, dict[str, Any]] = {}
    reasoning = _reasoning_field(analysis.reasoning)
    if reasoning is not None:
        fields["reasoning_content"] = reasoning
    markup: list[str] = []
    content = analysis.content
    if content.mode is not ContentMode.PLAIN:
        markup += [content.start, content.end]
    if analysis.tools.format.mode is not ToolFormatMode.NONE:
        calls = _ToolCalls(analysis.template, analysis.tools)
        fields["tool_calls"] = calls.field()
        markup += calls.loose_markers()
    fields["content"] = _content_field(markup)
    return {
        "version": 1,
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": _anchor(analysis.reasoning),
        "fields": fields,
    }


def _lit(marker: str) -> str:
    """A marker's non-whitespace core as a pattern; whitespace inside it matches any whitespace."""
    return r"\s+".join(re.escape(part) for part in marker.split())


def _marker(marker: str) -> str:
    """A marker with any whitespace before it, or nothing for an empty marker."""
    return rf"\s*{_lit(marker)}" if marker.strip() else ""


def _anchor(reasoning: ReasoningAnalysis) -> str:
    """The prompt is cut to its tail: a reasoning block the prompt opened and left open (``<think>\\n``, Apriel's
    ``<|begin_assistant|>\\nHere are my reasoning steps:\\n``) is the start of the reply; anything else is not.

    The pattern matches once, from the start of the prompt to the last reasoning start marker when no other start
    or end marker follows it, otherwise to the end. So it needs no knowledge of the role header, and an empty
    prefix works too.
    """
    start, end = reasoning.start.strip(), reasoning.end.strip()
    if not (reasoning.enabled and start and end):
        return r"\A.*"
    markers = f"{_lit(start)}|{_lit(end)}"
    return rf"\A.*?(?=(?:{_lit(start)}(?:(?!{markers}).)*)?\Z)"


def _reasoning_field(reasoning: ReasoningAnalysis) -> dict[str, Any] | None:
    start, end = reasoning.start.strip(), reasoning.end.strip()
    if not reasoning.enabled or not end:
        return None
    # Only at the start of the reply (the generated parser reads a block there and nowhere else). With only an end
    # marker (DELIMITER), the text before it is reasoning once the marker shows up, and content if it never does:
    # the lookahead holds a stream until one or the other is known, as autoparser's own stream does.
    if start and reasoning.mode is not ReasoningMode.DELIMITER:
        opener = rf"\A\s*{_lit(start)}"
    else:
        opener = rf"\A(?=.*?{_lit(end)})"
    return {"open_pattern": opener, "close_pattern": rf"\s*{_lit(end)}\s*", "content": "text"}


def _content_field(markup: list[str]) -> dict[str, Any]:
    """The implicit field: text outside the other regions, in pieces that are joined. A piece ends at ``markup``
    (eaten) or at whitespace that ends the reply; whitespace before a call or after the reasoning block is eaten by
    those fields' own patterns, and whitespace inside the text is kept."""
    cores = sorted({m.strip() for m in markup if m.strip()}, key=len, reverse=True)
    ends = [rf"\s*(?:{'|'.join(_lit(m) for m in cores)})"] if cores else []
    return {
        "close_pattern": "|".join([*ends, r"\s+\Z"]),
        "content": "text",
        "content_args": {"strip": False},
        "repeats": True,
        "join": "",
    }


@dataclass(frozen=True, slots=True)
class _ToolCalls:
    """The ``tool_calls`` field of one analysis."""

    template: str
    tools: ToolsAnalysis

    def fail(self, why: str) -> ResponseTemplateError:
        return ResponseTemplateError(
            f"template {self.template!r}: a response template cannot express its tool calls: {why}"
        )

    def field(self) -> dict[str, Any]:
        mode = self.tools.format.mode
        if mode is ToolFormatMode.JSON_NATIVE:
            return self._json_native()
        if mode is ToolFormatMode.PYTHONIC:
            raise self.fail(
                'calls are Python calls with keyword arguments (`f(a="v", b=1)`); transformers has no '
                "content parser for Python call syntax"
            )
        if mode is ToolFormatMode.TAG_WITH_DICT:
            raise self.fail(
                "arguments are a dict in the template's own syntax (bare keys, strings between delimiter tokens: "
                '`{city:<|"|>Paris<|"|>}`); transformers has no content parser for it'
            )
        return self._tagged(json_arguments=mode is ToolFormatMode.TAG_WITH_JSON)

    def _call_start(self) -> str:
        """The marker that opens each call on its own (``<tool_call>``, ``<invoke name="``), if there is one."""
        fmt = self.tools.format
        if fmt.per_call_start.strip():
            return fmt.per_call_start.strip()
        return "" if fmt.mode is ToolFormatMode.JSON_NATIVE else self.tools.function.name_prefix.strip()

    def loose_markers(self) -> list[str]:
        """Section markers around calls that have their own opener: a reply may or may not write them (parallel
        calls share one section), so they are left to the content field, which drops them."""
        fmt = self.tools.format
        return [fmt.section_start, fmt.section_end] if self._call_start() else []

    # --- JSON-native calls: {"name": ..., "arguments": {...}} -------------------------------------------------

    def _json_native(self) -> dict[str, Any]:
        fmt = self.tools.format
        if fmt.fun_name_is_key:
            raise self.fail('the function name is the JSON key ({"get_weather": {...}}); a transform reads fixed keys')
        sec_start, sec_end = fmt.section_start.strip(), fmt.section_end.strip()
        per_start, per_end = fmt.per_call_start.strip(), fmt.per_call_end.strip()
        array = fmt.tools_array_wrapped
        field: dict[str, Any] = {"content": "json"}
        if per_start:
            if array:
                raise self.fail("calls are both wrapped one by one and collected in a JSON array")
            # <tool_call>{...}</tool_call>, repeated.
            field["open_pattern"] = _marker(per_start)
            close = self._close([per_end], sec_end, next_call=per_start)
        elif sec_start:
            # [TOOL_CALLS][{...}, {...}] or <|function_call|>{...}: one section holds the calls.
            field["open_pattern"] = _marker(sec_start)
            close = _marker(sec_end) or None
        else:
            # Bare JSON (Llama 3.x): an object whose first key is one of the call's keys starts a call; it runs to
            # the end of the reply (a regular expression cannot find where nested JSON ends).
            keys = sorted({self._path(f).split(".")[0] for f in self._fields()})
            first = r"\[\s*" if array else ""
            field["open_pattern"] = rf"\s*(?={first}\{{\s*\"(?:{'|'.join(keys)})\"\s*:)"
            close = None
        if close is not None:
            field["close_pattern"] = close
        item = self._call(
            self._path(fmt.name_field), self._path(fmt.args_field), self._id_path(), prefix="" if array else "content."
        )
        if array:
            field.update(transform=item, transform_each=True)  # the section's array is the list of calls
        else:
            field.update(transform=item, repeats=True)
        return field

    def _fields(self) -> list[str]:
        fmt = self.tools.format
        return [f for f in (fmt.name_field, fmt.args_field, fmt.id_field or fmt.gen_id_field) if f]

    def _path(self, field: str) -> str:
        """A JSON field (``name``, or ``function.name`` inside a nested object) as a transform path."""
        if not field:
            raise self.fail("the analysis found no name or arguments field")
        for key in field.split("."):
            if not _KEY.fullmatch(key):
                raise self.fail(f"the field {field!r} is not made of word characters, which transforms require")
        return field

    def _id_path(self) -> str:
        """The id member, when the template writes one (a reply without it makes transformers raise, like a
        reply without arguments: the model is trained to write what the template writes)."""
        fmt = self.tools.format
        field = fmt.id_field or fmt.gen_id_field
        return self._path(field) if field else ""

    @staticmethod
    def _call(name: str, arguments: str, call_id: str, prefix: str) -> dict[str, Any]:
        call: dict[str, Any] = {
            "type": "function",
            "function": {"name": f"{{{prefix}{name}}}", "arguments": f"{{{prefix}{arguments}}}"},
        }
        if call_id:
            call["id"] = f"{{{prefix}{call_id}}}"
        return call

    # --- calls in markup: NAME + JSON arguments, or NAME + tagged arguments ------------------------------------

    def _tagged(self, json_arguments: bool) -> dict[str, Any]:
        tools = self.tools
        fmt, fn, args, cid = tools.format, tools.function, tools.arguments, tools.call_id
        sec_start, sec_end = fmt.section_start.strip(), fmt.section_end.strip()
        per_start = fmt.per_call_start.strip()
        name_prefix = fn.name_prefix.strip()
        call_start = self._call_start()
        if not (call_start or sec_start):
            raise self.fail("the analysis found no marker that starts a call")
        # Without a marker of its own, a call is opened by the section start and closed by the section end.
        opener = [_marker(per_start) if call_start else _marker(sec_start)]
        has_id = False
        if cid.position is CallIdPosition.PRE_FUNC_NAME and name_prefix:
            prefix = cid.prefix.strip()
            if prefix and prefix not in (per_start, sec_start):
                opener.append(rf"(?:\s*{_lit(prefix)}(?P<id>{_ID})|(?P<id>))")
            else:
                opener.append(rf"\s*(?P<id>{_ID})")
            has_id = True
        opener += [_marker(name_prefix), rf"(?P<name>{_NAME})", _marker(fn.name_suffix)]
        if cid.position is CallIdPosition.BETWEEN_FUNC_AND_ARGS and cid.prefix.strip():
            opener += [rf"(?:\s*{_lit(cid.prefix)}(?P<id>{_ID})|(?P<id>))", _marker(cid.suffix)]
            has_id = True
        ends = [fn.close, fmt.per_call_end]
        if json_arguments:
            opener.append(_marker(args.start))
            ends.insert(0, args.end)
        if not call_start:
            ends.append(sec_end)
        close = self._close(ends, sec_end if call_start else "", next_call=call_start)
        field: dict[str, Any] = {"open_pattern": "".join(opener)}
        if close is not None:
            field["close_pattern"] = close
        if json_arguments:
            field["content"] = "json"
        else:
            field["content"] = "xml-inline"
            field["content_args"] = {"tag_pattern": self._argument_pattern()}
        call = self._call("name", "content", "id" if has_id else "", prefix="")
        field.update(transform=call, repeats=True)
        return field

    def _argument_pattern(self) -> str:
        """``<parameter=KEY>\\nVALUE\\n</parameter>``: the value loses one line break on each side, as the
        generated parser trims it (templates write them around values)."""
        args = self.tools.arguments
        name_prefix, name_suffix = args.name_prefix.strip(), args.name_suffix.strip()
        value_prefix, value_suffix = args.value_prefix.strip(), args.value_suffix.strip()
        if not (name_prefix and value_suffix):
            raise self.fail("the analysis found no markers around argument names and values")
        parts = [_lit(name_prefix), r"(?P<key>[^<>\n]+?)"]
        if name_suffix:
            parts.append(_lit(name_suffix))
        parts.append(_marker(value_prefix))
        parts.append(rf"(?:\r?\n)?(?P<value>.*?)(?:\r?\n)?{_lit(value_suffix)}")
        return "".join(parts)

    @staticmethod
    def _close(ends: list[str], section_end: str, next_call: str) -> str | None:
        """The end of one call: its end markers. Without them a call ends where the next one starts or the
        section ends, or else at the end of the reply (``None``: no close pattern)."""
        cores = [m for m in ends if m.strip()]
        if cores:
            return "".join(_marker(m) for m in cores)
        stops = [rf"(?=\s*{_lit(next_call)})"] if next_call else []
        if section_end.strip():
            stops.append(_marker(section_end))
        return "|".join(stops) or None
