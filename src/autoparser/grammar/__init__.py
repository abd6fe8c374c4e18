"""Grammars for constrained decoding: what the model is *supposed* to write (the parser reads whatever it wrote).

:mod:`.spec` holds what this folder produces (:class:`~.spec.GrammarSpec`, its :class:`~.spec.Trigger` objects, the
:class:`~.spec.FormatGrammar` parts a dedicated format contributes); :mod:`.common` the pieces generic and dedicated
grammars share (the template's markup free text may not hold, the reasoning allowed after the prompt, the lazy and
whole-output shapes around a tool-call section); :mod:`.generic` the grammar of the generic formats, with
:mod:`.pythonic` and :mod:`.python_literals` for pythonic calls and :mod:`.dicts` for argument dicts, and
:mod:`.blocks` for replies written as headed blocks;
:mod:`.structural_tag` the xgrammar structural tag. A grammar is a PEG node graph like a parser, written out as GBNF
or Lark by :mod:`autoparser.peg.lowering`; it reuses the parser's marker and schema pieces (:mod:`autoparser.parser`).
"""
