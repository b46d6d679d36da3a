"""Offline summaries, insights and narratives: the no-LLM side of the night cycle.

Seeds: memory-architecture §3–4 (dead zones of a block are summarised, live
zones kept verbatim), archive-adr §5 (the LLM is optional: every step works
without one) and cognitive-plan §4.2 (deep consolidation: cluster → insight
with citations, then a causal *identity narrative* — "I came to value X
because of experiences Y and Z" — stored with the prefix "Identity
narrative: ").

* :func:`split_sentences` — a small rule-based sentence splitter (abbreviation
  and decimal aware) used here and by :mod:`mnemo.cognition.consolidation.extraction`.
* :func:`extractive_summary` — the most *central* sentences (degree
  centrality: mean cosine to the others) picked greedily with an MMR-style
  redundancy penalty, kept in their original order, within a token budget.
* :func:`offline_insight` / :func:`offline_narrative` — the fallbacks for
  :func:`mnemo.llm.insight` / :func:`mnemo.llm.narrative`.
* :func:`claim_of` / :func:`same_claim` — what a statement pins down (its
  times, names and, for a fact, its object's words): an insight merges only
  statements of one claim ("went to a jazz festival on 4 May" and "went to a
  folk festival on 17 August" are two events, however near their vectors).

Everything here is pure and deterministic (ties go to the lower index).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mnemo.cognition.text.phrases import clean_name, word_set
from mnemo.cognition.text.timex import find_times, strip_times
from mnemo.cognition.text.utterances import AUX, SUBJECTS

__all__ = [
    "INSIGHT_PREFIX",
    "NARRATIVE_PREFIX",
    "Claim",
    "centrality",
    "claim_of",
    "covers",
    "extractive_summary",
    "gist_lines",
    "offline_insight",
    "offline_narrative",
    "same_claim",
    "select_sentences",
    "split_sentences",
    "word_count",
]

INSIGHT_PREFIX = "Insight: "
NARRATIVE_PREFIX = "Identity narrative: "
ELLIPSIS = "…"

# A sentence ends at . ! ? or … (plus closing quotes/brackets) followed by whitespace.
_END = re.compile(r"([.!?…]+)([\"'”’)\]]*)\s+")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e eg ie a.m p.m approx dept fig no vol inc ltd co corp mt ft ave".split()  # noqa: SIM905
)


def word_count(text: str) -> int:
    """The default token counter: whitespace-separated words."""
    return len(text.split())


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: lines are split at ., !, ?, … followed by a space, except after
    common abbreviations ("Dr.", "e.g.") and single initials ("J. K."); newlines always split."""
    out: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _END.finditer(line):
            if match.group(1) == ".":
                words = line[start : match.start()].split()
                last = words[-1].lower().rstrip(".") if words else ""
                if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                    continue
            piece = line[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array (one row per sentence), got shape {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(norms > 0, v / np.where(norms > 0, norms, 1.0), 0.0)
    return np.nan_to_num(unit, nan=0.0, posinf=0.0, neginf=0.0)


def _similarity(vectors: np.ndarray, n: int) -> np.ndarray:
    if len(vectors) != n:
        raise ValueError(f"got {n} sentences but {len(vectors)} vectors; pass one vector per sentence")
    unit = _unit_rows(vectors)
    sim: np.ndarray = np.clip(unit @ unit.T, -1.0, 1.0)
    return sim


def centrality(vectors: np.ndarray) -> np.ndarray:
    """Degree centrality of each row: its mean cosine similarity to every *other* row (0 for a single row)."""
    v = np.asarray(vectors, dtype=np.float64)
    n = len(v)
    if n == 0:
        return np.zeros(0)
    sim = _similarity(v, n)
    if n == 1:
        return np.zeros(1)
    out: np.ndarray = (sim.sum(axis=1) - np.diag(sim)) / (n - 1)
    return out


def select_sentences(
    sentences: Sequence[str],
    vectors: np.ndarray,
    max_tokens: int,
    count_tokens: Callable[[str], int] = word_count,
    *,
    redundancy: float = 0.3,
) -> list[int]:
    """Indices (ascending) of the sentences an extractive summary keeps.

    Greedy: at each step the candidate with the highest ``centrality - redundancy * max cosine to
    the already chosen`` that still fits the budget is taken (ties: lower index); exact duplicates
    of a chosen sentence are skipped. Empty when nothing fits.
    """
    n = len(sentences)
    if n == 0 or max_tokens <= 0:
        return []
    sim = _similarity(np.asarray(vectors, dtype=np.float64), n)
    central = (sim.sum(axis=1) - np.diag(sim)) / (n - 1) if n > 1 else np.zeros(1)
    cost = [count_tokens(s) for s in sentences]
    chosen: list[int] = []
    seen: set[str] = set()
    used = 0
    closest = np.full(n, -np.inf)  # max similarity to a chosen sentence
    available = [i for i in range(n) if sentences[i].strip()]
    while available:
        penalty = np.where(np.isfinite(closest), np.maximum(closest, 0.0), 0.0)
        best: int | None = None
        best_score = -np.inf
        for i in available:
            if used + cost[i] > max_tokens:
                continue
            score = float(central[i] - redundancy * penalty[i])
            if score > best_score:  # strict: ties keep the lower index
                best, best_score = i, score
        if best is None:
            break
        chosen.append(best)
        seen.add(sentences[best].strip())
        used += cost[best]
        closest = np.maximum(closest, sim[best])
        available = [i for i in available if i != best and sentences[i].strip() not in seen]
    chosen.sort()
    # A tokenizer that is not additive over " ".join: drop the weakest until the joined text fits.
    while chosen and count_tokens(" ".join(sentences[i] for i in chosen)) > max_tokens:
        weakest = min(chosen, key=lambda i: (central[i], -i))
        chosen.remove(weakest)
    return chosen


def _cut(sentence: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The longest word prefix of ``sentence`` that, with "…", fits ``max_tokens`` ("" if none)."""
    words = sentence.split()
    best = ""
    for k in range(1, len(words) + 1):
        candidate = " ".join(words[:k]).rstrip(",;:") + ELLIPSIS
        if count_tokens(candidate) > max_tokens:
            break
        best = candidate
    return best


def extractive_summary(
    sentences: Sequence[str],
    vectors: np.ndarray,
    max_tokens: int,
    count_tokens: Callable[[str], int] = word_count,
) -> str:
    """The most central sentences, in their original order, joined by spaces, within ``max_tokens``.

    ``vectors`` holds one embedding per sentence. Sentences are never cut, except when no
    sentence fits at all: then the most central one is returned cut at a word boundary and
    ending in "…". Deterministic.
    """
    chosen = select_sentences(sentences, vectors, max_tokens, count_tokens)
    if chosen:
        return " ".join(sentences[i].strip() for i in chosen)
    if not sentences or max_tokens <= 0:
        return ""
    scores = centrality(vectors)
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    best = next((i for i in order if sentences[i].strip()), None)
    return "" if best is None else _cut(sentences[best].strip(), max_tokens, count_tokens)


def gist_lines(roles: Sequence[str], informative: Sequence[bool]) -> list[int]:
    """The lines an episode's gist (its compressed line) is drawn from, by index: the user's lines
    that state something new (``informative``: a fact, a preference, a dated event, words the
    session had not used); else anyone's informative lines; else every line. The gist says what
    the episode was about, not the assistant's courtesies around it (issue 39 item 14)."""
    if len(roles) != len(informative):
        raise ValueError(f"got {len(roles)} roles but {len(informative)} informative flags")
    said = [i for i, (role, new) in enumerate(zip(roles, informative, strict=True)) if new and role == "user"]
    if said:
        return said
    return [i for i, new in enumerate(informative) if new] or list(range(len(roles)))


def offline_insight(statements: Sequence[str], vectors: np.ndarray, claims: Sequence[Claim] | None = None) -> str:
    """The most central statement as an insight, prefixed "Insight: " (ties: the first).

    With ``claims`` (one per statement, :func:`claim_of`), the insight must represent every source:
    the most central statement that :func:`covers` all the others' times, names and objects, else
    every distinct statement, most central first, joined by "; "."""
    if not statements:
        raise ValueError("offline_insight needs at least one statement")
    scores = centrality(np.asarray(vectors, dtype=np.float64))
    if len(scores) != len(statements):
        raise ValueError(f"got {len(statements)} statements but {len(scores)} vectors")
    if claims is not None and len(claims) != len(statements):
        raise ValueError(f"got {len(statements)} statements but {len(claims)} claims")
    order = sorted(range(len(statements)), key=lambda i: (-scores[i], i))
    best = order[0]
    if claims is not None and not covers(claims[best], claims):
        fits = [i for i in order if covers(claims[i], claims)]
        if not fits:
            parts = dict.fromkeys(c for c in (_clause(statements[i]) for i in order) if c)
            return INSIGHT_PREFIX + "; ".join(parts)
        best = fits[0]
    text = statements[best].strip()
    return text if text.startswith(INSIGHT_PREFIX) else INSIGHT_PREFIX + text


# ---------------------------------------------------------------- claims

_CLAIM_WORD = re.compile(r"[^\W_][\w'’-]*")
_OBJECT_STOP = word_set(
    "a an the of to in on at for with and or but by from as is are was were be been some any this that these "
    "those it its very really so just also"
)


@dataclass(frozen=True, slots=True)
class Claim:
    """What a statement pins down: the time expressions it names, its names and numbers (casefolded),
    and, for a fact whose subject and predicate are known, the words of its object (None: unknown)."""

    times: frozenset[str]
    names: frozenset[str]
    objects: frozenset[str] | None = None


def _name(word: str) -> str:
    return word.casefold().removesuffix("'s").removesuffix("’s")


def _stem(word: str) -> str:
    word = _name(word)
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def claim_of(text: str, *, subject: str | None = None, predicate: str | None = None) -> Claim:
    """The :class:`Claim` of ``text``; ``subject`` and ``predicate`` (a fact memory's entity and
    attribute, its text being "subject predicate object …") add the subject to the names and give
    the object's words."""
    times: set[str] = set()
    spans: list[tuple[int, int]] = []
    for start, end, kind, m in find_times(text):
        spans.append((start, end))
        if kind == "iso":
            times.add(f"{int(m.group('y')):04d}-{int(m.group('m')):02d}-{int(m.group('d')):02d}")
        else:
            times.add(" ".join(re.sub(r"^(?:on|the|in)\s+", "", m.group(0).casefold().strip(" .")).split()))
    names: set[str] = set()
    offset = 0
    for sentence in split_sentences(text):
        at = text.find(sentence, offset)
        offset = max(offset, at)
        for w in _CLAIM_WORD.finditer(sentence):
            pos = at + w.start()
            word = w.group(0)
            if any(s <= pos < e for s, e in spans):
                continue  # part of a time ("2023-05-07", "May")
            if any(ch.isdigit() for ch in word) or (word[0].isupper() and clean_name(word.capitalize())):
                names.add(_name(word))  # "Paris", "LGBTQ", "42" (not "I", "The", "Monday")
    objects = None
    if subject and predicate:
        names.add(_name(" ".join(subject.split())))
        head = f"{subject} {predicate} ".casefold()
        if text.casefold().startswith(head):
            rest = strip_times(re.sub(r"\([^)]*\)", " ", text[len(head) :]))
            objects = frozenset(_stem(w) for w in _CLAIM_WORD.findall(rest) if w.casefold() not in _OBJECT_STOP)
    return Claim(frozenset(times), frozenset(names), objects)


def _nested(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a


def same_claim(a: Claim, b: Claim) -> bool:
    """Whether two statements can be one claim: neither names a time, a name or (both facts) an
    object word that the other contradicts — each part of one is a subset of the other's. Different
    dates, different people or places, or different objects: two claims."""
    if not (_nested(a.times, b.times) and _nested(a.names, b.names)):
        return False
    return a.objects is None or b.objects is None or _nested(a.objects, b.objects)


def covers(claim: Claim, others: Sequence[Claim]) -> bool:
    """Whether a statement with ``claim`` says every time, name and object word of ``others``."""
    return all(
        o.times <= claim.times
        and o.names <= claim.names
        and (o.objects is None or claim.objects is None or o.objects <= claim.objects)
        for o in others
    )


def _clause(text: str) -> str:
    text = text.strip()
    for prefix in (INSIGHT_PREFIX, NARRATIVE_PREFIX):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    return text.rstrip(" .;:!")


def _is_sentence(text: str) -> bool:
    """Whether ``text`` is a whole statement with its own subject ("Maya prefers ...", "The beans
    need ...", "AI safety matters") rather than a verb phrase ("value simple tools"): it opens with
    a subject word or an acronym, or its second word is a finite verb (an auxiliary, or a verb in
    -s or -ed)."""
    words = text.split()
    if not words:
        return False
    first = words[0].strip("\"'(").lower()
    if first in SUBJECTS or (len(words[0]) > 1 and words[0].isupper()):
        return True
    second = words[1].lower().strip(",;:") if len(words) > 1 else ""
    return second in AUX or (len(second) > 3 and (second.endswith(("s", "ed")) and not second.endswith("ss")))


def offline_narrative(insight: str, sources: Sequence[str], *, max_sources: int = 3) -> str:
    """``"Identity narrative: I came to {insight} because of: {source1}; {source2}"`` (cognitive-plan §4.2).

    The "Insight: " prefix and trailing punctuation are dropped from the parts. An insight that is a
    verb phrase ("Value simple tools") follows "I came to" with its first letter lowercased; one that
    is a whole statement ("Maya prefers watering ...") follows "I came to see that" as written, so
    a name keeps its capital (issue 39 item 13: "I came to maya prefers watering").
    At most ``max_sources`` sources are cited.
    """
    core = _clause(insight)
    if _is_sentence(core):
        opener = core.split()[0]
        lower = opener.lower() in SUBJECTS and opener.lower() != "i" and opener[1:].islower()
        core = f"see that {core[0].lower() + core[1:] if lower else core}"
    elif core and core[0].isupper() and not (len(core) > 1 and (core[1].isupper() or core[1] == " ")):
        core = core[0].lower() + core[1:]
    reasons = [c for c in (_clause(s) for s in sources) if c][:max_sources]
    if not reasons:
        return f"{NARRATIVE_PREFIX}I came to {core}."
    return f"{NARRATIVE_PREFIX}I came to {core} because of: {'; '.join(reasons)}"
