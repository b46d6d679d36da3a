"""The agent's mind (pure; cognitive-plan §2.9-2.11, §3.3-3.10, §4.2-4.7, §5.1-5.2): its loop's rules.

Attending and answering (:mod:`.attention`, :mod:`.window_sizing`, :mod:`.gate_rules` entry and
exit gates, :mod:`.escalation` System 1 to 2, :mod:`.confidence`, :mod:`.answering`,
:mod:`.actions` the action check); the inner life the night and the archive's ``inner`` feature
compute (:mod:`.gut` the two centroids, :mod:`.idle_sampling`, :mod:`.tensions`, :mod:`.promotion`,
:mod:`.readiness` milestones, :mod:`.ledger` the frustration ledger).
"""
