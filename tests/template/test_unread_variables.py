"""Renders that differ only in variables a template never reads are done once: the probe renderer's memo keys
leave them out, and ``apply()`` does not probe the thinking default of a template that reads no thinking switch.
Both must give what rendering would."""

from __future__ import annotations

import pytest

import autoparser.api
from autoparser import ChatTemplate
from autoparser.cache import clear_caches
from autoparser.template import JinjaChatTemplate
from autoparser.template.environment import variables_read
from autoparser.template.probing import ProbeRenderer
from tests.support.sample import sampled

USER = [{"role": "user", "content": "Hi"}]
TOOL = {"type": "function", "function": {"name": "f", "description": "F", "parameters": {"type": "object"}}}
READS_ALL = (
    "{% if tools %}[{{ tools | length }} tools]{% endif %}{% if enable_thinking %}<think>{% endif %}"
    "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}>{% endif %}{{ effort }}"
)
READS_MESSAGES = "{% for m in messages %}{{ m.content }}{% endfor %}"


def test_variants_in_unread_variables_share_one_render() -> None:
    renderer = ProbeRenderer(JinjaChatTemplate(READS_MESSAGES))
    outputs = {
        renderer.render(USER, tools, add_generation_prompt=prompt, enable_thinking=thinking, variables={"effort": e})
        for tools in (None, [TOOL])
        for prompt in (False, True)
        for thinking in (None, True, False)
        for e in ("low", "high")
    }
    assert outputs == {"Hi"}
    assert len(renderer._cache) == 1


def test_variants_in_read_variables_render_apart() -> None:
    renderer = ProbeRenderer(JinjaChatTemplate(READS_ALL))
    outputs = [
        renderer.render(USER, tools, add_generation_prompt=prompt, enable_thinking=thinking, variables={"effort": e})
        for tools in (None, [TOOL])
        for prompt in (False, True)
        for thinking in (False, True)
        for e in ("low", "high")
    ]
    assert len(set(outputs)) == len(outputs) == 16
    assert "[1 tools]<think>Hi>high" in outputs


@pytest.mark.parametrize("name", sampled())
def test_thinking_default_without_probe_is_the_probed_one(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    template = ChatTemplate.load(name)
    reads = variables_read(template.source)
    if "enable_thinking" in reads:
        pytest.skip("reads enable_thinking: the thinking default is probed by rendering")  # not counted as passing
    clear_caches()
    told = template._thinking_default([TOOL], {})
    clear_caches()
    # The same question with the shortcut ruled out (every variable counts as read): the three renders decide.
    monkeypatch.setattr(autoparser.api, "variables_read", lambda source: reads | {"enable_thinking"})
    assert template._thinking_default([TOOL], {}) is told
    clear_caches()
