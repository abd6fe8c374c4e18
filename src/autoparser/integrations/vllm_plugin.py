"""The file to name in ``vllm serve --tool-parser-plugin PATH --reasoning-parser-plugin PATH``.

vLLM imports a plugin path as a module named after the file; ``vllm.py`` would shadow vLLM itself, so this file
(any name but ``vllm``) imports :mod:`autoparser.integrations.vllm`, which registers both parsers as
``autoparser``. A module name works too: ``--tool-parser-plugin autoparser.integrations.vllm``.
"""

from autoparser.integrations.vllm import register

register()
