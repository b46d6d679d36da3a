"""Operating an archive as a whole (internal; the public API is :mod:`mnemo`).

Opening an archive (:mod:`.startup`), what ``status`` and ``health`` report
(:mod:`.status_report`), an agent's age and model costs (:mod:`.agent_costs`),
the inspector's reads and actions (:mod:`.inspector`) and the benchmarks'
probes (:mod:`.probes`). Four of the archive's features live here, one class
each (issue 41 item 1): ``archive.agents`` (:mod:`.agent_support`),
``archive.knowledge`` (:mod:`.knowledge_curation`), ``archive.inspect``
(:mod:`.archive_inspection`) and ``archive.maintenance`` (:mod:`.archive_upkeep`).
DESIGN §5: this layer sits beside write/recall/night/cortex, below
:mod:`mnemo.archive`, and may use any of them and the store; nothing below it
imports it.
"""
