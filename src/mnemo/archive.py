"""The facade: ``AsyncArchive``, whose methods are one-line delegations to the packages below.

Its blocking twin, ``Archive``, is derived from it in :mod:`mnemo._sync`.

Seed: archive-adr §0 "Glue, Not Surrender": mnemo is a substrate driver the
caller owns, not an execution loop; memory-architecture §1 (the tiers this
facade will grow into).

::

    async with await AsyncArchive.open() as archive:
        scope = Scope("alice")
        await archive.remember(scope, "Alice is allergic to peanuts", kind="preference")
        result = await archive.recall(scope, "what food should I avoid?")

    with Archive() as archive:            # same API, blocking
        archive.recall(Scope("alice"), "allergies")
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from mnemo._runtime import Runtime
from mnemo._validate import check_id, check_process, to_utc
from mnemo.access import control
from mnemo.admin import agent_costs as agents_path
from mnemo.admin import startup
from mnemo.admin import status_report as status_path
from mnemo.admin.inspector import Inspector
from mnemo.admin.probes import Probes
from mnemo.config import Settings
from mnemo.cortex import tree as cortex_tree
from mnemo.embed import Embeddings
from mnemo.errors import MalformedImportError
from mnemo.inner import inner_reads as inner_read
from mnemo.inner import inner_writes as inner_write
from mnemo.inner import reflect_on_demand as night_reflect
from mnemo.models import (
    BackupManifest,
    Belief,
    ContextBlock,
    Curation,
    Database,
    EntityFacts,
    FailurePatternRecord,
    FlushReport,
    HeldInput,
    ImportReport,
    InnerLife,
    Item,
    JobCatalogue,
    Maturity,
    Memory,
    MemoryHistory,
    MemoryPage,
    NightReport,
    Observation,
    PacketImport,
    Principal,
    Readiness,
    RecallResult,
    Reflex,
    Refusal,
    Scope,
    ScopeSummary,
    Status,
    TaskAttempt,
    TokenInfo,
    TreeNode,
    Turn,
    TurnInput,
    Wandering,
)
from mnemo.night import consolidated_reads as night_api
from mnemo.night import cycle as night_cycle
from mnemo.night.cycle import STAGES as NIGHT_STAGES
from mnemo.night.cycle import Progress as NightProgress
from mnemo.portability import backup as backup_path
from mnemo.portability import forks as forks_path
from mnemo.portability import packet_format as packets_path
from mnemo.portability import packet_import
from mnemo.recall import context as assemble_path
from mnemo.recall import history, listing
from mnemo.recall import pipeline as recall_path
from mnemo.reflexes import procedures as reflexes_path
from mnemo.store import queue as queue_rows
from mnemo.store.pool import PROCESS, redact
from mnemo.store.server import embedded_running, release_embedded
from mnemo.write import forget as forget_path
from mnemo.write import formats as formats_path
from mnemo.write import gates as gate_path
from mnemo.write import importer as import_path
from mnemo.write import ingest as ingest_path
from mnemo.write import reembed as reembed_path
from mnemo.write import remember as write_path
from mnemo.write.formats import Skipped, VectorSpace

__all__ = ["AsyncArchive"]

_log = logging.getLogger("mnemo")
Progress = write_path.Progress
BackupProgress = backup_path.Stage


class AsyncArchive:
    """An open memory archive. Create with ``await AsyncArchive.open(...)``."""

    NIGHT_STAGES: tuple[str, ...] = NIGHT_STAGES
    """The night cycle's stages, in the order a night runs them."""
    MAX_PAGE: int = listing.MAX_PAGE
    """The longest page :meth:`memories` returns."""
    JOBS: JobCatalogue = JobCatalogue(
        queues=queue_rows.QUEUES, ingest=queue_rows.INGEST, maintenance=queue_rows.MAINTENANCE,
        night=queue_rows.NIGHT, embed_turns=queue_rows.EMBED_TURNS, reembed=queue_rows.REEMBED,
        night_cycle=queue_rows.NIGHT_CYCLE, night_scope=queue_rows.NIGHT_SCOPE, retry_stalled=queue_rows.RETRY_STALLED,
    )  # fmt: skip
    """The background queues and task names (``mnemo worker``)."""
    PACKET: type[packets_path.PacketIn] = packets_path.PacketIn
    """The bifocal packet's model (memory-architecture §6.2): what :meth:`packets` yields, as JSON."""

    def __init__(self, runtime: Runtime, pending_reembed: int) -> None:
        self._rt = runtime
        self.pending_reembed = pending_reembed

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
        """Flush every scratch buffer (graceful shutdown), then disconnect."""
        try:
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
    def runtime(self) -> Runtime:
        return self._rt

    @property
    def database(self) -> Database:
        """The database this archive uses (embedded, or ``MNEMO_DATABASE_URL``)."""
        return Database(self._rt.store.url, redact(self._rt.store.url), self._rt.store.embedded)

    @staticmethod
    def redact_url(url: str) -> str:
        """``url`` with its password hidden, for display."""
        return redact(url)

    @staticmethod
    def release_embedded() -> None:
        """Stop owning the embedded PostgreSQL servers this process started or attached to (each
        stops when no other live process owns it); idempotent, and run at exit anyway."""
        release_embedded()

    @staticmethod
    def embedded_running(home: Path) -> bool:
        """Whether an embedded PostgreSQL still runs in ``home`` (another process may hold it)."""
        return embedded_running(home)

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
        ``process``: the subsystem writing (default: the :meth:`as_process` in effect, else ``core``)."""
        with self.as_process(process):
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
        with self.as_process(process):
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

    @staticmethod
    @contextmanager
    def as_process(process: str | None) -> Iterator[None]:
        """Attribute every write made inside the block (in this task) to ``process`` (archive-adr §4:
        ``core``, an extension, ``simulation:7`` ...); None keeps the one in effect. Recall and
        forget can then filter by it (``recall(..., processes=[...])``, :meth:`forget_process`)."""
        if process is None:
            yield
            return
        token = PROCESS.set(check_process(process))
        try:
            yield
        finally:
            PROCESS.reset(token)

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
        with self.as_process(process):
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
        with self.as_process(process):
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

    async def embed_turns(self, scope: Scope, turn_ids: Sequence[uuid.UUID]) -> int:
        """Embed turns stored by asynchronous ingestion that still lack a vector (the worker's
        ``embed_turns`` job); how many were embedded."""
        return await ingest_path.embed_turns(self._rt, scope, turn_ids)

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
        ``outcome_id`` is what :meth:`feedback` links an outcome to.
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

    async def memories(self, scope: Scope, *, limit: int = 50, cursor: uuid.UUID | None = None) -> MemoryPage:
        """Up to ``limit`` (at most :attr:`MAX_PAGE`) of ``scope``'s memories, any status, newest
        first, after ``cursor`` (the previous page's ``next_cursor``); reads only. A scope that
        holds nothing yet is an empty page."""
        return await listing.memories(self._rt, scope, limit=limit, cursor=cursor)

    async def item(self, scope: Scope, item_id: uuid.UUID | str) -> Item:
        """One turn or memory of ``scope``; :class:`~mnemo.errors.UnknownItemError` when the scope
        holds no such item (the same answer whether the id exists elsewhere or not)."""
        return await listing.item(self._rt, scope, item_id)

    def inspector(self, entity_id: str, namespace: str | None = None) -> Inspector:
        """The inspector's reads (``/ui``) for ``entity_id``: its own scopes (only ``namespace``
        when given) and those it was granted."""
        return Inspector(self._rt, entity_id, namespace)

    def probes(self) -> Probes:
        """Measuring reads for the benchmarks (``mnemo bench``), never for serving."""
        return Probes(self._rt)

    async def cortex_tree(self, scope: Scope) -> list[TreeNode]:
        """``scope``'s RAPTOR tree in the cortex (``mnemo cortex tree``), top levels first; empty
        until a night has migrated blocks and clustered them."""
        await night_api.owned(self._rt, scope)
        return await cortex_tree.read_tree(self._rt, scope)

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

    async def why(self, scope: Scope, memory_id: uuid.UUID | str) -> MemoryHistory:
        """A memory's weight history from the audit log (``mnemo why``)."""
        return await history.why(self._rt, scope, memory_id)

    # --- night cycle (memory-architecture §3-§8, archive-adr §9, cognitive-plan §4) ---
    async def night_cycle(
        self,
        scope: Scope,
        *,
        as_of: datetime | None = None,
        progress: NightProgress | None = None,
        stages: tuple[str, ...] = NIGHT_STAGES,
        dry_run: bool = False,
    ) -> NightReport:
        """Consolidate ``scope``'s day table: surprisal, flux arcs, blocks, facts, insights, staged
        curation, decay and retention. Crash-safe and resumable (``mnemo night``). ``dry_run``:
        the report says what each stage would do, and nothing is written (``mnemo night --dry-run``)."""
        await night_api.owned(self._rt, scope)
        return await night_cycle.run_night(
            self._rt, scope, as_of=as_of, progress=progress, stages=stages, dry_run=dry_run
        )

    async def night_scopes(self) -> list[Scope]:
        """Every scope with turns or memories (what the night cycle covers)."""
        return await night_api.night_scopes(self._rt)

    async def curate(self, scope: Scope, *, dry_run: bool = False, apply: bool = True) -> Curation:
        """Stage (and by default apply) a new curation version; ``dry_run`` only shows it."""
        return await night_api.curate(self._rt, scope, dry_run=dry_run, apply=apply)

    async def apply_curation(self, scope: Scope, version: int) -> int:
        """Apply a staged curation version; returns how many memories changed status."""
        return await night_api.apply_curation(self._rt, scope, version)

    async def facts(self, scope: Scope, entity: str) -> EntityFacts:
        """Current and past facts, and triples, about one entity (``mnemo facts``)."""
        return await night_api.facts(self._rt, scope, entity)

    async def why_do_i_believe(self, scope: Scope, memory_id: uuid.UUID | str) -> tuple[Belief, ...]:
        """The chain an insight, narrative or fact was derived from."""
        return await night_api.why_do_i_believe(self._rt, scope, memory_id)

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
        with self.as_process(process):
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

    async def flush(
        self,
        scope: Scope,
        *,
        attention: str | None = None,
        items: Sequence[uuid.UUID | str] | None = None,
        at: datetime | str | None = None,
        interest: Sequence[float] | np.ndarray | None = None,
    ) -> FlushReport:
        """Run the scope's scratch buffer through the exit gate now (or ``at``); ``items``: only these of
        its items (the ``item_id`` of :meth:`observe`), e.g. the messages leaving an agent's window."""
        when = None if at is None else to_utc(at, label="at")
        return await gate_path.flush(self._rt, scope, attention=attention, items=items, now=when, interest=interest)

    async def health(self) -> str | None:
        """Why this archive cannot serve an agent's memory right now, or None when it can: the
        embedder must answer a probe with a well-formed vector, and every stored item must have a
        vector from the active model (else recall silently misses items)."""
        return await status_path.health(self._rt, self.pending_reembed)

    # --- tokens for the HTTP service -------------------------------------------------
    async def create_token(
        self,
        entity_id: str,
        *,
        namespace: str | None = None,
        label: str | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[str, uuid.UUID]:
        """A bearer token for ``entity_id`` (optionally one namespace): ``(token, id)``; shown once.
        ``expires_at``: when it stops working (must lie ahead; naive is UTC); None: never."""
        return await control.create(self._rt, entity_id, namespace, label, expires_at)

    async def verify_token(self, token: str) -> Principal:
        """The principal a bearer token speaks for; :class:`~mnemo.errors.AuthenticationError` when
        it is malformed, unknown, expired (the same answer as unknown) or revoked."""
        return await control.verify(self._rt, token)

    async def recheck_principal(self, principal: Principal) -> Principal:
        """``principal`` again if its token is still valid (not revoked, not expired);
        :class:`~mnemo.errors.AuthenticationError` otherwise. A session made from a token asks
        this on every request, so revocation and expiry end it."""
        return await control.still_valid(self._rt, principal)

    async def revoke_token(self, entity_id: str, token_id: uuid.UUID | str) -> bool:
        """Revoke a token; False when there is no active token with that id."""
        return await control.revoke(self._rt, entity_id, check_id(token_id, label="token id"))

    async def tokens(self, entity_id: str) -> list[TokenInfo]:
        """``entity_id``'s tokens, oldest first, revoked and expired ones included (``mnemo token
        list``); never the tokens themselves, which only their holders have."""
        return await control.list_tokens(self._rt, entity_id)

    # --- forgetting ----------------------------------------------------------------
    async def forget(self, scope: Scope, item_id: uuid.UUID | str) -> dict[str, int]:
        """Remove one turn or memory of ``scope`` from every chamber (rows, postings, vectors, co-access
        links, traces that copied or name it), in one transaction. Returns rows removed per place."""
        return await forget_path.forget(self._rt, scope, item_id)

    async def forget_process(self, scope: Scope, process: str) -> dict[str, int]:
        """Remove every turn and memory ``process`` wrote in ``scope`` and everything derived from them
        ("purge what the simulation wrote"), in one transaction; rows removed per place."""
        return await forget_path.forget_process(self._rt, scope, process)

    async def purge(self, scope: Scope) -> dict[str, int]:
        """Remove a whole scope (turns, memories, vectors, links, grants, buffer, traces) in one transaction."""
        return await forget_path.purge(self._rt, scope)

    async def purge_entity(self, entity_id: str) -> dict[str, int]:
        """Remove every scope of ``entity_id``, in all namespaces, in one transaction (``mnemo purge
        --all-namespaces``). Returns rows removed per place, summed over the scopes;
        :class:`UnknownScopeError` when the entity has no scope."""
        return await forget_path.purge_entity(self._rt, entity_id)

    # --- scopes and grants -----------------------------------------------------
    async def create_scope(self, scope: Scope) -> None:
        """Make ``scope`` exist before anything is written to it (idempotent)."""
        await control.create_scope(self._rt, scope)

    async def grant(self, scope: Scope, grantee: str, *, export: bool = False) -> bool:
        """Let entity ``grantee`` read ``scope`` (call as its owner); ``export`` also lets it export the
        scope's packets (consent-governed sharing: reading does not imply it). False if it already could."""
        return await control.grant(self._rt, scope, grantee, export=export)

    async def revoke(self, scope: Scope, grantee: str) -> bool:
        """Withdraw entity ``grantee``'s read access to ``scope``; False if it had none."""
        return await control.revoke_grant(self._rt, scope, grantee)

    async def grants(self, scope: Scope) -> list[str]:
        """The entities granted read access to ``scope``, sorted (``mnemo grants``);
        :class:`UnknownScopeError` when the scope does not exist."""
        return await control.grantees(self._rt, scope)

    async def scopes(self, entity_id: str | None = None) -> list[ScopeSummary]:
        """Every scope (or ``entity_id``'s) with its counts of turns, memories, blocks and current
        facts, and its last write (``mnemo scopes``)."""
        return await control.summaries(self._rt, entity_id)

    async def maturity(self, scope: Scope) -> Maturity:
        """``scope``'s live memories and identity density: what an agent's escalation threshold
        follows (cognitive-plan §3.5)."""
        return await control.maturity(self._rt, scope)

    # --- maintenance -----------------------------------------------------------
    async def warm(self, scope: Scope) -> int:
        """Build ``scope``'s read index now instead of on its first recall (a service warming up,
        a benchmark); how many items its vectors hold (0 with ``index=false``). PostgreSQL stays
        the truth: the index is caught up at every recall (DESIGN §3)."""
        rt = self._rt
        index = await rt.indexes.ensure(rt, (scope.entity_id, scope.namespace, rt.slug))
        return 0 if index is None else index.size

    async def status(self) -> Status:
        """Counts per chamber, vectors per embedder, pending re-embeds and the background queue."""
        return await status_path.status(self._rt)

    async def reembed(self, *, batch_size: int = 256, progress: Progress | None = None) -> int:
        """Embed every item that lacks a vector from the active model; resumable."""
        done = await reembed_path.reembed(self._rt, batch_size=batch_size, progress=progress)
        self.pending_reembed = await reembed_path.pending(self._rt)
        return done

    async def backup(
        self, path: str | Path, *, compression: int = 1, progress: BackupProgress | None = None
    ) -> BackupManifest:
        """Write the whole archive (database and cortex, one consistent snapshot) to the file ``path``
        while writes go on; the file appears only when complete (``mnemo backup``). ``compression``:
        the database dump's gzip level, 0 (none, fastest) to 9; ``progress`` is called with each
        stage's name."""
        return await backup_path.backup(self._rt, path, compression=compression, progress=progress)

    @staticmethod
    async def restore(
        path: str | Path,
        settings: Settings | None = None,
        *,
        force: bool = False,
        progress: BackupProgress | None = None,
        force_hint: str = backup_path.FORCE_HINT,
        **overrides: Any,
    ) -> BackupManifest:
        """Restore a backup into the home or database of ``settings`` (and ``overrides``), which must
        hold no mnemo data unless ``force``; all or nothing, checked against the manifest before it
        commits, so a failed restore leaves the target as it was (``mnemo restore``). Open the
        archive afterwards as usual. ``force_hint``: how the caller's user asks for ``force``, in
        the refusal's words."""
        target = startup.settings_of(settings, overrides)
        return await backup_path.restore(path, target, force=force, progress=progress, force_hint=force_hint)

    @staticmethod
    def verify_backup(path: str | Path) -> BackupManifest:
        """Check a backup file (manifest, checksums, schema version) without restoring it."""
        return backup_path.verify(path)

    # --- reflexes (procedural memory, memory-architecture §10) --------------------------------
    async def record_outcome(
        self,
        scope: Scope,
        context: object,
        action: object,
        *,
        success: bool,
        action_type: str = "tool_call",
        follows: uuid.UUID | str | None = None,
        at: datetime | str | None = None,
    ) -> Reflex:
        """Count one outcome of ``action`` (a ``tool_call``, ``response_pattern`` or ``delegation``)
        taken in ``context``; ``follows``: the reflex that came just before (their causal edge grows).
        Returns the reflex with its counts."""
        return await reflexes_path.record_outcome(
            self._rt, scope, context, action, success=success, action_type=action_type, follows=follows, at=at
        )

    async def reflexes_for(self, scope: Scope, context: object, k: int = 5, *, read_only: bool = False) -> list[Reflex]:
        """The reflexes that fit ``context`` best (similarity times smoothed success rate), with what
        tended to follow each; consulting them keeps them from pruning unless ``read_only``."""
        return await reflexes_path.reflexes_for(self._rt, scope, context, k, read_only=read_only)

    # --- the inner life and self-tuning (cognitive-plan §3.9, §4.2-4.7, §5.1-5.3) ----------------------
    async def outcome_scope(self, entity_id: str, outcome_id: uuid.UUID | str) -> Scope | None:
        """Which of ``entity_id``'s scopes holds ``outcome_id`` (a recall's ``outcome_id``, a gate
        decision's, a gut delta's): an outcome id is unique, so :meth:`feedback` needs no namespace
        named twice. None when none of them does."""
        return await inner_write.outcome_scope(self._rt, entity_id, outcome_id)

    async def feedback(
        self,
        scope: Scope,
        outcome_id: uuid.UUID | str,
        value: float = 1.0,
        *,
        used: Sequence[uuid.UUID | str] = (),
        kind: str = "feedback",
        detail: str = "",
    ) -> uuid.UUID:
        """Link an outcome back to a recall (its ``RecallResult.outcome_id``), a gate decision or a gut
        delta: ``value`` from -1 (went badly) to 1 (went well); ``used``: the recalled items that were
        used; ``kind``: ``feedback`` (the user's) or ``task`` (a task's success). The night tunes the
        blend's alphas on these (cognitive-plan §4.5). Returns the outcome's id."""
        return await inner_write.feedback(self._rt, scope, outcome_id, value, used=used, kind=kind, detail=detail)

    async def log_gut(
        self,
        scope: Scope,
        agent: str,
        delta: Sequence[float] | np.ndarray,
        *,
        magnitude: float,
        valence: float,
        context: str = "",
        action: str = "",
    ) -> uuid.UUID:
        """Log one gut delta of ``agent`` (cognitive-plan §5.1) with its context and action; returns the
        outcome id an outcome links back to. The night's PCA of the deltas names the gut axes."""
        return await inner_write.log_gut(
            self._rt, scope, agent, delta, magnitude=magnitude, valence=valence, context=context, action=action
        )

    async def record_attempt(
        self,
        scope: Scope,
        task: str,
        *,
        lineage: str,
        generation: int,
        success: bool,
        failure_mode: str | None = None,
        parent: uuid.UUID | str | None = None,
        mutation: str = "",
        turns: int | None = None,
        propagated: bool = False,
    ) -> TaskAttempt:
        """Record a task attempted by a strategy or sub-agent ``lineage`` in its ``generation``, with
        its parent variant and outcome (the frustration ledger, memory-architecture §10.6.3)."""
        return await inner_write.record_attempt(
            self._rt, scope, task, lineage=lineage, generation=generation, success=success,
            failure_mode=failure_mode, parent=parent, mutation=mutation, turns=turns, propagated=propagated,
        )  # fmt: skip

    async def failure_patterns(self, scope: Scope) -> list[FailurePatternRecord]:
        """Tasks that failed across generations and still fail, worst first, each with its reflection."""
        return await inner_read.failures(self._rt, scope)

    async def readiness(self, scope: Scope) -> Readiness:
        """The ten bootstrap readiness milestones (cognitive-plan §5.2), each reached by a real event."""
        return await inner_read.readiness(self._rt, scope)

    async def reach_milestone(
        self, scope: Scope, name: str, evidence: Mapping[str, Any] | None = None, *, at: datetime | str | None = None
    ) -> bool:
        """Record that a real event of an agent reached milestone ``name`` (those only an agent sees: an
        idle thought acted on, a goal reflected upon, a decision aligned with its own values), dated
        ``at`` (the event's clock; default now); False when it was already reached."""
        return await inner_write.reach_milestone(self._rt, scope, name, evidence, at)

    async def inner_life(self, scope: Scope) -> InnerLife:
        """Milestones, gut axes, tensions, the blend's alphas and their history, safety events,
        promotions awaiting approval and persistent failures (the inspector's inner-life page)."""
        return await inner_read.inner_life(self._rt, scope)

    async def reflect(self, scope: Scope, *, as_of: datetime | str | None = None) -> Mapping[str, Any]:
        """Run the night's inner-life stage alone, now: promotion, tensions, self-tuning, gut axes, the
        frustration ledger, the safety monitors and milestones. Returns what it did."""
        return await night_reflect.reflect(self._rt, scope, as_of=as_of)

    async def approve_promotion(
        self, scope: Scope, memory_id: uuid.UUID | str, *, at: datetime | str | None = None
    ) -> bool:
        """Apply a promotion that waits for the operator (past a 0.85 centre at ``operator_trust`` < 3),
        dated ``at`` (default now; a replay or simulation brings its own clock)."""
        return await night_reflect.approve(self._rt, scope, memory_id, at=at)

    async def wander(
        self, scope: Scope, n: int = 3, *, seed: int | None = None, avoid: Sequence[uuid.UUID] = ()
    ) -> list[Wandering]:
        """The idle loop's sample (cognitive-plan §4.7): ``n`` memories drawn with a bias toward
        neglected important ones, tensions, distant and self-related ones, each with what co-access
        links reach two hops away; ``avoid``: topics the entropy guard keeps out."""
        return await inner_read.wander(self._rt, scope, n, seed=seed, avoid=frozenset(avoid))

    async def memory_centroid(self, scope: Scope) -> np.ndarray | None:
        """The importance-weighted centroid of the scope's memories (the gut's memory layer, §5.1)."""
        return await inner_read.memory_centroid(self._rt, scope)

    async def hold_input(
        self,
        scope: Scope,
        agent: str,
        text: str,
        *,
        source: str,
        kind: str = "pending",
        urgency: float = 0.0,
        charge: float = 0.0,
        confidence: float = 1.0,
        due_at: datetime | str | None = None,
    ) -> uuid.UUID:
        """Keep an agent's pending input or scheduled task in the database (it survives a restart)."""
        return await inner_write.add_input(
            self._rt, scope, agent, text, source=source, kind=kind, urgency=urgency, charge=charge,
            confidence=confidence, due_at=due_at,
        )  # fmt: skip

    async def held_inputs(self, scope: Scope, agent: str) -> list[HeldInput]:
        """What ``agent`` holds: pending inputs and scheduled tasks, oldest first."""
        return await inner_write.held_inputs(self._rt, scope, agent)

    async def release_inputs(self, scope: Scope, agent: str, ids: Sequence[uuid.UUID | str]) -> int:
        """Forget held inputs the agent attended to."""
        return await inner_write.release_inputs(self._rt, scope, agent, ids)

    async def wait_inputs(self, scope: Scope, agent: str, waiting: Sequence[tuple[uuid.UUID, float, int]]) -> None:
        """Store the decayed urgency and wait count of held inputs that lost a cycle."""
        await inner_write.wait_inputs(self._rt, scope, agent, waiting)

    # --- an agent's age and model costs (cognitive-plan §4.8-4.9; traces: the cost log) ------------
    async def agent_started(self, entity_id: str, name: str) -> Mapping[str, Any]:
        """Count one start of agent ``name`` of ``entity_id``: ``first_started``, ``last_started``,
        ``starts`` (restarts + 1), kept in the database."""
        return await agents_path.started(self._rt, entity_id, name)

    async def log_model_call(
        self,
        entity_id: str,
        agent: str,
        *,
        model: str,
        purpose: str,
        input_tokens: int,
        output_tokens: int,
        cost: float | None,
        seconds: float,
    ) -> None:
        """Record one model call in the cost log (``cost`` in USD; None when the price is unknown)."""
        await agents_path.log_call(
            self._rt, entity_id, agent, model=model, purpose=purpose, input_tokens=input_tokens,
            output_tokens=output_tokens, cost=cost, seconds=seconds,
        )  # fmt: skip

    async def model_costs(self, entity_id: str, agent: str, since: datetime) -> Mapping[str, Any]:
        """Calls, input and output tokens, cost (USD) and unpriced calls of ``agent`` since ``since``."""
        return await agents_path.costs(self._rt, entity_id, agent, since)

    # --- packets and forks (memory-architecture §6, archive-adr "Logical Domain Isolation") ---------
    def packets(
        self, scope: Scope, *, as_entity: str | None = None, ids: Sequence[uuid.UUID | str] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """``scope``'s turns and memories as bifocal packets (JSON-ready dicts), or only memories ``ids``.
        Needs the owner, or a grant with ``export`` for ``as_entity``."""
        chosen = None if ids is None else [check_id(i, label="memory id") for i in ids]
        return packets_path.export_packets(self._rt, scope, as_entity or scope.entity_id, ids=chosen)

    async def export_packets(self, scope: Scope, file: str | Path | TextIO, *, as_entity: str | None = None) -> int:
        """Write ``scope``'s packets to ``file`` (a path, or an open text file such as stdout), one
        JSON line each (``mnemo export``); returns how many."""
        packets = self.packets(scope, as_entity=as_entity)
        first = await anext(packets, None)  # access and existence are checked here, before a file is made
        if isinstance(file, str | Path):
            with await asyncio.to_thread(Path(file).open, "w", encoding="utf-8") as handle:
                return await _write_packets(first, packets, handle)
        return await _write_packets(first, packets, file)

    async def import_packets(
        self, scope: Scope, source: str | Path | Iterable[str], *, strict: bool = False, process: str = "import"
    ) -> PacketImport:
        """Import bifocal packets (a JSONL file, or its lines) into ``scope`` (``mnemo import-packets``).
        Every packet is checked first; packets this scope imported before are skipped (idempotent);
        a packet without a vector of the active model is embedded again, or refused with ``strict``."""
        limit, skew = self._rt.settings.max_content_chars, self._rt.settings.clock_skew_hours
        if isinstance(source, str | Path):
            text = await asyncio.to_thread(_read_text, Path(source))
            parsed = packets_path.parse_packets(text.splitlines(), source=str(source), max_chars=limit, skew_hours=skew)
        else:
            parsed = packets_path.parse_packets(source, max_chars=limit, skew_hours=skew)
        process = check_process(process)
        return await packet_import.import_packets(self._rt, scope, parsed, strict=strict, process=process)

    async def fork(self, scope: Scope, into: str) -> Scope:
        """Branch ``scope`` into the new namespace ``into`` (a speculative timeline): a copy with its
        provenance, whose writes are attributed to ``fork:<into>`` and never reach ``scope``."""
        branch, _ = await forks_path.fork(self._rt, scope, into)
        return branch

    async def discard(self, fork: Scope) -> dict[str, int]:
        """Drop a fork and everything in it; rows removed per place."""
        return await forks_path.discard(self._rt, fork)

    async def merge(self, fork: Scope, memory_ids: Sequence[uuid.UUID | str]) -> PacketImport:
        """Bring chosen memories of a fork back into the scope it branched from, with their provenance."""
        return await forks_path.merge(self._rt, fork, memory_ids)

    async def defer_nights(self) -> int:
        """Queue the night cycle of every scope with turns or memories for a background worker,
        skipping those whose night still waits; how many were queued."""
        return await night_api.defer_nights(self._rt)

    async def defer_reembed(self) -> int | None:
        """Queue :meth:`reembed` for a background worker (``mnemo worker``); the job id, or None when
        a re-embed is already waiting."""
        return await reembed_path.defer(self._rt)


async def _write_packets(first: dict[str, Any] | None, rest: AsyncIterator[dict[str, Any]], file: TextIO) -> int:
    """Write ``first`` and then ``rest`` as JSON lines to ``file``; returns how many."""
    if first is None:
        return 0
    count, lines = 1, [packets_path.dumps(first) + "\n"]
    async for packet in rest:
        lines.append(packets_path.dumps(packet) + "\n")
        count += 1
        if len(lines) >= 500:
            await asyncio.to_thread(file.writelines, lines)
            lines = []
    await asyncio.to_thread(file.writelines, lines)
    return count


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedImportError(f"cannot read packets from {path}: {exc}") from exc
