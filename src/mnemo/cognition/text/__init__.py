"""Text (pure): the vocabularies, phrases, statements and time expressions the offline rules read.

:mod:`.patterns` (vocabularies and regular-expression tables), :mod:`.phrases` (cleaning a
candidate value), :mod:`.statements` (first-person statements), :mod:`.timex` (time expressions,
resolved without an LLM), :mod:`.passages` (long items as overlapping passages),
:mod:`.turn_identity` (when a turn is a repeat) and :mod:`.utterances` (the offline responder's
reading of a line).
"""
