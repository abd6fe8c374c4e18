"""vLLM's own launch paths, run in a fresh interpreter by ``test_vllm_plugins.py`` with no ``--*-parser-plugin`` flag:
whatever finds the ``autoparser`` parsers there found them through the ``vllm.general_plugins`` entry point.

    python -m tests.integrations.vllm_launch MODEL_DIR

runs, one after the other, each as in a fresh process (vLLM's plugins not yet loaded, nothing registered):
``vllm serve`` with ``VLLM_PLUGINS=""`` (vLLM's allow-list: no plugin loads, the control), ``vllm serve`` as its
command line runs it, and an in-process ``vllm.LLM(...)``; it prints one line ``RESULT {json}``. Loading vLLM
once for all three keeps this to one interpreter start.

Both paths stop where vLLM would start its engine, which cannot run on a machine without a GPU: ``serve`` where
the API server, its arguments checked and its socket bound, starts the engine and then builds its serving layer
(here the serving layer's parser lookup runs at that point instead);
``llm`` where ``LLM`` has built its ``VllmConfig`` (the reasoning parser already looked up by name and built from
the tokenizer for the reasoning token ids) and launches the engine core, whose structured-output manager then looks
the reasoning parser up again (here run in this process).
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODULE = "autoparser.integrations.vllm"


def _names() -> dict[str, Any]:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    return {
        "tool_registered": "autoparser" in ToolParserManager.list_registered(),
        "reasoning_registered": "autoparser" in ReasoningParserManager.list_registered(),
        "imported": MODULE in sys.modules,  # the entry point registers lazily: nothing imported yet
    }


def serve(model: str) -> dict[str, Any]:
    """``vllm serve MODEL --enable-auto-tool-choice --tool-call-parser autoparser --reasoning-parser autoparser``."""
    _cpu_platform()
    from vllm.entrypoints.cli.main import main
    from vllm.entrypoints.launchers.api_server import entry

    result: dict[str, Any] = {"before": _names()}

    async def engine_start(listen_address: Any, sock: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        """Where the API server starts the engine: the arguments passed vLLM's checks and the socket is bound. The
        chat serving layer it builds next looks the parsers up as below (``OpenAIServingChat.__init__``)."""
        sock.close()
        from vllm.parser import ParserManager
        from vllm.tokenizers import get_tokenizer

        result["at_engine_start"] = _names()
        parser = ParserManager.get_parser(
            tool_parser_name=args.tool_call_parser,
            reasoning_parser_name=args.reasoning_parser,
            enable_auto_tools=args.enable_auto_tool_choice,
            model_name=args.model,
            tokenizer=get_tokenizer(args.model),  # get_parser builds the parser from it, as at server start
        )
        result["tool_parser"] = _qualified(parser.tool_parser_cls)
        result["reasoning_parser"] = _qualified(parser.reasoning_parser_cls)

    entry.run_server_worker = engine_start
    sys.argv = ["vllm", "serve", model, "--enable-auto-tool-choice", "--tool-call-parser", "autoparser"]
    sys.argv += ["--reasoning-parser", "autoparser", "--host", "127.0.0.1", "--port", "0"]
    try:
        main()
    except Exception as error:  # vLLM refused the command line
        result["error"] = f"{type(error).__name__}: {error}"
    return result


class _EngineStart(Exception):
    def __init__(self, config: Any) -> None:
        super().__init__("engine start")
        self.config = config


def llm(model: str) -> dict[str, Any]:
    """``vllm.LLM(MODEL, reasoning_parser="autoparser")`` in this process."""
    _cpu_platform()
    from vllm import LLM
    from vllm.v1.engine.core_client import EngineCoreClient
    from vllm.v1.structured_output import StructuredOutputManager

    def engine_core(*args: Any, vllm_config: Any = None, **kwargs: Any) -> Any:
        raise _EngineStart(vllm_config if vllm_config is not None else kwargs.get("vllm_config", args[1]))

    EngineCoreClient.make_client = staticmethod(engine_core)  # type: ignore[method-assign]
    result: dict[str, Any] = {"before": _names()}
    try:
        LLM(model=model, reasoning_parser="autoparser", enforce_eager=True)
    except _EngineStart as start:
        reasoning = start.config.reasoning_config
        result["reasoning_config"] = {
            "parser": reasoning.reasoning_parser,
            "start_ids": reasoning.reasoning_start_token_ids,
            "end_ids": reasoning.reasoning_end_token_ids,
        }
        result["engine_reasoner"] = _qualified(StructuredOutputManager(start.config).reasoner_cls)
        result["after"] = _names()
        from vllm.tool_parsers import ToolParserManager

        result["tool_parser"] = _qualified(ToolParserManager.get_tool_parser("autoparser"))
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"
    return result


def _cpu_platform() -> None:
    """No GPU here, and vLLM's configs need a device: take the CPU platform, as vLLM's own CLI does for
    ``vllm bench`` when it finds no device."""
    from vllm import platforms
    from vllm.platforms.cpu import CpuPlatform

    if platforms.current_platform.is_unspecified():
        platforms.current_platform = CpuPlatform()


def _qualified(cls: type | None) -> str | None:
    return f"{cls.__module__}.{cls.__qualname__}" if cls is not None else None


def _fresh(allowed: str | None) -> None:
    """vLLM as a new process finds it: general plugins not loaded yet, no ``autoparser`` parser registered, and
    ``VLLM_PLUGINS`` as given (vLLM reads it when it loads plugins)."""
    import os

    import vllm.plugins
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    vllm.plugins.plugins_loaded = False
    for registry in (
        ToolParserManager.tool_parsers,
        ToolParserManager.lazy_parsers,
        ReasoningParserManager.reasoning_parsers,
        ReasoningParserManager.lazy_parsers,
    ):
        registry.pop("autoparser", None)
    os.environ.pop("VLLM_PLUGINS", None)
    if allowed is not None:
        os.environ["VLLM_PLUGINS"] = allowed


if __name__ == "__main__":
    model_dir = sys.argv[1]
    results = {}
    for label, allowed, run in (("without", "", serve), ("serve", None, serve), ("llm", None, llm)):
        _fresh(allowed)
        results[label] = run(model_dir)
    print("RESULT " + json.dumps(results), flush=True)
