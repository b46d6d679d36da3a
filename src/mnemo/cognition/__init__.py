"""Pure cognitive functions: numpy and the standard library only, no I/O.

Nothing in this package imports from the rest of mnemo, so every function can
be tested in isolation (with hypothesis) and reused by benchmarks; numpy,
scikit-learn and pure standard modules are all it imports
(``tests/unit/test_layers.py`` checks both). Grouped by subject (DESIGN §5):
:mod:`.scoring` (recall scoring), :mod:`.consolidation` (what the night
computes), :mod:`.text` (the offline rules' reading of text) and :mod:`.mind`
(the agent's mind and its inner life).
"""
