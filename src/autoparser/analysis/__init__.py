"""Differential analysis of chat templates: what a template says about how its model writes reasoning, content and
tool calls.

A template is rendered with pairs of probe conversations that differ in one thing (an answer vs a tool call, one
function name vs another); the renders are diffed (:mod:`.diff`, :mod:`.variants`) and the markers around the
difference read. :mod:`.analyzer` runs the phases in order, once per template: reasoning, content, the tool-call
phases (:mod:`.calls`), the dedicated-format check (:mod:`.formats`), workarounds, formats stated in prose, implied
closers, end of turn. The result is a :class:`~.model.TemplateAnalysis` (its modes in :mod:`.modes`), which the parser
and grammar builders read. See docs/analysis.md.
"""
