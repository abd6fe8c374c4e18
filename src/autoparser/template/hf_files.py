"""Chat templates as Hugging Face ships them, not just as bare ``.jinja`` files.

A model repository carries its chat template in one of several places, depending on when it was saved:

* ``tokenizer_config.json``: ``"chat_template"`` is a string, or a list of ``{"name", "template"}`` (``"default"``,
  ``"tool_use"``, ``"rag"``...); ``bos_token`` / ``eos_token`` sit beside it, as strings or as serialised added
  tokens (``{"content": "<s>", ...}``);
* ``chat_template.json`` (processors): ``{"chat_template": "..."}``;
* ``chat_template.jinja`` (transformers 4.43+ writes the template there, and extra named ones as
  ``additional_chat_templates/NAME.jinja``), with the special tokens still in ``tokenizer_config.json``.

:func:`read_hf_templates` reads every template of any of these, or of a directory holding them, by name (a single
template is ``"default"``), with the special tokens of the ``tokenizer_config.json`` beside the file;
:func:`read_hf_template` picks one of them; :func:`choose_template` is the rule by which transformers'
``apply_chat_template`` picks one for a request. Problems with the files raise
:class:`~autoparser.errors.TemplateError` naming the file (and, for JSON, the line and column).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import TemplateDecodeError, TemplateError

__all__ = [
    "DEFAULT_NAME",
    "TOOL_USE_NAME",
    "HFTemplate",
    "choose_template",
    "pick_template",
    "read_hf_template",
    "read_hf_templates",
]

DEFAULT_NAME = "default"  # the template transformers uses when a file holds several
TOOL_USE_NAME = "tool_use"  # the one it uses instead for a request with tools
_CONFIG = "tokenizer_config.json"
_JINJA = "chat_template.jinja"
_EXTRA_DIR = "additional_chat_templates"
_PROCESSOR = "chat_template.json"


@dataclass(frozen=True, slots=True)
class HFTemplate:
    """A template's source and the special tokens it renders with; ``name`` is what reports call it."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    name: str = ""


def choose_template(names: Collection[str], tools: object | None) -> str | None:
    """The template transformers renders a request with when the files hold several and none is asked for by
    name (``PreTrainedTokenizerBase.get_chat_template``): ``"tool_use"`` when ``tools`` is not None (an empty list
    counts: transformers tests ``is not None``) and there is one, else ``"default"``; None when there is no
    ``"default"`` either (transformers raises)."""
    if tools is not None and TOOL_USE_NAME in names:
        return TOOL_USE_NAME
    return DEFAULT_NAME if DEFAULT_NAME in names else None


def read_hf_template(path: str | Path, template_name: str | None = None) -> HFTemplate:
    """The chat template in ``path``: a ``.json`` config, a ``.jinja`` file, or a model directory.

    ``template_name`` picks one of several named templates (``"tool_use"``); without it, the ``"default"`` one.
    Raises :class:`OSError` for a path that cannot be read and :class:`TemplateError` for a file without a usable
    template.
    """
    templates = read_hf_templates(path)
    return pick_template(templates, template_name or DEFAULT_NAME, path, by_name=template_name is not None)


def pick_template(
    templates: Mapping[str, HFTemplate], wanted: str, path: str | Path, *, by_name: bool = True
) -> HFTemplate:
    """``templates[wanted]``, or a :class:`TemplateError` naming ``path`` and the templates it does have."""
    found = templates.get(wanted)
    if found is not None:
        return found
    if len(templates) == 1 and DEFAULT_NAME in templates:
        raise TemplateError(str(path), f"holds a single chat template; there is no {wanted!r} in it")
    choose = "" if by_name else "; choose one with template_name (--template-name on the command line)"
    raise TemplateError(
        str(path), f"no chat template named {wanted!r}: it has {', '.join(map(repr, templates))}{choose}"
    )


def read_hf_templates(path: str | Path) -> dict[str, HFTemplate]:
    """Every chat template in ``path`` by name, as transformers loads them (a single one is ``"default"``).

    ``path`` is a model directory, a ``tokenizer_config.json``, a ``chat_template.json`` or a ``.jinja`` file; the
    BOS/EOS tokens come from the ``tokenizer_config.json`` in the directory or beside the file (the model's, for
    ``additional_chat_templates/NAME.jinja``). In a directory,
    ``chat_template.jinja`` and ``additional_chat_templates/*.jinja`` take priority over the config's
    ``chat_template`` (as in transformers), then ``chat_template.json``, then the config. A ``.jinja`` file is one
    template, whatever sits beside it; a ``tokenizer_config.json`` without a ``chat_template`` reads the template
    files beside it. Raises :class:`OSError` for a path that cannot be read and :class:`TemplateError` for files
    without a usable template.
    """
    path = Path(path)
    if path.is_dir():
        return _from_directory(path)
    if path.suffix.lower() == ".json":
        config = _read_json(path)
        if path.name == _CONFIG and "chat_template" not in config and _has_template_files(path.parent):
            return _from_directory(path.parent)
        found = _from_json(path, config)
        if path.name != _CONFIG and (path.parent / _CONFIG).is_file():
            bos, eos = _tokens(path.parent / _CONFIG)
            found = {name: replace(t, bos_token=bos, eos_token=eos) for name, t in found.items()}
        return found
    source = _read_text(path)
    model = path.parent.parent if path.parent.name == _EXTRA_DIR else path.parent
    bos, eos = _tokens(model / _CONFIG)
    return {DEFAULT_NAME: HFTemplate(source, bos, eos, path.name)}


def _has_template_files(path: Path) -> bool:
    return (path / _JINJA).is_file() or (path / _EXTRA_DIR).is_dir()


def _from_directory(path: Path) -> dict[str, HFTemplate]:
    config_path = path / _CONFIG
    config = _read_json(config_path) if config_path.is_file() else {}
    bos, eos = _token(config, "bos_token", config_path), _token(config, "eos_token", config_path)
    files: dict[str, HFTemplate] = {}
    if (path / _JINJA).is_file():
        files[DEFAULT_NAME] = HFTemplate(_read_text(path / _JINJA), bos, eos, path.name)
    if (path / _EXTRA_DIR).is_dir():
        for extra in sorted((path / _EXTRA_DIR).glob("*.jinja")):
            name = extra.name.removesuffix(".jinja")
            files[name] = HFTemplate(_read_text(extra), bos, eos, f"{path.name}/{name}")
    if files:  # transformers: template files win over the config's entries, even without a default among them
        return files
    processor = path / _PROCESSOR
    if processor.is_file() and "chat_template" not in config:
        return {
            n: replace(t, bos_token=bos, eos_token=eos) for n, t in _from_json(processor, _read_json(processor)).items()
        }
    if config_path.is_file():
        return _from_json(config_path, config)
    raise TemplateError(str(path), f"no chat template here: expected {_JINJA}, {_PROCESSOR} or {_CONFIG}")


def _from_json(path: Path, config: dict[str, Any]) -> dict[str, HFTemplate]:
    bos, eos = _token(config, "bos_token", path), _token(config, "eos_token", path)
    value = config.get("chat_template")
    if value is None:
        raise TemplateError(str(path), f'no "chat_template" key (newer checkpoints keep it beside it in {_JINJA})')
    if isinstance(value, str):
        return {DEFAULT_NAME: HFTemplate(value, bos, eos, path.name)}
    if isinstance(value, dict):  # not what transformers writes, but what it holds once loaded
        value = [{"name": name, "template": template} for name, template in value.items()]
    if not isinstance(value, list):
        raise TemplateError(str(path), f'"chat_template" must be a string or a list, got {type(value).__name__}')
    named: dict[str, HFTemplate] = {}
    for entry in value:
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("name", "template"))):
            raise TemplateError(str(path), 'each entry of the "chat_template" list must be {"name", "template"}')
        name = entry["name"]
        label = path.name if name == DEFAULT_NAME else f"{path.name}:{name}"
        named[name] = HFTemplate(entry["template"], bos, eos, label)
    if not named:
        raise TemplateError(str(path), 'the "chat_template" list is empty')
    return named


def _tokens(config_path: Path) -> tuple[str, str]:
    """The BOS and EOS tokens of a ``tokenizer_config.json``; none when there is no such file."""
    if not config_path.is_file():
        return "", ""
    config = _read_json(config_path)
    return _token(config, "bos_token", config_path), _token(config, "eos_token", config_path)


def _token(config: dict[str, Any], key: str, path: Path) -> str:
    """A special token, written as a string or as a serialised added token; absent or null means none."""
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TemplateError(str(path), f"{key!r} must be a string, got {type(value).__name__}")
    return value


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TemplateDecodeError(str(path), err) from None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(_read_text(path))
    except json.JSONDecodeError as err:
        raise TemplateError(str(path), f"invalid JSON at column {err.colno}: {err.msg}", line=err.lineno) from None
    if not isinstance(config, dict):
        raise TemplateError(str(path), f"must hold a JSON object, got {type(config).__name__}")
    return config
