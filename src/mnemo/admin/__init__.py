"""Operating an archive as a whole (internal; the public API is :mod:`mnemo`).

Opening an archive (:mod:`.startup`), what ``status`` and ``health`` report
(:mod:`.status`), scopes, grants and tokens (:mod:`.access`), an agent's age
and model costs (:mod:`.agents`), backup and restore (:mod:`.backup`) and
the inspector's reads and actions (:mod:`.inspect`). DESIGN §5: this layer
sits beside write/recall/night/cortex, below :mod:`mnemo.archive`, and may
use any of them and the store; nothing below it imports it.
"""
