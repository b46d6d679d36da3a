"""Recall stage 6b: how well the hits support what the question is about.

Seed: archive-adr §7 ("The Mentat Refusal": a question about something the scope never held gets
a refusal, not a guess). The unknown-names rule catches questions about people and places the
scope never heard of; this stage reads the question's other content words (its object: "my *cat*",
"the trip to *Peru*", :func:`~mnemo.cognition.scoring.refusal.focus_words`) and, for each, two pieces of
evidence: how many items of the scope hold it (the lexical postings), and how well the returned
hits' tokens match its tokens (token-level MaxSim, :func:`~mnemo.cognition.scoring.refusal.word_support`).
:func:`~mnemo.cognition.scoring.refusal.judge` refuses when a word the scope rarely holds finds no
support among the hits (``refuse_unsupported``).
"""

from __future__ import annotations

import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.refusal import focus_words, literal_focus, relation_forms, word_hit_support
from mnemo.recall.capture import sink
from mnemo.recall.rank import _token_vectors
from mnemo.recall.records import Blended, Candidates, Request
from mnemo.store import lexicon

__all__ = ["support"]


async def support(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, blended: Blended
) -> None:
    """Fill ``found.support``: each question word's count in the scope and support among the top hits;
    ``found.literal``: the words that name a relation a person names literally (a sister, a mother)."""
    capture = sink()
    if (not rt.settings.refuse_unsupported and capture is None) or request.threshold <= -1.0:
        return
    tokenizer = rt.embeddings.tokenizer
    words = focus_words(request.text)
    if not words or found.query_tokens is None or tokenizer is None:
        return
    top = [i for _, i, _ in blended.scored[: min(request.k, 10)]]
    tokens = await _token_vectors(rt, conn, found.stage, request.scope, top)
    pieces = [tokenizer(w, add_special_tokens=False)["input_ids"] for w in words]
    read = [tokens[i] for i in top if i in tokens]
    if not read:
        return  # the hits' token embeddings are still being read (a fresh fork, an import): no judgement
    by_hit = word_hit_support(found.query_tokens, pieces, read)
    matched = by_hit.max(axis=1).tolist()
    literal = literal_focus(request.text, words)
    forms = {f for w in literal for f in relation_forms(w)}
    # The rule asks only whether at most support_rarity items hold a word the hits do not match, or
    # hold a relation named literally: only those are counted, and counting stops just past the
    # rarity (a benchmark's capture counts every word further, to draw the curve over rarities).
    cap = 1000 if capture is not None else rt.settings.support_rarity + 1
    weak = [w for w, m in zip(words, matched, strict=True) if capture or m < rt.settings.support_threshold]
    counted = [*dict.fromkeys([*weak, *forms])]
    held = (
        await lexicon.word_frequencies(conn, request.scope.entity_id, request.scope.namespace, counted, cap=cap)
        if counted
        else {}
    )
    for w in literal:  # a relation is held when any of its words is ("mum" for a mother)
        held[w] = sum(held.get(f, 0) for f in relation_forms(w))
    found.support = {w: (held.get(w, -1), m) for w, m in zip(words, matched, strict=True)}
    found.literal = tuple(literal)
    if capture is not None:
        capture.support.append(dict(found.support))
        capture.by_hit.append((words, by_hit, held, found.facts.indexed if found.facts else 0))
