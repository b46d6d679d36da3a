"""Consolidation (pure; memory-architecture §2-§3, §7-§8, cognitive-plan §3.2, §4.1-4.4): the night's computing.

Cutting sessions into blocks (:mod:`.surprisal`, :mod:`.flux` arcs, :mod:`.segments`,
:mod:`.salience`, :mod:`.citations`, :mod:`.clustering` for the RAPTOR tree, :mod:`.summaries`);
extracting knowledge (:mod:`.extraction`, :mod:`.facts`, :mod:`.slots`, :mod:`.state_changes`);
curating and tuning (:mod:`.curation` verdicts, decay and retention, :mod:`.tuning` the blend's
alphas and the gates' thresholds).
"""
