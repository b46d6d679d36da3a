"""Packing a context block into a token budget.

Seeds: cognitive-plan §3.2 (two tracks: stochastic identity injection, where
each of the top-N memories by weight centre rolls ``observe()`` and is
injected whole or not at all, never truncated, with its own allocation; and
situational injection by score until the budget is full, full text for the
best entries and the compressed form for the rest; immutable memories always
injected) and §2.10 (token counting, ``fits_budget``).

Who rolls for identity (issue 28 item 6) is decided by what a memory is, not by
how strong use has made it. The seed's identity track is "the agent's
strongest beliefs/values" (§3.2), and the kinds it names as being about the
self are the user's preferences, self-reflections and identity narratives
(§2.1's prefixes "User preference", "Self-reflection insight", "Identity
narrative"; §4.2: narratives "carry disproportionate identity-explanatory
power"). Its path from an experience to identity is promotion of a pattern
seen many times over weeks (§4.3, §5.3), never retrieval: recall strengthens
what it returns (§3.8), so a weight centre alone would let a burst of
recalls of an ordinary note put it under "Who I am". Anchored memories are
shown in their own section, always. Tensions and corrections are ordinary
memories (§4.2: "no salience bonus"; §3.7: the System 2 correction bank),
and so are facts, episodes, procedures and insights, however often used.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from mnemo.cognition.scoring.weights import StochasticWeight

__all__ = [
    "IDENTITY_KINDS",
    "Candidate",
    "Placed",
    "estimate_tokens",
    "fits_budget",
    "identity_level",
    "identity_pool",
    "pack_situational",
    "roll_identity",
]

K = TypeVar("K", bound=Hashable)


class Weighted(Protocol):
    """What :func:`identity_pool` reads of a memory."""

    @property
    def id(self) -> Any: ...
    @property
    def kind(self) -> str: ...
    @property
    def anchored(self) -> bool: ...
    @property
    def alpha(self) -> float: ...
    @property
    def beta(self) -> float: ...


R = TypeVar("R", bound=Weighted)
Mode = Literal["full", "compressed"]
#: The memory kinds about the self (see the module's docstring): what may roll for identity.
IDENTITY_KINDS: frozenset[str] = frozenset({"preference", "reflection", "narrative"})


def identity_level(kind: str, *, anchored: bool = False) -> bool:
    """Whether a memory belongs under "Who I am and what I value": anchored, or of a kind about the
    self (:data:`IDENTITY_KINDS`). Its weight, and how often recall returned it, do not count."""
    return anchored or kind in IDENTITY_KINDS


def identity_pool(memories: Sequence[R], top: int) -> list[R]:
    """Track 2's candidates: the ``top`` strongest memories (by weight centre, then id) that are
    identity-level and not anchored (anchored ones have their own section, always shown)."""
    pool = [m for m in memories if not m.anchored and identity_level(m.kind)]
    pool.sort(key=lambda m: (-(m.alpha / (m.alpha + m.beta)), str(m.id)))
    return pool[: max(top, 0)]


def estimate_tokens(text: str) -> int:
    """``words * 1.3``: the fallback when the embedder has no tokenizer (within ~20% for English)."""
    return math.ceil(len(text.split()) * 1.3)


def fits_budget(used: int, extra: int, budget: int) -> bool:
    return used + extra <= budget


@dataclass(frozen=True, slots=True)
class Candidate(Generic[K]):
    key: K
    full_tokens: int
    compressed_tokens: int | None = None  # None: no compressed form
    weight: StochasticWeight | None = None


@dataclass(frozen=True, slots=True)
class Placed(Generic[K]):
    key: K
    mode: Mode
    tokens: int


def roll_identity(
    candidates: Sequence[Candidate[K]], rng: random.Random, *, threshold: float = 0.6, budget: int
) -> list[Placed[K]]:
    """Track 2: each candidate (strongest first) rolls its weight; above ``threshold`` it is injected whole
    if it fits the identity allocation, otherwise it is absent this time. Never truncated."""
    placed: list[Placed[K]] = []
    used = 0
    ordered = sorted(candidates, key=lambda c: -(c.weight.center if c.weight else 0.0))
    for c in ordered:
        if c.weight is None:
            continue
        roll = c.weight.observe(rng)  # every candidate rolls, so one's size never shifts another's draw
        if roll > threshold and fits_budget(used, c.full_tokens, budget):
            placed.append(Placed(c.key, "full", c.full_tokens))
            used += c.full_tokens
    return placed


def pack_situational(candidates: Sequence[Candidate[K]], budget: int, *, full_count: int = 3) -> list[Placed[K]]:
    """Track 1: candidates in score order fill ``budget``; the first ``full_count`` placed go in full
    (compressed if the full text does not fit), the rest compressed (full when there is no
    compressed form). A candidate that fits neither way is skipped and smaller ones may follow."""
    placed: list[Placed[K]] = []
    used = 0
    for c in candidates:
        options: list[tuple[Mode, int]] = []
        if len(placed) < full_count or c.compressed_tokens is None:
            options.append(("full", c.full_tokens))
        if c.compressed_tokens is not None:
            options.append(("compressed", c.compressed_tokens))
        for mode, tokens in options:
            if fits_budget(used, tokens, budget):
                placed.append(Placed(c.key, mode, tokens))
                used += tokens
                break
    return placed
