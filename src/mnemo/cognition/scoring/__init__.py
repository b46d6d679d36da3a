"""Recall scoring (pure; cognitive-plan §2.5, §3.1, §3.8-3.9): how recall ranks, blends and refuses.

The search scores and their fusion (:mod:`.bm25`, :mod:`.fusion`, :mod:`.late` MaxSim,
:mod:`.neighbours` smoothing, :mod:`.timeframe`, :mod:`.ranker` the learned fusion, :mod:`.claims`
which statement is current); the cognitive blend (:mod:`.blend_components` the registry of its
components, :mod:`.relevance` how they mix, :mod:`.activation` ACT-R, :mod:`.weights` Beta
weights, :mod:`.spreading` co-access, :mod:`.safety` ceilings on weight changes); what is shown and
refused (:mod:`.rank_order`, :mod:`.refusal`, :mod:`.bifocal` hits, :mod:`.context_packing`).
"""
