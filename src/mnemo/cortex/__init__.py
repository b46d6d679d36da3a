"""The long-term tier: a LanceDB cortex beside the hippocampus (memory-architecture §5-7).

:mod:`~mnemo.cortex.lance_tables` holds the tables, :mod:`~mnemo.cortex.block_migration` the
night stage that moves blocks in, :mod:`~mnemo.cortex.tree` the RAPTOR tree,
:mod:`~mnemo.cortex.cortex_search` the recall stage that reads it.
"""
