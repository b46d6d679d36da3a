"""Recall scoring: activation, weights, fusion, late interaction, relevance, refusal (pure)."""
