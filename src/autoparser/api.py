"""Public entry points: :class:`ChatTemplate` ties rendering, analysis and (later) parsing together."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .analysis.analyzer import analyze_template
from .analysis.diff import common_prefix_len
from .analysis.model import TemplateAnalysis
from .build import build_grammar, build_parser
from .cache import SizedCache
from .errors import GrammarError, RenderLimitError, RequestError, SchemaError, TemplateError
from .grammar.spec import GrammarSpec
from .params import ChatParams
from .parser.assemble import GeneratedParser
from .parser.leftovers import leftover_markers
from .parser.request import ParseRequest, ToolSpec, normalize_tools
from .requests import (
    check_schema,
    check_tools,
    continued_prompt,
    final_text,
    left_out,
    missing_defaults,
    normalize_messages,
    request_profile,
    with_defaults,
)
from .template.capabilities import TemplateCapabilities
from .template.chat_template import JinjaChatTemplate
from .template.environment import generation_variables, variables_read
from .template.hf_files import DEFAULT_NAME, choose_template, pick_template, read_hf_templates
from .template.limits import DEFAULT_LIMITS, RenderLimits
from .template.switches import requested_thinking, switch_context

__all__ = ["ChatParams", "ChatTemplate"]

# (template source, (tools, kwargs)) -> generation prompts with thinking on/off: see params_for_prompt
# (bounded by size with the library's other per-request caches: the key holds the request's tools as JSON)
_GENERATION_PROMPTS: SizedCache[list[tuple[str, bool]]] = SizedCache("generation prompts")
# The generation prompt of a template whose prompt ends in it, by the values of the variables it reads (_both_prompts)
_GENERATION_ENDINGS: SizedCache[str] = SizedCache("generation prompt endings")
# (template source, "default", tools, kwargs) -> whether the template thinks with enable_thinking undefined
_THINKING_DEFAULTS: SizedCache[bool] = SizedCache("thinking defaults")
_ENTRY_BYTES = 500  # a cache entry's own overhead, besides its texts


class ChatTemplate(JinjaChatTemplate):
    """A model's chat template: renders prompts exactly as transformers does and knows how the model writes.

    >>> tmpl = ChatTemplate.load("Qwen3-Coder")
    >>> tmpl.analysis.tools.format.mode.value
    'TAG_WITH_TAGGED'
    """

    __slots__ = ()

    @classmethod
    def from_pretrained(
        cls, path: str | Path, template_name: str | None = None, *, limits: RenderLimits = DEFAULT_LIMITS
    ) -> ChatTemplate:
        """The chat template of a Hugging Face model: ``path`` is a model directory, its ``tokenizer_config.json``,
        a ``chat_template.json`` or a ``.jinja`` file; BOS/EOS come from the ``tokenizer_config.json`` (in the
        directory or beside the file).

        When the files hold several named templates (a ``chat_template`` list, or ``chat_template.jinja`` with
        ``additional_chat_templates/NAME.jinja``), the result is the ``"default"`` one (its ``source``,
        ``analysis``) and knows the others (:attr:`templates`): :meth:`apply`, :meth:`render` and
        :meth:`params_for_prompt` render with ``"tool_use"`` when ``tools`` is given (not None), as transformers'
        ``apply_chat_template`` does, and without a ``"default"`` they raise :class:`TemplateError` for a request
        it would not render either. ``template_name`` takes that one template only.

        Raises :class:`OSError` for a path that cannot be read and :class:`TemplateError` for files without a
        usable template (or without ``template_name``).
        """
        found = read_hf_templates(path)
        if template_name is not None:
            one = pick_template(found, template_name, path)
            return cls(one.source, one.bos_token, one.eos_token, name=one.name, limits=limits)
        named = {name: cls(t.source, t.bos_token, t.eos_token, name=t.name, limits=limits) for name, t in found.items()}
        if list(named) == [DEFAULT_NAME]:
            return named[DEFAULT_NAME]
        return _NamedTemplates(named, Path(path).name, limits)

    @property
    def templates(self) -> Mapping[str, ChatTemplate]:
        """This model's templates by name (``tmpl.templates["tool_use"].analysis``): the ones
        :meth:`from_pretrained` found, or just ``{"default": self}``."""
        return MappingProxyType({DEFAULT_NAME: self})

    @property
    def analysis(self) -> TemplateAnalysis:
        """The differential analysis of this template (computed on first use, then cached per template source)."""
        return analyze_template(self, self.name)

    @property
    def capabilities(self) -> TemplateCapabilities:
        return self.analysis.capabilities

    def apply(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel_tool_calls: bool | None = None,
        reasoning_format: str = "auto",
        enable_thinking: bool | None = None,
        json_schema: Mapping[str, Any] | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        add_generation_prompt: bool | None = None,
        undeclared_tools: str = "call",
        reasoning_effort: str | None = None,
        continue_final_message: bool = False,
    ) -> ChatParams:
        """Render the prompt for a chat request and prepare the parser for the model's reply.

        ``messages`` and ``tools`` are taken as OpenAI clients send them and shaped into what this template reads
        (text parts, ``content: null``, JSON-string arguments, ``reasoning``/``reasoning_content``, the developer
        role, tools without description or parameters, call ids in another system's format: see
        :mod:`autoparser.requests` and docs/requests.md). A request the template cannot render raises
        :class:`~autoparser.errors.TemplateError` with the template's reason; a malformed one (or content the
        template cannot show, such as an image for a text-only template) :class:`~autoparser.errors.RequestError`
        naming the field.

        ``enable_thinking``: ``None`` (the default) leaves the template's own default, as transformers does; a
        ``chat_template_kwargs`` value wins over the argument. It reaches the template whatever the template calls its
        switch (``thinking``, ``reasoning``, ``thinking_mode="enabled"``, ...: ``analysis.switches``); setting such a
        variable in ``chat_template_kwargs`` says the same. ``reasoning_effort`` (``"low"``, ``"high"``, ...) sets the
        template's effort switch, whatever its name, and unless ``enable_thinking`` is given turns thinking on
        (``"none"``: off), as vLLM does. ``parallel_tool_calls``: ``None`` follows OpenAI's
        default (allowed) where the template can render parallel calls. ``reasoning_format``: ``"auto"`` (the
        default), ``"deepseek"`` and ``"deepseek-legacy"`` move reasoning to ``reasoning_content``; ``"none"`` leaves
        it (markers included) in the content. ``tool_choice``: ``"auto"``, ``"required"``, ``"none"``, or OpenAI's
        named form ``{"type": "function", "function": {"name": ...}}`` (a call of that tool is required; the prompt
        still lists every tool, as OpenAI's API does). ``undeclared_tools``: a call to a tool not in ``tools`` is
        returned as a call with a warning (``"call"``: the server decides what to do with it) or its text is kept as
        content with a warning (``"content"``). The grammar allows only the declared tools either way.

        ``add_generation_prompt`` (default: on, unless continuing) ends the prompt with the template's opening of the
        assistant's turn. ``continue_final_message`` (vLLM's and transformers' extension) ends the prompt inside the
        final assistant message instead, right after its text, so the model continues that text: the message must be
        the assistant's and hold text, and ``add_generation_prompt`` must not be set too (:class:`RequestError`).
        """
        if continue_final_message and add_generation_prompt:
            raise RequestError(
                "continue_final_message", "cannot be set together with add_generation_prompt (the prompt ends in one)"
            )
        if add_generation_prompt is None:
            add_generation_prompt = not continue_final_message
        continued = final_text(messages) if continue_final_message else None
        tool_list = check_tools(tools)
        if json_schema is not None:
            check_schema(json_schema, "json_schema")
        specs = normalize_tools(tool_list)
        tool_choice, specs = _named_tool_choice(tool_choice, specs)
        normalized = normalize_messages(messages, request_profile(self), self.name)
        # Serving stacks carry thinking toggles and other template switches in chat_template_kwargs: they join
        # the render context of the prompt *and* of the generation prompt the parser is built from (they win).
        extra = {**self._serving_context(tool_list), **(chat_template_kwargs or {})}
        if "enable_thinking" in extra:
            value = extra.pop("enable_thinking")
            enable_thinking = None if value is None else bool(value)
        given = extra
        enable_thinking, extra = self._switched(enable_thinking, reasoning_effort, extra)
        notes: dict[str, None] = dict.fromkeys(normalized.warnings)  # once each, though both renders hit them

        def render(generation: bool) -> str:
            return self._render_request(normalized.messages, tool_list, generation, enable_thinking, extra, notes)

        try:
            without, with_prompt = self._both_prompts(render, enable_thinking, extra)
        except RenderLimitError:
            raise
        except TemplateError as err:
            # A switch set for the request, not by it, breaks this conversation (Hermes 4 splits every answer at
            # `</think>` when its `thinking` is on, and an OpenAI client sends answers without): the template's
            # default, said in the warnings, rather than no prompt at all.
            switched = [s for s in self.analysis.switches if s.variable in extra and s.variable not in given]
            if not switched:
                raise
            extra = {k: v for k, v in extra.items() if k not in {s.variable for s in switched}}
            without, with_prompt = render(False), render(True)
            names = ", ".join(f"{s.variable}={s.on if enable_thinking else s.off!r}" for s in switched)
            notes[
                f"template {self.name!r} cannot render this conversation with {names} ({err.reason}); it was "
                "rendered with the template's default"
            ] = None
            if any(s.kind == "toggle" for s in switched):
                enable_thinking = all(s.default for s in switched if s.kind == "toggle")
        notes.update(dict.fromkeys(left_out(messages, with_prompt)))  # texts the model will not see
        generation_prompt = with_prompt[common_prefix_len(without, with_prompt) :]
        if enable_thinking is None:
            enable_thinking = self._thinking_default(tool_list, extra)
        if parallel_tool_calls is None:
            parallel_tool_calls = self.capabilities.supports_parallel_tool_calls
        prompt = with_prompt if add_generation_prompt else without
        if continued is not None:
            prompt, generation_prompt = continued_prompt(without, continued), ""
        request = ParseRequest(
            generation_prompt=generation_prompt if add_generation_prompt else "",
            tools=specs,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            reasoning_format=reasoning_format,
            enable_thinking=enable_thinking,
            json_schema=json.dumps(json_schema, sort_keys=True) if json_schema else None,
            undeclared_tools=undeclared_tools,
        )
        generated, grammar, warnings = _build(self.analysis, request)
        return ChatParams(
            prompt,
            generation_prompt,
            self.analysis.format,
            generated,
            grammar,
            (*notes, *warnings),
        )

    def _both_prompts(
        self, render: Callable[[bool], str], enable_thinking: bool | None, extra: Mapping[str, Any]
    ) -> tuple[str, str]:
        """The prompt without and with the generation prompt: ``render(False)``, ``render(True)``, or one render
        where the template's generation prompt is a function of a few context variables
        (:func:`~.template.environment.generation_variables`) and this request's values of them have been seen: the
        prompt without it is then the one with it less that known ending (half the rendering a request costs)."""
        names = generation_variables(self.source)
        values = None if names is None else self.plain_context(names, enable_thinking, extra)
        if values is None:
            return render(False), render(True)
        key = (self.source, values)
        ending = _GENERATION_ENDINGS.get(key)
        if ending is None:
            without, with_prompt = render(False), render(True)
            if with_prompt.startswith(without):
                size = _ENTRY_BYTES + len(with_prompt) - len(without) + sum(len(str(v)) for _, v in values)
                _GENERATION_ENDINGS.put(key, with_prompt[len(without) :], size)
            return without, with_prompt
        with_prompt = render(True)
        if with_prompt.endswith(ending):
            return with_prompt[: len(with_prompt) - len(ending)], with_prompt
        return render(False), with_prompt  # (cannot happen for such a template; cheap to be sure)

    def _render_request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        generation: bool,
        enable_thinking: bool | None,
        extra: Mapping[str, Any],
        notes: dict[str, None],
    ) -> str:
        """Render normalised messages with the request's tools: as sent; else completed with OpenAI's defaults
        where fields are missing; else (a template that cannot render any tool list) without them, with a note."""

        def attempt(tool_list: list[dict[str, Any]] | None) -> str:
            return self.render(
                messages, tool_list, add_generation_prompt=generation, enable_thinking=enable_thinking, **extra
            )

        if tools is None:
            try:
                return attempt(None)
            except RenderLimitError:
                raise
            except TemplateError:
                return attempt([])  # some tool-use templates iterate `tools` unconditionally: [] means none
        try:
            return attempt(tools)
        except RenderLimitError:
            raise  # a render past its limits: retrying would only cost another timeout
        except TemplateError as err:
            failure = err
        if missing_defaults(tools):
            try:
                return attempt(with_defaults(tools))
            except RenderLimitError:
                raise
            except TemplateError as err:
                failure = err
        if self.capabilities.supports_tools:
            raise failure  # the tools themselves are at fault (a field the template reads)
        # The template cannot render any tool list (MiroThinker's tools branch fails in Jinja2, as in transformers):
        # the prompt goes without it, and the parser still reads calls of these tools.
        notes[
            f"template {self.name!r} cannot render a tool list ({failure.reason}); the prompt was rendered without "
            "tools (describe them in a system message); calls of the requested tools are parsed"
        ] = None
        return attempt(None)

    def _switched(
        self, enable_thinking: bool | None, effort: str | None, extra: Mapping[str, Any]
    ) -> tuple[bool | None, dict[str, Any]]:
        """The request's thinking state and render variables, with the template's reasoning switches set to say it
        (:func:`~autoparser.template.switches.switch_context`; what ``extra`` sets itself wins, except over the effort
        ``effort`` names). The state comes from
        ``enable_thinking``, else from a switch ``extra`` sets by the template's own name, else from ``effort``
        (``"none"``: off); None leaves the template's default."""
        switches = self.analysis.switches
        if enable_thinking is None:
            enable_thinking = requested_thinking(switches, extra)
        effort = _effort(effort, extra)
        if enable_thinking is None and effort is not None:
            enable_thinking = effort.lower() != "none"
        # (the top-level effort wins over one in chat_template_kwargs, as in vLLM's build_chat_params)
        effort_context = switch_context(switches, None, effort)
        return enable_thinking, {**switch_context(switches, enable_thinking), **extra, **effort_context}

    def _thinking_default(self, tools: list[dict[str, Any]] | None, extra: Mapping[str, Any]) -> bool:
        """Whether the template thinks when ``enable_thinking`` is left undefined: off only when a probe conversation
        renders as with thinking off, and that differs from thinking on, each through every reasoning switch of the
        template (cached per template, tools and switches)."""
        key = (
            self.source,
            "default",
            json.dumps(tools or [], sort_keys=True),
            json.dumps(extra, sort_keys=True, default=str),
        )
        cached = _THINKING_DEFAULTS.get(key)
        if cached is not None:
            return cached
        probe = [{"role": "user", "content": "Hi"}]
        contexts = {
            thinking: {**switch_context(self.analysis.switches, thinking), **extra} for thinking in (None, True, False)
        }
        read = variables_read(self.source)
        if "enable_thinking" not in read and _same_reads(list(contexts.values()), read):
            default = True  # (the three renders could only come out equal: nothing they differ in is read)
        else:
            renders: dict[bool | None, str | None] = {}
            for thinking, switched in contexts.items():
                try:
                    renders[thinking] = self._render_request(probe, tools, True, thinking, switched, {})
                except TemplateError:
                    renders[thinking] = None
            default = not (renders[None] is not None and renders[None] == renders[False] != renders[True])
        _THINKING_DEFAULTS.put(key, default, _ENTRY_BYTES + len(key[2]) + len(key[3]))
        return default

    def params_for_prompt(
        self,
        prompt: str,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel_tool_calls: bool | None = None,
        reasoning_format: str = "auto",
        enable_thinking: bool | None = None,
        json_schema: Mapping[str, Any] | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        undeclared_tools: str = "call",
        reasoning_effort: str | None = None,
    ) -> ChatParams:
        """The parser for the reply to a ``prompt`` that was rendered elsewhere (by a serving stack, say); the
        arguments mean what they mean for :meth:`apply`.

        Only the end of the prompt shapes the parser: the generation prompt, found as the longest of this
        template's generation prompts (thinking on and off, with ``chat_template_kwargs``) that ends ``prompt``.
        Nothing is rendered for the conversation itself, so this costs the same for any prompt length.
        ``enable_thinking`` defaults to what the matched generation prompt says (off only when it is the
        thinking-off one). A prompt ending in none of them (``add_generation_prompt`` off, a continued final
        message) gets an empty generation prompt and a warning in ``ChatParams.warnings``.
        """
        tools = check_tools(tools)
        extra = dict(chat_template_kwargs or {})
        if extra.get("enable_thinking") is not None and enable_thinking is None:
            enable_thinking = bool(extra["enable_thinking"])
        extra.pop("enable_thinking", None)
        if enable_thinking is None:
            enable_thinking = requested_thinking(self.analysis.switches, extra)
        reasoning_effort = _effort(reasoning_effort, extra)
        if reasoning_effort is not None:
            extra = {**extra, **switch_context(self.analysis.switches, None, reasoning_effort)}
            if enable_thinking is None:
                enable_thinking = reasoning_effort.lower() != "none"
        if parallel_tool_calls is None:
            parallel_tool_calls = self.capabilities.supports_parallel_tool_calls
        candidates = self._generation_prompts(tools, extra)
        found = [(gp, thinking) for gp, thinking in candidates if gp and prompt.endswith(gp)]
        warnings: list[str] = []
        if found:
            generation_prompt, thinking = max(found, key=lambda item: len(item[0]))
        else:
            generation_prompt, thinking = "", True
            if prompt:
                warnings.append("the prompt does not end with this template's generation prompt")
        choice, specs = _named_tool_choice(tool_choice, normalize_tools(tools))
        request = ParseRequest(
            generation_prompt=generation_prompt,
            tools=specs,
            tool_choice=choice,
            parallel_tool_calls=parallel_tool_calls,
            reasoning_format=reasoning_format,
            enable_thinking=thinking if enable_thinking is None else enable_thinking,
            json_schema=json.dumps(json_schema, sort_keys=True) if json_schema else None,
            undeclared_tools=undeclared_tools,
        )
        generated, grammar, build_warnings = _build(self.analysis, request)
        return ChatParams(
            prompt, generation_prompt, self.analysis.format, generated, grammar, (*warnings, *build_warnings)
        )

    def _generation_prompts(
        self, tools: Sequence[Mapping[str, Any]] | None, extra: Mapping[str, Any]
    ) -> list[tuple[str, bool]]:
        """This template's generation prompts with thinking on and off (a one-message probe conversation)."""
        key = (json.dumps(list(tools or []), sort_keys=True), json.dumps(extra, sort_keys=True, default=str))
        cached = _GENERATION_PROMPTS.get((self.source, key))
        if cached is not None:
            return cached
        probe = [{"role": "user", "content": "Hi"}]
        tool_list = list(tools) if tools else None
        prompts: list[tuple[str, bool]] = []
        for thinking in (True, False):
            switched = switch_context(self.analysis.switches, thinking)
            context = {**self._serving_context(tool_list), **switched, **extra}
            # The request's tools first, then completed with OpenAI's defaults; a template that cannot render them
            # still has its generation prompt without them.
            tried_lists = (tool_list, with_defaults(tool_list), None, []) if tool_list else (None, [])
            for tried in tried_lists:
                try:
                    without, with_prompt = (
                        self.render(probe, tried, add_generation_prompt=g, enable_thinking=thinking, **context)
                        for g in (False, True)
                    )
                except TemplateError:
                    continue
                prompts.append((with_prompt[common_prefix_len(without, with_prompt) :], thinking))
                break
        size = _ENTRY_BYTES + sum(map(len, key)) + sum(len(prompt) for prompt, _ in prompts)
        _GENERATION_PROMPTS.put((self.source, key), prompts, size)
        return prompts

    def _serving_context(self, tools: list[Mapping[str, Any]] | None) -> dict[str, Any]:
        """Variables besides the messages that a template cannot render without: FireFunction reads its tools as a
        ``functions`` JSON string and concatenates a ``datetime`` (today, as llama.cpp passes it). Other dates are
        left to the template's own defaults, as transformers and vLLM leave them: pass ``date_string`` in
        ``chat_template_kwargs`` for Llama 3.x's "Today Date"."""
        read = variables_read(self.source)
        context: dict[str, Any] = {}
        if "functions" in read:
            context["functions"] = json.dumps([t.get("function", t) for t in tools or []], indent=4)
        if "datetime" in read:
            context["datetime"] = datetime.date.today().strftime("%b %d %Y")
        return context

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        enable_thinking: bool | None = None,
        **extra_context: Any,
    ) -> str:
        """Render like transformers, but pass JSON-string tool-call arguments as objects to templates that
        read arguments as objects (OpenAI clients send strings; such templates would print them quoted)."""
        if self.capabilities.supports_object_arguments:
            messages = [_arguments_as_objects(m) for m in messages]
        return super().render(
            messages,
            tools,
            add_generation_prompt=add_generation_prompt,
            enable_thinking=enable_thinking,
            **extra_context,
        )


def _effort(effort: str | None, kwargs: Mapping[str, Any]) -> str | None:
    """The request's effort: the argument, else a ``reasoning_effort`` in ``chat_template_kwargs`` (vLLM's spelling,
    which then also reaches a template that names its effort switch otherwise: Kimi K3's ``thinking_effort``)."""
    if effort is None and isinstance(kwargs.get("reasoning_effort"), str):
        return str(kwargs["reasoning_effort"])
    return effort


def _named_tool_choice(
    choice: str | Mapping[str, Any], specs: tuple[ToolSpec, ...]
) -> tuple[str, tuple[ToolSpec, ...]]:
    """OpenAI's named tool choice as ``"required"`` over that one tool; the string forms pass through."""
    if isinstance(choice, str):
        return choice, specs
    if not isinstance(choice, Mapping):
        raise TypeError(f"tool_choice must be a string or a mapping, got {type(choice).__name__}")
    function = choice.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    if choice.get("type", "function") != "function" or not isinstance(name, str) or not name:
        raise ValueError(f'a named tool_choice is {{"type": "function", "function": {{"name": ...}}}}, got {choice!r}')
    chosen = tuple(spec for spec in specs if spec.name == name)
    if not chosen:
        raise ValueError(f"tool_choice names {name!r}, which is not among the request's tools")
    return "required", chosen


def _same_reads(contexts: list[dict[str, Any]], read: frozenset[str]) -> bool:
    """Whether the render variables ``contexts`` agree on every variable the template reads (``read``)."""
    first = {name: value for name, value in contexts[0].items() if name in read}
    return all({name: value for name, value in c.items() if name in read} == first for c in contexts[1:])


def _build(analysis: TemplateAnalysis, request: ParseRequest) -> tuple[GeneratedParser, GrammarSpec, tuple[str, ...]]:
    """The parser and grammar for ``request``, degraded rather than failing when the analysed markers cannot
    build them (an empty terminator, say): first without tool calls, then content only. A user's bad JSON
    schema is the caller's error and still raises."""
    warnings: list[str] = []
    fallbacks = (
        ("", request),
        ("tool calls are not parsed", dataclasses.replace(request, tools=(), tool_choice="none")),
        (
            "the reply is read as plain content",
            dataclasses.replace(request, tools=(), tool_choice="none", reasoning_format="none", json_schema=None),
        ),
    )
    for i, (_, attempt) in enumerate(fallbacks):
        try:
            parser = build_parser(analysis, attempt)
            if attempt is not request:  # a degraded parser still warns about calls to the tools the request declares
                leftovers = leftover_markers(analysis, request, parser.tool_triggers)
                parser = dataclasses.replace(parser, leftovers=leftovers)
            return parser, build_grammar(analysis, attempt), tuple(warnings)
        except SchemaError:
            raise
        except GrammarError as err:
            if i == len(fallbacks) - 1:
                raise
            warnings.append(
                f"the {analysis.format} markers learned from template {analysis.template!r} cannot build a parser "
                f"({err}); {fallbacks[i + 1][0]}"
            )
    raise AssertionError("unreachable")


def _arguments_as_objects(message: Mapping[str, Any]) -> Mapping[str, Any]:
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    if not calls:
        return message
    converted = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # not JSON: the template gets the text as it came
                call = {**call, "function": {**function, "arguments": json.loads(arguments)}}
        converted.append(call)
    return {**message, "tool_calls": converted}


def _for_request(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` run on the template :meth:`_NamedTemplates._for_tools` picks for the call's ``tools`` (its second
    positional argument or keyword)."""

    @functools.wraps(method)
    def run(self: _NamedTemplates, *args: Any, **kwargs: Any) -> Any:
        tools = kwargs["tools"] if "tools" in kwargs else args[1] if len(args) > 1 else None
        return method(self._for_tools(tools), *args, **kwargs)

    return run


class _NamedTemplates(ChatTemplate):
    """What :meth:`ChatTemplate.from_pretrained` returns for a model with several named templates: the ``"default"``
    one (its source, name and analysis; empty when there is none) that renders each request with the template
    transformers would pick for its tools."""

    __slots__ = ("_named",)

    def __init__(self, named: dict[str, ChatTemplate], name: str, limits: RenderLimits) -> None:
        default = named.get(DEFAULT_NAME)
        first = next(iter(named.values()))
        source, label = (default.source, default.name) if default is not None else ("", name)
        super().__init__(source, first.bos_token, first.eos_token, name=label, limits=limits)
        self._named = named

    @property
    def templates(self) -> Mapping[str, ChatTemplate]:
        return MappingProxyType(self._named)

    def _for_tools(self, tools: object | None) -> ChatTemplate:
        """The template a request with ``tools`` renders with (transformers' rule: :func:`choose_template`), with
        this one's :attr:`limits`; a :class:`TemplateError` where transformers raises (no ``"default"``)."""
        chosen = choose_template(self._named, tools)
        if chosen is None:
            names = ", ".join(map(repr, self._named))
            raise TemplateError(
                self.name,
                f"no {DEFAULT_NAME!r} chat template to render this request with: it has {names}; choose one with "
                "template_name (--template-name on the command line)",
            )
        tmpl = self._named[chosen]
        tmpl.limits = self.limits
        return tmpl

    @property
    def analysis(self) -> TemplateAnalysis:
        return self._for_tools(None).analysis

    apply = _for_request(ChatTemplate.apply)
    params_for_prompt = _for_request(ChatTemplate.params_for_prompt)
    render = _for_request(ChatTemplate.render)
