"""Reflexes (cognitive-plan §2.6, issue 18 item 8): procedural memory and its outcomes, in one home."""
