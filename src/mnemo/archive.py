"""The facade: ``AsyncArchive``, the core verbs of an archive and one attribute per feature.

Issue 41 item 1 (a facade composed of objects, as psycopg's ``Connection`` hands out cursors):
the core verbs are methods here (open/close, remember, record_turn, import, recall, context,
observe/flush, forget/purge, night_cycle, status); each feature is one read-only attribute with
its own class, living in the feature's package: ``archive.access`` (:class:`~mnemo.access.Access`),
``archive.portability`` (:class:`~mnemo.portability.Portability`), ``archive.inner``
(:class:`~mnemo.inner.Inner`), ``archive.reflexes`` (:class:`~mnemo.reflexes.Reflexes`),
``archive.agents``, ``archive.knowledge``, ``archive.inspect`` and ``archive.maintenance``
(in :mod:`mnemo.admin`). On the class, a feature attribute is the feature's class, so its static
methods need no open archive: ``AsyncArchive.portability.restore(path)``.

Its blocking twin, ``Archive``, and a blocking twin of each feature are derived in :mod:`mnemo._sync`.

Seed: archive-adr §0 "Glue, Not Surrender": mnemo is a substrate driver the
caller owns, not an execution loop; memory-architecture §1 (the tiers this
facade will grow into).

::

    async with await AsyncArchive.open() as archive:
        scope = Scope("alice")
        await archive.remember(scope, "Alice is allergic to peanuts", kind="preference")
        result = await archive.recall(scope, "what food should I avoid?")
        await archive.access.grant(scope, "bob")          # a feature: one attribute each

    with Archive() as archive:            # same API, blocking
        archive.recall(Scope("alice"), "allergies")
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import numpy as np

from mnemo._runtime import Runtime
from mnemo._validate import check_process, to_utc
from mnemo.access import Access
from mnemo.admin import startup
from mnemo.admin import status_report as status_path
from mnemo.admin.agent_support import Agents
from mnemo.admin.archive_inspection import Inspect
from mnemo.admin.archive_upkeep import Maintenance
from mnemo.admin.knowledge_curation import Knowledge
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.inner import Inner
from mnemo.models import (
    ContextBlock,
    FlushReport,
    ImportReport,
    Memory,
    NightReport,
    Observation,
    RecallResult,
    Refusal,
    Scope,
    Status,
    Turn,
    TurnInput,
)
from mnemo.night import consolidated_reads as night_api
from mnemo.night import cycle as night_cycle
from mnemo.night.cycle import Progress as NightProgress
from mnemo.night.stage_protocol import Stage as NightStage
from mnemo.night.stage_registry import STAGE_NAMES as NIGHT_STAGE_NAMES
from mnemo.night.stage_registry import STAGES as NIGHT_STAGES
from mnemo.portability import Portability
from mnemo.recall import context as assemble_path
from mnemo.recall import pipeline as recall_path
from mnemo.reflexes import Reflexes
from mnemo.store.pool import PROCESS
from mnemo.write import forget as forget_path
from mnemo.write import formats as formats_path
from mnemo.write import gates as gate_path
from mnemo.write import importer as import_path
from mnemo.write import remember as write_path
from mnemo.write.formats import Skipped, VectorSpace

__all__ = ["AsyncArchive", "FeatureAttribute", "as_process"]

_log = logging.getLogger("mnemo")
Progress = write_path.Progress
F = TypeVar("F")


class FeatureAttribute(Generic[F]):
    """A feature of the archive, as one read-only attribute (issue 41 item 1).

    On an archive it is the feature object the archive made once (``archive.access``); on the class
    it is the feature's class, whose static methods need no open archive
    (``AsyncArchive.portability.restore``)."""

    def __init__(self, kind: type[F]) -> None:
        self._kind = kind
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    @overload
    def __get__(self, archive: None, owner: type) -> type[F]: ...
    @overload
    def __get__(self, archive: object, owner: type) -> F: ...
    def __get__(self, archive: object | None, owner: type) -> F | type[F]:
        if archive is None:
            return self._kind
        feature: F = getattr(archive, self._slot)
        return feature

    def __set__(self, archive: object, value: object) -> None:
        raise AttributeError(f"{self._slot[1:]} is read-only")


class AsyncArchive:
    """An open memory archive. Create with ``await AsyncArchive.open(...)``."""

    NIGHT_STAGES: tuple[NightStage, ...] = NIGHT_STAGES
    """The night cycle's stages, in the order a night runs them (:mod:`mnemo.night.stage_registry`):
    each with its ``name`` and its ``row`` of the report table."""

    access = FeatureAttribute(Access)
    """Scopes, read grants and bearer tokens (archive-adr §7)."""
    portability = FeatureAttribute(Portability)
    """Backup and restore, bifocal packets, forks and merges (archive-adr §6)."""
    inner = FeatureAttribute(Inner)
    """The inner life: feedback, readiness, reflection, promotion, wandering (cognitive-plan §4)."""
    reflexes = FeatureAttribute(Reflexes)
    """Procedural memory: outcomes of actions and the reflexes that fit a context."""
    agents = FeatureAttribute(Agents)
    """What an agent keeps here: held inputs, its starts, its model costs."""
    knowledge = FeatureAttribute(Knowledge)
    """What the night consolidated: curation, facts, the chains of belief."""
    inspect = FeatureAttribute(Inspect)
    """Side-effect-free reads: pages of memories, one item, histories, the inspector, the probes."""
    maintenance = FeatureAttribute(Maintenance)
    """Health, warming, re-embedding and deferred work."""

    def __init__(self, runtime: Runtime, pending_reembed: int) -> None:
        self._rt = runtime
        self._access = Access(runtime)
        self._portability = Portability(runtime)
        self._inner = Inner(runtime)
        self._reflexes = Reflexes(runtime)
        self._agents = Agents(runtime)
        self._knowledge = Knowledge(runtime)
        self._inspect = Inspect(runtime)
        self._maintenance = Maintenance(runtime, pending_reembed)

    @classmethod
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        embeddings: Embeddings | None = None,
        llm: Any = None,
        **overrides: Any,
    ) -> AsyncArchive:
        """Connect (starting the embedded server if needed), migrate, load the embedder, and re-evaluate
        scratch-buffer items an earlier run left unflushed (crash recovery).

        ``overrides`` are :class:`Settings` fields and win over ``MNEMO_*`` variables. ``llm`` is a
        Pydantic AI model (or model name) for the optional LLM steps; default: ``settings.llm``.
        """
        runtime, pending = await startup.start(settings, embeddings=embeddings, llm=llm, **overrides)
        return cls(runtime, pending)

    async def __aenter__(self) -> AsyncArchive:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Write every recall's queued use (issue 42 decision 3), flush every scratch buffer
        (graceful shutdown), then disconnect."""
        try:
            await self._rt.uses.drain()
            await self._rt.backfill.close()
            await self._rt.indexes.close()
            await gate_path.recover(self._rt)
        except Exception as exc:  # never lose the connection close; the items stay buffered for next time
            _log.warning("could not flush the scratch buffer on close (%s); it will be flushed on next open", exc)
        finally:
            await self._rt.store.close()

    @property
    def settings(self) -> Settings:
        return self._rt.settings

    @property
    def embeddings(self) -> Embeddings:
        return self._rt.embeddings

    @property
    def pending_reembed(self) -> int:
        """Stored items that still lack a vector of the active model (``maintenance.reembed`` catches them up)."""
        return self._maintenance.pending_reembed

    # --- writes ----------------------------------------------------------------
    async def remember(
        self,
        scope: Scope,
        content: object,
        *,
        kind: str = "semantic",
        anchored: bool = False,
        compressed: str | None = None,
        source_tag: str | None = None,
        source_confidence: float = 1.0,
        provenance: Sequence[str] = (),
        event_time: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        embedding: Sequence[float] | np.ndarray | None = None,
        supersedes: Sequence[uuid.UUID | str] = (),
        status: str = "active",
        process: str | None = None,
    ) -> Memory:
        """Store a curated memory, embedded immediately. ``supersedes``: memories this one updates
        (their weight is lowered through the audit log, nothing is deleted). ``status="candidate"``
        leaves it for the curator to adjudicate (``curate``, the night cycle). Remembering exactly the
        same content, kind and ``anchored`` flag again in the scope stores no copy: the live memory is
        reinforced (audited, reason ``remembered again``) and returned, unless ``supersedes`` is given.
        ``process``: the subsystem writing (default: the :func:`as_process` in effect, else ``core``)."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        with as_process(process):
            return await write_path.remember(
                self._rt,
                scope,
                content,
                kind=kind,
                anchored=anchored,
                compressed=compressed,
                source_tag=source_tag,
                source_confidence=source_confidence,
                provenance=provenance,
                event_time=event_time,
                metadata=metadata,
                embedding=embedding,
                supersedes=supersedes,
                status=status,
            )

    async def record_turn(
        self,
        scope: Scope,
        session: str,
        role: str,
        content: object,
        *,
        speaker: str | None = None,
        created_at: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        embedding: Sequence[float] | np.ndarray | None = None,
        process: str | None = None,
        idempotency_key: str | None = None,
    ) -> Turn:
        """Append a raw exchange to the day table, embedded immediately (``process`` as for :meth:`remember`).

        A repeat stores nothing: when the scope already holds this turn (the same
        ``idempotency_key``, or without one the same session, role, content and explicit
        ``created_at``), that turn comes back with ``repeat=True``. A client that may send a turn
        twice (a retry after a lost reply) gives it a key; a turn without a key or a time is
        stamped now, so the same words said again later are a new turn."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        with as_process(process):
            return await write_path.record_turn(
                self._rt,
                scope,
                session,
                role,
                content,
                speaker=speaker,
                created_at=created_at,
                metadata=metadata,
                embedding=embedding,
                idempotency_key=idempotency_key,
            )

    async def import_file(
        self,
        scope: Scope,
        path: str | Path,
        *,
        fmt: str = "auto",
        sample: str | None = None,
        progress: Progress | None = None,
        skip_invalid: bool = False,
        process: str | None = None,
    ) -> ImportReport:
        """Import a JSONL or LoCoMo conversation file, all or nothing: one bad turn imports nothing.

        ``skip_invalid`` imports the valid turns instead and lists the others in ``report.skipped``.
        Turns the scope already holds (the same file imported before; the same ``idempotency_key``)
        are not stored again: ``report.skipped_repeats`` counts them.
        Everything is embedded first; the rows are then written in one short transaction.
        """
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        with as_process(process):
            return await import_path.import_file(
                self._rt, scope, Path(path), fmt=fmt, sample=sample, progress=progress, skip_invalid=skip_invalid
            )

    async def import_turns(
        self,
        scope: Scope,
        turns: Sequence[TurnInput],
        *,
        vectors: np.ndarray | None = None,
        token_vectors: Sequence[Any] | None = None,
        process: str | None = None,
    ) -> list[Turn]:
        """Write many turns in one short transaction, all or nothing; every vector is made first
        (``vectors``: precomputed ones, one row per turn; ``token_vectors``: their late-interaction
        token vectors). Parse a file's turns with :meth:`parse_turns`. Returns each turn as stored;
        one the scope already held (same idempotency key, or same session, role, time and content)
        is not stored again and comes back as the held turn with ``repeat=True``."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        with as_process(process):
            return await import_path.import_turns(self._rt, scope, turns, vectors=vectors, token_vectors=token_vectors)

    @staticmethod
    def parse_turns(
        text: str,
        *,
        fmt: str = "jsonl",
        max_chars: int,
        path: str = "<text>",
        skipped: list[Skipped] | None = None,
        space: VectorSpace | None = None,
        skew_hours: float | None = None,
    ) -> list[TurnInput]:
        """The turns of JSON Lines (``fmt="jsonl"``) or LoCoMo (``"locomo"``) text, checked as
        :meth:`import_file` checks a file's; given ``skipped``, bad turns are listed there as
        ``(line, reason)`` instead of refusing the text."""
        if fmt == "locomo":
            return formats_path.parse_locomo(
                text, max_chars=max_chars, path=path, skipped=skipped, skew_hours=skew_hours
            )
        return formats_path.parse_jsonl(
            text, max_chars=max_chars, path=path, skipped=skipped, space=space, skew_hours=skew_hours
        )

    # --- reads -----------------------------------------------------------------
    async def recall(
        self,
        scope: Scope,
        query: object,
        k: int = 10,
        *,
        as_entity: str | None = None,
        read_only: bool = False,
        threshold: float | None = None,
        kinds: tuple[str, ...] = recall_path.ITEM_KINDS,
        query_vector: Sequence[float] | np.ndarray | None = None,
        cues: Mapping[str, object] | None = None,
        seed: int | None = None,
        hops: int | None = None,
        expand: bool = False,
        level: int | None = None,
        as_of: datetime | None = None,
        processes: Sequence[str] | None = None,
        mood: Sequence[float] | np.ndarray | None = None,
    ) -> RecallResult | Refusal:
        """Hybrid recall in ``scope`` with cognitive scoring; a :class:`Refusal` when nothing is similar enough.

        One recall searches both tiers: the hippocampus (turns, memories, recent blocks) and the
        cortex (blocks that migrated to the long-term tier); every hit says its ``tier``.
        ``read_only`` promises no retrieval side effects (no reinforcement, no co-access links);
        ``query_vector`` skips embedding the query; ``cues`` penalise mismatching kinds or metadata;
        ``seed`` fixes this recall's stochastic draws; ``hops=2`` spreads activation two links
        deep over co-access links (default ``spreading_hops``, 1). A block hit quotes the block's
        lines that match the query (``Hit.excerpt``; its gist in ``Hit.gist``); ``expand=True`` returns whole
        blocks. ``level`` 1, 2 or 3 retrieves the nodes of the cortex's tree at that level (branch,
        trunk, canopy) instead: their summaries, read-only. ``as_of`` recalls at a point in time
        (aware datetime or ISO-8601 text; naive means UTC): recency, activation and the query's time
        expressions are measured from it, and items written after it are left out. ``mood`` (a
        gut direction, :mod:`mnemo.cognition.mind.gut`) makes recall mood-congruent: the blend's emotional
        component is each item's alignment with it (neutral without). A traced recall's
        ``outcome_id`` is what ``archive.inner.feedback`` links an outcome to.
        """
        return await recall_path.recall(
            self._rt,
            scope,
            query,
            k,
            as_entity=as_entity,
            read_only=read_only,
            threshold=threshold,
            kinds=kinds,
            query_vector=query_vector,
            cues=cues,
            seed=seed,
            hops=hops,
            expand=expand,
            level=level,
            now=as_of,
            processes=processes,
            mood=mood,
        )

    async def context(
        self,
        scope: Scope,
        text: object,
        budget: int = 2000,
        *,
        seed: int | None = None,
        read_only: bool = False,
        as_entity: str | None = None,
        as_of: datetime | None = None,
    ) -> ContextBlock:
        """The context block to prepend for ``text``: anchored memories, rolled identity memories and
        situational recall, within ``budget`` tokens of the embedder's tokenizer; ``as_of`` as for
        :meth:`recall`."""
        return await assemble_path.assemble(
            self._rt, scope, text, budget, seed=seed, read_only=read_only, as_entity=as_entity, as_of=as_of
        )

    # --- night cycle (memory-architecture §3-§8, archive-adr §9, cognitive-plan §4) ---
    async def night_cycle(
        self,
        scope: Scope,
        *,
        as_of: datetime | None = None,
        progress: NightProgress | None = None,
        stages: tuple[str, ...] = NIGHT_STAGE_NAMES,
        dry_run: bool = False,
    ) -> NightReport:
        """Consolidate ``scope``'s day table: surprisal, flux arcs, blocks, facts, insights, staged
        curation, decay and retention. Crash-safe and resumable (``mnemo night``). ``dry_run``:
        the report says what each stage would do, and nothing is written (``mnemo night --dry-run``)."""
        await night_api.owned(self._rt, scope)
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        return await night_cycle.run_night(
            self._rt, scope, as_of=as_of, progress=progress, stages=stages, dry_run=dry_run
        )

    # --- gates -------------------------------------------------------------------
    async def observe(
        self,
        scope: Scope,
        content: object,
        *,
        kind: str = "episodic",
        role: str | None = None,
        source_tag: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        attention: str | None = None,
        process: str | None = None,
        at: datetime | str | None = None,
        interest: Sequence[float] | np.ndarray | None = None,
    ) -> Observation:
        """Offer one item of the agent's stream to the entry gate; every ``gate_flush_every`` items the
        exit gate decides which become memories. ``at``: when it was observed (default now; a replay or
        simulation gives its own clock). ``interest``: the caller's subconscious centroid (an agent's
        gut, :mod:`mnemo.agent.gut_feeling`): the exit gate counts an item near it as relevant."""
        when = None if at is None else to_utc(at, label="at")
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        with as_process(process):
            return await gate_path.observe(
                self._rt,
                scope,
                content,
                kind=kind,
                role=role,
                source_tag=source_tag,
                metadata=metadata,
                attention=attention,
                now=when,
                interest=interest,
            )

    @overload
    async def flush(
        self,
        scope: Scope,
        *,
        attention: str | None = None,
        items: Sequence[uuid.UUID | str] | None = None,
        at: datetime | str | None = None,
        interest: Sequence[float] | np.ndarray | None = None,
    ) -> FlushReport: ...
    @overload
    async def flush(self, scope: None = None) -> None: ...
    async def flush(
        self,
        scope: Scope | None = None,
        *,
        attention: str | None = None,
        items: Sequence[uuid.UUID | str] | None = None,
        at: datetime | str | None = None,
        interest: Sequence[float] | np.ndarray | None = None,
    ) -> FlushReport | None:
        """Write every recall's and context's queued use first (issue 42 decision 3: accesses,
        weights, links, traces, written behind them), in every scope; then, given a ``scope``, run its
        scratch buffer through the exit gate now (or ``at``); ``items``: only these of its items (the
        ``item_id`` of :meth:`observe`), e.g. the messages leaving an agent's window."""
        await self._rt.uses.drain()
        if scope is None:
            return None
        when = None if at is None else to_utc(at, label="at")
        return await gate_path.flush(self._rt, scope, attention=attention, items=items, now=when, interest=interest)

    # --- forgetting ----------------------------------------------------------------
    async def forget(self, scope: Scope, item_id: uuid.UUID | str) -> dict[str, int]:
        """Remove one turn or memory of ``scope`` from every chamber (rows, postings, vectors, co-access
        links, traces that copied or name it), in one transaction. Returns rows removed per place."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        return await forget_path.forget(self._rt, scope, item_id)

    async def forget_process(self, scope: Scope, process: str) -> dict[str, int]:
        """Remove every turn and memory ``process`` wrote in ``scope`` and everything derived from them
        ("purge what the simulation wrote"), in one transaction; rows removed per place."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        return await forget_path.forget_process(self._rt, scope, process)

    async def purge(self, scope: Scope) -> dict[str, int]:
        """Remove a whole scope (turns, memories, vectors, links, grants, buffer, traces) in one transaction."""
        await self._rt.uses.barrier(scope.entity_id, scope.namespace)
        return await forget_path.purge(self._rt, scope)

    async def purge_entity(self, entity_id: str) -> dict[str, int]:
        """Remove every scope of ``entity_id``, in all namespaces, in one transaction (``mnemo purge
        --all-namespaces``). Returns rows removed per place, summed over the scopes;
        :class:`UnknownScopeError` when the entity has no scope."""
        await self._rt.uses.barrier(str(entity_id))  # every namespace of the entity
        return await forget_path.purge_entity(self._rt, entity_id)

    # --- status ------------------------------------------------------------------
    async def status(self) -> Status:
        """Counts per chamber, vectors per embedder, pending re-embeds and the background queue."""
        return await status_path.status(self._rt)


@contextmanager
def as_process(process: str | None) -> Iterator[None]:
    """Attribute every write made inside the block (in this task) to ``process`` (archive-adr §4:
    ``core``, an extension, ``simulation:7`` ...); None keeps the one in effect. Recall and
    forget can then filter by it (``recall(..., processes=[...])``, :meth:`AsyncArchive.forget_process`)."""
    if process is None:
        yield
        return
    token = PROCESS.set(check_process(process))
    try:
        yield
    finally:
        PROCESS.reset(token)
