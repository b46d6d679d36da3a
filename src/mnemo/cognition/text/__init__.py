"""Text: the vocabularies, phrases, statements and time expressions the offline rules read (pure)."""
