"""The ``autoparser`` command line. A thin layer: ``format_*`` build strings, ``main`` does the I/O.

``autoparser templates`` lists the bundled chat templates; ``autoparser analyze TEMPLATE [--json]`` shows what a
template's analysis found (markers are shown with their whitespace made visible); ``parse`` and ``grammar`` apply a
template to a request; ``serve`` runs an OpenAI-compatible chat server in front of a completion engine (the
``serve`` extra). TEMPLATE is a bundled name, a ``.jinja`` file, a Hugging Face ``tokenizer_config.json`` /
``chat_template.json`` or a model directory holding them (``--template-name`` picks a named template).

Like any well-behaved Unix tool it stays quiet when its reader goes away (``autoparser templates | head -1``), and
its errors name the file they are about (with line and column for JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from . import ChatMessage, ChatParams, ChatTemplate, __version__, bundled_templates, disk_cache
from .analysis.model import CallIdPosition, ReasoningSwitch, TemplateAnalysis, ToolFormatMode
from .errors import AutoparserError, SchemaError, TemplateError
from .message import MessageDelta

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


_TEMPLATE_HELP = (
    "a bundled template name (see `autoparser templates`), a .jinja file, a Hugging Face tokenizer_config.json or "
    "chat_template.json, or a model directory holding them"
)
_TEMPLATE_NAME_HELP = (
    "which named template of a config that has several, e.g. tool_use (default: 'tool_use' for a request with "
    "--tools, else 'default', as transformers picks)"
)
_THINKING_HELP = "render the prompt with thinking on (--thinking) or off (--no-thinking); default: the template's own"
_PARALLEL_HELP = (
    "allow (--parallel) or forbid (--no-parallel) parallel tool calls; default: allowed where the template renders them"
)
_TOOL_CHOICE_HELP = "auto: the model may call tools; required: it must; none: it may not (default: auto)"


def _template_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("template", metavar="TEMPLATE", help=_TEMPLATE_HELP)
    command.add_argument("--template-name", metavar="NAME", help=_TEMPLATE_NAME_HELP)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--version`` and the ``templates`` / ``analyze`` / ``parse`` / ``grammar`` / ``serve``
    commands."""
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
    _template_arguments(analyze)
    analyze.add_argument("--json", action="store_true", help="print the analysis as JSON")
    parse = commands.add_parser(
        "parse",
        help="parse a model's output into an OpenAI message",
        description="Parse model output (the text after the prompt) into an OpenAI chat message, printed as JSON.",
    )
    _template_arguments(parse)
    parse.add_argument("file", metavar="FILE", nargs="?", default="-", help="model output file, or - for stdin")
    parse.add_argument("--tools", metavar="JSON", help="file with the request's tools (OpenAI tool list)")
    parse.add_argument("--messages", metavar="JSON", help="file with the conversation before the output")
    _request_options(parse, "a call to a tool not in --tools: a call with a warning (default), or content")
    parse.add_argument(
        "--stream",
        action="store_true",
        help="feed the output piece by piece; print one delta per line, with its warnings (empty ones left out)",
    )
    parse.add_argument("--chunk", type=int, default=4, metavar="N", help="characters per streamed piece (default 4)")
    grammar = commands.add_parser(
        "grammar",
        help="print the constrained-decoding grammar for a request",
        description="Print the GBNF grammar for a request, then its triggers and the tokens to preserve.",
    )
    _template_arguments(grammar)
    grammar.add_argument("--tools", metavar="JSON", help="file with the request's tools (OpenAI tool list)")
    grammar.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help=_TOOL_CHOICE_HELP)
    grammar.add_argument("--json-schema", metavar="JSON", help="file with a response-format JSON schema")
    grammar.add_argument("--parallel", action=argparse.BooleanOptionalAction, default=None, help=_PARALLEL_HELP)
    grammar.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None, help=_THINKING_HELP)
    grammar.add_argument(
        "--format", choices=["gbnf", "lark"], default="gbnf", help="dialect: gbnf (llama.cpp) or lark (llguidance)"
    )
    grammar.add_argument(
        "--full",
        action="store_true",
        help="the grammar over the whole output, for engines that apply a grammar from the first token "
        "(vLLM/SGLang structured outputs, xgrammar); tool_choice auto otherwise gets a lazy grammar with triggers",
    )
    _check_arguments(commands)
    _batch_arguments(commands)
    cache = commands.add_parser(
        "cache",
        help="show or clear the disk cache of compiled and analysed templates",
        description="Show where the disk cache of the work done once per template (Jinja's compile, the analysis, "
        "the request profile) is and what it holds, or why it is not used. $AUTOPARSER_CACHE_DIR moves it; "
        "AUTOPARSER_CACHE_DIR=off turns it off.",
    )
    cache.add_argument("--clear", action="store_true", help="remove every entry (the next process recomputes them)")
    cache.add_argument(
        "--warm",
        nargs="+",
        metavar="TEMPLATE",
        default=[],
        help="compile and analyse these templates now (bundled names, files or model directories), so that the next "
        "process finds them: e.g. in an image's build step, run as the user that serves",
    )
    cache.add_argument("--all", action="store_true", help="warm every bundled template")
    cache.add_argument("--json", action="store_true", help="print the state as JSON")
    _serve_arguments(commands)
    return parser


def _request_options(command: Any, undeclared_help: str) -> None:
    """The options that shape how a reply is read, the same for ``parse`` and ``batch``: where reasoning goes,
    the template's switches, the tool choice, and what a call to an undeclared tool becomes."""
    command.add_argument(
        "--reasoning-format",
        choices=["none", "auto", "deepseek", "deepseek-legacy"],
        default="auto",
        help="where reasoning goes: 'none' keeps it in the content (default: auto)",
    )
    command.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None, help=_THINKING_HELP)
    command.add_argument("--parallel", action=argparse.BooleanOptionalAction, default=None, help=_PARALLEL_HELP)
    command.add_argument("--tool-choice", choices=["auto", "required", "none"], default="auto", help=_TOOL_CHOICE_HELP)
    command.add_argument("--undeclared-tools", choices=["call", "content"], default="call", help=undeclared_help)


def _check_arguments(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="check that a template works: every case it renders read back, parsed and streamed",
        description="Render every case a template can (an answer, reasoning, one call with every JSON type, parallel "
        "calls, content + call, reasoning + call), read each back whole and streamed, and offer it to the "
        "whole-output grammar. Prints what the analysis learned and a ✓ / ✗ / – per case with the reason for each "
        "✗ and –. Exit status 1 when a rendered case does not read back (and no documented template fault explains "
        "it). Run it on a model's template before serving the model.",
    )
    check.add_argument("templates", metavar="TEMPLATE", nargs="*", help=_TEMPLATE_HELP + "; several may be given")
    check.add_argument("--template-name", metavar="NAME", help=_TEMPLATE_NAME_HELP)
    check.add_argument("--all", action="store_true", help="check every bundled template")
    output = check.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--markdown", action="store_true", help="print the Markdown table of docs/roundtrip.md")


# `autoparser batch`'s exit status when some rows failed (the others are written): distinct from 1 (the batch could
# not run) and 2 (bad arguments), so a pipeline can tell "look at the error rows" from "nothing happened".
BATCH_ROWS_FAILED = 3
_INTERRUPTED = 130  # what a shell reports for a process ended by Ctrl-C


def _batch_arguments(commands: Any) -> None:
    batch = commands.add_parser(
        "batch",
        help="parse a file of model replies (JSONL or Parquet) into a file of OpenAI messages",
        description="Parse every model reply in INPUT into OUTPUT, one row per input row, in order: 'message' (the "
        "OpenAI message), 'warnings', 'call_statuses' (each call's: complete, cut_off, repaired), 'error' (null, or "
        "why the row could not be parsed) and the --keep fields. JSONL or Parquet each, by suffix. A row's reply is "
        "its --text-field, or an OpenAI completion or chat-completion record's choices[0]; a row's own 'messages' "
        "and 'tools' fields give the request it answers (else --messages / --tools). Parquet needs pyarrow: pip "
        "install 'autoparser[batch]'.",
        epilog=f"exit status: 0 every row parsed; {BATCH_ROWS_FAILED} some rows failed (written with their 'error', "
        "the others parsed); 1 the batch could not run; 2 bad arguments; 130 interrupted (run again with --resume "
        "to carry on).",
    )
    _template_arguments(batch)
    batch.add_argument("input", metavar="INPUT", help="the replies: a .jsonl or .parquet file")
    batch.add_argument("output", metavar="OUTPUT", help="where the messages go: a .jsonl or .parquet file")
    batch.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="the field holding the reply, or a dotted path such as output.text (default: text; without it, OpenAI "
        "records' choices[0].text or choices[0].message.content)",
    )
    batch.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="FIELDS",
        help="input fields copied into each output row (comma-separated; may be repeated), e.g. --keep id",
    )
    batch.add_argument("--tools", metavar="JSON", help="file with the tools of rows without a 'tools' field")
    batch.add_argument("--messages", metavar="JSON", help="file with the conversation of rows without 'messages'")
    _request_options(batch, "a call to a tool the request does not declare: a call with a warning (default) or content")
    batch.add_argument(
        "--reasoning-field",
        choices=["reasoning_content", "reasoning"],
        default="reasoning_content",
        help="the message's key for the reasoning (default: reasoning_content)",
    )
    batch.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1)")
    batch.add_argument(
        "--resume",
        action="store_true",
        help="carry on an interrupted run of the same command from OUTPUT's checkpoint (OUTPUT.resume.json): no row "
        "written twice, none left out",
    )
    batch.add_argument("--chunk-rows", type=int, default=1000, metavar="N", help="rows per worker task (default 1000)")
    batch.add_argument("--input-format", choices=["jsonl", "parquet"], help="INPUT's format (default: by suffix)")
    batch.add_argument("--output-format", choices=["jsonl", "parquet"], help="OUTPUT's format (default: by suffix)")
    batch.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar with rate and time left on stderr (default: when stderr is a terminal)",
    )
    batch.add_argument(
        "--flush-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="Parquet output: make what is parsed resumable at least this often (default 10; JSONL output is after "
        "every chunk)",
    )


# The choices of `serve`, here so that `autoparser --help` works without the serve extra (autoparser.serve.upstream
# holds the same lists: tests/serve check they agree).
_UPSTREAM_KINDS = ("llama.cpp", "openai")
_GRAMMAR_FIELDS = ("none", "vllm-lark", "vllm-structural-tag", "sglang-ebnf", "sglang-structural-tag")
_REASONING_FIELDS = ("reasoning_content", "reasoning")
_BOS_MODES = ("auto", "strip", "keep")
_SERVE_INSTALL = "pip install 'autoparser[serve]'"


def _serve_arguments(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve OpenAI chat completions and Anthropic messages (tool calls, reasoning) in front of a completion "
        "engine",
        description="An OpenAI-compatible chat server (and Anthropic's Messages API) in front of a raw completion "
        "engine: renders each request with the template, sends the prompt and the request's grammar to the engine "
        f"and parses its reply into reasoning, content and tool calls. Needs the serve extra: {_SERVE_INSTALL}.",
    )
    _template_arguments(serve)
    serve.add_argument("--upstream", required=True, metavar="URL", help="the engine's base URL (http://127.0.0.1:8080)")
    serve.add_argument(
        "--upstream-kind",
        choices=_UPSTREAM_KINDS,
        default="llama.cpp",
        help="llama.cpp: its server's /completion with GBNF, lazy triggers and preserved tokens (default); "
        "openai: an OpenAI-style /v1/completions (vLLM, SGLang, TGI, providers)",
    )
    serve.add_argument(
        "--grammar-field",
        choices=_GRAMMAR_FIELDS,
        default="none",
        help="openai kind: where the engine takes the whole-output grammar: vllm-lark "
        "(structured_outputs.grammar), vllm-structural-tag (structured_outputs.structural_tag), sglang-ebnf (ebnf), "
        "sglang-structural-tag (response_format); none sends no grammar (default)",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; on loopback only loopback Host headers are answered)",
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--model-name", metavar="NAME", help="the model name clients see (default: the template's)")
    serve.add_argument(
        "--upstream-model", metavar="NAME", help="openai kind: the model to ask for (default: the first it lists)"
    )
    serve.add_argument(
        "--upstream-api-key",
        metavar="KEY",
        default=os.environ.get("AUTOPARSER_UPSTREAM_API_KEY"),
        help="bearer token for the upstream (default: $AUTOPARSER_UPSTREAM_API_KEY)",
    )
    serve.add_argument(
        "--default-max-tokens",
        type=int,
        metavar="N",
        help="token limit for requests that set none (default: the rest of the context: llama.cpp's n_predict -1, "
        "max_tokens null for OpenAI-style engines; SGLang needs a number)",
    )
    serve.add_argument(
        "--bos",
        choices=_BOS_MODES,
        default="auto",
        help="the template's BOS text at the start of the prompt: strip it where the engine adds BOS when it "
        "tokenizes (auto: asks llama.cpp, strips for OpenAI-style engines), or keep it",
    )
    serve.add_argument(
        "--upstream-extra",
        metavar="JSON",
        help="a JSON object merged into every upstream request (e.g. '{\"skip_special_tokens\": false}')",
    )
    serve.add_argument(
        "--upstream-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="longest wait for the next byte from the upstream (default 600; 0: no limit)",
    )
    serve.add_argument(
        "--reasoning-field",
        choices=_REASONING_FIELDS,
        default=_REASONING_FIELDS[0],
        help="the reply's field for the model's reasoning: reasoning_content (DeepSeek's, older vLLM's; default) or "
        "reasoning (newer vLLM's)",
    )
    # Request limits (autoparser.serve.http.body.RequestLimits holds the same defaults: tests/serve check they agree)
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=16 * 1024 * 1024,
        metavar="N",
        help="the largest request body (default 16 MiB; larger: 413)",
    )
    serve.add_argument(
        "--max-tools", type=int, default=128, metavar="N", help="the most tools a request may declare (default 128)"
    )
    serve.add_argument(
        "--max-json-depth",
        type=int,
        default=64,
        metavar="N",
        help="how deep a request's JSON may nest, call arguments and schemas included (default 64)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="longest wait for the next byte of a request body (default 30; 0: no limit; then 408)",
    )
    serve.add_argument(
        "--api-key",
        metavar="KEY",
        default=os.environ.get("AUTOPARSER_API_KEY"),
        help="clients must send 'Authorization: Bearer KEY' or 'x-api-key: KEY' (default: $AUTOPARSER_API_KEY; none: "
        "no key asked; /health and /metrics stay open)",
    )
    serve.add_argument(
        "--signature-key",
        metavar="KEY",
        default=os.environ.get("AUTOPARSER_SIGNATURE_KEY"),
        help="the key of the Messages API's thinking signatures (default: $AUTOPARSER_SIGNATURE_KEY; none: a random "
        "one per start, shared by --workers); set it for signatures that outlive a restart or span servers",
    )
    serve.add_argument(
        "--allowed-origins",
        metavar="ORIGINS",
        help="comma-separated browser origins allowed by CORS ('*': any; default: CORS off)",
    )
    serve.add_argument(
        "--allowed-hosts",
        metavar="NAMES",
        help="comma-separated Host names answered besides loopback ones when listening on loopback (a proxy that "
        "passes its own Host on); default: loopback names only",
    )
    serve.add_argument(
        "--cache-mb",
        type=float,
        default=256.0,
        metavar="MB",
        help="memory budget of the parser and grammar caches, in MiB (default 256; least recently used go first)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a client's time to send a request's headers, else 408 (default 10; 0: no limit)",
    )
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the longest pause while a client sends a request's body, else 408 (default 30; 0: no limit)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes answering on the one port (default 1); the template is analysed once, before they "
        "start, and /metrics adds up across them (POSIX)",
    )
    serve.add_argument(
        "--http",
        default="auto",
        choices=["auto", "httptools", "h11"],
        help="uvicorn's HTTP implementation (default auto: httptools, C, where installed, as the serve extra does)",
    )
    serve.add_argument(
        "--loop",
        default="auto",
        choices=["auto", "uvloop", "asyncio"],
        help="the event loop (default auto: uvloop where installed, as the serve extra does)",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default info: one line per request)",
    )


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
                ("implied section end", fmt.implied_end),
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
        rows.append(("generated ids", analysis.id_format))
        if fmt.mode is ToolFormatMode.PYTHONIC:
            values = tools.pythonic
            rows.append(("string quote", visible(values.quote) if values.quote else "bare"))
            rows.append(("keywords", values.keywords or _NONE))
        if fmt.mode is ToolFormatMode.TAG_WITH_DICT:
            d = tools.dict_values
            rows += _marker_rows(
                [
                    ("string open", d.quote_open),
                    ("string close", d.quote_close),
                    ("key separator", d.colon),
                    ("item separator", d.comma),
                    ("true", d.true),
                    ("null", d.null),
                ]
            )
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
        Text("Reasoning switches: " + ("; ".join(map(_switch, analysis.switches)) or _NONE)),
        Text("End of turn: " + (", ".join(visible(m) for m in analysis.end_of_turn) or _NONE)),
        Text("Stop markers: " + (", ".join(visible(m) for m in analysis.stop_markers) or _NONE)),
        Text("Workarounds: " + (", ".join(analysis.workarounds) if analysis.workarounds else _NONE)),
        Text("Read from the template's instructions: " + (", ".join(analysis.prose) if analysis.prose else _NONE)),
    ]
    spaced = [part for section in sections for part in (section, Text())][:-1]  # a blank line between sections
    return Group(*spaced)


def _switch(switch: ReasoningSwitch) -> str:
    """``thinking`` (on True, off False; default off), ``reasoning_effort`` (low, medium, high; default medium)."""
    if switch.kind == "effort":
        levels = ", ".join(map(str, switch.values))
        return f"{switch.variable} (effort: {levels}; default {switch.default if switch.default is not None else '?'})"
    default = "on" if switch.default else "off"
    return f"{switch.variable} (on {switch.on!r}, off {switch.off!r}; default {default})"


class _Failure(Exception):
    """A problem to report on one line (``autoparser: error: ...``) with the process exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _looks_like_path(spec: str) -> bool:
    return os.sep in spec or "/" in spec or spec.lower().endswith(".json")


def _load(spec: str, template_name: str | None = None) -> ChatTemplate:
    """A template file, a Hugging Face config or model directory (``ChatTemplate.from_pretrained``: a request with
    tools renders with the ``tool_use`` template of a multi-template config), or a bundled template.

    Raises ``_Failure``: exit code 2 for a name that is neither a path nor a bundled template (with the closest
    bundled names), 1 for a path that cannot be read or holds no usable template.
    """
    path = Path(spec)
    if path.exists():
        try:
            return ChatTemplate.from_pretrained(path, template_name)
        except TemplateError as err:
            raise _Failure(_in(spec, err)) from None
        except (OSError, UnicodeDecodeError) as err:
            raise _Failure(f"cannot read {spec}: {getattr(err, 'strerror', None) or err}") from None
    if _looks_like_path(spec):
        raise _Failure(f"no such file or directory: {spec}", 2)
    if template_name is not None:
        raise _Failure(
            "--template-name picks a template of a tokenizer_config.json, chat_template.json or model "
            "directory; bundled templates have one each",
            2,
        )
    try:
        return ChatTemplate.load(spec)
    except KeyError:
        raise _Failure(
            f"no template file or bundled template named {spec!r}{_did_you_mean(spec)} (see `autoparser templates`)", 2
        ) from None


def _did_you_mean(spec: str) -> str:
    """``; did you mean 'Qwen3-Coder'?`` for the closest bundled names (case and a ``.jinja`` suffix ignored)."""
    names = bundled_templates()
    by_key = {name.lower(): name for name in names}
    wanted = spec.lower().removesuffix(".jinja")
    close = difflib.get_close_matches(wanted, list(by_key), n=3, cutoff=0.6)
    close += [k for k in by_key if wanted and wanted in k and k not in close]  # a fragment: "qwen3" → Qwen3-*
    if not close:
        return ""
    suggestions = " or ".join(repr(by_key[k]) for k in close[:3])
    return f"; did you mean {suggestions}?"


def _in(spec: str, err: Exception) -> str:
    """An error message that names the file: the template's own messages name only its base name."""
    message = str(err)
    return message if not Path(spec).exists() or spec in message else f"{spec}: {message}"


def _error(message: str) -> None:
    print(f"autoparser: error: {message}", file=sys.stderr)


def _warn(message: str) -> None:
    print(f"autoparser: warning: {message}", file=sys.stderr)


def _analysis(spec: str, tmpl: ChatTemplate) -> TemplateAnalysis:
    """The analysis, or a ``_Failure`` when the template does not compile or no probe conversation shows any of
    its message content (every render raised, or it renders nothing of the messages): there is nothing to learn
    from, and an all-"no" report would only hide why."""
    try:
        analysis = tmpl.analysis
    except AutoparserError as err:  # e.g. TemplateError: the template does not compile
        raise _Failure(_in(spec, err)) from None
    caps = analysis.capabilities
    if caps.supports_string_content or caps.supports_typed_content:
        return analysis
    try:  # a plain conversation says why: the error every probe met, if it raises
        tmpl.render([{"role": "user", "content": "Hello"}], add_generation_prompt=True)
    except AutoparserError as err:
        raise _Failure(f"{_in(spec, err)} (no probe conversation renders; nothing to analyze)") from None
    raise _Failure(f"{spec}: no probe conversation shows its messages' content; nothing to analyze")


def _check_template(spec: str, tmpl: ChatTemplate, tools: list[Any] | None) -> None:
    """Fail as ``analyze`` does where the template the request renders with (``tool_use`` for a request with tools,
    of a config with named templates) is no chat template: a text file would otherwise read every output as
    content without a word."""
    choose = getattr(tmpl, "_for_tools", None)  # (a config with several named templates)
    try:
        chosen = choose(tools) if choose is not None else tmpl
    except AutoparserError as err:
        raise _Failure(_in(spec, err)) from None
    _analysis(spec, chosen)


def _analyze(args: argparse.Namespace) -> int:
    analysis = _analysis(args.template, _load(args.template, args.template_name))
    if args.json:
        print(format_analysis_json(analysis), file=sys.stdout)
    else:
        Console(file=sys.stdout).print(format_analysis(analysis))
    return 0


def _read_json(path: str, what: str, *, is_list: bool = True) -> Any:
    """The JSON value of a ``--tools`` / ``--messages`` / ``--json-schema`` file; errors name the option, the
    file and, for bad JSON, the line and column."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _Failure(f"cannot read {what} file {path}: {getattr(err, 'strerror', None) or err}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise _Failure(f"{what} file {path}, line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}") from None
    if is_list and not isinstance(value, list):
        raise _Failure(f"{what} file {path} must hold a JSON list, got {type(value).__name__}")
    if not is_list and not isinstance(value, dict):
        raise _Failure(f"{what} file {path} must hold a JSON object, got {type(value).__name__}")
    return value


def _read_output(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _Failure(f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None


def format_message(message: ChatMessage) -> str:
    """The OpenAI message as JSON, with the parse warnings (if any) under ``warnings``."""
    data = message.to_openai()
    if message.warnings:
        data["warnings"] = [str(w) for w in message.warnings]
    return json.dumps(data, indent=2, ensure_ascii=False)


def format_delta(delta: MessageDelta) -> str | None:
    """One streamed delta as a line of JSON (the OpenAI ``delta`` object), with the warnings it carries under
    ``warnings`` (a stream reports most of them at ``finish()``); None for a delta that adds nothing."""
    data = delta.to_openai()
    if delta.warnings:
        data["warnings"] = [str(w) for w in delta.warnings]
    return json.dumps(data, ensure_ascii=False) if data else None


def _apply(args: argparse.Namespace, tmpl: ChatTemplate, **request: Any) -> ChatParams:
    try:
        chat = tmpl.apply(
            tool_choice=args.tool_choice,
            parallel_tool_calls=args.parallel,
            enable_thinking=args.thinking,
            **request,
        )
    except (AutoparserError, ValueError, TypeError) as err:
        raise _Failure(_in(args.template, err)) from None
    for warning in chat.warnings:
        _warn(warning)
    return chat


def _parse(args: argparse.Namespace) -> int:
    tmpl = _load(args.template, args.template_name)
    tools = _read_json(args.tools, "--tools") if args.tools else None
    _check_template(args.template, tmpl, tools)
    messages = _read_json(args.messages, "--messages") if args.messages else [{"role": "user", "content": "Hi"}]
    chat = _apply(
        args,
        tmpl,
        messages=messages,
        tools=tools,
        reasoning_format=args.reasoning_format,
        undeclared_tools=args.undeclared_tools,
    )
    text = _read_output(args.file)  # last: a bad option is reported before waiting on stdin
    if not args.stream:
        print(format_message(chat.parse(text)), file=sys.stdout)
        return 0
    stream = chat.stream()
    step = max(args.chunk, 1)
    pieces = (stream.feed(text[pos : pos + step]) for pos in range(0, len(text), step))
    for deltas in (*pieces, stream.finish()):
        for delta in deltas:
            line = format_delta(delta)
            if line is not None:
                print(line, file=sys.stdout)
    return 0


def format_grammar(chat: ChatParams, dialect: str = "gbnf", *, full: bool = False) -> str:
    """The grammar (``gbnf`` or ``lark``; ``full``: the whole-output one), then as comments (``#`` in GBNF, ``//``
    in Lark) one line per trigger, the preserved tokens and the thinking tags, so the output stays a valid grammar
    file."""
    if full:
        grammar = chat.full_lark_grammar if dialect == "lark" else chat.full_grammar
    else:
        grammar = chat.lark_grammar if dialect == "lark" else chat.grammar
    comment = "//" if dialect == "lark" else "#"
    if grammar is None:
        return f"{comment} no grammar for this request (no tools, or tool_choice none)"
    lines = [grammar.rstrip("\n"), ""]
    lazy = chat.grammar_lazy and not full
    mode = "lazy: applies once a trigger fires" if lazy else "applies to the whole output"
    lines.append(f"{comment} {mode}")
    if lazy:
        triggers = chat.grammar_triggers
        lines += [f"{comment} trigger {t.type}: {json.dumps(t.value, ensure_ascii=False)}" for t in triggers]
    lines.append(f"{comment} preserved tokens: " + json.dumps(list(chat.preserved_tokens), ensure_ascii=False))
    if chat.thinking_end_tag:
        tags = json.dumps([chat.thinking_start_tag, chat.thinking_end_tag], ensure_ascii=False)
        lines.append(f"{comment} thinking tags (triggers inside do not fire): {tags}")
    return "\n".join(lines)


def _grammar(args: argparse.Namespace) -> int:
    tmpl = _load(args.template, args.template_name)
    tools = _read_json(args.tools, "--tools") if args.tools else None
    _check_template(args.template, tmpl, tools)
    schema = _read_json(args.json_schema, "--json-schema", is_list=False) if args.json_schema else None
    problem = _schema_failure(args, tools, schema)
    if problem is not None:
        raise _Failure(problem)
    chat = _apply(args, tmpl, messages=[{"role": "user", "content": "Hi"}], tools=tools, json_schema=schema)
    try:
        text = format_grammar(chat, args.format, full=args.full)
    except AutoparserError as err:
        raise _Failure(f"cannot build the grammar: {err}") from None
    print(text, file=sys.stdout)
    return 0


def _schema_failure(args: argparse.Namespace, tools: list[Any] | None, schema: dict[str, Any] | None) -> str | None:
    """Why a tool's parameter schema or the ``--json-schema`` cannot become a grammar (an unknown type, a ``$ref``
    that does not resolve, a bad ``pattern``), on one line naming the tool and parameter; None when all can.

    Checked before any grammar is built, so the verdict does not depend on the template: a format whose grammar
    falls back to any value where a schema has no spelling of its own (LFM2's Python literals) would otherwise
    accept what the others refuse."""
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        parameters = function.get("parameters") if isinstance(function, dict) else None
        problem = _schema_problem(parameters)
        if problem is not None:
            where, reason = problem
            parts = where.split("/")
            param = f", parameter {parts[2]!r}" if len(parts) > 2 and parts[1] == "properties" else ""
            return f"--tools file {args.tools}: tool {function.get('name')!r}{param}: {reason} (at {where})"
    problem = _schema_problem(schema) if schema is not None else None
    if problem is not None:
        return f"--json-schema file {args.json_schema}: {problem[1]} (at {problem[0]})"
    return None


def _schema_problem(schema: Any) -> tuple[str, str] | None:
    """Where and why ``schema`` cannot be converted to a grammar (None: it can, or it is no schema)."""
    from .peg.lowering.gbnf_syntax import RuleSet
    from .peg.lowering.json_schema import JsonSchemaConverter

    if not isinstance(schema, (dict, bool)):
        return None
    try:
        JsonSchemaConverter(RuleSet()).convert(schema, "schema")
    except SchemaError as err:
        return err.path, err.reason
    return None


def _model_name(spec: str) -> str:
    """The name clients see by default: a model directory's name (also for its config files), a template file's
    stem, a bundled template's name."""
    path = Path(spec)
    if not path.exists():
        return spec  # a bundled template's name (its file name ends in .jinja)
    path = path.resolve()
    if path.is_dir():
        return path.name
    model_files = ("tokenizer_config.json", "chat_template.json", "chat_template.jinja")
    return path.parent.name if path.name in model_files else path.stem


_MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


def _serve(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise _Failure("--workers must be a whole number >= 1", 2)
    if args.workers == 1:
        return _serve_with(args)
    if not hasattr(os, "fork"):
        raise _Failure("--workers above 1 needs os.fork (POSIX)", 2)
    # Metrics that add up across the workers: prometheus_client's multiprocess mode, which it picks when first
    # imported, from the environment. So the directory is named before anything imports it (autoparser.serve does)
    # and removed at exit.
    import shutil
    import tempfile

    before = os.environ.get(_MULTIPROC_DIR)
    folder = tempfile.mkdtemp(prefix="autoparser-metrics-")
    os.environ[_MULTIPROC_DIR] = folder
    try:
        return _serve_with(args)
    finally:
        if before is None:
            os.environ.pop(_MULTIPROC_DIR, None)
        else:
            os.environ[_MULTIPROC_DIR] = before
        shutil.rmtree(folder, ignore_errors=True)


def _serve_with(args: argparse.Namespace) -> int:
    try:
        from .serve import ServeConfig, create_app, serve
        from .serve.http.security import mask_url
        from .serve.ops.metrics import multiprocess
    except ImportError as err:
        raise _Failure(f"`autoparser serve` needs the serve extra ({err.name or err}): {_SERVE_INSTALL}") from None
    if args.workers > 1 and not multiprocess():
        raise _Failure("--workers: prometheus_client was imported before its multiprocess directory was set", 1)
    extra: dict[str, Any] = {}
    if args.upstream_extra:
        try:
            extra = json.loads(args.upstream_extra)
        except json.JSONDecodeError as err:
            raise _Failure(f"--upstream-extra is not valid JSON: {err.msg}", 2) from None
        if not isinstance(extra, dict):
            raise _Failure("--upstream-extra must be a JSON object", 2)
    if args.grammar_field != "none" and args.upstream_kind != "openai":
        raise _Failure("--grammar-field applies to --upstream-kind openai (llama.cpp gets GBNF with triggers)", 2)
    for option in ("cache_mb", "header_timeout", "read_timeout"):
        if not getattr(args, option) >= 0:
            raise _Failure(f"--{option.replace('_', '-')} must be a number >= 0", 2)
    tmpl = _load(args.template, args.template_name)
    _analysis(args.template, tmpl)  # a template with nothing to learn fails here, not on the first request
    config = ServeConfig(
        upstream=args.upstream,
        upstream_kind=args.upstream_kind,
        grammar_field=args.grammar_field,
        model_name=args.model_name or _model_name(args.template),
        upstream_model=args.upstream_model,
        upstream_api_key=args.upstream_api_key,
        default_max_tokens=args.default_max_tokens,
        bos=args.bos,
        upstream_extra=extra,
        upstream_timeout=args.upstream_timeout or None,
        reasoning_field=args.reasoning_field,
        api_key=args.api_key or None,
        signature_key=args.signature_key or None,
        allowed_origins=_names(args.allowed_origins),
        host=args.host,
        allowed_hosts=_names(args.allowed_hosts),
        max_body_bytes=args.max_body_bytes,
        max_tools=args.max_tools,
        max_json_depth=args.max_json_depth,
        body_timeout=args.body_timeout or None,
        cache_mb=args.cache_mb,
    )
    try:
        app = create_app(tmpl, config)
    except (AutoparserError, ValueError) as err:
        raise _Failure(_in(args.template, err)) from None
    workers = f" ({args.workers} workers)" if args.workers > 1 else ""
    print(
        f"autoparser: serving {config.model_name} on http://{args.host}:{args.port}/v1{workers} "
        f"in front of {args.upstream_kind} at {mask_url(args.upstream)}",
        file=sys.stderr,
    )
    options: dict[str, Any] = {"workers": args.workers} if args.workers > 1 else {}
    code = serve(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        header_timeout=args.header_timeout,
        read_timeout=args.read_timeout,
        http=args.http,
        loop=args.loop,
        **options,
    )
    return code or 0


def _names(option: str | None) -> tuple[str, ...]:
    """A comma-separated option's names."""
    return tuple(name.strip() for name in (option or "").split(",") if name.strip())


def _check(args: argparse.Namespace) -> int:
    from .check import check_template
    from .check.cases import TOOLS
    from .check.report import markdown, terminal, to_json

    specs = list(args.templates) + (bundled_templates() if args.all else [])
    if not specs:
        raise _Failure("name a template to check (or --all for every bundled one)", 2)
    reports = []
    for spec in specs:
        tmpl = _load(spec, args.template_name)
        choose = getattr(tmpl, "_for_tools", None)  # a config with named templates: the one a request with tools uses
        try:
            chosen = choose(TOOLS) if choose is not None else tmpl
        except AutoparserError as err:
            raise _Failure(_in(spec, err)) from None
        report = check_template(chosen)
        reports.append(report)
        if not (args.json or args.markdown):
            Console(file=sys.stdout).print(terminal(report))
    if args.json:
        print(to_json(reports), file=sys.stdout)
    elif args.markdown:
        sys.stdout.write(markdown(reports))
    return 0 if all(r.passed for r in reports) else 1


def _batch(args: argparse.Namespace) -> int:
    from .batch import BatchError, BatchParser, run_batch

    if args.workers < 1 or args.chunk_rows < 1:
        raise _Failure("--workers and --chunk-rows must be whole numbers >= 1", 2)
    tmpl = _load(args.template, args.template_name)
    tools = _read_json(args.tools, "--tools") if args.tools else None
    _check_template(args.template, tmpl, tools)
    messages = _read_json(args.messages, "--messages") if args.messages else None
    keep = [name.strip() for option in args.keep for name in option.split(",") if name.strip()]
    try:
        parser = BatchParser(
            tmpl,
            messages=messages,
            tools=tools,
            text_field=args.text_field,
            keep=keep,
            reasoning_field=args.reasoning_field,
            reasoning_format=args.reasoning_format,
            enable_thinking=args.thinking,
            parallel_tool_calls=args.parallel,
            tool_choice=args.tool_choice,
            undeclared_tools=args.undeclared_tools,
        )
    except ValueError as err:
        raise _Failure(f"--keep: {err}", 2) from None
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a polite kill stops as Ctrl-C does: resumable
    try:
        summary = run_batch(
            parser,
            args.input,
            args.output,
            workers=args.workers,
            resume=args.resume,
            chunk_rows=args.chunk_rows,
            input_format=args.input_format,
            output_format=args.output_format,
            progress=args.progress,
            flush_seconds=args.flush_seconds,
            on_warning=_warn,
        )
    except BatchError as err:
        raise _Failure(str(err)) from None
    except (AutoparserError, ValueError, TypeError) as err:  # the default request (--messages, --tools)
        raise _Failure(_in(args.template, err)) from None
    except KeyboardInterrupt:
        _error(f"interrupted; what is written to {args.output} is kept: run the same command with --resume to go on")
        return _INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"autoparser: {summary}", file=sys.stderr)
    return 0 if summary.ok else BATCH_ROWS_FAILED


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _cache(args: argparse.Namespace) -> int:
    from .requests.profile import request_profile

    removed = disk_cache.clear() if args.clear else None
    specs = list(args.warm) + (bundled_templates() if args.all else [])
    if specs and disk_cache.cache_folder() is None:
        raise _Failure(f"nothing to warm: the disk cache is {disk_cache.state().reason}")
    for spec in specs:
        for template in _load(spec).templates.values():
            try:
                request_profile(template)  # (the compile and the analysis with it)
            except AutoparserError as err:
                raise _Failure(_in(spec, err)) from None
    state = disk_cache.state()
    report = {
        "folder": str(state.folder) if state.folder else None,
        "root": str(state.root) if state.root else None,
        "files": state.files,
        "bytes": state.bytes,
        "used": state.folder is not None,
        "reason": state.reason,
    }
    if removed is not None:
        report["removed"] = removed
    if specs:
        report["warmed"] = len(specs)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    if state.folder is None:
        print(f"disk cache {state.reason}")
        return 0
    if removed is not None:
        print(f"removed {removed} files")
    if specs:
        print(f"warmed {len(specs)} template{'s' if len(specs) != 1 else ''}")
    held = f"{state.files} files, {state.bytes / 1e6:.1f} MB"
    print(f"disk cache: {state.root} ({held}; this version's folder: {state.folder.name})")
    return 0


_COMMANDS = {
    "analyze": _analyze,
    "cache": _cache,
    "parse": _parse,
    "grammar": _grammar,
    "check": _check,
    "batch": _batch,
    "serve": _serve,
}
# What a process killed by SIGPIPE reports to its shell (141), as `yes | head -1` does; 1 where there is no SIGPIPE.
_BROKEN_PIPE = 128 + signal.SIGPIPE if hasattr(signal, "SIGPIPE") else 1


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "templates":
        print(format_templates(bundled_templates()), file=sys.stdout)
        return 0
    command = _COMMANDS.get(args.command)
    if command is None:
        parser.print_help(sys.stdout)
        return 0
    try:
        return command(args)
    except _Failure as failure:
        _error(str(failure))
        return failure.code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code.

    When the reader of standard output goes away (``| head``), the command stops quietly: no traceback, and the
    exit status a shell reports for a process ended by SIGPIPE.
    """
    try:
        code = _run(argv)
        sys.stdout.flush()  # inside the try: a closed pipe often shows only when the buffer is written
    except BrokenPipeError:
        _discard_stdout()
        return _BROKEN_PIPE
    return code


def _discard_stdout() -> None:
    """Point stdout at the null device, so the interpreter's own flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (stdout replaced in-process): nothing to flush
        pass


if __name__ == "__main__":
    raise SystemExit(main())
