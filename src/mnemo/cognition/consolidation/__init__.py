"""Consolidation: what the night computes — surprisal, flux, salience, curation, extraction (pure)."""
