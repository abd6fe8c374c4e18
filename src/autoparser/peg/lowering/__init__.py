"""Writers that lower a PEG node graph to grammar text for constrained decoding.

GBNF for llama.cpp and xgrammar (:mod:`.gbnf`, with its text primitives in :mod:`.gbnf_syntax`), llguidance's Lark
dialect (:mod:`.lark`), and JSON Schema to GBNF (:mod:`.json_schema`, with :mod:`.schema_formats`,
:mod:`.schema_merge` and :mod:`.schema_objects`; ``pattern`` regexes through :mod:`.regex_gbnf` and
:mod:`.regex_charsets`). The writers read the nodes (:mod:`..nodes`), which never import them: the package face
(:mod:`autoparser.peg`) plugs them in with ``install_backends``, so ``parser.to_gbnf()`` works without an import
circle.
"""
