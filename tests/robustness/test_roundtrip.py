"""Round trip on well-formed output: what a template renders parses back to what was rendered (calls, content,
reasoning, ids, no warnings), and streaming it in any chunking ends equal to ``parse()`` (P3): one character per
feed, seeded random pieces, and cuts inside every marker the analysis knows.
"""

from __future__ import annotations

import json

import pytest

from autoparser import bundled_templates

from ..support.outputs import Output, chat, markers, outputs, skip_reasons, tool_templates
from .promises import char_chunks, check_stream, marker_cut_chunkings, random_chunks

OUTPUTS = [o for t in bundled_templates() for o in outputs(t)]
CASES = [pytest.param(o, id=o.key) for o in OUTPUTS]


def test_enough_outputs() -> None:
    with_calls = {o.template for o in OUTPUTS if o.calls}
    assert len(with_calls) >= 40, sorted(set(tool_templates()) - with_calls)
    # The tool-calling templates left out, and why (rendering tool history fails or shows no call):
    assert set(skip_reasons()) <= set(tool_templates()) - with_calls


@pytest.mark.parametrize("output", CASES)
def test_parse_equals_the_rendering(output: Output) -> None:
    message = chat(output.template).parse(output.text)
    assert not message.warnings, message.warnings
    assert message.content == output.content.strip()
    assert message.reasoning_content == output.reasoning
    got = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
    assert got == [(c.name, c.arguments) for c in output.calls]
    for call, want in zip(message.tool_calls, output.calls, strict=True):
        if want.id and call.id:
            assert call.id == want.id


@pytest.mark.parametrize("output", CASES)
def test_stream_equals_parse(output: Output) -> None:
    params = chat(output.template)
    expected = params.parse(output.text)
    chunkings = {"1 char": char_chunks(output.text)}
    chunkings |= {f"random {seed}": random_chunks(output.text, seed) for seed in (1, 2, 3)}
    cuts = marker_cut_chunkings(output.text, markers(output.template))
    chunkings |= {f"marker cut {i}": pieces for i, pieces in enumerate(cuts)}
    failures = {label: check_stream(params, pieces, expected) for label, pieces in chunkings.items()}
    failures = {label: [str(f) for f in found] for label, found in failures.items() if found}
    assert not failures, failures
