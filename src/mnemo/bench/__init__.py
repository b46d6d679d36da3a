"""Benchmarks behind ``mnemo bench``: retrieval quality on LoCoMo and performance.

Benchmarks use the real write and recall paths (recall in read-only mode) in a
throw-away database, and always print baselines computed in the same run.
"""
