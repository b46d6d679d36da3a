"""The agent's loop: attention, the window, context, System 1 and 2, memory, actions, cost.

Seeds: cognitive-plan §3.4 (every input, whatever its source, goes through one pipeline: context
assembly, the model call, then post-processing: the memory gate, an action check, source tags),
§3.10 (attention picks the input of each cycle; its state report reaches the model), §3.3 (the
adaptive window, :mod:`.window`), §2.11 and §3.5-3.7 (confidence, loop before escalate, System 2
as a tool, the reflection bank), §4.8-4.9 (the cost log, age and restarts), §2.4 (identity layers);
memory-architecture §10.3-10.5 (the loop consults reflexes and records how its actions went).

One input's way through :meth:`Agent.respond`:

1. **Window**: the intensity (gate share, System 2 recency, goal relevance, charge) sizes the
   budget; the oldest messages leave through the exit gate until the input fits.
2. **Context assembly** (after pruning): anchored and identity memories and situational recall
   within the budget the conversation leaves, past corrections near the focus, fitting reflexes.
3. **Thinking**: System 1 (a Pydantic AI model), or offline the best recalled evidence. Below the
   escalation threshold System 1 retries once with feedback; on the seed's triggers System 2
   answers (System 1 may also consult it as a tool); its correction goes to the reflection bank.
4. **Memory**: both turns are recorded with their source tags; both pass the entry gate.
5. **Actions**: replying to the user, or a message the agent starts (``tell_user``), is a
   communication, delivered only after the source check; ``note_for_later`` queues an internal
   thought; anything else stays in working memory. Tool uses and escalations become reflexes.

System 1 is the model of ``MNEMO_LLM`` (or ``model=``); without one, System 1 is an offline
responder (:mod:`mnemo.cognition.text.utterances`): it acknowledges what the user tells it ("Noted: you
are allergic to peanuts.") and answers a question with the best recalled statement that speaks of
what it asks, never a question and never its own reply ("From memory: you are allergic to
peanuts.", "You said last week that you moved to Porto the week before."), or that it does not
know ("I don't know your blood type — you haven't told me.", :mod:`mnemo.cognition.mind.answering`); so
the loop, the gate, attention and the cost report run offline. System 2 is ``MNEMO_SYSTEM2_LLM`` (or
``system2=``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np

from mnemo.agent import metacognition as meta
from mnemo.agent.docs import DocsTool
from mnemo.agent.gut_feeling import Gut
from mnemo.agent.identity import Identity, IdentityItem
from mnemo.agent.window import ContextWindow, Message
from mnemo.archive import AsyncArchive
from mnemo.cognition.mind.actions import SOURCE_CONFIDENCE, USER, ActionCheck, ActionKind, SourceTag, check_action
from mnemo.cognition.mind.answering import dont_know, recital_when, supports
from mnemo.cognition.mind.attention import URGENCY, Candidate, Scored, allocate, state_report
from mnemo.cognition.mind.confidence import composite, from_logprobs, structural
from mnemo.cognition.mind.escalation import decide, escalation_threshold
from mnemo.cognition.mind.window_sizing import Intensity, RateLimit, intensity, system2_recency, window_share
from mnemo.cognition.text.utterances import acknowledgement, is_question
from mnemo.errors import InvalidContentError
from mnemo.models import FlushReport, Hit, RecallResult, Refusal, Scope

__all__ = ["COMMANDS", "REFUSAL", "Agent", "Reply", "label", "price"]

REFUSAL = "I don't know: my memory holds nothing reliable about that."
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OFFLINE_CANDIDATES = 10
"""Items the offline responder recalls to find the best statement among (questions and the agent's
own replies compete for the same places)."""
OWN_SOURCES = frozenset(SOURCE_CONFIDENCE) - {USER} | {"offline", "system1", "system2", "command"}
"""Source tags of what the agent said or thought itself (:attr:`Reply.source`, internal inputs)."""
COMMANDS = {
    "/cost": "model calls, tokens and cost: this session, the last 24 h, lifetime",
    "/readiness": "whether the archive and the models are ready, the bootstrap milestones, the cost and age line",
    "/state": "the context window, intensity, pending inputs and cycles",
}
"""The loop's own commands (:meth:`Agent.command`), each with what it answers."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What the agent made of one input, and where it came from."""

    text: str
    source: str
    """``system1`` (the model), ``system2`` (escalated), ``offline`` (from memory) or ``command``."""
    evidence: RecallResult | Refusal | None = None
    escalated: tuple[str, ...] = ()
    """The escalation triggers that fired (System 2 answered when one is configured), and
    ``system1_request`` when System 1 consulted System 2 as a tool."""
    confidence: float | None = None
    """Composite confidence (cognitive-plan §2.11): token probabilities or the answer's structure,
    with the verbalised confidence of a meta-context call, for System 1; the evidence's similarity
    (feeling of knowing) offline, 1.0 for an acknowledgement; None for System 2."""
    tag: SourceTag | None = None
    """The attended input's source tag."""
    actions: tuple[ActionCheck, ...] = ()
    """Every action the output implied, with its check."""
    pruned: int = 0
    """Messages that left the window to make room for this input."""
    gut_outcome: uuid.UUID | None = None
    """The outcome id of the gut delta logged for this cycle (an outcome may link back to it)."""

    @property
    def outbox(self) -> tuple[str, ...]:
        """What goes to the user: the communications that passed their check."""
        return tuple(a.text for a in self.actions if a.kind == "communication" and a.allowed)


def label(model: Any) -> str:
    """A model as a person reads it: a name as given; a model object by its ``system:model_name``
    (``openai:gpt-4o``, ``function:_scripted``), never its repr."""
    if isinstance(model, str):
        return model
    name = str(getattr(model, "model_name", "") or "").strip(":")
    system = str(getattr(model, "system", "") or "")
    if not name:
        return system or type(model).__name__
    return name if system in ("", name) or name.startswith(f"{system}:") else f"{system}:{name}"


def price(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The call's cost in USD from the maintained price table (genai-prices); None when unknown."""
    from genai_prices import Usage, calc_price

    provider, _, name = model.partition(":")
    try:
        found = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens), model_ref=name or provider,
            provider_id=provider if name else None,
        )  # fmt: skip
    except (LookupError, ValueError):
        return None
    return float(Decimal(found.total_price))


@dataclass
class _Run:
    """One input on its way through the loop."""

    text: str
    tag: SourceTag
    intents: list[tuple[ActionKind, str]] = field(default_factory=list)
    tools: list[tuple[str, bool]] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)

    @property
    def prompt(self) -> str:
        return self.text if self.tag.source == USER else f"[{self.tag.source}] {self.text}"


@dataclass
class Agent:
    """One agent of ``scope.entity_id`` remembering into ``scope`` (see the module docstring)."""

    archive: AsyncArchive
    scope: Scope
    name: str = "agent"
    model: Any = None
    """A Pydantic AI model or model name for System 1; default ``settings.llm``; None: offline."""
    identity: Identity | None = None
    system2: Any = None
    """The model System 1 escalates to (§3.6); default ``settings.system2_llm``; None: no escalation
    (the triggers are still reported)."""
    docs: DocsTool | None = None
    """Read-only directories System 1 may read (its own docs, cognitive-plan §4.10)."""
    meta: Any = "system1"
    """The model of the isolated verbalised-confidence call (§2.11): ``"system1"`` (System 1's),
    another model, or None for none."""
    session: str = field(default_factory=lambda: datetime.now(UTC).strftime("chat-%Y%m%d-%H%M%S"))
    context_tokens: int = 4000
    """The model context the agent may fill at full intensity: conversation plus memory."""
    exit_interval: float = 5.0
    """Seconds between exit-gate passes of pruned messages (the seed's one embedding per 5 s)."""
    clock: Callable[[], float] = time.monotonic
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    facts: dict[str, Any] = field(default_factory=dict)
    pending: list[Candidate] = field(default_factory=list)
    """Inputs waiting for attention (:meth:`submit`, :meth:`cycle`)."""
    recent: list[np.ndarray] = field(default_factory=list)
    """The vectors of the inputs attended to lately (novelty is measured against them)."""
    state: str = ""
    """The last cognitive state report (in the next system prompt)."""
    intensity: Intensity | None = None
    """The last cycle's intensity (it sized the window)."""
    cycles: int = 0
    last_escalation: int | None = None
    scheduled: list[tuple[datetime, str, uuid.UUID]] = field(default_factory=list)
    """Tasks not yet due (:meth:`schedule`), soonest first: when, what, and its id in the database."""
    last_allocation: tuple[Scored, ...] | None = None
    """Every candidate of the last cycle, most salient first (the idle loop's review reads it)."""
    gut: Gut | None = field(default=None, init=False)
    """The gut feeling (:mod:`.gut`), ready after :meth:`start`."""
    reached: set[str] = field(default_factory=set, init=False)
    """Milestones this agent has seen reached (so it asks the archive once)."""
    window: ContextWindow = field(init=False)
    _trust: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _now: datetime | None = field(default=None, init=False, repr=False)
    """The clock of the cycle under way (:meth:`cycle`'s ``now``): a milestone it reaches is dated by it."""

    def __post_init__(self) -> None:
        if self.exit_interval < 0:
            raise ValueError(f"exit_interval must be >= 0 seconds, not {self.exit_interval}")
        self.window = ContextWindow(
            self.archive, self.scope, self.context_tokens, RateLimit(self.exit_interval), self.clock
        )

    # --- lifecycle -------------------------------------------------------------------
    async def start(self) -> str | None:
        """Count this start in the database and check the embedder; the problem found, or None."""
        if self.model is None:
            self.model = self.archive.settings.llm
        if self.system2 is None:
            self.system2 = self.archive.settings.system2_llm
        self.facts = dict(await self.archive.agents.agent_started(self.scope.entity_id, self.name))
        self.started = datetime.now(UTC)
        await self._restore_inputs()
        self.gut = Gut(self.archive, self.scope, self.name, self.identity)
        await self.gut.refresh()
        return await self.archive.maintenance.health()

    async def _restore_inputs(self) -> None:
        """What the agent held when it last stopped: pending inputs and scheduled tasks (issue 31)."""
        self.pending, self.scheduled = [], []
        for held in await self.archive.agents.held_inputs(self.scope, self.name):
            if held.kind == "scheduled" and held.due_at is not None:
                self.scheduled.append((held.due_at, held.text, held.id))
                continue
            vector = np.asarray(await self.archive.embeddings.embed_query(held.text), dtype=np.float32)
            self.pending.append(Candidate(str(held.id), held.source, held.text, vector, held.urgency, held.charge,
                                          held.waited))  # fmt: skip
            self._trust[str(held.id)] = held.confidence
        self.scheduled.sort(key=lambda task: task[0])

    async def close(self) -> None:
        """Graceful shutdown: what is still in view passes the exit gate (its last chance)."""
        await self.window.close()

    # --- attention (§3.10) -----------------------------------------------------------------
    async def submit(
        self, text: str, source: str = USER, *, charge: float = 0.0, confidence: float | None = None
    ) -> None:
        """Queue an input for attention: the user's message, an internal thought (``internal_dmn``), a
        gut signal (``internal_gut`` with its ``charge``), a consolidation alert, a scheduled task;
        ``confidence``: how far its source is trusted (default by source)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidContentError("an input needs some text")
        tag = SourceTag.of(source, confidence)
        vector = np.asarray(await self.archive.embeddings.embed_query(text), dtype=np.float32)
        held = await self.archive.agents.hold_input(
            self.scope, self.name, text, source=source, urgency=URGENCY[source], charge=charge,
            confidence=tag.confidence,
        )  # fmt: skip
        self._trust[str(held)] = tag.confidence
        self.pending.append(Candidate(str(held), source, text, vector, URGENCY[source], charge))

    async def schedule(self, text: str, at: datetime) -> None:
        """A task to attend to from ``at`` (timezone-aware) on: a ``scheduled_task`` input once due.
        Kept in the database: it survives a restart."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a scheduled task needs a text")
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise ValueError(f"at must be a timezone-aware datetime, not {at!r}")
        held = await self.archive.agents.hold_input(
            self.scope, self.name, text.strip(), source="scheduled_task", kind="scheduled", due_at=at,
            urgency=URGENCY["scheduled_task"],
        )  # fmt: skip
        self.scheduled = sorted([*self.scheduled, (at, text.strip(), held)], key=lambda task: task[0])

    async def cycle(self, now: datetime | None = None) -> Reply | None:
        """One cognitive cycle: due scheduled tasks join the pending inputs, the most salient one wins
        attention (the losers wait with decaying urgency), the state report goes into the context, and
        the winner is answered. None when nothing is pending."""
        when = now or datetime.now(UTC)
        self._now = when
        try:
            return await self._cycle(when)
        finally:
            self._now = None

    async def _cycle(self, when: datetime) -> Reply | None:
        due = [task for task in self.scheduled if task[0] <= when]
        self.scheduled = [task for task in self.scheduled if task[0] > when]
        for _, text, held in due:
            await self.submit(text, "scheduled_task")
            await self.archive.agents.release_inputs(self.scope, self.name, [held])
        if not self.pending:
            return None
        goals = await self.identity.layer(1) if self.identity else []
        felt = self.gut.feel(self.recent[-10:]) if self.gut else None
        charged = [c if c.charge or felt is None else replace(c, charge=self.gut.charge(c.vector))  # type: ignore[union-attr]
                   for c in self.pending]  # fmt: skip
        allocation = allocate(charged, self.recent[-10:], [(g.weight, g.vector) for g in goals])
        self.pending = list(allocation.waiting)
        self.last_allocation = allocation.scored
        self.state = state_report(allocation)
        winner = allocation.winner.candidate
        await self.archive.agents.release_inputs(self.scope, self.name, [winner.id])
        await self.archive.agents.wait_inputs(
            self.scope, self.name, [(uuid.UUID(c.id), c.urgency, c.waited) for c in allocation.waiting]
        )
        self.recent.append(winner.vector)
        trust = self._trust.pop(winner.id, None)
        reply = await self.respond(winner.text, winner.source, source_confidence=trust, scored=allocation.winner)
        if winner.source == "internal_dmn" and any(a.allowed for a in reply.actions):
            await self._milestone("first_idle_thought_acted", {"thought": winner.text[:200]})
        return reply

    # --- the pipeline (§3.4) -------------------------------------------------------------
    async def respond(
        self,
        text: str,
        source: str = USER,
        flags: Sequence[str] = (),
        *,
        source_confidence: float | None = None,
        scored: Scored | None = None,
    ) -> Reply:
        """One input through the loop (see the module docstring); a ``/command`` is answered at once.
        ``flags``: always-escalate conditions the caller knows of (``irreversible``, ``identity``,
        ``goals``)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidContentError("an input needs some text")
        if text.strip().startswith("/"):
            return Reply(await self.command(text.strip()), "command")
        run = _Run(text, SourceTag.of(source, source_confidence))
        self.cycles += 1
        share = window_share((await self._intensity(text, scored)).value)
        incoming = self.window.count(run.prompt)
        exits = len(self.window.exits)
        pruned = await self.window.make_room(incoming, share, text)
        budget = self.window.memory_budget(share, incoming)
        # memory is read before this exchange is written, so the question never answers itself
        reply = await (self._offline(run) if self.model is None else self._system1(run, budget, flags))
        if self.gut is not None:
            self.gut.feel(self.recent[-10:])
            reply = replace(reply, gut_outcome=await self.gut.log(text, reply.text))
        flushed = await self._remember(run, reply, incoming)
        if run.tag.source != "consolidation_alert":  # an alert about an alert would never end
            await self._notice([*self.window.exits[exits:], *flushed])
        return await self._act(run, replace(reply, pruned=len(pruned), tag=run.tag))

    async def _intensity(self, text: str, scored: Scored | None) -> Intensity:
        """The seed's intensity for this cycle (measured before it escalates)."""
        since = None if self.last_escalation is None else self.cycles - 1 - self.last_escalation
        goals = scored.relevance if scored else await self._goal_relevance(text)
        self.intensity = intensity(
            self.window.gate_share(), system2_recency(since), goals, scored.charge if scored else 0.0
        )
        return self.intensity

    async def _goal_relevance(self, text: str) -> float:
        goals = await self.identity.layer(1) if self.identity else []
        if not goals:
            return 0.0
        vector = np.asarray(await self.archive.embeddings.embed_query(text), dtype=np.float32)
        return min(1.0, max(0.0, max(g.weight * float(vector @ g.vector) for g in goals)))

    async def _remember(self, run: _Run, reply: Reply, incoming: int) -> list[FlushReport]:
        """Both turns into the day table with their source tags, and through the entry gate (the
        memory gate of §3.4); both join the window. Returns the exit-gate passes this triggered."""
        role = "user" if run.tag.source == USER else "system"  # an internal input is not the user's
        tags = {"source": run.tag.source, "source_confidence": run.tag.confidence}
        await self.archive.record_turn(self.scope, self.session, role, run.text, metadata=tags)
        interest = self.gut.subconscious if self.gut else None  # the gut in the gate (cognitive-plan §5.1)
        seen = await self.archive.observe(
            self.scope, run.text, role=role, source_tag=run.tag.source, attention=run.text, metadata=tags,
            interest=interest,
        )  # fmt: skip
        self.window.add(Message("input", run.prompt, run.tag.source, incoming, _kept(seen)))
        await self.archive.record_turn(
            self.scope, self.session, "assistant", reply.text, metadata={"source": reply.source}
        )
        item, said = None, None
        if reply.source in ("system1", "system2"):  # a model's thought; the offline echo of memory is not new
            said = await self.archive.observe(
                self.scope, reply.text, role="assistant", source_tag=reply.source, attention=run.text,
                metadata={"source": reply.source}, interest=interest,  # its memory is known as the agent's own
            )  # fmt: skip
            item = _kept(said)
        self.window.add(Message("output", reply.text, reply.source, self.window.count(reply.text), item))
        return [o.flushed for o in (seen, said) if o is not None and o.flushed is not None]

    async def _notice(self, reports: Sequence[FlushReport]) -> None:
        """Consolidation alerts (§3.4's "I notice pattern Z"): what the exit gate kept while flagging a
        contradiction with an older memory becomes an input that competes for attention."""
        for report in reports:
            for outcome in report.outcomes:
                if outcome.action == "persist_flag":
                    await self.submit(
                        f"I notice this contradicts what I believed before: {outcome.content}", "consolidation_alert"
                    )

    async def _act(self, run: _Run, reply: Reply) -> Reply:
        """The action check: the reply to the user is a communication; an internal input's output stays
        in working memory; what System 1 asked for with its tools is checked against the source."""
        first: ActionKind = "communication" if run.tag.source == USER else "none"
        # tools may run concurrently, so their order of arrival is not the model's: communications first
        wanted = [(first, reply.text), *sorted(run.intents, key=lambda intent: intent[0] != "communication")]
        checks = tuple(check_action(kind, text, run.tag, reply.confidence) for kind, text in wanted)
        for check in checks:
            if check.kind == "internal" and check.allowed:
                await self.submit(check.text, "internal_dmn")
        if run.tag.self_generated and any(c.allowed and c.kind != "none" for c in checks):
            await self._aligned(run, [c.text for c in checks if c.allowed and c.kind != "none"])
        await self._learn_reflexes(run)
        return replace(reply, actions=checks, escalated=reply.escalated + tuple(run.escalations))

    async def _aligned(self, run: _Run, done: Sequence[str]) -> None:
        """Milestone 10: an action the agent started itself that agrees with a value it formed itself (a
        memory promoted by the night, not one an operator wrote), as close as recall asks of evidence."""
        if "first_aligned_decision" in self.reached:
            return
        floor = self.archive.settings.refusal_threshold
        for text in done:
            found = await self.archive.recall(self.scope, text, 5, kinds=("memory",), read_only=True, threshold=-1.0)
            formed = [h for h in found.hits if h.metadata.get("promotion") and (h.similarity or 0.0) >= floor]
            if formed:
                await self._milestone("first_aligned_decision", {"action": text[:200], "value": str(formed[0].id)})
                return

    async def _milestone(self, name: str, evidence: Mapping[str, str], at: datetime | None = None) -> None:
        """Milestone ``name`` reached now: on ``at``, else the clock of the cycle under way, else the wall's."""
        if name not in self.reached:
            await self.archive.inner.reach_milestone(self.scope, name, evidence, at=at or self._now)
            self.reached.add(name)

    async def achieve_goal(self, goal: str, reflection: str, *, now: datetime | None = None) -> uuid.UUID:
        """A goal was achieved: keep the agent's reflection on it as a ``reflection`` memory (at the
        agent's own source confidence, dated ``now``: a replay or simulation brings its own clock) and
        mark milestone 9. Returns the memory's id."""
        if not isinstance(goal, str) or not goal.strip() or not isinstance(reflection, str) or not reflection.strip():
            raise InvalidContentError("a goal and a reflection on it are both needed")
        memory = await self.archive.remember(
            self.scope, f"Goal achieved: {goal.strip()}. Looking back: {reflection.strip()}", kind="reflection",
            source_tag="agent", source_confidence=self.archive.settings.own_source_confidence,
            metadata={"goal": goal.strip()}, event_time=now,
        )  # fmt: skip
        evidence = {"goal": goal.strip()[:200], "memory": str(memory.id)}
        await self._milestone("first_goal_reflected", evidence, now)
        return memory.id

    async def _learn_reflexes(self, run: _Run) -> None:
        """What System 1 did in this context and how it went (memory-architecture §10.3), in order."""
        before = None
        for action, ok in run.tools:
            kind = "delegation" if action in ("consult_system2", "escalate_to_system2") else "tool_call"
            reflex = await self.archive.reflexes.record_outcome(
                self.scope, run.text, action, success=ok, action_type=kind, follows=before
            )
            before = reflex.id

    # --- thinking ----------------------------------------------------------------------
    async def _offline(self, run: _Run) -> Reply:
        """The offline responder: the user's statement is acknowledged in their words turned to
        "you"; a question (or an internal input) is answered with the best recalled statement the
        user made or memory holds that speaks of what it asks (recall puts what is current first),
        with when it was said ("You said last week that ..."), never a question and never the agent's
        own words; else "I don't know" (issue 40 item 8, :mod:`mnemo.cognition.mind.answering`)."""
        if run.tag.source == USER and not is_question(run.text):
            return Reply(acknowledgement(run.text), "offline", confidence=1.0)
        mood = self.gut.mood if self.gut else None
        found = await self.archive.recall(self.scope, run.text, OFFLINE_CANDIDATES, read_only=False, mood=mood)
        floor = self.archive.settings.refusal_threshold
        fitting = (h for h in found.hits if _answers(h) and (h.similarity or 0.0) >= floor)
        best = next((h for h in fitting if supports(run.text, h.content)), None)
        if best is None:
            missing = found.unknown if isinstance(found, Refusal) else ()
            text = dont_know(run.text, missing) or REFUSAL
            return Reply(text, "offline", found, confidence=composite(None, found.best_similarity, None))
        said = recital_when(
            best.content, best.event_time or best.created_at, self._now or datetime.now(UTC),
            theirs=best.item_kind == "turn",
        )  # fmt: skip
        return Reply(said, "offline", found, confidence=composite(None, best.similarity, None))

    async def _system1(self, run: _Run, budget: int, flags: Sequence[str]) -> Reply:
        """System 1 answers; below the escalation threshold it retries once with feedback (§3.5);
        on the seed's triggers a configured System 2 answers instead (§3.6)."""
        block = await self.archive.context(self.scope, run.text, budget)
        instructions = await self.system_prompt(
            block.text, await self.corrections_for(run.text), await self.reflex_hints(run.text)
        )
        answer, confidence = await self._attempt(run, "system1", instructions)
        threshold = await self.threshold()
        if confidence < threshold:
            feedback = (f"\nYour last answer looked unsure (confidence {confidence:.2f}, below {threshold:.2f}): "
                        "answer again plainly from what you know, and say so if you do not know.")  # fmt: skip
            answer, confidence = await self._attempt(run, "system1-retry", instructions + feedback)
        evidence = [item.text for item in block.items]
        fired = meta.signals(
            run.text, unsure=confidence < threshold, unknown=block.refused, flags=flags,
            contradiction=meta.contradicts([run.text, answer], evidence),
        )  # fmt: skip
        decision = decide(fired)
        if not decision.escalate or self.system2 is None:
            return Reply(
                answer, "system1", confidence=confidence, escalated=decision.reasons if decision.escalate else ()
            )
        opinion = await self._second_opinion(run, answer, instructions, ", ".join(decision.reasons), block.text)
        run.tools.append(("escalate_to_system2", True))  # a delegation the loop made: a reflex like any other
        return Reply(opinion.answer, "system2", escalated=decision.reasons)

    async def _attempt(self, run: _Run, purpose: str, instructions: str) -> tuple[str, float]:
        """One System 1 answer and its composite confidence: token probabilities when the provider
        gave them, else the answer's structure; with the meta-context call's verbalised confidence.
        The actions of an attempt that is retried are dropped with its answer."""
        run.intents.clear()
        result = await self._call(
            self.model, purpose, instructions, run.prompt, str, self._tools(run), self.window.history()
        )
        answer = str(result.output)
        logprobs = meta.logprobs_of(result.new_messages())
        objective = from_logprobs(logprobs) if logprobs else structural(answer).score
        return answer, composite(objective, None, await self._verbalised(run.text, answer)) or 0.0

    async def _verbalised(self, request: str, answer: str) -> float | None:
        """Verbalised confidence from an isolated meta-context call: no history, no identity, no
        memory; only the number is kept."""
        model = self.model if self.meta == "system1" else self.meta
        if model is None:
            return None
        result = await self._call(model, "meta-confidence", meta.META, f"Request: {request}\n\nAnswer: {answer}", str)
        return meta.parse_verbalised(str(result.output))

    async def _second_opinion(
        self, run: _Run, answer: str, instructions: str, reasons: str, context: str
    ) -> meta.SecondOpinion:
        """System 2's answer, explanation and correction; the correction goes to the reflection bank."""
        review = f"The request: {run.text}\n\nSystem 1's answer: {answer}"
        result = await self._call(
            self.system2, "system2", meta.SYSTEM2 + "\n" + instructions, review, meta.SecondOpinion
        )
        opinion: meta.SecondOpinion = result.output
        await self.store_correction(
            trigger=run.text[:300], error_type=reasons, original=answer[:500], correction=opinion.correction,
            context=context[:500],
        )  # fmt: skip
        self.last_escalation = self.cycles
        return opinion

    async def threshold(self) -> float:
        """The adaptive escalation threshold (§3.5) from this scope's memory count and identity density."""
        grown = await self.archive.inspect.maturity(self.scope)
        return escalation_threshold(grown.memories, grown.identity_density)

    async def _call(
        self, model: Any, purpose: str, instructions: str, text: str, output: Any,
        tools: Sequence[Any] = (), history: Sequence[Any] = (),
    ) -> Any:  # fmt: skip
        """One model call, logged in the cost log; the run result."""
        from pydantic_ai import Agent as ModelAgent

        started = time.perf_counter()
        result = await ModelAgent(model, instructions=instructions, output_type=output, tools=list(tools)).run(
            text, message_history=list(history) or None, model_settings=_logprob_settings(model)
        )
        usage = result.usage
        name = str(getattr(model, "model_name", model))
        tokens_in, tokens_out = int(usage.input_tokens or 0), int(usage.output_tokens or 0)
        await self.archive.agents.log_model_call(
            self.scope.entity_id, self.name, model=name, purpose=purpose, input_tokens=tokens_in,
            output_tokens=tokens_out, cost=price(name, tokens_in, tokens_out), seconds=time.perf_counter() - started,
        )  # fmt: skip
        return result

    def _tools(self, run: _Run) -> list[Any]:
        """System 1's tools for this input: actions (``tell_user``, ``note_for_later``), System 2 when
        configured, and its docs when directories are configured."""
        from mnemo.agent.tools import system1_tools

        return system1_tools(self, run)

    # --- memory the loop brings into context -------------------------------------------------
    async def store_correction(
        self, *, trigger: str, error_type: str, original: str, correction: str, context: str = ""
    ) -> uuid.UUID:
        """Keep a correction in the reflection bank (cognitive-plan §3.7): a ``correction`` memory with
        its trigger, error type, original reasoning and context; returns its id."""
        content = f"When {trigger}: {correction} (the error was {error_type}: {original})"
        memory = await self.archive.remember(
            self.scope, content, kind="correction", source_tag="system2",
            metadata={"trigger": trigger, "error_type": error_type, "original_reasoning": original,
                      "correction": correction, "context": context},
        )  # fmt: skip
        return memory.id

    async def corrections_for(self, focus: str, k: int = 3) -> list[str]:
        """The ``k`` corrections most similar to the attention focus (not necessarily the user's text),
        among those at least as similar as recall's refusal threshold asks of any evidence."""
        found = await self.archive.recall(self.scope, focus, 30, kinds=("memory",), read_only=True, threshold=-1.0)
        floor = self.archive.settings.refusal_threshold
        fitting = [h for h in found.hits if h.memory_kind == "correction" and (h.similarity or 0.0) >= floor]
        return [h.content for h in fitting][:k]

    async def reflex_hints(self, focus: str, k: int = 3) -> list[str]:
        """What the agent did before in contexts like this one and how it went (its reflexes, as close
        as recall's refusal threshold asks of evidence)."""
        floor = self.archive.settings.refusal_threshold
        found = await self.archive.reflexes.matching(self.scope, focus, k)
        return [
            f"{r.action} ({r.action_type}): {r.success_count} of {r.success_count + r.failure_count} went well"
            for r in found
            if (r.similarity or 0.0) >= floor
        ]

    async def system_prompt(self, memory: str, corrections: Sequence[str] = (), reflexes: Sequence[str] = ()) -> str:
        """Identity layers, the cost and uptime line, the state report, past corrections, reflexes, memory."""
        lines = [f"You are {self.name}, an agent with long-term memory."]
        for number, title in ((0, "Your values"), (1, "Your goals")):
            items: list[IdentityItem] = await self.identity.layer(number) if self.identity else []
            if items:
                lines.append(f"{title}: " + "; ".join(i.text for i in items))
        lines.append(await self.report())
        if self.state:
            lines.append(self.state)
        if corrections:
            lines.append("In similar past situations, you made these errors:\n" + _bullets(corrections))
        if reflexes:
            lines.append("In similar situations before, you did:\n" + _bullets(reflexes))
        if memory:
            lines.append("What you remember that bears on this:\n" + memory)
        return "\n".join(lines)

    # --- commands and reports (§4.8-4.9) ----------------------------------------------
    async def report(self) -> str:
        """The one-line cost and age report (§4.8-4.9)."""
        now = datetime.now(UTC)
        session = await self.archive.agents.model_costs(self.scope.entity_id, self.name, self.started)
        lifetime = await self.archive.agents.model_costs(self.scope.entity_id, self.name, EPOCH)
        age = now - self.facts.get("first_started", now)
        return (
            f"Cost: ${session['cost']:.4f} this session, ${lifetime['cost']:.4f} lifetime "
            f"({lifetime['calls']} model calls); up {_span(now - self.started)}, age {_span(age)}, "
            f"start #{self.facts.get('starts', 1)}."
        )

    async def command(self, text: str) -> str:
        """One of the loop's own :data:`COMMANDS`; any other is answered with their names."""
        name = text.split()[0].lower()
        if name == "/cost":
            return await self._costs()
        if name == "/readiness":
            problem = await self.archive.maintenance.health()
            model = (
                "offline responder (no model configured)" if self.model is None else "System 1: " + label(self.model)
            )
            system2 = f"System 2: {label(self.system2)}" if self.system2 is not None else "no System 2"
            grown = await self.archive.inner.readiness(self.scope)
            missing = [m.name for m in grown.milestones if not m.reached]
            milestones = f"{grown.reached} of {len(grown.milestones)} bootstrap milestones reached" + (
                f" (next: {missing[0]})" if missing else ""
            )
            return (
                f"{'ready' if problem is None else 'not ready: ' + problem}; {model}; {system2}; {milestones}; "
                f"{await self.report()}"
            )
        if name == "/state":
            return self._state()
        *others, last = COMMANDS
        return f"unknown command {name}; try {', '.join(others)} or {last}"

    async def _costs(self) -> str:
        now = datetime.now(UTC)
        parts = []
        for span, since in (("session", self.started), ("24 h", now - timedelta(hours=24)), ("lifetime", EPOCH)):
            t = await self.archive.agents.model_costs(self.scope.entity_id, self.name, since)
            unpriced = f", {t['unpriced']} unpriced" if t["unpriced"] else ""
            parts.append(
                f"{span}: {t['calls']} calls, {t['input_tokens']} in / {t['output_tokens']} out tokens, "
                f"${t['cost']:.4f}{unpriced}"
            )
        return "\n".join(parts)

    def _state(self) -> str:
        level = "unknown" if self.intensity is None else f"{self.intensity.value:.2f}"
        w = self.window
        return (
            f"window: {len(w.messages)} messages, {w.tokens} tokens of {w.max_tokens}; intensity {level}; "
            f"{w.pruned} pruned, {len(w.leaving)} waiting for the exit gate; {len(self.pending)} inputs pending; "
            f"{self.cycles} cycles"
        )


def _answers(hit: Hit) -> bool:
    """Whether a recalled item may answer offline: a statement (not a question) the user made (a user
    turn) or memory holds, never the agent's own (its replies and thoughts, by role and source tag,
    and the reflection bank's corrections)."""
    if hit.item_kind == "turn":
        theirs = hit.role == "user"
    else:
        theirs = hit.memory_kind != "correction" and hit.metadata.get("source") not in OWN_SOURCES
    return theirs and not is_question(hit.content)


def _kept(seen: Any) -> uuid.UUID | None:
    return seen.item_id if seen.action == "buffer" else None


def _logprob_settings(model: Any) -> Any:
    """Ask the providers that can return token log-probabilities for them (§2.11)."""
    name = str(getattr(model, "system", "") or model).lower()
    if name.startswith("openai"):
        return {"openai_logprobs": True}
    if name.startswith("google"):
        return {"google_logprobs": True}
    return None


def _bullets(lines: Sequence[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}d {hours}h" if days else f"{hours}h {rest // 60}m"
