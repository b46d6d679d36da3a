"""``Archive``: the blocking twin of :class:`~mnemo.archive.AsyncArchive`.

DESIGN §6.1 (async is the original, as in psycopg and pydantic-ai's
``run_sync``). The archive runs on a private event-loop thread; every public
coroutine method of ``AsyncArchive`` gets a blocking twin here, derived with
``ParamSpec``/``Concatenate`` and :func:`functools.wraps`, so signatures,
defaults and docstrings carry over and type checkers reject a misspelt
keyword on either API. A test checks that the two sets of signatures match.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from mnemo.archive import AsyncArchive
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.models import BackupManifest

__all__ = ["Archive"]

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[AsyncArchive, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Archive, P], R]:
    """The blocking twin of one ``AsyncArchive`` coroutine method."""

    @functools.wraps(method)
    def run(self: Archive, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._run(method(self._archive, *args, **kwargs))

    return run


class Archive:
    """Blocking facade over :class:`AsyncArchive`; runs it on a private event-loop thread.

    Takes the same arguments as :meth:`AsyncArchive.open`; use it as a context manager or call
    :meth:`close`.
    """

    def __init__(
        self, settings: Settings | None = None, *, embeddings: Embeddings | None = None, **overrides: Any
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mnemo-archive", daemon=True)
        self._thread.start()
        try:
            self._archive = self._run(AsyncArchive.open(settings, embeddings=embeddings, **overrides))
        except BaseException:
            self._stop_loop()
            raise

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
            self._run(self._archive.close())
        finally:
            self._stop_loop()

    @property
    def settings(self) -> Settings:
        return self._archive.settings

    @property
    def embeddings(self) -> Embeddings:
        return self._archive.embeddings

    @property
    def pending_reembed(self) -> int:
        return self._archive.pending_reembed

    @property
    def aio(self) -> AsyncArchive:
        """The underlying :class:`AsyncArchive` (for use on this archive's own loop only)."""
        return self._archive

    # writes
    remember = _blocking(AsyncArchive.remember)
    record_turn = _blocking(AsyncArchive.record_turn)
    import_file = _blocking(AsyncArchive.import_file)
    import_turns = _blocking(AsyncArchive.import_turns)
    embed_turns = _blocking(AsyncArchive.embed_turns)
    observe = _blocking(AsyncArchive.observe)
    flush = _blocking(AsyncArchive.flush)
    forget = _blocking(AsyncArchive.forget)
    forget_process = _blocking(AsyncArchive.forget_process)
    purge = _blocking(AsyncArchive.purge)
    purge_entity = _blocking(AsyncArchive.purge_entity)
    # reads
    recall = _blocking(AsyncArchive.recall)
    context = _blocking(AsyncArchive.context)
    cortex_tree = _blocking(AsyncArchive.cortex_tree)
    why = _blocking(AsyncArchive.why)
    memories = _blocking(AsyncArchive.memories)
    item = _blocking(AsyncArchive.item)
    # night cycle
    night_cycle = _blocking(AsyncArchive.night_cycle)
    night_scopes = _blocking(AsyncArchive.night_scopes)
    curate = _blocking(AsyncArchive.curate)
    apply_curation = _blocking(AsyncArchive.apply_curation)
    facts = _blocking(AsyncArchive.facts)
    why_do_i_believe = _blocking(AsyncArchive.why_do_i_believe)
    # scopes, grants, tokens
    create_scope = _blocking(AsyncArchive.create_scope)
    grant = _blocking(AsyncArchive.grant)
    revoke = _blocking(AsyncArchive.revoke)
    grants = _blocking(AsyncArchive.grants)
    scopes = _blocking(AsyncArchive.scopes)
    maturity = _blocking(AsyncArchive.maturity)
    create_token = _blocking(AsyncArchive.create_token)
    revoke_token = _blocking(AsyncArchive.revoke_token)
    tokens = _blocking(AsyncArchive.tokens)
    verify_token = _blocking(AsyncArchive.verify_token)
    recheck_principal = _blocking(AsyncArchive.recheck_principal)
    # maintenance
    health = _blocking(AsyncArchive.health)
    warm = _blocking(AsyncArchive.warm)
    status = _blocking(AsyncArchive.status)
    reembed = _blocking(AsyncArchive.reembed)
    defer_reembed = _blocking(AsyncArchive.defer_reembed)
    defer_nights = _blocking(AsyncArchive.defer_nights)
    backup = _blocking(AsyncArchive.backup)
    # reflexes
    record_outcome = _blocking(AsyncArchive.record_outcome)
    reflexes_for = _blocking(AsyncArchive.reflexes_for)
    feedback = _blocking(AsyncArchive.feedback)
    outcome_scope = _blocking(AsyncArchive.outcome_scope)
    log_gut = _blocking(AsyncArchive.log_gut)
    record_attempt = _blocking(AsyncArchive.record_attempt)
    failure_patterns = _blocking(AsyncArchive.failure_patterns)
    readiness = _blocking(AsyncArchive.readiness)
    reach_milestone = _blocking(AsyncArchive.reach_milestone)
    inner_life = _blocking(AsyncArchive.inner_life)
    reflect = _blocking(AsyncArchive.reflect)
    approve_promotion = _blocking(AsyncArchive.approve_promotion)
    wander = _blocking(AsyncArchive.wander)
    memory_centroid = _blocking(AsyncArchive.memory_centroid)
    hold_input = _blocking(AsyncArchive.hold_input)
    held_inputs = _blocking(AsyncArchive.held_inputs)
    release_inputs = _blocking(AsyncArchive.release_inputs)
    wait_inputs = _blocking(AsyncArchive.wait_inputs)
    # an agent's age and costs
    agent_started = _blocking(AsyncArchive.agent_started)
    log_model_call = _blocking(AsyncArchive.log_model_call)
    model_costs = _blocking(AsyncArchive.model_costs)
    # packets and forks
    export_packets = _blocking(AsyncArchive.export_packets)
    import_packets = _blocking(AsyncArchive.import_packets)
    fork = _blocking(AsyncArchive.fork)
    discard = _blocking(AsyncArchive.discard)
    merge = _blocking(AsyncArchive.merge)

    @staticmethod
    @functools.wraps(AsyncArchive.restore)
    def restore(*args: Any, **kwargs: Any) -> BackupManifest:
        return asyncio.run(AsyncArchive.restore(*args, **kwargs))

    verify_backup = staticmethod(AsyncArchive.verify_backup)
    parse_turns = staticmethod(AsyncArchive.parse_turns)
    redact_url = staticmethod(AsyncArchive.redact_url)
    release_embedded = staticmethod(AsyncArchive.release_embedded)
    embedded_running = staticmethod(AsyncArchive.embedded_running)
