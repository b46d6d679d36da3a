"""The agent's mind: attention, window, gates, gut, idle sampling, tensions, answering (pure)."""
