"""The dynamics scenario benchmark on a small seeded world, against the real database."""

from __future__ import annotations

from mnemo.bench.dynamics_scenario import run_dynamics
from mnemo.embed import Embeddings


async def test_dynamics_beat_a_static_store_on_a_small_world(database_url: str, embeddings: Embeddings) -> None:
    result = await run_dynamics(
        embeddings=embeddings, database_url=database_url, seed=3, topics=8, updates=4, fillers=8, sessions=6
    )
    dyn, static = result["systems"]["dynamics"], result["systems"]["static"]
    assert dyn["pairs"] == static["pairs"] == 8 and dyn["updates"] == 4
    assert dyn["session_recalls"] > 0 and static["session_recalls"] == dyn["session_recalls"]
    # Used facts rise above their twins only when recall strengthens what it returns: always when
    # the twins are about equally relevant (one relevance tier), and never over a clearly more
    # relevant twin (relevance first), so the pairs split by a clear gap go by relevance.
    assert dyn["same_tier_pairs"] > 0 and dyn["used_above_unused_same_tier"] == 100.0
    assert dyn["used_above_unused"] > static["used_above_unused"]
    assert dyn["mean_rank_used"] < static["mean_rank_used"] or static["mean_rank_used"] == 1.0
    assert static["used_above_unused"] < 100.0
    assert dyn["update_above_superseded"] == 100.0
