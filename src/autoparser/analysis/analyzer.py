"""``analyze_template``: run every analysis phase on a template, once per template (results are cached).

Order matters: capabilities decide which phases can run; reasoning markers are removed before tool calls are
read; tool-format results feed the function, argument and call-id phases; workarounds come next, and what is
still empty is then filled from the template's instruction text (prose).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict

from .. import disk_cache
from ..disk_cache import digest
from ..template.capabilities import probe_capabilities
from ..template.probing import ProbeRenderer, RenderableTemplate
from ..template.switches import probe_switches
from .calls.blocks import analyze_blocks, block_markers, block_tokens, turn_end
from .calls.call_ids import analyze_id_format
from .calls.closers import with_implied_end
from .calls.instructions import render_instructions
from .calls.prose import apply_prose, prose_can_fill
from .calls.tools import analyze_tools
from .content import analyze_content
from .end_of_turn import analyze_end_of_turn, analyze_stop_markers
from .formats import GENERIC, detect_format
from .model import GenerationPrompts, ReasoningAnalysis, TemplateAnalysis, ToolFormatMode, ToolsAnalysis
from .patterns import marker_positions
from .reasoning import analyze_reasoning, classify_reasoning
from .variants import VariantRenderer
from .workarounds import Draft, apply_workarounds

__all__ = ["analyze_template", "clear_cache"]

# Per template, and small: room for several times the bundled set, so a loop over every template (a check, a test
# sweep) never evicts what the next pass needs (with fewer entries than templates, LRU re-analyses every one).
_CACHE_SIZE = 512
_cache: OrderedDict[tuple[str, str, str], TemplateAnalysis] = OrderedDict()
_lock = threading.Lock()


def analyze_template(template: RenderableTemplate, name: str = "<string>") -> TemplateAnalysis:
    """The analysis of ``template`` (cached by source and BOS/EOS strings)."""
    key = (template.source, template.bos_token, template.eos_token)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            # Identical sources under another name (Hermes 2 Pro and Hermes 3 share one) share the work.
            return cached if cached.template == name else dataclasses.replace(cached, template=name)
    result = _from_disk_or_analyze(template, name)
    with _lock:
        _cache[key] = result
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def _from_disk_or_analyze(template: RenderableTemplate, name: str) -> TemplateAnalysis:
    """The analysis a process saved before for this source and these tokens (:mod:`autoparser.disk_cache`), or a new
    one, saved for the next process."""
    key = digest(template.source, template.bos_token, template.eos_token)
    result = disk_cache.remembered("analysis", key, TemplateAnalysis, lambda: _analyze(template, name))
    return result if result.template == name else dataclasses.replace(result, template=name)


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def generation_prompt(renderer: VariantRenderer, enable_thinking: bool) -> str:
    """What ``add_generation_prompt`` appends after a user turn (thinking on or off through every switch)."""
    return renderer.generation_prompt(enable_thinking)


def _analyze(template: RenderableTemplate, name: str) -> TemplateAnalysis:
    probe = ProbeRenderer(template)
    caps = probe_capabilities(probe)
    # The reasoning switches, whatever the template calls them: renders that compare thinking on and off set them to
    # match (R2, the generation prompts, the thinking instructions of phase P).
    probe.switches = probe_switches(probe, template.source)
    renderer = VariantRenderer(probe, caps)
    reasoning = analyze_reasoning(renderer, caps.supports_tool_calls, caps.supports_typed_content)
    content = analyze_content(renderer, reasoning)
    tools = analyze_tools(renderer, reasoning, caps) if caps.supports_tool_calls else ToolsAnalysis()
    draft = Draft(reasoning, content, tools)
    fmt = detect_format(template.source)
    blocks = analyze_blocks(renderer, caps)
    if blocks.enabled and fmt == GENERIC:
        # Headed blocks (analysis/calls/blocks.py): the parser reads the blocks; the marker fields describe them.
        draft.reasoning, draft.content, draft.tools = block_markers(blocks, draft.reasoning, draft.tools)
        draft.preserved_override = block_tokens(blocks)
    applied = apply_workarounds(template.source, draft)
    stated: list[str] = []
    if fmt == GENERIC and not blocks.enabled and prose_can_fill(draft):
        # Formats stated only in the instructions the template writes (a dedicated format's parser knows its own).
        texts = render_instructions(renderer, caps.supports_system_role, probe.switches)
        stated = apply_prose(texts, draft)
    draft.tools = dataclasses.replace(draft.tools, format=with_implied_end(draft.tools.format, template.source))
    prompts = GenerationPrompts(generation_prompt(renderer, True), generation_prompt(renderer, False))
    end_of_turn = turn_end(blocks, analyze_end_of_turn(renderer, template.eos_token, template.source, prompts.thinking))
    return TemplateAnalysis(
        template=name,
        format=fmt,
        capabilities=caps,
        reasoning=classify_reasoning(draft.reasoning, prompts, template.source, draft.content.start),
        content=draft.content,
        tools=draft.tools,
        generation_prompts=prompts,
        preserved_tokens=tuple(_preserved_tokens(draft)),
        workarounds=tuple(applied),
        prose=tuple(stated),
        end_of_turn=end_of_turn,
        stop_markers=analyze_stop_markers(
            renderer, end_of_turn, template.eos_token, template.source, caps.supports_tool_calls
        ),
        id_format=analyze_id_format(renderer) if caps.supports_tool_calls else "openai",
        blocks=blocks,
        switches=probe.switches,
    )


def _preserved_tokens(draft: Draft) -> list[str]:
    """Every marker, trimmed and de-duplicated: a tokenizer must not split them."""
    if draft.preserved_override is not None:
        return list(draft.preserved_override)
    reasoning: ReasoningAnalysis = draft.reasoning
    fmt, function, args, call_id = draft.tools.format, draft.tools.function, draft.tools.arguments, draft.tools.call_id
    sections = [fmt.section_start, fmt.section_end]
    if fmt.mode is ToolFormatMode.PYTHONIC:
        # A pythonic wrapper may hold a code fence (```python): only its markup tokens are tokens.
        sections = [m.group() for section in sections for m in marker_positions(section)]
    name_prefix, dict_tokens = function.name_prefix, []
    if fmt.mode is ToolFormatMode.TAG_WITH_DICT:
        # The dict's string delimiters are tokens; a name prefix such as Gemma's `call:` is text.
        dict_tokens = [draft.tools.dict_values.quote_open, draft.tools.dict_values.quote_close]
        name_prefix = "".join(m.group() for m in marker_positions(name_prefix))
    markers = [
        reasoning.start, reasoning.end, draft.content.start, draft.content.end,
        *sections, fmt.per_call_start, fmt.per_call_end, fmt.implied_end if fmt.implied_end_written else "",
        name_prefix, function.name_suffix, function.close, *dict_tokens,
        args.start, args.end, args.name_prefix, args.name_suffix, args.value_prefix, args.value_suffix,
        args.separator, call_id.prefix, call_id.suffix, *draft.extra_preserved,
    ]  # fmt: skip
    tokens: list[str] = []
    for marker in markers:
        token = marker.strip()
        if token and token not in tokens and not _is_phrase(token):
            tokens.append(token)
    return tokens


_PHRASE = re.compile(r"[A-Za-z][A-Za-z']*(?: [A-Za-z']+)+[:.]?")


def _is_phrase(marker: str) -> bool:
    """Words a prompt told the model to write ("Here is my response:"): text, not a token to keep whole."""
    return _PHRASE.fullmatch(marker) is not None
