"""``Archive``: the blocking twin of :class:`~mnemo.archive.AsyncArchive`, feature by feature.

DESIGN §6.1 (async is the original, as in psycopg and pydantic-ai's
``run_sync``). The archive runs on a private event-loop thread; every public
coroutine method of ``AsyncArchive`` and of each of its features
(``archive.access``, ``archive.portability`` ...; issue 41 item 1) gets a
blocking twin here, derived with ``ParamSpec``/``Concatenate`` and
:func:`functools.wraps`, so signatures, defaults and docstrings carry over and
type checkers reject a misspelt keyword on either API. A test checks that the
two sets of signatures match, pair by pair.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from mnemo.access import Access
from mnemo.admin.agent_support import Agents
from mnemo.admin.archive_inspection import Inspect
from mnemo.admin.archive_upkeep import Maintenance
from mnemo.admin.knowledge_curation import Knowledge
from mnemo.archive import AsyncArchive, FeatureAttribute
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.inner import Inner
from mnemo.models import BackupManifest, Database
from mnemo.portability import Portability
from mnemo.reflexes import Reflexes

__all__ = ["Archive"]

P = ParamSpec("P")
R = TypeVar("R")
A = TypeVar("A")
Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def _blocking(method: Callable[Concatenate[A, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[Any, P], R]:
    """The blocking twin of one coroutine method of ``AsyncArchive`` or of one of its features: it
    runs the method on the twin's ``_aio`` object, on the archive's loop (``_run``)."""

    @functools.wraps(method)
    def run(self: _Twin[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._run(method(self._aio, *args, **kwargs))
        return result

    return run


class _Twin(Generic[A]):
    """The blocking twin of one async feature object: its coroutine methods run on the archive's loop."""

    def __init__(self, aio: A, run: Runner) -> None:
        self._aio = aio
        self._run = run


class BlockingAccess(_Twin[Access]):
    """:class:`~mnemo.access.Access`, blocking: ``Archive().access``."""

    create_scope = _blocking(Access.create_scope)
    grant = _blocking(Access.grant)
    revoke = _blocking(Access.revoke)
    grants = _blocking(Access.grants)
    scopes = _blocking(Access.scopes)
    create_token = _blocking(Access.create_token)
    verify_token = _blocking(Access.verify_token)
    recheck_principal = _blocking(Access.recheck_principal)
    revoke_token = _blocking(Access.revoke_token)
    tokens = _blocking(Access.tokens)


class BlockingPortability(_Twin[Portability]):
    """:class:`~mnemo.portability.Portability`, blocking: ``Archive().portability``."""

    PACKET = Portability.PACKET
    backup = _blocking(Portability.backup)
    export_packets = _blocking(Portability.export_packets)
    import_packets = _blocking(Portability.import_packets)
    fork = _blocking(Portability.fork)
    discard = _blocking(Portability.discard)
    merge = _blocking(Portability.merge)

    @staticmethod
    @functools.wraps(Portability.restore)
    def restore(*args: Any, **kwargs: Any) -> BackupManifest:
        return asyncio.run(Portability.restore(*args, **kwargs))

    verify_backup = staticmethod(Portability.verify_backup)


class BlockingInner(_Twin[Inner]):
    """:class:`~mnemo.inner.Inner`, blocking: ``Archive().inner``."""

    feedback = _blocking(Inner.feedback)
    log_gut = _blocking(Inner.log_gut)
    record_attempt = _blocking(Inner.record_attempt)
    failure_patterns = _blocking(Inner.failure_patterns)
    readiness = _blocking(Inner.readiness)
    reach_milestone = _blocking(Inner.reach_milestone)
    life = _blocking(Inner.life)
    reflect = _blocking(Inner.reflect)
    approve_promotion = _blocking(Inner.approve_promotion)
    wander = _blocking(Inner.wander)
    memory_centroid = _blocking(Inner.memory_centroid)


class BlockingReflexes(_Twin[Reflexes]):
    """:class:`~mnemo.reflexes.Reflexes`, blocking: ``Archive().reflexes``."""

    record_outcome = _blocking(Reflexes.record_outcome)
    matching = _blocking(Reflexes.matching)
    outcome_scope = _blocking(Reflexes.outcome_scope)


class BlockingAgents(_Twin[Agents]):
    """:class:`~mnemo.admin.agent_support.Agents`, blocking: ``Archive().agents``."""

    hold_input = _blocking(Agents.hold_input)
    held_inputs = _blocking(Agents.held_inputs)
    release_inputs = _blocking(Agents.release_inputs)
    wait_inputs = _blocking(Agents.wait_inputs)
    agent_started = _blocking(Agents.agent_started)
    log_model_call = _blocking(Agents.log_model_call)
    model_costs = _blocking(Agents.model_costs)


class BlockingKnowledge(_Twin[Knowledge]):
    """:class:`~mnemo.admin.knowledge_curation.Knowledge`, blocking: ``Archive().knowledge``."""

    curate = _blocking(Knowledge.curate)
    apply_curation = _blocking(Knowledge.apply_curation)
    facts = _blocking(Knowledge.facts)
    why_do_i_believe = _blocking(Knowledge.why_do_i_believe)


class BlockingInspect(_Twin[Inspect]):
    """:class:`~mnemo.admin.archive_inspection.Inspect`, blocking: ``Archive().inspect``. The inspector
    and the probes are async only (use them through ``Archive().aio``)."""

    MAX_PAGE = Inspect.MAX_PAGE
    memories = _blocking(Inspect.memories)
    item = _blocking(Inspect.item)
    why = _blocking(Inspect.why)
    cortex_tree = _blocking(Inspect.cortex_tree)
    maturity = _blocking(Inspect.maturity)

    @property
    def database(self) -> Database:
        """The database this archive uses (embedded, or ``MNEMO_DATABASE_URL``)."""
        return self._aio.database


class BlockingMaintenance(_Twin[Maintenance]):
    """:class:`~mnemo.admin.archive_upkeep.Maintenance`, blocking: ``Archive().maintenance``."""

    JOBS = Maintenance.JOBS
    health = _blocking(Maintenance.health)
    warm = _blocking(Maintenance.warm)
    reembed = _blocking(Maintenance.reembed)
    defer_reembed = _blocking(Maintenance.defer_reembed)
    defer_nights = _blocking(Maintenance.defer_nights)
    night_scopes = _blocking(Maintenance.night_scopes)
    embed_turns = _blocking(Maintenance.embed_turns)
    redact_url = staticmethod(Maintenance.redact_url)
    release_embedded = staticmethod(Maintenance.release_embedded)
    embedded_running = staticmethod(Maintenance.embedded_running)


TWINS: dict[str, tuple[type, type[_Twin[Any]]]] = {
    "access": (Access, BlockingAccess),
    "portability": (Portability, BlockingPortability),
    "inner": (Inner, BlockingInner),
    "reflexes": (Reflexes, BlockingReflexes),
    "agents": (Agents, BlockingAgents),
    "knowledge": (Knowledge, BlockingKnowledge),
    "inspect": (Inspect, BlockingInspect),
    "maintenance": (Maintenance, BlockingMaintenance),
}
"""Each feature attribute: its async class and its blocking twin (checked pair by pair by a test)."""


class Archive:
    """Blocking facade over :class:`AsyncArchive`; runs it on a private event-loop thread.

    Takes the same arguments as :meth:`AsyncArchive.open`; use it as a context manager or call
    :meth:`close`. Its features are blocking twins of the async ones: ``archive.access.grant(...)``.
    """

    NIGHT_STAGES = AsyncArchive.NIGHT_STAGES
    """The night cycle's stages, in the order a night runs them (each with its ``name`` and ``row``)."""

    access = FeatureAttribute(BlockingAccess)
    """Scopes, read grants and bearer tokens (archive-adr §7)."""
    portability = FeatureAttribute(BlockingPortability)
    """Backup and restore, bifocal packets, forks and merges (archive-adr §6)."""
    inner = FeatureAttribute(BlockingInner)
    """The inner life: feedback, readiness, reflection, promotion, wandering (cognitive-plan §4)."""
    reflexes = FeatureAttribute(BlockingReflexes)
    """Procedural memory: outcomes of actions and the reflexes that fit a context."""
    agents = FeatureAttribute(BlockingAgents)
    """What an agent keeps here: held inputs, its starts, its model costs."""
    knowledge = FeatureAttribute(BlockingKnowledge)
    """What the night consolidated: curation, facts, the chains of belief."""
    inspect = FeatureAttribute(BlockingInspect)
    """Side-effect-free reads: pages of memories, one item, histories."""
    maintenance = FeatureAttribute(BlockingMaintenance)
    """Health, warming, re-embedding and deferred work."""

    def __init__(
        self, settings: Settings | None = None, *, embeddings: Embeddings | None = None, **overrides: Any
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mnemo-archive", daemon=True)
        self._thread.start()
        try:
            self._aio = self._run(AsyncArchive.open(settings, embeddings=embeddings, **overrides))
        except BaseException:
            self._stop_loop()
            raise
        for name, (_, twin) in TWINS.items():
            setattr(self, f"_{name}", twin(getattr(self._aio, name), self._run))

    def _run(self, coro: Coroutine[Any, Any, R]) -> R:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush every scratch buffer, disconnect and stop the loop thread (idempotent)."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._aio.close())
        finally:
            self._stop_loop()

    @property
    def settings(self) -> Settings:
        return self._aio.settings

    @property
    def embeddings(self) -> Embeddings:
        return self._aio.embeddings

    @property
    def pending_reembed(self) -> int:
        return self._aio.pending_reembed

    @property
    def aio(self) -> AsyncArchive:
        """The underlying :class:`AsyncArchive` (for use on this archive's own loop only)."""
        return self._aio

    remember = _blocking(AsyncArchive.remember)
    record_turn = _blocking(AsyncArchive.record_turn)
    import_file = _blocking(AsyncArchive.import_file)
    import_turns = _blocking(AsyncArchive.import_turns)
    parse_turns = staticmethod(AsyncArchive.parse_turns)
    recall = _blocking(AsyncArchive.recall)
    context = _blocking(AsyncArchive.context)
    observe = _blocking(AsyncArchive.observe)
    flush = _blocking(AsyncArchive.flush)
    forget = _blocking(AsyncArchive.forget)
    forget_process = _blocking(AsyncArchive.forget_process)
    purge = _blocking(AsyncArchive.purge)
    purge_entity = _blocking(AsyncArchive.purge_entity)
    night_cycle = _blocking(AsyncArchive.night_cycle)
    status = _blocking(AsyncArchive.status)
