"""What the serving engines' plugin loaders call: one function per engine, named in pyproject.toml's entry points.

* :func:`register_vllm` (group ``vllm.general_plugins``). vLLM runs its general plugins in every process it starts (the
  API server while it builds its command line, the engine core, the workers, an in-process ``LLM``), before it
  looks a parser up by name. This registers the tool parser and the reasoning parser named ``autoparser``
  *lazily*: vLLM imports :mod:`autoparser.integrations.vllm` (and with it the parser stack) only when a parser of
  that name is asked for, so a process that never parses pays nothing but two dictionary entries.
* :func:`register_sglang` (group ``sglang.srt.plugins``). SGLang runs its general plugins before it reads its command
  line (in ``sglang serve`` and ``python -m sglang.launch_server``) and in its scheduler and detokenizer
  processes; this puts ``autoparser`` into its tool-call and reasoning parser registries
  (:mod:`autoparser.integrations.sglang`).

Neither may stop an engine from starting: a registry that is missing or moved is logged as a warning, and the
engine runs without the ``autoparser`` parsers (``--tool-call-parser autoparser`` is then refused by name).
"""

from __future__ import annotations

import importlib
import logging

__all__ = ["NAME", "register_sglang", "register_vllm"]

NAME = "autoparser"
_VLLM_MODULE = "autoparser.integrations.vllm"
_log = logging.getLogger(__name__)


def register_vllm() -> None:
    """Register autoparser's vLLM tool and reasoning parsers as ``autoparser`` (never raises)."""
    try:
        from vllm.reasoning import ReasoningParserManager
        from vllm.tool_parsers import ToolParserManager
    except Exception as error:  # a vLLM that keeps its registries elsewhere: the module itself knows where
        _import_eagerly(_VLLM_MODULE, error)
        return
    for manager, class_name in (
        (ToolParserManager, "AutoparserToolParser"),
        (ReasoningParserManager, "AutoparserReasoningParser"),
    ):
        try:
            manager.register_lazy_module(NAME, _VLLM_MODULE, class_name)
        except Exception as error:  # a manager without lazy registration: register the classes now
            _import_eagerly(_VLLM_MODULE, error)
            return


def register_sglang() -> None:
    """Register autoparser's SGLang tool-call and reasoning detectors as ``autoparser`` (never raises)."""
    _import_eagerly("autoparser.integrations.sglang", None, call="register")


def _import_eagerly(module: str, cause: Exception | None, call: str = "") -> None:
    """Import ``module`` (which registers on import, or through ``call``), logging a failure instead of raising."""
    try:
        loaded = importlib.import_module(module)
        if call:
            getattr(loaded, call)()
    except Exception as error:
        reason = f"{error}" if cause is None else f"{cause}; then {error}"
        _log.warning("autoparser: could not register the %r parsers (%s); the engine runs without them", NAME, reason)
