"""The inner life on the memory side (issue 31): outcomes linked to recalls, self-tuning of the
blend's alphas toward a planted useful component behind the Two-Gate guardrail, promotion with its
thresholds and operator approval, the tension lifecycle, gut axes recovered from planted structure,
the frustration ledger, the circuit breaker and the entropy monitor in shadow and enforced mode,
readiness milestones from real events, and the agent's own statements counting for less."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest

from mnemo import AsyncArchive, InvalidInputError, RecallResult, Scope, UnknownItemError
from mnemo.config import Settings
from mnemo.embed import Embeddings
from tests.conftest import snapshot

ME = Scope("agent", "inner")
GARDEN = [
    "Maya planted tomatoes along the south fence of the garden.",
    "Maya planted basil beside the tomatoes in the garden.",
    "Maya planted carrots in the raised bed of the garden.",
    "Maya planted lettuce in the shady corner of the garden.",
    "Maya planted beans along the east trellis of the garden.",
    "Maya planted peppers in pots on the garden patio.",
    "Maya planted onions in the long bed of the garden.",
    "Maya planted squash near the compost heap of the garden.",
]


async def _open(settings: Settings, embeddings: Embeddings, **overrides: object) -> AsyncArchive:
    return await AsyncArchive.open(settings, embeddings=embeddings, **overrides)


# --- outcomes ---------------------------------------------------------------------------------------
async def test_feedback_links_back_to_a_recall_and_bad_input_changes_nothing(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, GARDEN[0])
    found = await archive.recall(ME, "What did Maya plant by the fence?", read_only=True)
    assert isinstance(found, RecallResult) and found.outcome_id is not None
    outcome = await archive.inner.feedback(ME, found.outcome_id, 1.0, used=[found[0].id])
    assert outcome != found.outcome_id
    before = snapshot(database_url)
    for bad in (
        lambda: archive.inner.feedback(ME, found.outcome_id, 1.5),  # type: ignore[union-attr]
        lambda: archive.inner.feedback(ME, found.outcome_id, float("nan")),  # type: ignore[union-attr]
        lambda: archive.inner.feedback(ME, found.outcome_id, 1.0, kind="rumour"),  # type: ignore[union-attr]
        lambda: archive.inner.feedback(ME, "not-an-id", 1.0),
    ):
        with pytest.raises(InvalidInputError):
            await bad()
    with pytest.raises(UnknownItemError):
        await archive.inner.feedback(Scope("someone", "else"), found.outcome_id, 1.0)
    with pytest.raises(UnknownItemError):
        await archive.inner.feedback(ME, "0190f000-0000-7000-8000-000000000000", 1.0)
    assert snapshot(database_url) == before


# --- self-tuning of the blend (cognitive-plan §4.5) ----------------------------------------------------
async def _planted(archive: AsyncArchive) -> None:
    """Equally relevant garden notes; two of them anchored (a heavy weight), the rest new."""
    for n, text in enumerate(GARDEN):
        await archive.remember(ME, text, anchored=n in (2, 6))


async def _ask_and_use(archive: AsyncArchive, rounds: int, pick: str) -> None:
    """Recall the garden notes and tell which hits were used: the heavy ones (``weight``), or the heavy
    ones for three quarters of the rounds and then the lightest, last one (``reversal``)."""
    for n in range(rounds):
        found = await archive.recall(ME, f"What did Maya plant in the garden? ({n})", k=8, read_only=True)
        assert isinstance(found, RecallResult)
        hits = list(found)
        late = pick == "reversal" and n >= rounds * 3 // 4
        used = [hits[-1]] if late else [h for h in hits if h.weight > 0.9]
        await archive.inner.feedback(ME, found.outcome_id, 1.0, used=[h.id for h in used])  # type: ignore[arg-type]


async def test_the_alphas_move_toward_the_component_that_predicts_use(
    settings: Settings, embeddings: Embeddings
) -> None:
    archive = await _open(settings, embeddings, tuning_min_outcomes=12)
    try:
        await _planted(archive)
        start = (await archive.inner.life(ME)).alphas
        await _ask_and_use(archive, 16, "weight")
        done = await archive.inner.reflect(ME)
        tuned = await archive.inner.life(ME)
        assert done["tuning"]["alphas_applied"] and tuned.tuned
        assert done["tuning"]["quality_after"] > done["tuning"]["quality_before"]
        share = {c: a / sum(tuned.alphas.values()) for c, a in tuned.alphas.items()}
        start_share = {c: a / sum(start.values()) for c, a in start.items()}
        assert (
            share["weight"] > start_share["weight"] and max(share, key=lambda c: share[c] / start_share[c]) == "weight"
        )
        assert tuned.history[-1].name == "blend" and tuned.history[-1].applied
        found = await archive.recall(ME, "What did Maya plant in the garden?", k=8, read_only=True)
        assert isinstance(found, RecallResult) and found.weights["weight"] == pytest.approx(share["weight"], abs=1e-6)
    finally:
        await archive.close()


@pytest.mark.parametrize("enforced", [True, False])
async def test_the_two_gate_guardrail_holds_back_an_unvalidated_change(
    settings: Settings, embeddings: Embeddings, enforced: bool
) -> None:
    archive = await _open(
        settings, embeddings, tuning_min_outcomes=12, safety_enforced=("two_gate",) if enforced else ()
    )
    try:
        await _planted(archive)
        await _ask_and_use(archive, 16, "reversal")  # what was learned no longer holds on the newest outcomes
        done = await archive.inner.reflect(ME)
        life = await archive.inner.life(ME)
        gate = [e for e in life.safety if e.check == "two_gate"]
        assert done["tuning"]["quality_after"] <= done["tuning"]["quality_before"]
        assert gate and gate[0].enforced is enforced and gate[0].subject == "blend alphas"
        assert life.tuned is not enforced and life.history[-1].applied is not enforced
    finally:
        await archive.close()


# --- promotion (cognitive-plan §4.3, §5.3) --------------------------------------------------------------
FACT = "Maya waters the tomato seedlings every morning before work."


async def _seen(
    archive: AsyncArchive, days: int, *, role: str = "user", start: datetime | None = None, every: int = 1
) -> datetime:
    """The same statement observed and confirmed through the exit gate once every ``every`` days."""
    first = start or datetime(2026, 9, 1, 8, tzinfo=UTC)
    for day in range(0, days, every):
        at = first + timedelta(days=day)
        await archive.observe(ME, FACT, role=role, attention=FACT, at=at)
        await archive.flush(ME, attention=FACT, at=at)
    return first + timedelta(days=days)


async def _weight(database_url: str, text: str) -> tuple[float, dict[str, object]]:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT alpha / (alpha + beta), metadata FROM mnemo.memories WHERE content = %s AND status = 'active'",
            (text,),
        ).fetchone()
    assert row is not None
    return float(row[0]), dict(row[1])


async def test_a_pattern_seen_over_two_weeks_is_promoted_to_goal_weight(
    archive: AsyncArchive, database_url: str
) -> None:
    end = await _seen(archive, 7)  # one persist, six confirmations over six days: too short a span
    await archive.inner.reflect(ME, as_of=end)
    assert (await _weight(database_url, FACT))[1].get("promotion") is None
    end = await _seen(archive, 10, start=end + timedelta(days=4))
    before, _ = await _weight(database_url, FACT)
    done = await archive.inner.reflect(ME, as_of=end)
    after, meta = await _weight(database_url, FACT)
    assert done["promotion"]["goal"] == 1 and meta["promotion"] == "goal" and after > before
    assert "first_goal_promotion" in done["milestones"]
    assert (await archive.inner.readiness(ME)).milestones[3].reached


@pytest.mark.parametrize("role", ["assistant", "user"])
async def test_the_agents_own_statements_count_half_toward_promotion(
    archive: AsyncArchive, database_url: str, role: str
) -> None:
    end = await _seen(archive, 1)  # the user said it once
    end = await _seen(archive, 16, role=role, start=end, every=2)  # then 8 times over two weeks
    done = await archive.inner.reflect(ME, as_of=end)
    _, meta = await _weight(database_url, FACT)
    if role == "user":
        assert done["promotion"]["goal"] == 1 and meta["promotion"] == "goal"
        return
    assert done["promotion"]["goal"] == 0 and "promotion" not in meta  # 8 of the agent's own: 4 sightings
    with psycopg.connect(database_url) as conn:
        gains = conn.execute(
            "SELECT DISTINCT round(gain::numeric, 3) FROM traces.weight_changes WHERE reason = 'confirmed'"
        ).fetchall()
    assert [float(g[0]) for g in gains] == [0.25]  # gate_reinforce_gain 0.5 x own_source_confidence 0.5


@pytest.mark.parametrize("trust", [0, 3])
async def test_identity_promotion_past_085_waits_for_the_operator_at_low_trust(
    settings: Settings, embeddings: Embeddings, database_url: str, trust: int
) -> None:
    archive = await _open(settings, embeddings, operator_trust=trust)
    try:
        end = await _seen(archive, 16)
        await archive.inner.reflect(ME, as_of=end)
        end = await _seen(archive, 16, start=end + timedelta(days=1))
        done = await archive.inner.reflect(ME, as_of=end)
        centre, meta = await _weight(database_url, FACT)
        if trust == 3:
            assert done["promotion"]["identity"] == 1 and meta["promotion"] == "identity" and centre > 0.85
            return
        assert done["promotion"]["awaiting_approval"] == 1 and meta["promotion"] == "goal" and centre < 0.85
        (waiting,) = (await archive.inner.life(ME)).awaiting_approval
        assert await archive.inner.approve_promotion(ME, waiting)
        centre, meta = await _weight(database_url, FACT)
        assert meta["promotion"] == "identity" and "approval" not in meta and centre > 0.85
        assert not await archive.inner.approve_promotion(ME, waiting)
        assert (await archive.inner.readiness(ME)).milestones[5].reached  # first identity-level promotion
    finally:
        await archive.close()


# --- tensions (cognitive-plan §4.2) ----------------------------------------------------------------------
VALUE = "I always tell users the truth about delays."
BROKE = "I did not tell the user the truth about the delay."
KEPT = "I told the user the truth about the delay today."


async def test_a_tension_is_found_acknowledged_and_resolved(archive: AsyncArchive) -> None:
    await archive.remember(ME, VALUE, kind="semantic", anchored=True)
    await archive.remember(ME, BROKE, kind="episodic")
    await archive.remember(ME, "Maya planted basil beside the tomatoes.", kind="episodic")
    done = await archive.inner.reflect(ME)
    (tension,) = (await archive.inner.life(ME)).tensions
    assert done["tensions"]["found"] == 1 and tension.status == "open"
    assert tension.content.startswith("Internal contradiction: I hold that I always tell users the truth")
    again = await archive.inner.reflect(ME)
    assert again["tensions"]["found"] == 0  # the same pair makes one tension
    for n in range(6):  # surfaced by recalls, unresolved
        await archive.recall(ME, f"internal contradiction about telling users the truth ({n})", k=3)
    await archive.inner.reflect(ME)
    (tension,) = (await archive.inner.life(ME)).tensions
    assert tension.status == "acknowledged" and tension.surfaced > 5
    await archive.remember(ME, KEPT, kind="episodic")
    done = await archive.inner.reflect(ME)
    (tension,) = (await archive.inner.life(ME)).tensions
    assert tension.status == "resolved" and done["tensions"]["resolved"] == 1
    assert "first_conflict_resolution" in done["milestones"]


async def test_a_tension_has_no_salience_bonus(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ME, VALUE, kind="semantic", anchored=True)
    await archive.remember(ME, BROKE, kind="episodic")
    await archive.inner.reflect(ME)
    with psycopg.connect(database_url) as conn:
        alpha, beta = conn.execute("SELECT alpha, beta FROM mnemo.memories WHERE kind = 'tension'").fetchone()  # type: ignore[misc]
    assert (alpha, beta) == (1.0, 4.0)


# --- gut axes (cognitive-plan §5.1) ---------------------------------------------------------------------
async def test_gut_axes_are_recovered_from_planted_structure(archive: AsyncArchive) -> None:
    rng = np.random.default_rng(7)
    hope, other = rng.normal(size=384), rng.normal(size=384)
    hope /= np.linalg.norm(hope)
    other -= (other @ hope) * hope
    other /= np.linalg.norm(other)
    await archive.remember(ME, GARDEN[0])
    for _ in range(60):
        a, b = rng.normal(), 2.0 * rng.normal()  # the unrelated axis carries more variance
        delta = 0.1 * (a * hope + b * other + 0.05 * rng.normal(size=384))
        outcome = await archive.inner.log_gut(ME, "mira", delta, magnitude=0.2, valence=0.0, context="planted")
        await archive.inner.feedback(ME, outcome, float(np.tanh(a)))
    done = await archive.inner.reflect(ME)
    axes = (await archive.inner.life(ME)).axes
    assert done["gut"]["axes"] >= 2 and axes[0].variance > axes[1].variance
    named = next(a for a in axes if a.name.startswith("hope"))
    assert (
        abs(float(np.asarray(named.axis) @ hope)) > 0.95 and named.correlation is not None and named.correlation > 0.8
    )
    assert abs(float(np.asarray(axes[0].axis) @ other)) > 0.95 and axes[0] is not named
    with pytest.raises(InvalidInputError):
        await archive.inner.log_gut(ME, "mira", [0.1] * 10, magnitude=0.2, valence=0.0)


# --- the frustration ledger (memory-architecture §10.6.3) --------------------------------------------------
async def test_failures_that_persist_across_generations_surface_for_reflection(
    archive: AsyncArchive, database_url: str
) -> None:
    parent = None
    for generation in range(3):
        attempt = await archive.inner.record_attempt(
            ME, "Book the cheapest train to Lyon", lineage="booker", generation=generation, success=False,
            failure_mode="timeout", parent=parent, mutation=f"variant {generation}",
        )  # fmt: skip
        parent = attempt.mutation_id
    await archive.inner.record_attempt(ME, "Summarise the inbox", lineage="reader", generation=0, success=False,
                                 failure_mode="error")  # fmt: skip
    await archive.inner.record_attempt(ME, "Summarise the inbox", lineage="reader", generation=1, success=True)
    (pattern,) = await archive.inner.failure_patterns(ME)
    assert pattern.generations == (0, 1, 2) and pattern.modes == {"timeout": 3}
    done = await archive.inner.reflect(ME)
    assert done["frustration"]["surfaced"] == 1
    await archive.inner.reflect(ME)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT kind, status, content FROM mnemo.memories WHERE metadata ? 'failure_pattern'"
        ).fetchall()
    assert len(rows) == 1 and rows[0][:2] == ("reflection", "candidate") and "Lyon" in rows[0][2]
    with pytest.raises(InvalidInputError):
        await archive.inner.record_attempt(ME, "x y z", lineage="a", generation=-1, success=False)
    with pytest.raises(InvalidInputError):
        await archive.inner.record_attempt(ME, "x y z", lineage="a", generation=0, success=True, failure_mode="error")


# --- phase C: the circuit breaker and the entropy monitor (cognitive-plan §3.9) -------------------------------
@pytest.mark.parametrize("enforced", [False, True])
async def test_the_circuit_breaker_stops_a_runaway_reinforcement_loop(
    settings: Settings, embeddings: Embeddings, database_url: str, enforced: bool
) -> None:
    archive = await _open(settings, embeddings, safety_enforced=("circuit_breaker",) if enforced else ())
    try:
        await archive.remember(ME, FACT)
        centres = []
        for _night in range(6):  # every cycle the same memory is recalled again, no new evidence
            for n in range(3):
                await archive.recall(ME, f"When does Maya water the seedlings? ({n})", k=1)
            await archive.inner.reflect(ME)
            centres.append((await _weight(database_url, FACT))[0])
        events = [e for e in (await archive.inner.life(ME)).safety if e.check == "circuit_breaker"]
        assert events and all(e.enforced is enforced for e in events)
        if enforced:
            assert centres[-1] == pytest.approx(centres[2]) and centres[2] > centres[0]
            assert (await _weight(database_url, FACT))[1]["paused"]
        else:
            assert centres[-1] > centres[2] > centres[0]
    finally:
        await archive.close()


async def test_the_entropy_monitor_broadens_sampling_when_enforced(settings: Settings, embeddings: Embeddings) -> None:
    archive = await _open(settings, embeddings, safety_enforced=("entropy",))
    try:
        for text in GARDEN:
            await archive.remember(ME, text)
        await archive.inner.reflect(ME)
        for n in range(5):
            await archive.remember(ME, f"A strong belief number {n}: the garden needs water daily.", anchored=True)
        await archive.inner.reflect(ME)
        life = await archive.inner.life(ME)
        (event,) = [e for e in life.safety if e.check == "entropy"]
        assert event.enforced and any(s.name == "sampling" and s.params["temperature"] == 2.0 for s in life.history)
    finally:
        await archive.close()


# --- readiness (cognitive-plan §5.2) -------------------------------------------------------------------
async def test_milestones_are_reached_by_real_events_only(archive: AsyncArchive) -> None:
    assert (await archive.inner.readiness(ME)).reached == 0
    await archive.recall(ME, "anything at all?")  # a refusal is no successful retrieval
    await archive.flush()  # the recall's use is written behind it (issue 42)
    assert (await archive.inner.readiness(ME)).reached == 0
    await archive.observe(ME, FACT, attention=FACT)
    await archive.flush(ME, attention=FACT)
    await archive.recall(ME, "When does Maya water the seedlings?")
    await archive.flush()  # the recall's use is written behind it (issue 42)
    ready = await archive.inner.readiness(ME)
    assert [m.name for m in ready.milestones if m.reached] == ["first_memory", "first_retrieval"]
    assert await archive.inner.reach_milestone(ME, "first_goal_reflected", {"goal": "water the garden"})
    assert not await archive.inner.reach_milestone(ME, "first_goal_reflected")
    with pytest.raises(InvalidInputError):
        await archive.inner.reach_milestone(ME, "first_flight")
    assert (await archive.inner.readiness(Scope("someone", "else"))).reached == 0


# --- the agent's own word (issue 31 item 9) ---------------------------------------------------------------
async def test_the_agents_contradiction_never_overrules_the_users_belief(
    archive: AsyncArchive, database_url: str
) -> None:
    said = "Maya is allergic to peanuts."
    await archive.observe(ME, said, role="user", attention=said)
    await archive.flush(ME, attention=said)
    await archive.observe(ME, "Maya is not allergic to peanuts.", role="assistant", attention=said)
    report = await archive.flush(ME, attention=said)
    assert report.outcomes[0].action == "persist_flag"
    with psycopg.connect(database_url) as conn:
        rows = dict(conn.execute("SELECT content, source_confidence FROM mnemo.memories").fetchall())
        superseded = conn.execute(
            "SELECT metadata ? 'superseded_by' FROM mnemo.memories WHERE content = %s", (said,)
        ).fetchone()
    assert rows == {said: 1.0, "Maya is not allergic to peanuts.": 0.5}
    assert superseded == (False,)


async def test_a_gate_decision_has_an_outcome_id_feedback_links_to(archive: AsyncArchive) -> None:
    await archive.observe(ME, FACT, attention=FACT)
    report = await archive.flush(ME, attention=FACT)
    (decision,) = report.outcomes
    assert decision.action == "persist" and decision.outcome_id is not None
    await archive.inner.feedback(ME, decision.outcome_id, 1.0, kind="task")
    with pytest.raises(InvalidInputError):  # a gate decision's outcome names no recalled items
        await archive.inner.feedback(ME, decision.outcome_id, 1.0, used=[decision.memory_id])  # type: ignore[list-item]


async def test_the_gut_in_the_gate_keeps_what_the_self_cares_about(settings: Settings, embeddings: Embeddings) -> None:
    archive = await _open(settings, embeddings, gate_noise=0.0)
    try:
        item = "The tomato seedlings on the balcony need watering twice a day."
        cares = (await embeddings.embed_documents(["Maya's vegetable garden and her tomato plants"]))[0]
        for interest, kept in ((None, ("drop",)), (cares, ("buffer", "persist"))):
            scope = Scope("agent", f"gate-{kept[0]}")
            await archive.observe(scope, item, attention="What is the capital of Peru?")
            report = await archive.flush(scope, attention="What is the capital of Peru?", interest=interest)
            assert report.outcomes[0].action in kept  # off-focus, yet near what the self is about: not dropped
    finally:
        await archive.close()


async def test_the_per_cycle_rate_limit_enforced_spreads_a_promotion_over_nights(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    archive = await _open(settings, embeddings, safety_enforced=("two_gate", "cycle_rate"))
    try:
        end = await _seen(archive, 17)
        before, _ = await _weight(database_url, FACT)
        done = await archive.inner.reflect(ME, as_of=end)
        after, meta = await _weight(database_url, FACT)
        assert done["promotion"]["goal"] == 1 and meta["promotion"] == "goal"
        assert after == pytest.approx(before * 1.10, rel=1e-3)  # 10% in one cycle, not the rung's 0.65
        events = [e for e in (await archive.inner.life(ME)).safety if e.check == "cycle_rate"]
        assert events and events[0].enforced
    finally:
        await archive.close()
