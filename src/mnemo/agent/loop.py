"""The agent's loop, first cut: context, System 1, memory, sources, cost (issue 18 items 3, 9, 11).

Seeds: cognitive-plan §3.4 (every input goes through one pipeline: context assembly, the model
call, then the memory gate and source tags), §4.8 (every model call logged with tokens and cost:
session, 24-hour and lifetime totals, ``/cost``, a one-line report in the system prompt), §4.9
(restarts, uptime and age kept in the database; the embedder checked at start), §2.4 (identity
layers in the system prompt).

System 1 is a Pydantic AI model when one is configured (``MNEMO_LLM`` or ``model=``). Without
one the loop still runs: System 1 is an offline responder that answers from memory (the best
recalled evidence, or the refusal sentence), so memory, sources and the cost report are visible
offline. Attention, escalation to System 2, the reflection bank and the adaptive window are the
issue's remaining items.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np

from mnemo.agent.docs import DocsTool
from mnemo.agent.identity import Identity, IdentityItem
from mnemo.archive import AsyncArchive
from mnemo.cognition.attention import URGENCY, Candidate, allocate, state_report
from mnemo.cognition.confidence import composite, structural
from mnemo.cognition.escalation import decide, escalation_threshold
from mnemo.errors import MnemoError
from mnemo.models import RecallResult, Refusal, Scope

__all__ = ["Agent", "Reply", "price"]

REFUSAL = "I don't know: my memory holds nothing reliable about that."


@dataclass(frozen=True, slots=True)
class Reply:
    """What the agent answered, and where the answer came from."""

    text: str
    source: str
    """``system1`` (the model), ``offline`` (answered from memory) or ``command``."""
    evidence: RecallResult | Refusal | None = None
    escalated: tuple[str, ...] = ()
    """The escalation triggers that fired (System 2 answered when one is configured)."""
    confidence: float | None = None
    """Composite confidence (cognitive-plan §2.11): the answer's structure for System 1, the
    evidence's similarity (feeling of knowing) offline."""


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
class Agent:
    """One agent of ``scope.entity_id`` remembering into ``scope`` (see the module docstring)."""

    archive: AsyncArchive
    scope: Scope
    name: str = "agent"
    model: Any = None
    """A Pydantic AI model or model name for System 1; default ``settings.llm``; None: offline."""
    identity: Identity | None = None
    system2: Any = None
    """The model System 1 escalates to (§3.6); None: no escalation, the triggers are still reported."""
    docs: DocsTool | None = None
    """Read-only directories System 1 may read (its own docs, cognitive-plan §4.10)."""
    session: str = field(default_factory=lambda: datetime.now(UTC).strftime("chat-%Y%m%d-%H%M%S"))
    budget: int = 800
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    facts: dict[str, Any] = field(default_factory=dict)
    pending: list[Candidate] = field(default_factory=list)
    """Inputs waiting for attention (:meth:`submit`, :meth:`cycle`)."""
    recent: list[np.ndarray] = field(default_factory=list)
    """The vectors of the inputs attended to lately (novelty is measured against them)."""
    state: str = ""
    """The last cognitive state report (in the next system prompt)."""

    async def start(self) -> str | None:
        """Count this start in the database and check the embedder; the problem found, or None."""
        if self.model is None:
            self.model = self.archive.settings.llm
        self.facts = dict(await self.archive.agent_started(self.scope.entity_id, self.name))
        self.started = datetime.now(UTC)
        return await self.archive.health()

    async def submit(self, text: str, source: str = "external_user", *, charge: float = 0.0) -> None:
        """Queue an input for attention: the user's message, an internal thought (``internal_dmn``), a
        gut signal (``internal_gut`` with its ``charge``), a consolidation alert, a scheduled task."""
        if source not in URGENCY:
            raise ValueError(f"source must be one of {', '.join(URGENCY)}, not {source!r}")
        vector = np.asarray(await self.archive.embeddings.embed_query(text), dtype=np.float32)
        ident = f"{source}-{len(self.pending)}-{time.monotonic_ns()}"
        self.pending.append(Candidate(ident, source, text, vector, URGENCY[source], charge))

    async def cycle(self) -> Reply | None:
        """One cognitive cycle: the most salient pending input wins attention (the losers wait with
        decaying urgency), the state report goes into the context, and the winner is answered."""
        if not self.pending:
            return None
        goals = await self.identity.layer(1) if self.identity else []
        allocation = allocate(self.pending, self.recent[-10:], [(g.weight, g.vector) for g in goals])
        self.pending = list(allocation.waiting)
        self.state = state_report(allocation)
        winner = allocation.winner.candidate
        self.recent.append(winner.vector)
        return await self.respond(winner.text, source=winner.source)

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

    async def respond(self, text: str, source: str = "external_user", flags: Sequence[str] = ()) -> Reply:
        """One input through the loop: a command, or context → System 1 → memory (the user's turn and
        the answer recorded with their source tags)."""
        if text.strip().startswith("/"):
            return Reply(await self.command(text.strip()), "command")
        # memory is read before this exchange is written, so the question never answers itself
        reply = await (self._offline(text) if self.model is None else self._system1(text, flags))
        role = "user" if source == "external_user" else "system"  # an internal input is not the user's
        await self.archive.record_turn(self.scope, self.session, role, text, metadata={"source": source})
        # the memory gate (cognitive-plan §3.4): the input also goes through the entry gate, which
        # keeps what is worth keeping as a candidate memory, tagged with its source
        await self.archive.observe(self.scope, text, role=role, source_tag=source, attention=text)
        await self.archive.record_turn(
            self.scope, self.session, "assistant", reply.text, metadata={"source": reply.source}
        )
        return reply

    async def _offline(self, text: str) -> Reply:
        found = await self.archive.recall(self.scope, text, 1, read_only=False)
        if isinstance(found, Refusal) or not found.hits:
            return Reply(REFUSAL, "offline", found, confidence=composite(None, found.best_similarity, None))
        best = found.hits[0]
        confidence = composite(None, best.similarity, None)
        return Reply(f"From memory: {best.content}", "offline", found, confidence=confidence)

    async def _system1(self, text: str, flags: Sequence[str] = ()) -> Reply:
        """System 1 answers; below the escalation threshold it retries once with feedback (§3.5);
        on the seed's triggers a configured System 2 answers instead and its correction pattern
        goes to the reflection bank (§3.6-3.7)."""
        block = await self.archive.context(self.scope, text, self.budget)
        instructions = await self.system_prompt(block.text, await self.corrections_for(text))
        answer = str(await self._ask(self.model, "system1", instructions, text, str, self._tools()))
        confidence = composite(structural(answer).score, None, None) or 0.0
        threshold = await self.threshold()
        if confidence < threshold:
            feedback = (f"\nYour last answer looked unsure (confidence {confidence:.2f}, below {threshold:.2f}): "
                        "answer again plainly from what you know, and say so if you do not know.")  # fmt: skip
            answer = str(
                await self._ask(self.model, "system1-retry", instructions + feedback, text, str, self._tools())
            )
            confidence = composite(structural(answer).score, None, None) or 0.0
        decision = decide(_signals(text, confidence < threshold, block.refused, flags))
        if not decision.escalate or self.system2 is None:
            return Reply(
                answer, "system1", confidence=confidence, escalated=decision.reasons if decision.escalate else ()
            )
        opinion = await self._ask(
            self.system2, "system2", SYSTEM2 + "\n" + instructions, _review(text, answer), SecondOpinion
        )
        await self.store_correction(
            trigger=text[:300], error_type=", ".join(decision.reasons), original=answer[:500],
            correction=opinion.correction, context=block.text[:500],
        )  # fmt: skip
        return Reply(opinion.answer, "system2", confidence=None, escalated=decision.reasons)

    async def threshold(self) -> float:
        """The adaptive escalation threshold (§3.5) from this scope's memory count. The identity
        density term counts as 0 until the archive exposes its weight centres."""
        summaries = await self.archive.scopes(self.scope.entity_id)
        count = next((s.memories for s in summaries if s.scope == self.scope), 0)
        return escalation_threshold(count, 0.0)

    async def _ask(self, model: Any, purpose: str, instructions: str, text: str, output: Any, tools: Any = ()) -> Any:
        """One model call, logged in the cost log."""
        from pydantic_ai import Agent as ModelAgent

        started = time.perf_counter()
        run = await ModelAgent(model, instructions=instructions, output_type=output, tools=list(tools)).run(text)
        usage = run.usage
        name = str(getattr(model, "model_name", model))
        tokens_in, tokens_out = int(usage.input_tokens or 0), int(usage.output_tokens or 0)
        await self.archive.log_model_call(
            self.scope.entity_id, self.name, model=name, purpose=purpose, input_tokens=tokens_in,
            output_tokens=tokens_out, cost=price(name, tokens_in, tokens_out), seconds=time.perf_counter() - started,
        )  # fmt: skip
        return run.output

    def _tools(self) -> list[Any]:
        """System 1's tools: reading its own docs, when directories are configured."""
        if self.docs is None:
            return []
        docs = self.docs

        from pydantic_ai import ModelRetry

        def list_docs(path: str = "") -> list[str]:
            """List a docs directory (``""``: the roots)."""
            try:
                return docs.list(path)
            except MnemoError as exc:  # the model is told why, and may try another path
                raise ModelRetry(str(exc)) from exc

        def read_doc(path: str) -> str:
            """Read a text file of the docs, e.g. ``docs/notes.md``."""
            try:
                return docs.read(path)
            except MnemoError as exc:
                raise ModelRetry(str(exc)) from exc

        return [list_docs, read_doc]

    async def system_prompt(self, memory: str, corrections: list[str] | None = None) -> str:
        """Identity layers, the cost and uptime line, the state report, past corrections, memory."""
        lines = [f"You are {self.name}, an agent with long-term memory."]
        for number, title in ((0, "Your values"), (1, "Your goals")):
            items: list[IdentityItem] = await self.identity.layer(number) if self.identity else []
            if items:
                lines.append(f"{title}: " + "; ".join(i.text for i in items))
        lines.append(await self.report())
        if self.state:
            lines.append(self.state)
        if corrections:
            lines.append(
                "In similar past situations, you made these errors:\n" + "\n".join(f"- {c}" for c in corrections)
            )
        if memory:
            lines.append("What you remember that bears on this:\n" + memory)
        return "\n".join(lines)

    async def report(self) -> str:
        """The one-line cost and age report (§4.8-4.9)."""
        now = datetime.now(UTC)
        session = await self.archive.model_costs(self.scope.entity_id, self.name, self.started)
        lifetime = await self.archive.model_costs(self.scope.entity_id, self.name, datetime(1970, 1, 1, tzinfo=UTC))
        age = now - self.facts.get("first_started", now)
        up = now - self.started
        return (
            f"Cost: ${session['cost']:.4f} this session, ${lifetime['cost']:.4f} lifetime "
            f"({lifetime['calls']} model calls); up {_span(up)}, age {_span(age)}, "
            f"start #{self.facts.get('starts', 1)}."
        )

    async def command(self, text: str) -> str:
        """``/cost`` and ``/readiness`` (the loop's own commands)."""
        name = text.split()[0].lower()
        if name == "/cost":
            now = datetime.now(UTC)
            parts = []
            for label, since in (("session", self.started), ("24 h", now - timedelta(hours=24)),
                                 ("lifetime", datetime(1970, 1, 1, tzinfo=UTC))):  # fmt: skip
                t = await self.archive.model_costs(self.scope.entity_id, self.name, since)
                unpriced = f", {t['unpriced']} unpriced" if t["unpriced"] else ""
                parts.append(
                    f"{label}: {t['calls']} calls, {t['input_tokens']} in / {t['output_tokens']} out tokens, "
                    f"${t['cost']:.4f}{unpriced}"
                )
            return "\n".join(parts)
        if name == "/readiness":
            problem = await self.archive.health()
            model = "offline responder (no model configured)" if self.model is None else f"System 1: {self.model}"
            return f"{'ready' if problem is None else 'not ready: ' + problem}; {model}; {await self.report()}"
        return f"unknown command {name}; try /cost or /readiness"


SYSTEM2 = (
    "You are System 2: System 1 answered the request below and its answer triggered a review. Give the "
    "right answer, explain briefly what was wrong, and state the correction as a rule System 1 can follow "
    "next time in a similar situation."
)


@dataclass(frozen=True)
class SecondOpinion:
    """What System 2 returns (§3.6): its answer, why, and the correction pattern."""

    answer: str
    explanation: str
    correction: str


_STEPS = re.compile(r"\b(then|after that|first|second|finally|step)\b", re.IGNORECASE)


def _signals(text: str, unsure: bool, unknown: bool, flags: Sequence[str]) -> list[str]:
    """The §3.6 triggers this request shows: low confidence, novelty (memory knows nothing), and
    complexity (several sentences or step words); the always-escalate ones come from the caller."""
    signals = list(flags)
    if unsure:
        signals.append("low_confidence")
    if unknown:
        signals.append("novelty")
    if len(re.findall(r"[.!?](\s|$)", text)) >= 3 or len(_STEPS.findall(text)) >= 2:
        signals.append("complexity")
    return signals


def _review(text: str, answer: str) -> str:
    return f"The request: {text}\n\nSystem 1's answer: {answer}"


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}d {hours}h" if days else f"{hours}h {rest // 60}m"
