"""The generic parser: a PEG parser for one template's output, built from its analysis and the request's shape.

:mod:`.assemble` puts the whole-output parser together (``[reasoning block] item* end``, every item structure or
content) from the pieces here: the request's parts that shape it (:mod:`.request`), tolerant markers
(:mod:`.markers`), the reasoning block and the prompt's prefill (:mod:`.reasoning`), a parameter schema's string and
non-string parts (:mod:`.schema_types`), the AST tag names the readers rely on (:mod:`.tags`), and the call shapes in
:mod:`.calls`; :mod:`.blocks` is the whole-output parser of replies written as headed blocks. A parser only tags
text; :mod:`autoparser.reading` turns the tree into messages, the grammars (:mod:`autoparser.grammar`) and the
dedicated formats (:mod:`autoparser.formats`) reuse these pieces, and :mod:`autoparser.build` picks a format's
builder or this one. This face imports nothing, so its submodules import each other (``from .. import tags``)
without an import circle.
"""
