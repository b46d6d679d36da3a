"""Pure cognitive functions: numpy and the standard library only, no I/O.

Nothing in this package imports from the rest of mnemo, so every function can
be tested in isolation (with hypothesis) and reused by benchmarks.
"""
