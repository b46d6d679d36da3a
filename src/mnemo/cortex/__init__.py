"""The long-term tier: a LanceDB cortex beside the hippocampus (memory-architecture §5-7).

:mod:`~mnemo.cortex.store` holds the tables, :mod:`~mnemo.cortex.migrate` the
night stage that moves blocks in, :mod:`~mnemo.cortex.tree` the RAPTOR tree,
:mod:`~mnemo.cortex.search` the recall stage that reads it.
"""
