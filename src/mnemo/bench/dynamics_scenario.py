"""``mnemo bench dynamics``: does use-dependent memory help? A seeded scenario benchmark.

Seeds: cognitive-plan §3.8 (retrieval strengthens, near misses weaken), §2.7
(ACT-R base-level learning), §3.1 (recency, weights in the blend), §4.4
(an update supersedes, without deleting, the fact it replaces).

The world: ``topics`` facts come in pairs that differ in one detail
("Ada's locker code is 4471" / "Ada's locker code is 9013"), so a neutral
question ("What is Ada's locker code?") is about equally similar to both;
``fillers`` unrelated facts make the candidate lists realistic. One fact of
each pair is *used*: over ``sessions`` simulated days the agent recalls it
with a specific query (probability ``p_use`` per session). ``updates`` more
facts are used in the first half, then replaced by a newer fact that
supersedes them.

After the last session every neutral question is asked read-only, and we
count how often the used fact ranks above its unused twin (all pairs, and
the pairs whose similarities to the question differ by less than 0.05) and
how often an update ranks above the fact it superseded. The same stream runs
twice: with dynamics (mutation on, supersession recorded) and as a static
store (read-only recall, no supersession), the baseline a plain vector store
gives. Deterministic scoring; every random choice takes ``seed``.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo.archive import AsyncArchive
from mnemo.cognition.scoring.relevance import relevance_tiers
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.models import Scope

__all__ = ["run_dynamics"]

Progress = Callable[[str, int, int], None]

PEOPLE = ["Ada", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Juno", "Kofi", "Lena"]
THINGS: dict[str, list[str]] = {
    "gym locker code": [str(n) for n in range(1000, 10000, 731)],
    "favourite tea": ["jasmine", "oolong", "rooibos", "earl grey", "sencha", "chai", "mint", "darjeeling"],
    "dentist": ["Dr Okafor", "Dr Lindqvist", "Dr Moreau", "Dr Tanaka", "Dr Novak", "Dr Silva", "Dr Haddad"],
    "bike lock combination": [f"{n:03d}" for n in range(107, 999, 97)],
    "home town": ["Porto", "Gdansk", "Kyoto", "Leeds", "Tartu", "Ghent", "Bergen", "Lyon", "Cork"],
    "car colour": ["teal", "silver", "burgundy", "white", "mustard yellow", "navy", "forest green"],
    "allergy": ["peanuts", "shellfish", "penicillin", "cat hair", "birch pollen", "latex", "kiwi fruit"],
    "weekend hobby": ["bouldering", "pottery", "birdwatching", "chess", "sailing", "baking sourdough"],
    "preferred airline seat": ["window", "aisle", "exit row", "front row", "over the wing"],
    "wifi network name": ["Hearth", "Nebula-5G", "BlueHeron", "Attic", "OrchardNet", "Lighthouse"],
}


@dataclass(frozen=True, slots=True)
class Fact:
    person: str
    thing: str
    value: str

    @property
    def text(self) -> str:
        return f"{self.person}'s {self.thing} is {self.value}"

    @property
    def question(self) -> str:
        return f"What is {self.person}'s {self.thing}?"

    @property
    def cue(self) -> str:
        return f"{self.person} {self.thing} {self.value}"


def _world(
    rng: random.Random, topics: int, updates: int, fillers: int
) -> tuple[list[tuple[Fact, Fact]], list[tuple[Fact, Fact]], list[Fact]]:
    slots = [(p, t) for p in PEOPLE for t in THINGS]
    rng.shuffle(slots)
    if topics + updates + fillers > len(slots):
        raise ValueError(f"at most {len(slots)} topics + updates + fillers")
    pairs, changes, extra = [], [], []
    for person, thing in slots[:topics]:
        a, b = rng.sample(THINGS[thing], 2)
        pairs.append((Fact(person, thing, a), Fact(person, thing, b)))
    for person, thing in slots[topics : topics + updates]:
        a, b = rng.sample(THINGS[thing], 2)
        changes.append((Fact(person, thing, a), Fact(person, thing, f"now {b}")))
    for person, thing in slots[topics + updates : topics + updates + fillers]:
        extra.append(Fact(person, thing, rng.choice(THINGS[thing])))
    return pairs, changes, extra


async def _run_once(
    settings: Settings,
    embeddings: Embeddings,
    *,
    dynamic: bool,
    seed: int,
    topics: int,
    updates: int,
    fillers: int,
    sessions: int,
    p_use: float,
    use_k: int,
    progress: Progress | None,
) -> dict[str, Any]:
    rng = random.Random(seed)
    pairs, changes, extra = _world(rng, topics, updates, fillers)
    used = [pair[rng.randrange(2)] for pair in pairs]
    scope = Scope("bench", f"dynamics-{'on' if dynamic else 'off'}-{seed}-{int(time.time())}")
    start = datetime.now(UTC)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    ids: dict[Fact, Any] = {}
    recalls = 0
    try:
        for fact in [f for pair in pairs for f in pair] + [old for old, _ in changes] + extra:
            ids[fact] = (await archive.remember(scope, fact.text, event_time=start)).id
        half = sessions // 2
        for day in range(1, sessions + 1):
            now = start + timedelta(days=day)
            if day == half + 1:
                for old, new in changes:
                    ids[new] = (
                        await archive.remember(
                            scope, new.text, event_time=now, supersedes=[ids[old]] if dynamic else ()
                        )
                    ).id
            todo = [f for f in used if rng.random() < p_use]
            if day <= half:
                todo += [old for old, _ in changes if rng.random() < p_use]
            else:
                todo += [new for _, new in changes if rng.random() < p_use]
            for fact in todo:
                await archive.recall(scope, fact.cue, use_k, read_only=not dynamic, as_of=now + timedelta(minutes=5))
                recalls += 1
            if progress is not None:
                progress("dynamics" if dynamic else "static", day, sessions)
        at = start + timedelta(days=sessions, hours=1)
        above = equal_above = equal_n = tier_above = tier_n = 0
        used_ranks, unused_ranks = [], []
        for pair, fact in zip(pairs, used, strict=True):
            other = pair[1] if fact is pair[0] else pair[0]
            result = await archive.recall(scope, fact.question, 50, read_only=True, threshold=-1.0, as_of=at)
            rank = {h.id: n for n, h in enumerate(result.hits, start=1)}
            sims = {h.id: h.similarity or 0.0 for h in result.hits}
            r_used, r_other = rank.get(ids[fact], 51), rank.get(ids[other], 51)
            used_ranks.append(r_used)
            unused_ranks.append(r_other)
            above += r_used < r_other
            if abs(sims.get(ids[fact], 0.0) - sims.get(ids[other], 0.0)) < 0.05:
                equal_n += 1
                equal_above += r_used < r_other
            tier = relevance_tiers({h.id: h.search for h in result.hits})  # k = 50: every candidate
            if ids[fact] in tier and tier.get(ids[fact]) == tier.get(ids[other]):
                tier_n += 1  # about equally relevant: use may decide (relevance first)
                tier_above += r_used < r_other
        updated = 0
        for old, new in changes:
            result = await archive.recall(scope, old.question, 50, read_only=True, threshold=-1.0, as_of=at)
            rank = {h.id: n for n, h in enumerate(result.hits, start=1)}
            updated += rank.get(ids[new], 51) < rank.get(ids[old], 51)
    finally:
        await archive.close()
    return {
        "used_above_unused": round(100.0 * above / max(len(pairs), 1), 1),
        "equal_similarity_pairs": equal_n,
        "used_above_unused_equal_similarity": round(100.0 * equal_above / max(equal_n, 1), 1),
        "same_tier_pairs": tier_n,
        "used_above_unused_same_tier": round(100.0 * tier_above / max(tier_n, 1), 1),
        "mean_rank_used": round(sum(used_ranks) / max(len(used_ranks), 1), 2),
        "mean_rank_unused": round(sum(unused_ranks) / max(len(unused_ranks), 1), 2),
        "update_above_superseded": round(100.0 * updated / max(len(changes), 1), 1),
        "updates": len(changes),
        "pairs": len(pairs),
        "session_recalls": recalls,
    }


async def run_dynamics(
    *,
    embeddings: Embeddings,
    database_url: str | None = None,
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
    topics: int = 40,
    updates: int = 20,
    fillers: int = 40,
    sessions: int = 10,
    p_use: float = 0.7,
    use_k: int = 1,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the scenario with and without dynamics; returns every figure (what ``--json`` writes)."""
    out: dict[str, Any] = {
        "seed": seed,
        "topics": topics,
        "updates": updates,
        "fillers": fillers,
        "sessions": sessions,
        "p_use": p_use,
        "use_k": use_k,
        "systems": {},
    }
    for dynamic in (True, False):
        with tempfile.TemporaryDirectory(prefix="mnemo-dynamics-") as home:
            # the simulated days run ahead of the clock: let their event times through
            chosen: dict[str, Any] = {"scoring": "deterministic", "clock_skew_hours": 24.0 * (sessions + 2)}
            chosen |= dict(overrides or {}) | {"mutation": dynamic}
            settings = Settings(home=Path(home), database_url=database_url, **chosen)
            started = time.perf_counter()
            figures = await _run_once(
                settings,
                embeddings,
                dynamic=dynamic,
                seed=seed,
                topics=topics,
                updates=updates,
                fillers=fillers,
                sessions=sessions,
                p_use=p_use,
                use_k=use_k,
                progress=progress,
            )
            figures["seconds"] = round(time.perf_counter() - started, 1)
        out["systems"]["dynamics" if dynamic else "static"] = figures
    return out
