"""Portability (archive-adr §6): backup and restore, bifocal packets, forks and merges, in one home."""
