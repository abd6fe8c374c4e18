"""Chat templates as Hugging Face ships them, not just as bare ``.jinja`` files.

A model repository carries its chat template in one of several places, depending on when it was saved:

* ``tokenizer_config.json``: ``"chat_template"`` is a string, or a list of ``{"name", "template"}`` (``"default"``,
  ``"tool_use"``, ``"rag"``...); ``bos_token`` / ``eos_token`` sit beside it, as strings or as serialised added
  tokens (``{"content": "<s>", ...}``);
* ``chat_template.json`` (processors): ``{"chat_template": "..."}``;
* ``chat_template.jinja`` (transformers 4.43+ writes the template there, and extra named ones as
  ``additional_chat_templates/NAME.jinja``), with the special tokens still in ``tokenizer_config.json``.

:func:`read_hf_template` reads any of these, or a directory holding them, so the CLI takes a downloaded model's
files as they are. Problems with the files raise :class:`~autoparser.errors.TemplateError` naming the file (and,
for JSON, the line and column).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TemplateDecodeError, TemplateError

__all__ = ["DEFAULT_NAME", "HFTemplate", "read_hf_template"]

DEFAULT_NAME = "default"  # the template transformers uses when a file holds several
_CONFIG = "tokenizer_config.json"


@dataclass(frozen=True, slots=True)
class HFTemplate:
    """A template's source and the special tokens it renders with; ``name`` is what reports call it."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    name: str = ""


def read_hf_template(path: str | Path, template_name: str | None = None) -> HFTemplate:
    """The chat template in ``path``: a ``.json`` config, a ``.jinja`` file, or a model directory.

    ``template_name`` picks one of several named templates (``"tool_use"``); without it, the ``"default"`` one.
    Raises :class:`OSError` for a path that cannot be read and :class:`TemplateError` for a file without a usable
    template.
    """
    path = Path(path)
    if path.is_dir():
        return _from_directory(path, template_name)
    if path.suffix.lower() == ".json":
        return _from_json(path, _read_json(path), template_name)
    if template_name is not None and template_name != DEFAULT_NAME:
        raise TemplateError(str(path), f"a .jinja file holds one template; there is no {template_name!r} in it")
    return HFTemplate(_read_text(path), name=path.name)


def _from_directory(path: Path, template_name: str | None) -> HFTemplate:
    config_path = path / _CONFIG
    config = _read_json(config_path) if config_path.is_file() else {}
    bos, eos = _token(config, "bos_token", config_path), _token(config, "eos_token", config_path)
    if template_name not in (None, DEFAULT_NAME):
        extra = path / "additional_chat_templates" / f"{template_name}.jinja"
        if extra.is_file():
            return HFTemplate(_read_text(extra), bos, eos, f"{path.name}/{template_name}")
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        if template_name not in (None, DEFAULT_NAME):
            raise TemplateError(str(path), f"no chat template named {template_name!r} (additional_chat_templates/)")
        return HFTemplate(_read_text(jinja), bos, eos, path.name)
    processor = path / "chat_template.json"
    if processor.is_file() and "chat_template" not in config:
        found = _from_json(processor, _read_json(processor), template_name)
        return HFTemplate(found.source, bos, eos, found.name)
    if config_path.is_file():
        return _from_json(config_path, config, template_name)
    raise TemplateError(
        str(path), "no chat template here: expected chat_template.jinja, chat_template.json or tokenizer_config.json"
    )


def _from_json(path: Path, config: dict[str, Any], template_name: str | None) -> HFTemplate:
    bos, eos = _token(config, "bos_token", path), _token(config, "eos_token", path)
    value = config.get("chat_template")
    if value is None:
        raise TemplateError(
            str(path), "no \"chat_template\" key (newer checkpoints keep it beside it in chat_template.jinja)"
        )
    if isinstance(value, str):
        if template_name not in (None, DEFAULT_NAME):
            raise TemplateError(str(path), f"holds a single chat template; there is no {template_name!r} in it")
        return HFTemplate(value, bos, eos, path.name)
    if not isinstance(value, list):
        raise TemplateError(str(path), f"\"chat_template\" must be a string or a list, got {type(value).__name__}")
    named: dict[str, str] = {}
    for entry in value:
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("name", "template"))):
            raise TemplateError(str(path), "each entry of the \"chat_template\" list must be {\"name\", \"template\"}")
        named[entry["name"]] = entry["template"]
    wanted = template_name or DEFAULT_NAME
    if wanted not in named:
        choose = "" if template_name else "; choose one with --template-name"
        raise TemplateError(
            str(path), f"no chat template named {wanted!r}: it has {', '.join(map(repr, named))}{choose}"
        )
    return HFTemplate(named[wanted], bos, eos, path.name if wanted == DEFAULT_NAME else f"{path.name}:{wanted}")


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
