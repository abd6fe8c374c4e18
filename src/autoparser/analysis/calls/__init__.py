"""The tool-call phases of the analysis, and the phases that read a template's prose and source rather than renders.

:mod:`.tools` runs the call phases in order: the call format and its section / per-call markers (T1-T2,
:mod:`.tool_format`, with the JSON, pythonic and dict branches :mod:`.json_calls`, :mod:`.pythonic`,
:mod:`.dict_calls`), the function-name markers (T3, :mod:`.functions`), the tagged-argument markers (A1-A2,
:mod:`.arguments`) and the call ids (T7, :mod:`.call_ids`). The analyzer (:mod:`..analyzer`) runs the rest: a reply
written as headed blocks, whose header value (a tag, a recipient) says what a block is (B1, :mod:`.blocks`), formats
stated only in the instruction text (phase P: :mod:`.instructions` isolates the text, :mod:`.prose` reads it) and
the closers a template implies by its own pairs (:mod:`.closers`). They build on the shared primitives one floor up
(:mod:`..diff`, :mod:`..variants`, :mod:`..needles`, :mod:`..patterns`) and fill parts of :mod:`..model`.
"""
