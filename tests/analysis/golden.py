"""Compare our analysis with the reference implementation's (tests/data/golden-analysis.jsonl).

The reference reports reasoning modes NONE / TAG_BASED / TOOLS_ONLY; our DELIMITER, FORCED_OPEN and
FORCED_CLOSED are refinements of its TAG_BASED, so they are mapped back before comparing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autoparser.analysis.model import TemplateAnalysis

DATA = Path(__file__).parent.parent / "data"
GOLDEN: dict[str, dict[str, Any]] = {
    json.loads(line)["template"].removesuffix(".jinja"): json.loads(line)
    for line in (DATA / "golden-analysis.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
}
_REFINED_TAG_MODES = {"DELIMITER", "FORCED_OPEN", "FORCED_CLOSED"}


def reference_view(analysis: TemplateAnalysis) -> dict[str, Any]:
    """Our analysis in the golden file's flat vocabulary."""
    r, c, t = analysis.reasoning, analysis.content, analysis.tools
    fmt, fn, args, cid = t.format, t.function, t.arguments, t.call_id
    mode = r.mode.value
    return {
        "reasoning.mode": "TAG_BASED" if mode in _REFINED_TAG_MODES else mode,
        "reasoning.start": r.start,
        "reasoning.end": r.end,
        "content.mode": c.mode.value,
        "content.start": c.start,
        "content.end": c.end,
        "tools.mode": fmt.mode.value,
        "section_start": fmt.section_start,
        "section_end": fmt.section_end,
        "per_call_start": fmt.per_call_start,
        "per_call_end": fmt.per_call_end,
        "fun_name_is_key": fmt.fun_name_is_key,
        "tools_array_wrapped": fmt.tools_array_wrapped,
        "function_field": fmt.function_field,
        "name_field": fmt.name_field,
        "args_field": fmt.args_field,
        "id_field": fmt.id_field,
        "gen_id_field": fmt.gen_id_field,
        "parameter_order": list(fmt.parameter_order),
        "func.name_prefix": fn.name_prefix,
        "func.name_suffix": fn.name_suffix,
        "func.close": fn.close,
        "args.start": args.start,
        "args.end": args.end,
        "args.name_prefix": args.name_prefix,
        "args.name_suffix": args.name_suffix,
        "args.value_prefix": args.value_prefix,
        "args.value_suffix": args.value_suffix,
        "args.separator": args.separator,
        "call_id.pos": cid.position.value,
        "call_id.prefix": cid.prefix,
        "call_id.suffix": cid.suffix,
        "preserved_tokens": sorted(analysis.preserved_tokens),
    }


def differences(name: str, analysis: TemplateAnalysis) -> dict[str, tuple[Any, Any]]:
    """``{field: (ours, reference)}`` for every field that differs, capabilities and generation prompts included."""
    golden = GOLDEN[name]
    diffs: dict[str, tuple[Any, Any]] = {}
    caps = analysis.capabilities.to_dict()
    for key, expected in golden["caps"].items():
        if caps[key] != expected:
            diffs[f"caps.{key}"] = (caps[key], expected)
    if golden.get("analysis") is not None and not golden["specialized"]:
        ours = reference_view(analysis)
        for key, expected in golden["analysis"].items():
            if key == "preserved_tokens":
                expected = sorted(expected)
            if ours[key] != expected:
                diffs[key] = (ours[key], expected)
    prompts = {True: analysis.generation_prompts.thinking, False: analysis.generation_prompts.no_thinking}
    for run in golden["apply"]:
        if not run["tools"] and prompts[run["enable_thinking"]] != run["generation_prompt"]:
            key = f"generation_prompt.thinking={str(run['enable_thinking']).lower()}"
            diffs[key] = (prompts[run["enable_thinking"]], run["generation_prompt"])
    return diffs
