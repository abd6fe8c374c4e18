"""The request normalisation piece by piece: content format detection, call id mapping, message shaping, tool checks,
and the defaults ``apply()`` takes from the template (thinking, parallel calls)."""

from __future__ import annotations

import copy
import json
import re

import pytest

from autoparser import ChatTemplate
from autoparser.errors import RequestError, TemplateError
from autoparser.requests import content_format, normalize_messages, request_profile, with_defaults
from autoparser.requests.call_ids import IdMap, accepts
from autoparser.requests.profile import RequestProfile

from ..support import vllm_like
from ..support.requests import FOREIGN_IDS, base_messages, base_tools

# --- content format --------------------------------------------------------------------------------------------------

LOOPS = {
    "direct": "{% for m in messages %}{% for c in m['content'] %}{{ c.text }}{% endfor %}{% endfor %}",
    "attribute": "{% for m in messages %}{% for c in m.content %}{{ c.text }}{% endfor %}{% endfor %}",
    "alias": "{% set loop_messages = messages[1:] %}{% for m in loop_messages %}{% for c in m.content | list %}"
    "{{ c }}{% endfor %}{% endfor %}",
    "macro": "{% macro show(x) %}{% for c in x %}{{ c.text }}{% endfor %}{% endmacro %}"
    "{% for m in messages %}{{ show(m.content) }}{% endfor %}",
    "named content": "{% for m in messages %}{% set content = m.content %}{% for c in content %}{{ c }}{% endfor %}"
    "{% endfor %}",
}
STRINGS = {
    "plain": "{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}",
    "loop over messages only": "{% for m in messages %}{% for k in m %}{{ k }}{% endfor %}{% endfor %}",
    "content of a tool": "{% for t in tools %}{% for c in t.content %}{{ c }}{% endfor %}{% endfor %}",
    "syntax error": "{% for m in messages %}",
}


@pytest.mark.parametrize("source", LOOPS.values(), ids=LOOPS)
def test_templates_looping_over_content_read_parts(source: str) -> None:
    assert content_format(source) == "openai"


@pytest.mark.parametrize("source", STRINGS.values(), ids=STRINGS)
def test_other_templates_read_strings(source: str) -> None:
    assert content_format(source) == "string"


@pytest.mark.parametrize(
    ("template", "expected"),
    [("Qwen3.5-4B", "openai"), ("Qwen-Qwen3-0.6B", "string"), ("google-gemma-4-31B-it", "openai")],
)
def test_bundled_templates(template: str, expected: str) -> None:
    assert content_format(ChatTemplate.load(template).source) == expected


def test_gemma4_reads_parts_for_users_but_a_string_for_the_system_message() -> None:
    profile = request_profile(ChatTemplate.load("google-gemma-4-31B-it"))
    assert profile.content_format == "openai"
    assert "user" in profile.parts_roles and "system" not in profile.parts_roles


# --- call ids --------------------------------------------------------------------------------------------------------


def test_accepted_ids_stay_and_others_map_to_nine_alphanumerics() -> None:
    ids = IdMap("alnum9")
    assert ids.map("a1B2c3D4e") == "a1B2c3D4e"
    mapped = [ids.map(i) for i in (*FOREIGN_IDS, "call_p4r1s")]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", m) for m in mapped)
    assert len(set(mapped)) == len(mapped)
    assert [IdMap("alnum9").map(i) for i in (*FOREIGN_IDS, "call_p4r1s")] == mapped  # stable across conversations
    assert IdMap("openai").map(FOREIGN_IDS[0]) == FOREIGN_IDS[0]  # templates that take any id get it as sent


def test_colliding_stand_ins_get_the_next_salt(monkeypatch: pytest.MonkeyPatch) -> None:
    from autoparser.requests import call_ids

    monkeypatch.setattr(call_ids, "_alnum9", lambda call_id, salt: "AAAAAAAA" + str(salt))
    ids = IdMap("alnum9")
    assert ids.map("x-1") == "AAAAAAAA0" and ids.map("x-2") == "AAAAAAAA1" and ids.map("x-1") == "AAAAAAAA0"
    assert accepts("alnum9", "AAAAAAAA1") and not accepts("alnum9", "call_1")


def test_mistral_gets_mapped_ids_in_calls_and_results_alike() -> None:
    tmpl = ChatTemplate.load("mistralai-Mistral-Nemo-Instruct-2407")
    messages, tools = base_messages(), base_tools()
    prompt = tmpl.apply(messages, tools=tools).prompt
    mapped = [IdMap("alnum9").map(i) for i in ("call_p4r1s", "call_t0ky0")]
    for call_id in mapped:
        assert prompt.count(call_id) == 2, call_id  # once in the call, once in its result
    assert "call_p4r1s" not in prompt
    assert tmpl.apply(messages, tools=tools).prompt == prompt  # the same conversation renders the same prompt


NAMES_BY_ID = (
    "{% for m in messages %}{% if m.role == 'assistant' and m.tool_calls %}<calls>{% for c in m.tool_calls %}"
    "<call>{{ c.id }}|{{ c.function.arguments | tojson }}</call>{% endfor %}</calls>"
    "{% elif m.role == 'tool' %}<result>{{ m.tool_call_id }}|{{ m.content }}</result>"
    "{% else %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endif %}{% endfor %}"
)


def test_a_template_that_renders_ids_in_place_of_names_gets_named_ids() -> None:
    """Kimi-K2's first Thinking revision writes a call's id where its name goes (functions.NAME:INDEX) and never the
    name: a foreign id would leave the model without the name, so it becomes the name's id, in the call and in its
    result alike; an id already of that shape stays."""
    for tmpl in (ChatTemplate.load("hfjs-moonshotai-Kimi-K2-Thinking"), ChatTemplate(NAMES_BY_ID, name="ids.jinja")):
        assert tmpl.analysis.id_format == "named", tmpl.name
        messages = [
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_p4r1s", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
                    {
                        "id": "functions.get_time:7",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_p4r1s", "content": "sunny"},
            {"role": "tool", "tool_call_id": "functions.get_time:7", "content": "noon"},
        ]
        prompt = tmpl.apply(messages, tools=base_tools()).prompt
        assert prompt.count("functions.get_weather:0") == 2, prompt  # the call and its result
        assert prompt.count("functions.get_time:7") == 2 and "call_p4r1s" not in prompt
    assert ChatTemplate.load("moonshotai-Kimi-K2").analysis.id_format == "openai"  # it writes the name itself
    assert ChatTemplate.load("Qwen3.5-4B").analysis.id_format == "openai"


# --- messages --------------------------------------------------------------------------------------------------------

STRING_PROFILE = RequestProfile()
PARTS_PROFILE = RequestProfile(content_format="openai", parts_roles=frozenset({"user", "assistant"}), media=frozenset())


def test_the_request_is_not_mutated() -> None:
    messages = base_messages()
    before = copy.deepcopy(messages)
    normalize_messages(messages, PARTS_PROFILE)
    normalize_messages(messages, RequestProfile(id_format="alnum9", object_arguments=False))
    assert messages == before


def test_string_roles_join_text_parts_and_null_becomes_empty() -> None:
    out = normalize_messages(base_messages(), STRING_PROFILE).messages
    assert out[1]["content"] == "Weather in Paris and Tokyo\nfor the next 2 days?"
    assert out[2]["content"] == ""
    assert out[4]["content"] == "light rain, 18C"  # tool results are joined too


def test_parts_roles_get_lists_and_tool_results_stay_strings() -> None:
    out = normalize_messages(base_messages(), PARTS_PROFILE).messages
    assert out[0]["content"] == "You are a weather assistant."  # system is not a parts role here
    assert out[1]["content"][1] == {"type": "text", "text": "for the next 2 days?"}
    assert out[2]["content"] == ""  # a turn with calls is its own case: not a parts role here
    assert out[5]["content"] == [{"type": "text", "text": "Paris: sunny, 24C. Tokyo: light rain, 18C."}]
    assert out[4]["content"] == "light rain, 18C"


def test_arguments_become_objects_or_text_as_the_template_reads_them() -> None:
    objects = normalize_messages(base_messages(), STRING_PROFILE).messages[2]["tool_calls"][0]["function"]
    assert objects["arguments"] == {"city": "Paris", "days": 2}
    text_profile = RequestProfile(object_arguments=False)
    messages = base_messages()
    messages[2]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}  # some clients send objects
    text = normalize_messages(messages, text_profile).messages[2]["tool_calls"]
    assert text[0]["function"]["arguments"] == '{"city": "Paris"}'
    assert text[1]["function"]["arguments"] == '{"city": "Tokyo", "days": 2}'


@pytest.mark.parametrize(("sent", "expected"), [("", {}), (None, {}), ("{}", {})])
def test_empty_arguments_are_an_empty_object(sent: object, expected: object) -> None:
    messages = base_messages()
    messages[2]["tool_calls"][0]["function"]["arguments"] = sent
    out = normalize_messages(messages, STRING_PROFILE)
    assert out.messages[2]["tool_calls"][0]["function"]["arguments"] == expected and not out.warnings


@pytest.mark.parametrize("sent", ['{"city": "Par', "[1, 2]", '"text"'])
def test_arguments_that_are_not_a_json_object_are_kept_with_a_warning(sent: str) -> None:
    messages = base_messages()
    messages[2]["tool_calls"][0]["function"]["arguments"] = sent
    out = normalize_messages(messages, STRING_PROFILE)
    assert out.messages[2]["tool_calls"][0]["function"]["arguments"] == sent
    assert out.warnings == ["messages[2].tool_calls[0].function.arguments is not a JSON object; the template gets the "
                            "text as it was sent"]  # fmt: skip


def test_empty_tool_calls_are_dropped() -> None:
    messages = base_messages()
    messages[5]["tool_calls"] = []
    assert "tool_calls" not in normalize_messages(messages, STRING_PROFILE).messages[5]


def test_developer_becomes_system_and_systems_merge_first() -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": [{"type": "text", "text": "Use metric units."}]},
    ]
    out = normalize_messages(messages, STRING_PROFILE).messages
    assert out == [
        {"role": "system", "content": "Be brief.\n\nUse metric units."},
        {"role": "user", "content": "Hi"},
    ]
    kept = normalize_messages(messages, RequestProfile(keeps_developer=True)).messages
    assert [m["role"] for m in kept] == ["developer", "user", "system"]


def test_normalisation_matches_the_vllm_mirror_on_a_string_template() -> None:
    """Where vLLM does not garble, both normalisations give the same messages (reasoning names aside)."""
    tmpl = ChatTemplate.load("Qwen-Qwen3-0.6B")
    ours = normalize_messages(base_messages(), request_profile(tmpl)).messages
    theirs = vllm_like.vllm_messages(base_messages(), tmpl.source)
    strip = ("reasoning", "reasoning_content")
    assert [{k: v for k, v in m.items() if k not in strip} for m in ours] == [
        {k: v for k, v in m.items() if k not in strip} for m in theirs
    ]


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("hi", "messages"),
        ({"role": "user"}, "messages"),
        (["hi"], "messages[0]"),
        ([{"content": "hi"}], "messages[0].role"),
        ([{"role": "user", "content": 3}], "messages[0].content"),
        ([{"role": "user", "content": [{"type": "file", "file": {}}]}], "messages[0].content[0].type"),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "messages[0].content[0].text"),
        ([{"role": "assistant", "tool_calls": {"id": "x"}}], "messages[0].tool_calls"),
        ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}], "messages[0].tool_calls[0]"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}], "messages[0]"),
        ([{"role": "assistant", "content": "x", "reasoning_content": ["a"]}], "messages[0].reasoning_content"),
    ],
)
def test_malformed_requests_name_the_field(messages: object, field: str) -> None:
    with pytest.raises(RequestError) as raised:
        normalize_messages(messages, STRING_PROFILE)  # type: ignore[arg-type]
    assert raised.value.field.startswith(field), raised.value


def test_an_image_for_a_text_template_is_refused_with_the_part_named() -> None:
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]
    with pytest.raises(RequestError, match=r"messages\[0\]\.content\[0\]: an image part, which template 'Qwen"):
        ChatTemplate.load("Qwen-Qwen3-0.6B").apply(messages)


def test_an_image_reaches_a_template_that_shows_it() -> None:
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}, "What is it?"]}]
    prompt = ChatTemplate.load("Qwen3.5-4B").apply(messages).prompt
    assert "<|vision_start|><|image_pad|><|vision_end|>What is it?" in prompt


# --- tools -----------------------------------------------------------------------------------------------------------


def test_defaults_only_where_the_tools_as_sent_fail() -> None:
    tools = base_tools()
    hermes = ChatTemplate.load("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")
    user = [{"role": "user", "content": "hi"}]
    with pytest.raises(Exception, match="description"):  # Hermes concatenates the description: as sent, it fails
        vllm_like.render(hermes.source, user, tools)
    assert hermes.apply(user, tools=tools).prompt == vllm_like.render(hermes.source, user, with_defaults(tools))
    qwen = ChatTemplate.load("Qwen3.5-4B")  # renders the tools as sent: they reach the prompt unchanged
    assert qwen.apply([{"role": "user", "content": "hi"}], tools=tools).prompt == vllm_like.render(
        qwen.source, [{"role": "user", "content": "hi"}], tools
    )


def test_null_description_is_missing_not_none() -> None:
    tools = [{"type": "function", "function": {"name": "ping", "description": None, "parameters": None}}]
    prompt = ChatTemplate.load("Qwen-Qwen3-0.6B").apply([{"role": "user", "content": "hi"}], tools=tools).prompt
    assert "None" not in prompt and "null" not in prompt and '"name": "ping"' in prompt


# --- defaults taken from the template --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    ["google-gemma-4-31B-it", "mistralai-Ministral-3-14B-Reasoning-2512", "deepcogito-cogito-v1-preview-qwen-14B",
     "Qwen3.5-4B", "meituan-longcat-LongCat-Flash-Chat"],
)  # fmt: skip
def test_no_thinking_flag_renders_the_template_default(template: str) -> None:
    tmpl = ChatTemplate.load(template)
    messages = [{"role": "user", "content": "hi"}]
    assert tmpl.apply(messages).prompt == vllm_like.render(tmpl.source, messages, None)


@pytest.mark.parametrize(("template", "thinking"), [("google-gemma-4-31B-it", False), ("Qwen3.5-4B", True)])
def test_the_parser_follows_the_default_thinking(template: str, thinking: bool) -> None:
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}])
    assert params._generated.request.enable_thinking is thinking


@pytest.mark.parametrize(("template", "parallel"), [("Qwen3.5-4B", True), ("meta-llama-Llama-3.1-8B-Instruct", False)])
def test_parallel_calls_default_to_what_the_template_renders(template: str, parallel: bool) -> None:
    tools = base_tools()
    params = ChatTemplate.load(template).apply([{"role": "user", "content": "hi"}], tools=tools)
    assert params._generated.request.parallel_tool_calls is parallel


def test_kimi_error_says_why() -> None:
    with pytest.raises(TemplateError, match="sandbox refuses too"):
        ChatTemplate.load("Kimi-K2-Instruct").apply(base_messages(), tools=base_tools())


def test_arguments_json_round_trip() -> None:
    """The arguments the template sees are the client's, value for value."""
    out = normalize_messages(base_messages(), STRING_PROFILE).messages
    sent = [json.loads(c["function"]["arguments"]) for c in base_messages()[2]["tool_calls"]]
    assert [c["function"]["arguments"] for c in out[2]["tool_calls"]] == sent
