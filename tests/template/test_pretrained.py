"""``ChatTemplate.from_pretrained``: a Hugging Face model's chat template(s) from its files, rendered as transformers
renders them.

The model directories are written by transformers itself (``save_pretrained``, in both of its formats:
``chat_template.jinja`` + ``additional_chat_templates/`` and the legacy ``chat_template`` list in
``tokenizer_config.json``) from a tokenizer built here, so nothing is downloaded, and transformers loads them back
to render the reference prompts: which named template a request renders with, and the BOS/EOS tokens, are compared
with ``apply_chat_template`` rather than written down. The templates are bundled ones (Hermes 3's tool_use
template, Gemma 2 and Phi-3.5 as the plain ones).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate, cli
from autoparser.errors import TemplateError
from autoparser.template import JinjaChatTemplate
from autoparser.template.hf_files import choose_template
from autoparser.template.limits import RenderLimits

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

HERMES = ChatTemplate.load("NousResearch-Hermes-3-Llama-3.1-8B-tool_use").source  # prints bos_token, reads tools
GEMMA = ChatTemplate.load("google-gemma-2-2b-it").source  # prints bos_token, no tools
PHI = ChatTemplate.load("microsoft-Phi-3.5-mini-instruct").source  # prints eos_token
BOS, EOS = "<|begin_of_text|>", "<|im_end|>"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOOLS: list[dict[str, Any]] = json.loads((EXAMPLES / "tools.json").read_text(encoding="utf-8"))
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'

# Named template sets as a model's files hold them; a bare string is a model with one template.
SETS: dict[str, str | dict[str, str]] = {
    "single": GEMMA,
    "default+tool_use": {"default": GEMMA, "tool_use": HERMES},
    "default+rag": {"default": GEMMA, "rag": PHI},  # tools, but no tool_use: default
    "tool_use+rag": {"tool_use": HERMES, "rag": PHI},  # no default: only a request with tools renders
    "tool_use": {"tool_use": HERMES},
}
TOOL_CASES = {"no tools": None, "empty tools": [], "tools": TOOLS}


def _tokenizer(chat_template: str | dict[str, str] | None) -> Any:
    """A tokenizer built here (one-word vocabulary: only its chat template and special tokens matter)."""
    model = tokenizers.Tokenizer(tokenizers.models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=model, bos_token=BOS, eos_token=EOS)
    tok.chat_template = chat_template
    return tok


def _model_dir(path: Path, chat_template: str | dict[str, str], *, jinja_files: bool = True) -> Path:
    """A model directory as transformers saves it: template files (``jinja_files``) or the config's entries."""
    _tokenizer(chat_template).save_pretrained(path, save_jinja_files=jinja_files)
    return path


def _transformers(path: Path, tools: Any, **kwargs: Any) -> str | type[Exception]:
    """transformers' prompt for MESSAGES from the saved model, or the exception type it raises."""
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(path)
    try:
        return tok.apply_chat_template(MESSAGES, tools=tools, tokenize=False, add_generation_prompt=True, **kwargs)
    except Exception as err:  # the type is compared
        return type(err)


def _ours(call: Any) -> str | type[Exception]:
    try:
        return call()
    except TemplateError:
        return ValueError  # transformers' error for a request no template renders


def _config(path: Path) -> dict[str, Any]:
    return json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))


def _write_config(path: Path, **changes: Any) -> None:
    config = {**_config(path), **changes}
    (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")


# --- the selection rule, against transformers ----------------------------------------------------------------


@pytest.mark.parametrize("jinja_files", [True, False], ids=["jinja-files", "config-list"])
@pytest.mark.parametrize("tools", list(TOOL_CASES.values()), ids=list(TOOL_CASES))
@pytest.mark.parametrize("name", list(SETS))
def test_render_picks_the_template_transformers_picks(tmp_path: Path, name: str, tools: Any, jinja_files: bool) -> None:
    path = _model_dir(tmp_path, SETS[name], jinja_files=jinja_files)
    theirs = _transformers(path, tools)
    tmpl = ChatTemplate.from_pretrained(path)
    assert _ours(lambda: tmpl.render(MESSAGES, tools, add_generation_prompt=True)) == theirs
    if not isinstance(theirs, str):
        assert theirs is ValueError  # the error is transformers' "no default template", not some other failure


@pytest.mark.parametrize("tools", list(TOOL_CASES.values()), ids=list(TOOL_CASES))
@pytest.mark.parametrize("name", ["default+tool_use", "default+rag", "tool_use+rag"])
def test_apply_and_params_for_prompt_pick_it_too(tmp_path: Path, name: str, tools: Any) -> None:
    """``apply()`` sends transformers' prompt, and the parser reads the calls of the template it rendered with."""
    path = _model_dir(tmp_path, SETS[name])
    theirs = _transformers(path, tools)
    tmpl = ChatTemplate.from_pretrained(path)
    assert _ours(lambda: tmpl.apply(MESSAGES, tools=tools).prompt) == theirs
    if not isinstance(theirs, str):
        with pytest.raises(TemplateError, match="no 'default' chat template"):
            tmpl.params_for_prompt("", tools=tools)
        return
    params = tmpl.apply(MESSAGES, tools=tools)
    from_prompt = tmpl.params_for_prompt(theirs, tools=tools)
    assert from_prompt.warnings == () and from_prompt.generation_prompt == params.generation_prompt
    hermes = theirs.startswith(f"{BOS}<|im_start|>system\nYou are a function calling AI model")
    assert hermes == (tools is not None and "tool_use" in SETS[name])
    for chat in (params, from_prompt):
        message = chat.parse(CALL)
        if hermes and tools:
            assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
                ("get_weather", {"city": "Paris"})
            ]
        else:
            assert message.tool_calls == () and message.content == CALL  # Gemma 2 has no tool calls


@pytest.mark.parametrize("tools", list(TOOL_CASES.values()), ids=list(TOOL_CASES))
def test_choose_template_is_transformers_get_chat_template(tools: Any) -> None:
    for names in (["default"], ["default", "tool_use"], ["tool_use"], ["default", "rag"], ["rag", "tool_use"]):
        tok = _tokenizer({n: f"<{n}>" for n in names})
        try:
            theirs = tok.get_chat_template(None, tools)
        except ValueError:
            theirs = None
        chosen = choose_template(names, tools)
        assert (f"<{chosen}>" if chosen else None) == theirs


# --- file shapes, special tokens -------------------------------------------------------------------------------


def test_named_templates_and_their_analyses(tmp_path: Path) -> None:
    tmpl = ChatTemplate.from_pretrained(_model_dir(tmp_path / "model", SETS["default+tool_use"]))
    assert list(tmpl.templates) == ["default", "tool_use"]
    assert (tmpl.source, tmpl.templates["default"].source, tmpl.templates["tool_use"].source) == (GEMMA, GEMMA, HERMES)
    assert (tmpl.name, tmpl.templates["tool_use"].name) == ("model", "model/tool_use")
    tool_use = tmpl.templates["tool_use"]
    assert (tool_use.bos_token, tool_use.eos_token) == (BOS, EOS)
    assert tmpl.analysis == tmpl.templates["default"].analysis  # the default's
    assert not tmpl.analysis.capabilities.supports_tools
    assert tool_use.analysis.tools == ChatTemplate(HERMES, BOS, EOS).analysis.tools
    assert tool_use.analysis.capabilities.supports_tools and tool_use.analysis.template == "model/tool_use"
    assert list(tool_use.templates) == ["default"] and tool_use.templates["default"] is tool_use  # one each
    copied = pickle.loads(pickle.dumps(tmpl))  # e.g. sent to a worker process
    assert copied.render(MESSAGES, TOOLS) == tmpl.render(MESSAGES, TOOLS) != copied.render(MESSAGES)
    only = ChatTemplate.from_pretrained(tmp_path / "model", "tool_use")
    assert (only.source, only.name, list(only.templates), only.bos_token) == (
        HERMES,
        "model/tool_use",
        ["default"],
        BOS,
    )
    # A name forces the template, with or without tools (transformers' chat_template="tool_use")
    assert only.render(MESSAGES, [], add_generation_prompt=True) == _transformers(
        tmp_path / "model", [], chat_template="tool_use"
    )
    # Hermes' tool_use template iterates tools: None fails in both
    assert _transformers(tmp_path / "model", None, chat_template="tool_use") is TypeError
    with pytest.raises(TemplateError, match="TypeError: 'NoneType' object is not iterable"):
        only.render(MESSAGES, add_generation_prompt=True)
    default = ChatTemplate.from_pretrained(tmp_path / "model", "default")
    assert default.render(MESSAGES, TOOLS, add_generation_prompt=True) == _transformers(
        tmp_path / "model", TOOLS, chat_template="default"
    )
    with pytest.raises(TemplateError, match=r"no chat template named 'rag': it has 'default', 'tool_use'"):
        ChatTemplate.from_pretrained(tmp_path / "model", "rag")


def test_no_default_template(tmp_path: Path) -> None:
    tmpl = ChatTemplate.from_pretrained(_model_dir(tmp_path, SETS["tool_use+rag"], jinja_files=False))
    assert list(tmpl.templates) == ["tool_use", "rag"]
    for without_tools in (
        lambda: tmpl.analysis,
        lambda: tmpl.render(MESSAGES),
        lambda: tmpl.apply(MESSAGES),
    ):
        with pytest.raises(TemplateError, match=r"no 'default' chat template.*'tool_use', 'rag'.*template_name"):
            without_tools()
    assert tmpl.apply(MESSAGES, tools=TOOLS).parse(CALL).tool_calls[0].name == "get_weather"
    assert ChatTemplate.from_pretrained(tmp_path, "rag").source == PHI


def test_every_file_shape(tmp_path: Path) -> None:
    """The same model read from each of its files: the directory, the config, the .jinja files, a processor's
    chat_template.json; the special tokens always come from tokenizer_config.json."""
    jinja = _model_dir(tmp_path / "jinja", SETS["default+tool_use"])
    listed = _model_dir(tmp_path / "listed", SETS["default+tool_use"], jinja_files=False)
    single = _model_dir(tmp_path / "single", PHI, jinja_files=False)
    processor = tmp_path / "processor"
    _model_dir(processor, PHI)
    (processor / "chat_template.jinja").unlink()
    (processor / "chat_template.json").write_text(json.dumps({"chat_template": PHI}), encoding="utf-8")
    shapes: dict[Path, tuple[str, list[str]]] = {
        jinja: (GEMMA, ["default", "tool_use"]),
        jinja / "tokenizer_config.json": (GEMMA, ["default", "tool_use"]),  # no chat_template: the files beside it
        jinja / "chat_template.jinja": (GEMMA, ["default"]),  # a .jinja file is one template
        jinja / "additional_chat_templates" / "tool_use.jinja": (HERMES, ["default"]),
        listed: (GEMMA, ["default", "tool_use"]),
        listed / "tokenizer_config.json": (GEMMA, ["default", "tool_use"]),
        single: (PHI, ["default"]),
        single / "tokenizer_config.json": (PHI, ["default"]),
        processor: (PHI, ["default"]),
        processor / "chat_template.json": (PHI, ["default"]),
    }
    for path, (source, names) in shapes.items():
        tmpl = ChatTemplate.from_pretrained(path)
        assert (tmpl.source, list(tmpl.templates), tmpl.bos_token, tmpl.eos_token) == (source, names, BOS, EOS), path
        assert isinstance(tmpl, ChatTemplate)
    assert ChatTemplate.from_pretrained(single).render(MESSAGES, add_generation_prompt=True) == _transformers(
        single, None
    )
    with pytest.raises(TemplateError, match="holds a single chat template; there is no 'tool_use'"):
        ChatTemplate.from_pretrained(jinja / "chat_template.jinja", "tool_use")
    assert ChatTemplate.from_pretrained(jinja / "chat_template.jinja", "default").source == GEMMA
    alone = tmp_path / "alone" / "model.jinja"  # no tokenizer_config.json beside it: no special tokens
    alone.parent.mkdir()
    alone.write_text(HERMES, encoding="utf-8")
    tmpl = ChatTemplate.from_pretrained(alone)
    assert (tmpl.source, tmpl.bos_token, tmpl.eos_token, tmpl.name) == (HERMES, "", "", "model.jinja")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda t: t, id="string"),
        pytest.param(
            lambda t: {"__type": "AddedToken", "content": t, "lstrip": False, "normalized": False, "special": True},
            id="added-token",
        ),
    ],
)
@pytest.mark.parametrize("jinja_files", [True, False], ids=["jinja-files", "config-list"])
def test_special_tokens_from_the_config(tmp_path: Path, token: Any, jinja_files: bool) -> None:
    """BOS/EOS as the config writes them (a string, or an older transformers' serialised AddedToken), rendered
    where the templates print them, as transformers renders them."""
    path = _model_dir(tmp_path, {"default": PHI, "tool_use": HERMES}, jinja_files=jinja_files)
    _write_config(path, bos_token=token("<s>"), eos_token=token("<|endoftext|>"))
    tmpl = ChatTemplate.from_pretrained(path)
    assert (tmpl.bos_token, tmpl.eos_token) == ("<s>", "<|endoftext|>")
    conversation = [*MESSAGES, {"role": "assistant", "content": "Sunny."}]
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(path)
    for tools in (None, TOOLS):  # Phi prints eos_token after the assistant turn, Hermes bos_token first
        theirs = tok.apply_chat_template(conversation, tools=tools, tokenize=False)
        assert tmpl.render(conversation, tools) == theirs
    assert "<|endoftext|>" in tmpl.render(conversation) and tmpl.render(conversation, TOOLS).startswith("<s>")
    _write_config(path, bos_token=None)
    assert ChatTemplate.from_pretrained(path).bos_token == ""


def test_limits_reach_the_named_templates(tmp_path: Path) -> None:
    limits = RenderLimits(max_output=100)
    tmpl = ChatTemplate.from_pretrained(_model_dir(tmp_path, SETS["default+tool_use"]), limits=limits)
    assert all(t.limits is limits for t in tmpl.templates.values())
    tmpl.limits = RenderLimits(max_output=50)
    with pytest.raises(TemplateError) as raised:
        tmpl.render(MESSAGES, TOOLS)  # Hermes' tool prompt is longer than 50 characters
    assert getattr(raised.value, "limit", None) == "max_output"
    assert "tool_use" in raised.value.template


def test_broken_files_name_themselves(tmp_path: Path) -> None:
    path = _model_dir(tmp_path, SETS["default+tool_use"], jinja_files=False)
    _write_config(path, chat_template=[{"name": "default"}])
    with pytest.raises(TemplateError, match=r"tokenizer_config.json.*\{\"name\", \"template\"\}"):
        ChatTemplate.from_pretrained(path)
    _write_config(path, chat_template=[])
    with pytest.raises(TemplateError, match="empty"):
        ChatTemplate.from_pretrained(path)
    (path / "tokenizer_config.json").write_text("{", encoding="utf-8")
    with pytest.raises(TemplateError, match="invalid JSON"):
        ChatTemplate.from_pretrained(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TemplateError, match="no chat template here"):
        ChatTemplate.from_pretrained(tmp_path / "empty")
    with pytest.raises(OSError):
        ChatTemplate.from_pretrained(tmp_path / "missing.jinja")


@pytest.mark.parametrize("cls", [ChatTemplate, JinjaChatTemplate])
@pytest.mark.parametrize("file", ["tokenizer_config.json", "chat_template.json", "CONFIG.JSON"])
def test_from_file_rejects_json(tmp_path: Path, cls: type[JinjaChatTemplate], file: str) -> None:
    """A config is not rendered as Jinja (a JSON object renders as itself): the error says what reads it."""
    path = tmp_path / file
    path.write_text(json.dumps({"chat_template": HERMES}), encoding="utf-8")
    with pytest.raises(TemplateError, match=r"from_pretrained\(") as raised:
        cls.from_file(path)
    assert raised.value.template == file
    assert ChatTemplate.from_pretrained(path).source == HERMES


# --- the command line -------------------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else {}, err


@pytest.mark.parametrize("jinja_files", [True, False], ids=["jinja-files", "config-list"])
def test_cli_parse_with_tools_uses_tool_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jinja_files: bool
) -> None:
    model = _model_dir(tmp_path / "model", SETS["default+tool_use"], jinja_files=jinja_files)
    output = tmp_path / "output.txt"
    output.write_text(CALL, encoding="utf-8")
    tools = str(EXAMPLES / "tools.json")
    code, message, _ = _cli(capsys, "parse", str(model), str(output), "--tools", tools)
    assert code == 0
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]
    assert calls == [("get_weather", {"city": "Paris"})] and not message.get("content")
    code, message, _ = _cli(capsys, "parse", str(model), str(output))  # no tools: the default (Gemma 2)
    assert code == 0 and message["content"] == CALL and "tool_calls" not in message
    code, message, _ = _cli(capsys, "parse", str(model), str(output), "--tools", tools, "--template-name", "default")
    assert code == 0 and message["content"] == CALL and "tool_calls" not in message
    code = cli.main(["grammar", str(model), "--tools", tools])
    assert code == 0 and "<tool_call>" in capsys.readouterr().out
    code = cli.main(["analyze", str(model), "--json"])  # the default's analysis
    assert code == 0 and json.loads(capsys.readouterr().out)["tools"]["format"]["mode"] == "NONE"
    code = cli.main(["analyze", str(model), "--template-name", "tool_use", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["tools"]["format"]["mode"] != "NONE"


def test_cli_without_a_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model_dir(tmp_path / "model", SETS["tool_use+rag"])
    output = tmp_path / "output.txt"
    output.write_text(CALL, encoding="utf-8")
    code, _, err = _cli(capsys, "parse", str(model), str(output))
    assert code == 1 and "no 'default' chat template" in err and "--template-name" in err and str(model) in err
    code, message, _ = _cli(capsys, "parse", str(model), str(output), "--tools", str(EXAMPLES / "tools.json"))
    assert code == 0 and message["tool_calls"][0]["function"]["name"] == "get_weather"
