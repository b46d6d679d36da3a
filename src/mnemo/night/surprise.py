"""Night stage 1a: surprisal of every new turn (memory-architecture §3.2).

Each turn of the scope gets a surprisal in bits per token from the scope's own
incremental n-gram model (:class:`mnemo.cognition.consolidation.surprisal.NGramModel`),
trained prequentially on the scope's earlier history: a new topic spikes, a
resolved one settles. The model's counts are kept in ``mnemo.night_state`` and
written in the same transaction as the batch of surprisals they produced, so a
crash between batches neither loses nor double-counts anything. Forgetting a
turn drops the model (its counts learnt the turn's words); the next run
rebuilds it from the scope's remaining scored turns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.surprisal import LogprobSurprise, NGramModel, SurpriseModel, score_stream
from mnemo.models import NightReport, Scope
from mnemo.night.logprobs import surprise_factory
from mnemo.night.stage_protocol import NightPlan, NightRun
from mnemo.store import night_runs as run_rows
from mnemo.store import turn_surprisal as surprisal_rows

__all__ = ["STAGE", "STATE_KEY", "SurprisalStage", "score_turns"]

STATE_KEY = "surprisal.ngram"
BATCH = 500

_log = logging.getLogger("mnemo.night")


async def score_turns(
    rt: Runtime,
    scope: Scope,
    as_of: datetime,
    *,
    model_factory: Callable[[NGramModel], SurpriseModel] | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Score every turn of ``scope`` up to ``as_of`` that has no surprisal yet; returns how many.

    ``model_factory`` wraps the scope's n-gram model (e.g. in a
    :class:`~mnemo.cognition.consolidation.surprisal.LogprobSurprise` that asks an LLM endpoint for token
    log-probabilities and falls back to the n-gram model); the n-gram counts are always kept. Scoring runs
    in a worker thread (an endpoint call blocks). When a :class:`LogprobSurprise` fell back, one warning
    says for how many turns.
    """
    done = fallbacks = 0
    last_error: Exception | None = None
    while True:
        async with rt.store.transaction() as conn:
            turns = await surprisal_rows.unscored_turns(conn, scope.entity_id, scope.namespace, as_of, BATCH)
            if not turns:
                break
            state = await run_rows.get_state(conn, scope.entity_id, scope.namespace, STATE_KEY)
            if state:
                ngram = NGramModel.from_state(state)
            else:  # first night, or the model was dropped when a turn was forgotten: learn what remains
                ngram = NGramModel()
                for text in await surprisal_rows.scored_texts(conn, scope.entity_id, scope.namespace):
                    ngram.observe(text)
            model: SurpriseModel = model_factory(ngram) if model_factory is not None else ngram
            values = await asyncio.to_thread(score_stream, model, [t.content for t in turns])
            if isinstance(model, LogprobSurprise) and model.failures:
                fallbacks, last_error = fallbacks + model.failures, model.last_error
            await surprisal_rows.set_surprisal(
                conn, scope.entity_id, [(t.id, float(v)) for t, v in zip(turns, values, strict=True)]
            )
            await run_rows.put_state(conn, scope.entity_id, scope.namespace, STATE_KEY, ngram.to_state())
        done += len(turns)
        if progress is not None:
            progress(len(turns))
    if fallbacks:
        _log.warning(
            "surprisal: the log-probability endpoint failed for %d of %d turns of %s; the n-gram model scored "
            "them (last error: %s)",
            fallbacks,
            done,
            scope,
            last_error,
        )
    return done


async def _score_with_endpoint(night: NightRun, progress: Callable[[int], None]) -> int:
    """Stage 1a; with a surprisal endpoint, one HTTP client serves the whole stage and is closed after it."""
    factory = surprise_factory(night.rt.settings)
    try:
        return await score_turns(night.rt, night.scope, night.as_of, model_factory=factory, progress=progress)
    finally:
        if factory is not None:
            factory.close()


class SurprisalStage:
    """Night stage ``surprisal`` (per turn): every new turn's surprisal, a batch per transaction."""

    name = "surprisal"
    report_fields = ("turns_scored",)

    async def run(self, night: NightRun) -> None:
        scope = night.scope
        async with night.rt.store.connection() as conn:
            pending = await surprisal_rows.count_unscored(conn, scope.entity_id, scope.namespace, night.as_of)
        scored = await night.per_turn(self.name, lambda: _score_with_endpoint(night, night.tick(self.name, pending)))
        if scored is not None:
            night.report.turns_scored = scored

    async def plan(self, night: NightPlan) -> None:
        scope = night.scope
        night.report.turns_scored = await surprisal_rows.count_unscored(
            night.conn, scope.entity_id, scope.namespace, night.report.as_of
        )

    def row(self, report: NightReport) -> str:
        if report.dry_run:
            return f"{report.turns_scored} turns to score"
        return f"{report.turns_scored} turns scored (n-gram, bits/token)"


STAGE = SurprisalStage()
