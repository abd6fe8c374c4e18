"""The ``autoparser`` command line. A thin layer: ``format_*`` build strings, ``main`` does the I/O.

``autoparser templates`` lists the bundled chat templates; ``autoparser analyze TEMPLATE [--json]`` shows what a
template's analysis found (markers are shown with their whitespace made visible).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from . import ChatMessage, ChatParams, ChatTemplate, __version__, bundled_templates
from .analysis.model import CallIdPosition, TemplateAnalysis, ToolFormatMode
from .errors import AutoparserError

__all__ = ["build_parser", "format_analysis", "format_message", "format_templates", "main", "visible"]

_NONE = "—"
_ESCAPES = {ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}


def visible(s: str) -> str:
    """``s`` in double quotes with its whitespace visible (``"<tool_call>\\n"``); ``—`` for the empty string.

    Backslashes are doubled so that an escaped newline and a literal backslash-n stay distinguishable; other
    control characters are shown as ``\\xNN``.
    """
    if not s:
        return _NONE
    body = s.translate(_ESCAPES)
    body = "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in body)
    return f'"{body}"'


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--version`` and the ``templates`` / ``analyze`` subcommands."""
    parser = argparse.ArgumentParser(
        prog="autoparser",
        description="Learn an LLM's output markup from its chat template and parse what it writes.",
    )
    parser.add_argument("--version", action="version", version=f"autoparser {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("templates", help="list the bundled chat templates", description="List the bundled templates.")
    analyze = commands.add_parser(
        "analyze",
        help="show what a chat template's analysis found",
        description="Analyze a chat template and report its reasoning, content and tool-call markup.",
    )
    analyze.add_argument("template", metavar="TEMPLATE", help="path to a .jinja file, or a bundled template name")
    analyze.add_argument("--json", action="store_true", help="print the analysis as JSON")
    parse = commands.add_parser(
        "parse",
        help="parse a model's output into an OpenAI message",
        description="Parse model output (the text after the prompt) into an OpenAI chat message, printed as JSON.",
    )
    parse.add_argument("template", metavar="TEMPLATE", help="path to a .jinja file, or a bundled template name")
    parse.add_argument("file", metavar="FILE", nargs="?", default="-", help="model output file, or - for stdin")
    parse.add_argument("--tools", metavar="JSON", help="file with the request's tools (OpenAI tool list)")
    parse.add_argument("--messages", metavar="JSON", help="file with the conversation before the output")
    parse.add_argument(
        "--reasoning-format",
        choices=["none", "auto", "deepseek", "deepseek-legacy"],
        default="auto",
        help="where reasoning goes: 'none' keeps it in the content (default: auto)",
    )
    parse.add_argument("--no-thinking", action="store_true", help="render the prompt with thinking disabled")
    parse.add_argument("--parallel", action="store_true", help="allow parallel tool calls")
    parse.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto")
    parse.add_argument(
        "--undeclared-tools",
        choices=["call", "content"],
        default="call",
        help="a call to a tool not in --tools: a call with a warning (default), or content",
    )
    parse.add_argument("--stream", action="store_true", help="feed the output piece by piece; print one delta per line")
    parse.add_argument("--chunk", type=int, default=4, metavar="N", help="characters per streamed piece (default 4)")
    grammar = commands.add_parser(
        "grammar",
        help="print the constrained-decoding grammar for a request",
        description="Print the GBNF grammar for a request, then its triggers and the tokens to preserve.",
    )
    grammar.add_argument("template", metavar="TEMPLATE", help="path to a .jinja file, or a bundled template name")
    grammar.add_argument("--tools", metavar="JSON", help="file with the request's tools (OpenAI tool list)")
    grammar.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto")
    grammar.add_argument("--json-schema", metavar="JSON", help="file with a response-format JSON schema")
    grammar.add_argument("--parallel", action="store_true", help="allow parallel tool calls")
    grammar.add_argument("--no-thinking", action="store_true", help="render the prompt with thinking disabled")
    grammar.add_argument(
        "--format", choices=["gbnf", "lark"], default="gbnf", help="dialect: gbnf (llama.cpp) or lark (llguidance)"
    )
    return parser


def format_templates(names: Sequence[str]) -> str:
    """One template name per line."""
    return "\n".join(names)


def format_analysis_json(analysis: TemplateAnalysis) -> str:
    return json.dumps(analysis.to_dict(), indent=2, ensure_ascii=False)


def _table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column field/value table; cells are Text, so ``[TOOL_CALLS]`` is never read as rich markup."""
    table = Table(title=Text(title), title_justify="left", show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for field, value in rows:
        table.add_row(Text(field), Text(value))
    return table


def _marker_rows(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Rows for the non-empty markers only."""
    return [(label, visible(value)) for label, value in pairs if value]


def format_capabilities(analysis: TemplateAnalysis) -> Table:
    caps = analysis.capabilities
    rows = [
        (f.name.removeprefix("supports_").replace("_", " "), _yes_no(getattr(caps, f.name)))
        for f in dataclasses.fields(caps)
    ]
    return _table("Capabilities", rows)


def format_tools(analysis: TemplateAnalysis) -> Table:
    tools = analysis.tools
    fmt = tools.format
    rows = [("mode", fmt.mode.value)]
    if fmt.mode is not ToolFormatMode.NONE:
        rows += _marker_rows(
            [
                ("section start", fmt.section_start),
                ("section end", fmt.section_end),
                ("per-call start", fmt.per_call_start),
                ("per-call end", fmt.per_call_end),
            ]
        )
        rows += _marker_rows(
            [
                ("function field", fmt.function_field),
                ("name field", fmt.name_field),
                ("arguments field", fmt.args_field),
                ("id field", fmt.id_field),
                ("generated id field", fmt.gen_id_field),
            ]
        )
        rows += [
            ("name is key", _yes_no(fmt.fun_name_is_key)),
            ("calls in array", _yes_no(fmt.tools_array_wrapped)),
        ]
        if fmt.parameter_order:
            rows.append(("field order", ", ".join(visible(p) for p in fmt.parameter_order)))
        func, args, call_id = tools.function, tools.arguments, tools.call_id
        rows += _marker_rows(
            [
                ("function name prefix", func.name_prefix),
                ("function name suffix", func.name_suffix),
                ("function close", func.close),
                ("arguments start", args.start),
                ("arguments end", args.end),
                ("argument name prefix", args.name_prefix),
                ("argument name suffix", args.name_suffix),
                ("argument value prefix", args.value_prefix),
                ("argument value suffix", args.value_suffix),
                ("argument separator", args.separator),
            ]
        )
        if call_id.position is not CallIdPosition.NONE:
            rows.append(("call id position", call_id.position.value))
        rows += _marker_rows([("call id prefix", call_id.prefix), ("call id suffix", call_id.suffix)])
    return _table("Tool calls", rows)


def format_analysis(analysis: TemplateAnalysis) -> RenderableType:
    """The human-readable report of an analysis."""
    header = Text.assemble((analysis.template, "bold"), "  format: ", analysis.format)
    reasoning, content, prompts = analysis.reasoning, analysis.content, analysis.generation_prompts
    sections: list[RenderableType] = [
        header,
        format_capabilities(analysis),
        _table(
            "Reasoning",
            [("mode", reasoning.mode.value), ("start", visible(reasoning.start)), ("end", visible(reasoning.end))],
        ),
        _table(
            "Content",
            [("mode", content.mode.value), ("start", visible(content.start)), ("end", visible(content.end))],
        ),
        format_tools(analysis),
        _table(
            "Generation prompts",
            [("thinking on", visible(prompts.thinking)), ("thinking off", visible(prompts.no_thinking))],
        ),
        _table("Preserved tokens", [(str(i), visible(t)) for i, t in enumerate(analysis.preserved_tokens, 1)])
        if analysis.preserved_tokens
        else Text(f"Preserved tokens: {_NONE}"),
        Text("Workarounds: " + (", ".join(analysis.workarounds) if analysis.workarounds else _NONE)),
        Text("Read from the template's instructions: " + (", ".join(analysis.prose) if analysis.prose else _NONE)),
    ]
    spaced = [part for section in sections for part in (section, Text())][:-1]  # a blank line between sections
    return Group(*spaced)


def _load(spec: str) -> ChatTemplate | int:
    """A template file if ``spec`` names one, otherwise a bundled template; on failure, report it and return the
    exit code (2: no such template, 1: unreadable file)."""
    path = Path(spec)
    try:
        return ChatTemplate.from_file(path) if path.is_file() else ChatTemplate.load(spec)
    except KeyError:
        _error(f"no template file or bundled template named {spec!r} (see `autoparser templates`)")
        return 2
    except (OSError, UnicodeDecodeError) as err:
        _error(f"cannot read {spec}: {err}")
        return 1


def _error(message: str) -> None:
    print(f"autoparser: error: {message}", file=sys.stderr)


def _warn(message: str) -> None:
    print(f"autoparser: warning: {message}", file=sys.stderr)


def _analyze(spec: str, as_json: bool) -> int:
    tmpl = _load(spec)
    if isinstance(tmpl, int):
        return tmpl
    try:
        analysis = tmpl.analysis
    except AutoparserError as err:  # e.g. TemplateError: the template does not compile
        _error(str(err))
        return 1
    if as_json:
        print(format_analysis_json(analysis), file=sys.stdout)
    else:
        Console(file=sys.stdout).print(format_analysis(analysis))
    return 0


def _read_json(path: str, what: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        value = json.load(handle)
    if not isinstance(value, list):
        raise ValueError(f"{what} file must hold a JSON list, got {type(value).__name__}")
    return value


def format_message(message: ChatMessage) -> str:
    """The OpenAI message as JSON, with the parse warnings (if any) under ``warnings``."""
    data = message.to_openai()
    if message.warnings:
        data["warnings"] = [str(w) for w in message.warnings]
    return json.dumps(data, indent=2, ensure_ascii=False)


def _parse(args: argparse.Namespace) -> int:
    tmpl = _load(args.template)
    if isinstance(tmpl, int):
        return tmpl
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        tools = _read_json(args.tools, "--tools") if args.tools else None
        messages = _read_json(args.messages, "--messages") if args.messages else [{"role": "user", "content": "Hi"}]
    except (OSError, UnicodeDecodeError, ValueError) as err:
        _error(str(err))
        return 1
    try:
        chat = tmpl.apply(
            messages,
            tools=tools,
            tool_choice=args.tool_choice,
            parallel_tool_calls=args.parallel,
            reasoning_format=args.reasoning_format,
            enable_thinking=not args.no_thinking,
            undeclared_tools=args.undeclared_tools,
        )
    except (AutoparserError, ValueError, TypeError) as err:
        _error(str(err))
        return 1
    for warning in chat.warnings:
        _warn(warning)
    if not args.stream:
        print(format_message(chat.parse(text)), file=sys.stdout)
        return 0
    stream = chat.stream()
    step = max(args.chunk, 1)
    for pos in range(0, len(text), step):
        for delta in stream.feed(text[pos : pos + step]):
            print(json.dumps(delta.to_openai(), ensure_ascii=False), file=sys.stdout)
    for delta in stream.finish():
        print(json.dumps(delta.to_openai(), ensure_ascii=False), file=sys.stdout)
    return 0


def format_grammar(chat: ChatParams, dialect: str = "gbnf") -> str:
    """The grammar (``gbnf`` or ``lark``), then as comments (``#`` in GBNF, ``//`` in Lark) one line per trigger,
    the preserved tokens and the thinking tags, so the output stays a valid grammar file."""
    grammar = chat.lark_grammar if dialect == "lark" else chat.grammar
    comment = "//" if dialect == "lark" else "#"
    if grammar is None:
        return f"{comment} no grammar for this request (no tools, or tool_choice none)"
    lines = [grammar.rstrip("\n"), ""]
    mode = "lazy: applies once a trigger fires" if chat.grammar_lazy else "applies to the whole output"
    lines.append(f"{comment} {mode}")
    lines += [f"{comment} trigger {t.type}: {json.dumps(t.value, ensure_ascii=False)}" for t in chat.grammar_triggers]
    lines.append(f"{comment} preserved tokens: " + json.dumps(list(chat.preserved_tokens), ensure_ascii=False))
    if chat.thinking_end_tag:
        tags = json.dumps([chat.thinking_start_tag, chat.thinking_end_tag], ensure_ascii=False)
        lines.append(f"{comment} thinking tags (triggers inside do not fire): {tags}")
    return "\n".join(lines)


def _grammar(args: argparse.Namespace) -> int:
    tmpl = _load(args.template)
    if isinstance(tmpl, int):
        return tmpl
    try:
        tools = _read_json(args.tools, "--tools") if args.tools else None
        schema = json.loads(Path(args.json_schema).read_text(encoding="utf-8")) if args.json_schema else None
        chat = tmpl.apply(
            [{"role": "user", "content": "Hi"}],
            tools=tools,
            tool_choice=args.tool_choice,
            parallel_tool_calls=args.parallel,
            enable_thinking=not args.no_thinking,
            json_schema=schema,
        )
    except (OSError, UnicodeDecodeError, ValueError, TypeError, AutoparserError) as err:
        _error(str(err))
        return 1
    for warning in chat.warnings:
        _warn(warning)
    print(format_grammar(chat, args.format), file=sys.stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "templates":
        print(format_templates(bundled_templates()), file=sys.stdout)
        return 0
    if args.command == "analyze":
        return _analyze(args.template, args.json)
    if args.command == "parse":
        return _parse(args)
    if args.command == "grammar":
        return _grammar(args)
    parser.print_help(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
