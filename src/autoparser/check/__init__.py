"""``autoparser check``: does a chat template work on its first request — and if not, exactly why not.

The check renders every case the template can render (an answer, reasoning, one call with every JSON type, parallel
calls, content before a call, reasoning before a call) through the template itself, reads each back whole and
streamed, offers it to the whole-output grammar, and reports what the analysis learned and a ✓ / ✗ / – per case with
the reason for each ✗ and –. docs/roundtrip.md is its output over the bundled templates.

- :mod:`.cases` renders the cases (the model's part of an assistant turn, and the message it must read back to);
- :mod:`.readback` reads one back (parse, streams, grammar);
- :mod:`.run` checks a template (:func:`check_template`) and :mod:`.known` holds the bundled templates' documented
  faults;
- :mod:`.report` writes the report as text, JSON or a Markdown table;
- :mod:`.recognizer` is the exact GBNF recognizer the grammar verdict uses (llama.cpp's reading of a grammar).
"""

from .run import CaseResult, CheckReport, Status, check_template

__all__ = ["CaseResult", "CheckReport", "Status", "check_template"]
