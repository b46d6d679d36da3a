"""Context assembly: the block of memory an agent prepends to its prompt, within a token budget.

Seed: cognitive-plan §3.2 (dynamic context injection + stochastic identity
injection) and §2.10 (token counting). Three parts, in this order:

1. **Always**: anchored (immutable) memories, every time, whole.
2. **Identity**: the ``identity_top`` strongest identity-level memories by
   weight centre (preferences, reflections, identity narratives: the kinds
   about the self, :data:`~mnemo.cognition.scoring.context_packing.IDENTITY_KINDS`; never an
   ordinary note, however often recall returned it) each roll their Beta
   weight; above ``identity_threshold`` a memory is injected whole, otherwise
   it is absent this time. Never truncated. This track has its own
   allocation, ``identity_share`` of what the anchored part leaves.
3. **Situational**: recall for the attention text (hybrid search + cognitive
   blend), best first, until the budget is full (a memory is left out when
   the update that superseded it is there, and an insight is left out when
   the memories it was derived from are there); the first ``context_full``
   entries in full text, the rest in their compressed form (the stored
   one-liner, else the first sentence). Each is dated by its event time
   (when what it tells happened), else by when it was written.

Unless ``read_only``, the situational memories placed in the block are
reinforced and the best five of them linked as recalled together (the seed's
"record co-access for Hebbian learning"; issue 42 decision 4: 10 links at most);
candidates that did not make it in are left alone. Like a recall's, this use is
written behind the block, in the scope's use queue (issue 42 decision 3).

Token counts use the embedder's own tokenizer (no download); every rendered
line is counted, headers included, so the block never exceeds the budget
(only anchored memories may, and the result says so).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from mnemo._dynamics import mutate_after_recall, weight_of
from mnemo._runtime import Runtime
from mnemo._validate import check_query, to_utc
from mnemo.cognition.scoring.context_packing import (
    IDENTITY_KINDS,
    Candidate,
    identity_pool,
    pack_situational,
    roll_identity,
)
from mnemo.errors import InvalidContentError
from mnemo.models import ContextBlock, ContextItem, Hit, Scope
from mnemo.recall import pipeline as recall_path
from mnemo.recall.decide import queue_use
from mnemo.store import dynamics as dynamic_rows

__all__ = ["ContextBlock", "ContextItem", "assemble", "compress"]


HEADERS = {
    "anchored": "## Always true",
    "identity": "## Who I am and what I value",
    "situational": "## Relevant memories",
}
#: Counts the tokens of each text with the embedder's tokenizer.
TokenCounter = Callable[[list[str]], list[int]]
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def compress(text: str, max_words: int = 24) -> str:
    """The offline compressed form: the first sentence, cut to ``max_words`` words."""
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    words = first.split()
    return " ".join(words[:max_words]) + ("…" if len(words) > max_words or first != text.strip() else "")


def _stamp(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d") if when else ""


def _line(content: str, *, when: datetime | None = None, who: str | None = None, kind: str | None = None) -> str:
    tags = " · ".join(t for t in (_stamp(when), kind, who) if t)
    return f"- [{tags}] {content}" if tags else f"- {content}"


def _hit_line(hit: Hit, content: str) -> str:
    """A recalled item, dated when what it tells happened: a memory's event time (a block's or
    fact's source turns, an insight's newest source), else when it was written; so "yesterday"
    in its text can be resolved."""
    kind = hit.memory_kind if hit.item_kind == "memory" else "said"
    return _line(content, when=hit.event_time or hit.created_at, who=hit.speaker or hit.role, kind=kind)


async def assemble(
    rt: Runtime,
    scope: Scope,
    attention: object,
    budget: int,
    *,
    seed: int | None = None,
    read_only: bool = False,
    as_entity: str | None = None,
    as_of: datetime | None = None,
) -> ContextBlock:
    """Build the context block for ``attention`` in ``scope`` within ``budget`` tokens (at the point in
    time ``as_of`` when given: nothing written after it)."""
    cfg = rt.settings
    text = check_query(attention, max_chars=cfg.max_content_chars, label="attention text")
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 1_000_000:
        raise InvalidContentError(f"budget must be an integer number of tokens between 1 and 1000000, not {budget!r}")
    rng = random.Random(seed) if seed is not None else rt.child_rng()
    # Recall first: it checks that the scope exists and that the reader may read it. It runs
    # read-only: only the memories that make it into the block are reinforced, below.
    point = None if as_of is None else to_utc(as_of, label="as_of")
    when = point or datetime.now(UTC)
    result = await recall_path.recall(
        rt, scope, text, min(cfg.context_candidates, cfg.max_k), read_only=True, as_entity=as_entity, now=point
    )
    async with rt.store.connection() as conn:
        anchored = await dynamic_rows.strongest(
            conn, scope.entity_id, scope.namespace, 1000, anchored=True, written_by=point
        )
        strongest = await dynamic_rows.strongest(
            conn,
            scope.entity_id,
            scope.namespace,
            cfg.identity_top,
            anchored=False,
            kinds=sorted(IDENTITY_KINDS),
            written_by=point,
        )
    count = rt.embeddings.count_tokens
    header_cost = dict(zip(HEADERS, count(list(HEADERS.values())), strict=True))
    items = _anchored_items(anchored, count)
    used = sum(i.tokens for i in items) + (header_cost["anchored"] if items else 0)
    left = max(budget - used, 0)
    identity = _identity_items(rt, strongest, count, rng, int(left * cfg.identity_share) - header_cost["identity"])
    if identity:
        left -= sum(i.tokens for i in identity) + header_cost["identity"]
    taken = {i.id for i in identity} | {m.id for m in anchored}
    hits = _fresh_hits(result.hits, taken)
    situational = _situational_items(rt, hits, count, max(left - header_cost["situational"], 0), taken)
    items += identity + situational
    reader = scope.entity_id if as_entity is None else as_entity
    if not read_only and cfg.mutation and reader == scope.entity_id:
        _reinforce_placed(rt, scope, hits, situational, text, when)  # written behind, in the use queue
    return _render(scope, items, count, budget, result.refused)


def _anchored_items(anchored: Sequence[dynamic_rows.MemoryState], count: TokenCounter) -> list[ContextItem]:
    """Every anchored memory, whole (they are always true)."""
    lines = [_line(m.content, kind=m.kind) for m in anchored]
    tokens = count(lines) if lines else []
    return [ContextItem(m.id, "anchored", "full", line, n) for m, line, n in zip(anchored, lines, tokens, strict=True)]


def _identity_items(
    rt: Runtime, strongest: Sequence[dynamic_rows.MemoryState], count: TokenCounter, rng: random.Random, share: int
) -> list[ContextItem]:
    """The strongest identity-level memories, each rolled against its Beta weight, within ``share`` tokens."""
    strongest = identity_pool(strongest, rt.settings.identity_top)
    lines = [_line(m.content, kind=m.kind) for m in strongest]
    tokens = count(lines) if lines else []
    rolled = roll_identity(
        [Candidate(i, tokens[i], None, weight_of(m)) for i, m in enumerate(strongest)],
        rng,
        threshold=rt.settings.identity_threshold,
        budget=max(share, 0),
    )
    return [
        ContextItem(strongest[p.key].id, "identity", "full", lines[p.key], p.tokens)
        for p in sorted(rolled, key=lambda p: p.key)
    ]


def _fresh_hits(hits: Sequence[Hit], taken: set[Any]) -> list[Hit]:
    """Hits not already in the block, and never a fact next to the update that replaced it."""
    recalled = {str(h.id) for h in hits}
    return [
        h
        for h in hits
        if h.id not in taken and not any(str(n) in recalled for n in (h.metadata.get("superseded_by") or ()))
    ]


def _situational_items(
    rt: Runtime, hits: Sequence[Hit], count: TokenCounter, room: int, taken: set[Any]
) -> list[ContextItem]:
    """The best hits, whole or compressed, packed into ``room`` tokens; an insight that only
    repeats what the block already holds (:func:`_repeats`) gives its room to the next hit."""
    full_lines = [_hit_line(h, h.content) for h in hits]
    short_lines = [_hit_line(h, h.compressed or compress(h.content)) for h in hits]
    full_tokens = count(full_lines) if hits else []
    short_tokens = count(short_lines) if hits else []
    left_out: set[int] = set()
    while True:
        keys = [i for i in range(len(hits)) if i not in left_out]
        placed = pack_situational(
            [Candidate(i, full_tokens[i], short_tokens[i] if short_lines[i] != full_lines[i] else None) for i in keys],
            room,
            full_count=rt.settings.context_full,
        )
        repeat = _repeats([hits[p.key] for p in placed], {str(i) for i in taken})
        if repeat is None:
            break
        left_out.add(next(p.key for p in placed if hits[p.key].id == repeat))
    return [
        ContextItem(
            hits[p.key].id,
            "situational",
            p.mode,
            full_lines[p.key] if p.mode == "full" else short_lines[p.key],
            p.tokens,
        )
        for p in placed
    ]


_WORDS = re.compile(r"\w+")


def _words(text: str) -> tuple[str, ...]:
    """A text's words, case-folded, without the offline ``Insight:`` label (for "says the same")."""
    words = tuple(_WORDS.findall(text.casefold()))
    return words[1:] if words[:1] == ("insight",) else words


def _repeats(placed: Sequence[Hit], taken: set[str]) -> Any | None:
    """The first placed insight whose sources (the memories it was derived from: its provenance
    links, kept in its metadata) are all in the block, or one of which says the same (the offline
    insight is its cluster's central statement, verbatim); None when there is none. The sources
    carry the same words, each with its own date."""
    present = taken | {str(h.id) for h in placed}
    said = {str(h.id): _words(h.content) for h in placed}
    for hit in placed:
        sources = {str(s) for s in hit.metadata.get("sources") or ()} if hit.memory_kind == "insight" else set()
        if sources and (sources <= present or any(said.get(s) == _words(hit.content) for s in sources)):
            return hit.id
    return None


#: How many of the placed memories a context links pairwise: the best ones (issue 42 decision 4).
LINKED_PLACED = 5


def _reinforce_placed(
    rt: Runtime, scope: Scope, hits: Sequence[Hit], situational: Sequence[ContextItem], text: str, when: datetime
) -> None:
    """Queue the reinforcement of the recalled memories that made it into the block (and only
    those) in the scope's use queue, as a recall's (issue 42 decisions 3 and 4): every placed
    memory gains an access and ``reinforce``, in one statement each however many there are; only
    the best :data:`LINKED_PLACED` placed (in recall order) are linked pairwise, 10 links at most."""
    placed_ids = {i.id for i in situational}
    placed = [h.id for h in hits if h.item_kind == "memory" and h.id in placed_ids]  # best first
    if not placed:
        return

    async def statements(conn: psycopg.AsyncConnection) -> None:
        await mutate_after_recall(conn, rt.settings, scope, placed, [], query=text, now=when, link_top=LINKED_PLACED)

    queue_use(rt, scope, statements, rows=2 * len(placed))


def _render(
    scope: Scope, items: Sequence[ContextItem], count: TokenCounter, budget: int, refused: bool
) -> ContextBlock:
    sections = []
    for track, header in HEADERS.items():
        body = [i.text for i in items if i.track == track]
        if body:
            sections.append("\n".join([header, *body]))
    block = "\n\n".join(sections)
    return ContextBlock(scope, block, count([block])[0] if block else 0, budget, tuple(items), refused)
