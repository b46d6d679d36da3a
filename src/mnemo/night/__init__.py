"""The night cycle (DESIGN §4): offline consolidation of the day table, one module per stage."""
