"""Access (archive-adr §7 "Sigil Scope"): scopes, read grants and bearer tokens, in one home."""
