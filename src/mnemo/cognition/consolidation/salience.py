"""Block salience, coherence gain, merge weight, and live/dead zones.

Seeds: memory-architecture §3.3 (block construction: P, C and ID scored at
three levels; coherence gain, the seed's "Arreté",
``(baseline_perplexity - final_perplexity) / baseline_perplexity``; a merge
weight that combines salience and coherence gain), §3.4 (the
``salience_scores`` record: utterance, exchange and theme levels plus a
composite) and §3.5 (live zones kept verbatim, dead zones summarised).

Inputs are plain values the caller already has: per-turn surprisal in
bits/token, per-turn embeddings (rows of an ``(n, d)`` array, unit-normalised
by the caller; they are normalised again here, and a zero row counts as
unrelated to everything), the turn texts, and the arc's baseline surprisal and
its standard deviation ``sigma``. Perplexity is ``2 ** surprisal``.

Definitions (``z = (s - baseline) / max(sigma, 1e-9)``, ``cos`` the cosine
similarity, ``clip`` to [0, 1]):

* **P** (perplexity salience) of a surprisal ``s``: the logistic ``1 / (1 + e^-z)``;
  0.5 at the baseline, towards 1 above it, towards 0 below it.
* **C** (coherence): ``clip(cos)`` between a text and its context (defined per
  level below); 1 = on the same thread, 0 = unrelated or opposed.
* **ID** (interrogative distance): ``1 - clip(cos(e, centroid))``, the cosine
  distance (as pgvector's ``<=>``, clipped to [0, 1]) to the preoccupation
  centroid: the embedding of the question or topic that opened the arc. The
  caller passes it; by default it is the mean embedding of the spike turns
  (surprisal above ``baseline + 2 sigma``), or of the most surprising turn
  when no turn spikes.

Levels (:func:`score_block`):

* utterance ``i``: P of ``s_i``; C the mean of ``clip(cos)`` to the turns just
  before and after it (1.0 for a block of one turn); ID of ``e_i``.
* exchange: consecutive non-overlapping pairs of turns ``(0, 1), (2, 3), ...``
  (a prompt and its reply when the block starts on a prompt; an odd last turn
  is an exchange on its own). P of the pair's mean surprisal; C the
  ``clip(cos)`` between the two turns (a lone turn keeps its utterance C); ID
  of the pair's mean embedding. Speaker changes are not known here, so
  exchanges are positional.
* theme (the block): P of the mean surprisal; C the mean ``clip(cos)`` of every
  turn to the block's mean embedding; ID of that mean embedding.

``Salience.value`` is ``(P + C + (1 - ID)) / 3``; the block's ``composite`` is
the mean of the three levels' values, where the utterance and exchange levels
contribute the mean value of their items.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemo.cognition.mind.gate_rules import content_words

__all__ = [
    "BlockSalience",
    "Salience",
    "Zone",
    "ZoneParams",
    "block_centroid",
    "coherence_gain",
    "detect_zones",
    "has_insight_marker",
    "is_procedural",
    "new_information",
    "score_block",
    "ties_weight",
    "unit_vector",
]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Salience:
    """P, C and ID of one utterance, exchange or theme, each in [0, 1]."""

    P: float
    C: float
    ID: float

    @property
    def value(self) -> float:
        """``(P + C + (1 - ID)) / 3``: high perplexity salience, high coherence, low distance score high."""
        return (self.P + self.C + (1.0 - self.ID)) / 3.0

    def as_dict(self) -> dict[str, float]:
        return {"P": self.P, "C": self.C, "ID": self.ID}


def _mean_salience(items: Sequence[Salience]) -> Salience:
    return Salience(
        float(np.mean([s.P for s in items])),
        float(np.mean([s.C for s in items])),
        float(np.mean([s.ID for s in items])),
    )


@dataclass(frozen=True, slots=True)
class BlockSalience:
    """Salience at three levels (memory-architecture §3.4) and the composite in [0, 1]."""

    utterance: list[Salience]
    exchange: list[Salience]
    theme: Salience
    composite: float

    def as_scores(self) -> dict[str, object]:
        """The seed's ``salience_scores`` record: level means and the composite."""
        return {
            "utterance_level": _mean_salience(self.utterance).as_dict(),
            "exchange_level": _mean_salience(self.exchange).as_dict(),
            "theme_level": self.theme.as_dict(),
            "composite": self.composite,
        }


def _logistic(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-min(z, 700.0)))
    e = math.exp(max(z, -700.0))
    return e / (1.0 + e)


def _p(surprisal: float, baseline: float, sigma: float) -> float:
    return _logistic((surprisal - baseline) / max(sigma, _EPS))


def unit_vector(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to length 1 (a zero vector stays zero)."""
    norm = float(np.linalg.norm(v))
    return v / norm if norm > _EPS else np.zeros_like(v)


def block_centroid(vectors: np.ndarray) -> np.ndarray:
    """A block's vector from its turns' (rows): the unit mean of their unit vectors, float32. Every
    turn weighs the same whatever its length, and the result is as near each turn's as the block
    is coherent (a block about one thing sits close to each of its turns)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim != 2 or len(rows) == 0:
        raise ValueError("a block centroid needs a non-empty 2-d array of turn vectors")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    units = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > _EPS)
    return unit_vector(units.mean(axis=0)).astype(np.float32)


def _sim(a: np.ndarray, b: np.ndarray) -> float:
    """``clip(cos(a, b))`` for unit (or zero) vectors."""
    return min(1.0, max(0.0, float(a @ b)))


def _check(
    surprisals: Sequence[float], embeddings: np.ndarray, baseline: float, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(surprisals, dtype=np.float64)
    e = np.asarray(embeddings, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError("surprisals must be a flat sequence")
    if e.ndim != 2 or e.shape[0] != s.shape[0]:
        raise ValueError(f"embeddings must have shape ({s.shape[0]}, d), not {e.shape}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(e))):
        raise ValueError("surprisals and embeddings must be finite")
    if not (math.isfinite(baseline) and math.isfinite(sigma)) or sigma < 0:
        raise ValueError(f"baseline must be finite and sigma finite and >= 0, not ({baseline}, {sigma})")
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    unit = np.divide(e, norms, out=np.zeros_like(e), where=norms > _EPS)
    return s, unit


def _centroid(
    s: np.ndarray, unit: np.ndarray, baseline: float, sigma: float, centroid: np.ndarray | None, spike_sigma: float
) -> np.ndarray:
    if centroid is not None:
        c = np.asarray(centroid, dtype=np.float64).reshape(-1)
        if c.shape[0] != unit.shape[1] or not np.all(np.isfinite(c)):
            raise ValueError(f"centroid must be a finite vector of length {unit.shape[1]}")
        return unit_vector(c)
    spikes = s > baseline + spike_sigma * sigma
    rows = unit[spikes] if spikes.any() else unit[[int(np.argmax(s))]]
    return unit_vector(rows.mean(axis=0))


def score_block(
    surprisals: Sequence[float],
    embeddings: np.ndarray,
    baseline: float,
    sigma: float,
    centroid: np.ndarray | None = None,
) -> BlockSalience:
    """P, C and ID per utterance, per exchange and for the whole block, and their composite.

    See the module docstring for the exact definitions. Raises ``ValueError`` for an
    empty block, mismatched shapes, non-finite values or a negative ``sigma``.
    """
    s, unit = _check(surprisals, embeddings, baseline, sigma)
    n = s.shape[0]
    if n == 0:
        raise ValueError("a block needs at least one turn")
    c = _centroid(s, unit, baseline, sigma, centroid, 2.0)

    def distance(v: np.ndarray) -> float:
        return 1.0 - _sim(unit_vector(v), c)

    utterance: list[Salience] = []
    for i in range(n):
        neighbours = [_sim(unit[i], unit[j]) for j in (i - 1, i + 1) if 0 <= j < n]
        coherence = float(np.mean(neighbours)) if neighbours else 1.0
        utterance.append(Salience(_p(float(s[i]), baseline, sigma), coherence, distance(unit[i])))

    exchange: list[Salience] = []
    for i in range(0, n, 2):
        if i + 1 < n:
            pair_p = _p(float(s[i : i + 2].mean()), baseline, sigma)
            exchange.append(Salience(pair_p, _sim(unit[i], unit[i + 1]), distance(unit[i : i + 2].mean(axis=0))))
        else:
            exchange.append(utterance[i])

    mean_vec = unit_vector(unit.mean(axis=0))
    theme = Salience(
        _p(float(s.mean()), baseline, sigma),
        float(np.mean([_sim(row, mean_vec) for row in unit])),
        1.0 - _sim(mean_vec, c),
    )
    composite = (
        float(np.mean([u.value for u in utterance])) + float(np.mean([x.value for x in exchange])) + theme.value
    ) / 3.0
    return BlockSalience(utterance, exchange, theme, min(1.0, max(0.0, composite)))


def coherence_gain(baseline: float, final: float) -> float:
    """The seed's Arreté on perplexity ``2 ** surprisal``: ``(2**baseline - 2**final) / 2**baseline``.

    Equal to ``1 - 2 ** (final - baseline)``, clipped to [-1, 1]: positive when the
    arc ends less perplexed than it started (``final < baseline``), negative when it
    ends more perplexed, -1 once perplexity has doubled or more. Both arguments are
    surprisals in bits/token.
    """
    if not (math.isfinite(baseline) and math.isfinite(final)):
        raise ValueError(f"baseline and final must be finite, not ({baseline}, {final})")
    return max(-1.0, -math.expm1(min(final - baseline, 1.0) * math.log(2.0)))


def ties_weight(salience: BlockSalience, coherence_gain: float, *, salience_share: float = 0.5) -> float:
    """The block's merge weight in [0, 1]: ``a * composite + (1 - a) * (1 + gain) / 2``.

    ``a`` is ``salience_share``; ``gain`` is the coherence gain clipped to [-1, 1], so a
    block that resolved nothing (gain 0) gets half the gain share and one that ended
    more confused gets less. Strictly increasing in both the composite and the gain
    when ``0 < a < 1``.
    """
    if not 0.0 <= salience_share <= 1.0:
        raise ValueError("salience_share must be in [0, 1]")
    if not math.isfinite(coherence_gain):
        raise ValueError("coherence_gain must be finite")
    gain = min(1.0, max(-1.0, coherence_gain))
    weight = salience_share * salience.composite + (1.0 - salience_share) * (1.0 + gain) / 2.0
    return min(1.0, max(0.0, weight))


# --- zones (memory-architecture §3.5) ---------------------------------------------------------

_APOS = "['\u2019]"
_INSIGHT = re.compile(
    "|".join(
        (
            r"\bI see\b",
            r"\b(?:that|it) makes sense\b",
            r"\bmakes sense now\b",
            r"(?:^|[.!?;:,\u2014-]\s*)exactly\b",
            r"\bexactly (?:right|it)\b",
            r"\bI (?:just |finally )?reali[sz]e[ds]?\b",
            r"\bnow I (?:understand|get it|see)\b",
            r"\bgot it,? so\b",
            r"\bthe (?:answer|solution|fix|trick|key|problem) (?:is|was)\b",
            r"\b(?:it )?turn(?:s|ed) out\b",
            r"\bbreakthrough\b",
            rf"\bthat{_APOS}?s it\b(?! for\b)",
            rf"\b(?:I|we)(?: have|{_APOS}ve)? decided\b",
            r"\b(?:I|we) will\b",
            rf"\b(?:I|we)(?: am| are|{_APOS}m|{_APOS}re) going to\b",
            rf"\blet{_APOS}?s go with\b",
        )
    ),
    re.IGNORECASE,
)

_FILLER = re.compile(
    r"^[\s\W]*(?:(?:ok(?:ay)?|k|sure|cool|great|nice|fine|alright|all right|got it|"
    r"thanks?(?: you)?(?: (?:so|very) much)?|thx|ty|cheers|you'?re welcome|no problem|np|sounds good|"
    r"hi|hello|hey|good (?:morning|afternoon|evening|night)|bye|goodbye|see you|later|hmm+|uh+|um+|mhm|"
    r"one (?:sec|moment)|brb|lol|perfect)[\s\W]*)+$",
    re.IGNORECASE,
)
_SCHEDULING = re.compile(
    r"\b(?:talk|speak|chat|catch up) (?:to you |with you )?(?:later|soon|tomorrow|next week)\b"
    r"|\bsee you\b|\bbe right back\b|\b(?:re)?schedul\w*\b|\bcalendar\b|\bwhat time works\b"
    rf"|\b(?:let{_APOS}?s|let us|can we|shall we) (?:meet|talk|sync|continue|pick (?:this|it) up)\b",
    re.IGNORECASE,
)


def has_insight_marker(text: str) -> bool:
    """Confirmation, breakthrough or decision language ("I see", "the answer is", "I decided", ...)."""
    return bool(_INSIGHT.search(text))


def is_procedural(text: str, *, max_words: int = 12) -> bool:
    """Administrative content: the whole text is acknowledgement, thanks or greeting ("ok", "thanks!"),
    or it is short (at most ``max_words`` words) scheduling chatter ("talk tomorrow", "let's meet at 3")."""
    if not text.strip() or _FILLER.match(text):
        return True
    return len(text.split()) <= max_words and bool(_SCHEDULING.search(text))


@dataclass(frozen=True, slots=True)
class ZoneParams:
    """Thresholds of memory-architecture §3.5."""

    spike_sigma: float = 2.0  # live: surprisal above baseline + spike_sigma * sigma
    local_gain: float = 0.3  # live: coherence gain from this turn to the next above this
    max_distance: float = 0.2  # live: ID to the centroid below this
    repeat_similarity: float = 0.95  # dead: cosine above this with an earlier turn of the block
    procedural_max_words: int = 12  # scheduling chatter longer than this is not procedural

    def __post_init__(self) -> None:
        if not (math.isfinite(self.spike_sigma) and self.spike_sigma >= 0):
            raise ValueError("spike_sigma must be finite and >= 0")
        if not -1.0 <= self.local_gain <= 1.0:
            raise ValueError("local_gain must be in [-1, 1]")
        if not 0.0 <= self.max_distance <= 1.0:
            raise ValueError("max_distance must be in [0, 1]")
        if not 0.0 <= self.repeat_similarity <= 1.0:
            raise ValueError("repeat_similarity must be in [0, 1]")
        if self.procedural_max_words < 0:
            raise ValueError("procedural_max_words must be >= 0")


@dataclass(frozen=True, slots=True)
class Zone:
    """Turns ``start`` to ``end`` (both inclusive), live or dead, with the reasons of its turns."""

    start: int
    end: int
    live: bool
    reasons: tuple[str, ...]


def _turn(
    i: int,
    text: str,
    s: np.ndarray,
    unit: np.ndarray,
    baseline: float,
    sigma: float,
    c: np.ndarray,
    p: ZoneParams,
    informative: bool = False,
) -> tuple[bool, tuple[str, ...]]:
    if i > 0 and float(np.max(unit[:i] @ unit[i])) > p.repeat_similarity:
        return False, ("repeat",)
    if is_procedural(text, max_words=p.procedural_max_words):
        return False, ("procedural",)
    reasons: list[str] = []
    if s[i] > baseline + p.spike_sigma * sigma:
        reasons.append("spike")
    if i + 1 < s.shape[0] and coherence_gain(float(s[i]), float(s[i + 1])) > p.local_gain:
        reasons.append("gain")
    if 1.0 - _sim(unit[i], c) < p.max_distance:
        reasons.append("on_topic")
    if has_insight_marker(text):
        reasons.append("insight")
    if informative:
        reasons.append("informative")
    return (True, tuple(reasons)) if reasons else (False, ("stable",))


def detect_zones(
    texts: Sequence[str],
    surprisals: Sequence[float],
    embeddings: np.ndarray,
    baseline: float,
    sigma: float,
    centroid: np.ndarray | None = None,
    params: ZoneParams = ZoneParams(),
    informative: Sequence[bool] | None = None,
) -> list[Zone]:
    """Split a block into live and dead zones that cover every turn exactly once, in order.

    A turn is classified by the first rule that applies:

    1. ``"repeat"`` (dead): cosine above ``repeat_similarity`` with an earlier turn of
       the block; the earlier turn already carries the content.
    2. ``"procedural"`` (dead): :func:`is_procedural` (acknowledgements, thanks,
       greetings, short scheduling chatter).
    3. live, with every criterion that holds as a reason: ``"spike"`` (surprisal above
       ``baseline + spike_sigma * sigma``), ``"gain"`` (coherence gain from this turn to
       the next above ``local_gain``; the last turn has no next), ``"on_topic"`` (ID to
       the centroid below ``max_distance``), ``"insight"`` (:func:`has_insight_marker`),
       ``"informative"`` (the caller's ``informative[i]``: the turn states new information, a
       fact or a date, which the seed's dead-zone rule "without new information" excludes).
    4. ``"stable"`` (dead): none of the above.

    Rules 1 and 2 take precedence over every live criterion, however strongly it holds.
    Adjacent turns of the same liveness are merged into one zone, whose reasons are the
    union of its turns' reasons in first-seen order, so zones alternate live and dead.
    The centroid defaults as in :func:`score_block`, with spikes judged by
    ``params.spike_sigma``. An empty block has no zones.
    """
    if len(texts) != len(surprisals):
        raise ValueError(f"{len(texts)} texts but {len(surprisals)} surprisals")
    if informative is not None and len(informative) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(informative)} informative flags")
    if len(texts) == 0:
        return []
    s, unit = _check(surprisals, embeddings, baseline, sigma)
    c = _centroid(s, unit, baseline, sigma, centroid, params.spike_sigma)
    zones: list[Zone] = []
    for i, text in enumerate(texts):
        live, reasons = _turn(i, text, s, unit, baseline, sigma, c, params, bool(informative and informative[i]))
        if zones and zones[-1].live == live:
            last = zones[-1]
            merged = last.reasons + tuple(r for r in reasons if r not in last.reasons)
            zones[-1] = Zone(last.start, i, live, merged)
        else:
            zones.append(Zone(i, i, live, reasons))
    return zones


def new_information(texts: Sequence[str], *, min_new: int = 3, min_length: int = 4) -> list[bool]:
    """Whether each text brings information no earlier text of the sequence (a session, in order)
    gave: at least ``min_new`` content words of ``min_length`` letters or more that no earlier
    text used. The seed's dead zones are "repetition or clarification without new information"
    (§3.5), so a stable turn that names new things is not one of them.

    >>> new_information(["I adopted a cat named Bailey", "Aww a cat", "She loves chasing laser pointers"])
    [True, False, True]
    """
    seen: set[str] = set()
    out = []
    for text in texts:
        words = {w for w in content_words(text) if len(w) >= min_length and w.isalpha()}
        out.append(len(words - seen) >= min_new)
        seen |= words
    return out
