"""The tool-call shapes of the generic parser, one module per shape, each turning analysed markers into PEG nodes.

JSON call objects (:mod:`.tools_json`); calls whose name sits in markup, with JSON or tagged arguments
(:mod:`.tools_tagged`, values typed by :mod:`.tagged_values`); pythonic calls (:mod:`.tools_pythonic`, keyword
arguments read by :mod:`.python_literals`); argument dicts in the template's own syntax (:mod:`.tools_dict`). Beside
them, what models do around calls: markers a detokenizer dropped (:mod:`.dropped_markers`), calls to tools the
request does not declare (:mod:`.undeclared`), and where a broken call ends (:mod:`.resync`). :mod:`..assemble`
puts the shape the analysis found into the parser's item loop; a new call shape gets its module here.
"""
