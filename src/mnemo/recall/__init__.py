"""The read path (internal; DESIGN §3, §5): hybrid recall in named stages, and context assembly.

:mod:`~mnemo.recall.pipeline` runs the stages in order, each a function in the module of its
section: :mod:`~mnemo.recall.retrieve` (check, embed, first-stage candidates),
:mod:`~mnemo.recall.rank` (fusion, links, neighbours, late interaction, time, attribution),
:mod:`~mnemo.recall.learned` (the learned fusion), :mod:`~mnemo.recall.blend` (the cognitive
blend), :mod:`~mnemo.recall.current`, :mod:`~mnemo.recall.support`,
:mod:`~mnemo.recall.answerable` and :mod:`~mnemo.recall.decide` (top k, refusal, quotes, trace),
over the records of :mod:`~mnemo.recall.records`. First-stage retrieval answers from the scope
read index (:mod:`~mnemo.recall.scope_index` and its ``index_*`` parts) or through SQL
(:mod:`~mnemo.recall.first_stage`). Beside the pipeline: :mod:`~mnemo.recall.context` (a context
block), :mod:`~mnemo.recall.history` (a memory's weight history), :mod:`~mnemo.recall.listing`
(browsing a scope), :mod:`~mnemo.recall.capture` (the benchmarks' window on recalls).
Users call these through :class:`mnemo.AsyncArchive`; nothing here is public API.
"""
