"""The stages of recall, each over the :class:`Candidates` record the previous ones filled in.

Seeds: cognitive-plan §2.5, §2.7, §3.1, §3.8; archive-adr §7 ("The Mentat Refusal",
"Sigil Scope"). :func:`mnemo.recall.pipeline.recall` runs them in order:

1. :func:`check` validates the request (nothing touches the database before);
2. :func:`start_embedding` embeds the query in a worker thread while
3. :func:`retrieve` checks access and gathers lexical, then vector candidates;
4. :func:`fuse` turns both retrievers' scores into one (z-scores or RRF);
5. :func:`smooth_neighbours` lets turns share their session neighbours' scores;
5b. :func:`late_interaction` re-ranks the head by MaxSim over token embeddings;
5c. :func:`time_frame` lifts the head's candidates of the period the question names;
5d. :func:`attribution` keeps the candidates the requested processes wrote;
5e. :func:`learned_rank` orders the head by the learned fusion and spreads it over sessions;
6. :func:`blend` scores the head of the ranking cognitively (activation, weight, recency,
   co-access, noise) and keeps superseded memories below their superseders;
6a. :func:`current` marks stale statements and, for a question about the present, puts each
    one's current statement right above it;
6b. :func:`support` reads how well the top hits support the question's content words;
7. :func:`decide` takes the top k, the near misses, and refuses below the threshold;
8. :func:`trace_and_mutate` logs the retrieval and, for the owner, reinforces what was returned;
9. :func:`result` builds the :class:`~mnemo.models.RecallResult` or :class:`~mnemo.models.Refusal`.

The stages live by section: :mod:`~mnemo.recall.records` (the records they pass along),
:mod:`~mnemo.recall.retrieve` (1-3), :mod:`~mnemo.recall.rank` (4-5c: fuse, links, neighbours,
late interaction, time, attribution), :mod:`~mnemo.recall.blend` (6) and
:mod:`~mnemo.recall.decide` (7-9, and recall at a level of the cortex tree); this module names them.
"""

from __future__ import annotations

from mnemo.recall.blend import blend
from mnemo.recall.current import current
from mnemo.recall.decide import decide, quote, recall_at_level, result, trace_and_mutate
from mnemo.recall.learned import learned_rank
from mnemo.recall.rank import attribution, follow_links, fuse, late_interaction, smooth_neighbours, time_frame
from mnemo.recall.records import ITEM_KINDS, Blended, Candidates, Decision, Request
from mnemo.recall.retrieve import check, retrieve, start_embedding
from mnemo.recall.support import support

__all__ = [
    "ITEM_KINDS",
    "Blended",
    "Candidates",
    "Decision",
    "Request",
    "attribution",
    "blend",
    "check",
    "current",
    "decide",
    "follow_links",
    "fuse",
    "late_interaction",
    "learned_rank",
    "quote",
    "recall_at_level",
    "result",
    "retrieve",
    "smooth_neighbours",
    "start_embedding",
    "support",
    "time_frame",
    "trace_and_mutate",
]
