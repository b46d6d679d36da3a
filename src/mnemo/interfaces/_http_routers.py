"""The HTTP service's operations, one :class:`fastapi.APIRouter` per area (issue 30 item 6):
the service itself, writes, reads, items, reflexes and grants. Each response model is a public
record of :mod:`mnemo.models` or a shape of :mod:`mnemo.interfaces.shapes`.

Seed: archive-adr §7 ("Sigil Scope", "The Grant", "The Mentat Refusal"), §4 (``POST /v1/import``:
atomic bulk insert).
"""

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query
from fastapi.responses import StreamingResponse
from pydantic import Field

from mnemo.archive import AsyncArchive
from mnemo.config import Settings
from mnemo.errors import AccessDeniedError, InvalidInputError, UnknownScopeError
from mnemo.interfaces._http_support import (
    IMPORT,
    LOCAL,
    READ,
    WRITE,
    Arch,
    Who,
    errors,
    import_batch,
    json_errors,
    own_scope,
    read_scope,
)
from mnemo.interfaces.shapes import (
    IMPORT_PATH,
    BelieveOut,
    ContextIn,
    FeedbackIn,
    FeedbackOut,
    ForgetOut,
    GrantIn,
    GrantOut,
    GrantsOut,
    HealthOut,
    ImportIn,
    ImportOut,
    InnerOut,
    ItemOut,
    ListedMemoryOut,
    MemoriesOut,
    Name,
    OneLine,
    OutcomeIn,
    Process,
    ProcessForgetOut,
    ReadinessOut,
    ReflexesOut,
    ReflexQueryIn,
    RememberIn,
    RevokeOut,
    StatusOut,
    TurnIn,
)
from mnemo.interfaces.shapes import (
    RecallIn as RecallBody,
)
from mnemo.models import (
    ContextBlock,
    EntityFacts,
    Memory,
    MemoryHistory,
    RecallResult,
    Reflex,
    Refusal,
    Turn,
    to_jsonable,
)

__all__ = ["routers"]

NamespaceQuery = Annotated[Name | None, Query(description="One of your namespaces (default: the token's).")]


_PACKET = AsyncArchive.portability.PACKET  # the packets' own model, from the layer below


class Packet(_PACKET):  # type: ignore[misc,valid-type]
    """A bifocal packet (memory-architecture §6.2): prose, vectors, metadata, references."""


class NDJSONResponse(StreamingResponse):
    """A stream of JSON lines."""

    media_type = "application/x-ndjson"


def routers(settings: Settings) -> list[APIRouter]:
    """Every area's router, in the order the spec lists them."""
    return [service(), writes(), reads(settings), items(), reflexes(), inner(), grants()]


def service() -> APIRouter:
    """Health and status."""
    router = APIRouter()

    @router.get("/health", responses=errors(503))
    async def health(archive: Arch) -> HealthOut:
        problem = await archive.maintenance.health()
        return HealthOut(status="ok" if problem is None else "degraded", problem=problem)

    @router.get("/v1/local/status", include_in_schema=False)
    async def local_status(who: Who, archive: Arch) -> Any:
        """The archive's whole status, for ``mnemo status`` through the local credential only."""
        if who.token_id != LOCAL:
            raise AccessDeniedError("only the command line of this machine may read the whole archive's status")
        return to_jsonable(await archive.status())

    @router.get("/v1/status", responses=errors(401, 503))
    async def status(who: Who, archive: Arch) -> StatusOut:
        return StatusOut(entity=who.entity_id, namespace=who.namespace, embedder=str(archive.embeddings.slug))

    return router


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f-\x9f]+$",
        description="Your name for this turn: a retry with the same key stores nothing and answers the "
        "turn stored the first time (`repeat`: true).",
    ),
]


def writes() -> APIRouter:
    """Remembering, recording a turn, importing turns."""
    router = APIRouter()

    @router.post("/v1/memories", status_code=201, responses=WRITE)
    async def remember(body: RememberIn, who: Who, archive: Arch) -> Memory:
        """The memory stored (or, for an identical one already there, reinforced)."""
        return await archive.remember(
            own_scope(who, body.namespace),
            body.content,
            kind=body.kind,
            process=body.process,
            event_time=body.event_time,
        )

    @router.post("/v1/turns", status_code=201, responses=WRITE)
    async def record(body: TurnIn, who: Who, archive: Arch, key: IdempotencyKey = None) -> Turn:
        """The turn recorded, with its number in the session. A retry with the same idempotency key
        (the ``Idempotency-Key`` header, or ``idempotency_key``) stores nothing and answers the turn
        stored the first time, with ``repeat`` true; the same key for another turn is a 400."""
        scope = own_scope(who, body.namespace)
        if key is not None and body.idempotency_key is not None and key != body.idempotency_key:
            raise InvalidInputError("the Idempotency-Key header and idempotency_key differ; send one of them")
        return await archive.record_turn(
            scope,
            body.session,
            body.role,
            body.content,
            speaker=body.speaker,
            process=body.process,
            created_at=body.created_at,
            idempotency_key=key if key is not None else body.idempotency_key,
        )

    @router.post(IMPORT_PATH, status_code=201, responses=IMPORT)
    async def import_turns(body: ImportIn, who: Who, archive: Arch) -> ImportOut:
        """Import a batch of turns (the JSONL import format) into your own scope: all or nothing, unless
        ``skip_invalid``, which imports the valid turns and reports each one left out with its reason.
        Everything is embedded first; the rows are then written in one short transaction."""
        scope = own_scope(who, body.namespace)
        started = time.perf_counter()
        turns, skipped = import_batch(body, archive)
        stored = await archive.import_turns(scope, turns)
        written = [t for t in stored if not t.repeat]
        return ImportOut(
            scope=str(scope),
            turns=len(written),
            sessions=len({t.session_id for t in written}),
            seconds=round(time.perf_counter() - started, 3),
            skipped=skipped,
            skipped_repeats=len(stored) - len(written),
        )

    return router


def reads(settings: Settings) -> APIRouter:
    """Recall, context and export; ``k`` is limited by ``settings.max_k``."""
    router = APIRouter()

    class RecallIn(RecallBody):
        """Made here: ``k`` is limited by ``settings.max_k``, and the spec shows that maximum."""

        k: int = Field(
            default=min(10, settings.max_k),
            ge=1,
            le=settings.max_k,
            description=f"How many hits, at most {settings.max_k} (the server's max_k).",
        )

    @router.post("/v1/recall", responses=READ)
    async def recall(body: RecallIn, who: Who, archive: Arch) -> RecallResult | Refusal:
        """Hits best first, or a refusal when nothing stored is reliable (also in a scope that holds
        nothing yet). A foreign scope without a grant is a 403, whether or not it exists."""
        scope, reader = read_scope(who, body.namespace, body.owner)
        return await archive.recall(
            scope,
            body.query,
            body.k,
            as_entity=reader,
            expand=body.expand,
            level=body.level,
            as_of=body.as_of,
            threshold=body.threshold,
            read_only=body.read_only,
            processes=body.processes,
        )

    @router.post("/v1/context", responses=READ)
    async def context(body: ContextIn, who: Who, archive: Arch) -> ContextBlock:
        """The memory block to prepend for ``text``; empty with ``refused`` when memory holds nothing
        reliable (also in a scope that holds nothing yet)."""
        scope, reader = read_scope(who, body.namespace, body.owner)
        return await archive.context(scope, body.text, body.budget, as_entity=reader, as_of=body.as_of)

    router.add_api_route(
        "/v1/export",
        export,
        methods=["GET"],
        responses=json_errors(401, 403, 404, 422, 503)
        | {200: {"model": Packet, "description": "One packet per line."}},
        response_class=NDJSONResponse,
    )
    return router


async def export(who: Who, archive: Arch, namespace: NamespaceQuery = None) -> NDJSONResponse:
    """Your scope as bifocal packets, one JSON line each (``mnemo import-packets`` reads them); 404
    when your scope holds nothing yet."""
    packets = archive.portability.packets(own_scope(who, namespace))
    first = await anext(packets, None)  # access and unknown-scope errors come here, before the stream

    async def lines() -> AsyncIterator[bytes]:
        if first is None:
            return
        yield (json.dumps(first, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        async for packet in packets:
            yield (json.dumps(packet, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

    return NDJSONResponse(lines())


def items() -> APIRouter:
    """One's items: listing, reading, explaining and forgetting them."""
    router = APIRouter()

    @router.delete("/v1/items/{item_id}", responses=errors(401, 403, 404, 422, 503))
    async def forget(item_id: uuid.UUID, who: Who, archive: Arch, namespace: NamespaceQuery = None) -> ForgetOut:
        return ForgetOut(forgotten=item_id, removed=await archive.forget(own_scope(who, namespace), item_id))

    @router.delete("/v1/processes/{process}", responses=errors(401, 403, 422, 503))
    async def forget_process(
        process: Process, who: Who, archive: Arch, namespace: NamespaceQuery = None
    ) -> ProcessForgetOut:
        """Remove every turn and memory ``process`` wrote in your scope, and what was derived from them."""
        removed = await archive.forget_process(own_scope(who, namespace), process)
        return ProcessForgetOut(process=process, removed=removed)

    @router.get("/v1/memories", responses=errors(401, 403, 422, 503))
    async def memories(
        who: Who,
        archive: Arch,
        namespace: NamespaceQuery = None,
        limit: Annotated[int, Query(ge=1, le=AsyncArchive.inspect.MAX_PAGE, description="Page size.")] = 50,
        cursor: Annotated[uuid.UUID | None, Query(description="The previous page's next_cursor.")] = None,
    ) -> MemoriesOut:
        """Your memories (any status), newest first, a page at a time; empty when the scope holds nothing."""
        page = await archive.inspect.memories(own_scope(who, namespace), limit=limit, cursor=cursor)
        listed = [ListedMemoryOut.model_validate(m) for m in page.items]
        return MemoriesOut(items=listed, next_cursor=page.next_cursor)

    @router.get("/v1/items/{item_id}", responses=errors(401, 403, 404, 422, 503))
    async def item(item_id: uuid.UUID, who: Who, archive: Arch, namespace: NamespaceQuery = None) -> ItemOut:
        """One turn or memory of your scope (404 when your scope holds no such item)."""
        return ItemOut.model_validate(await archive.inspect.item(own_scope(who, namespace), item_id))

    _explaining(router)
    return router


def _explaining(router: APIRouter) -> None:
    """Why a memory weighs what it does, what it was derived from, and the facts about an entity."""

    @router.get("/v1/memories/{memory_id}/why", responses=errors(401, 403, 404, 422, 503))
    async def why(memory_id: uuid.UUID, who: Who, archive: Arch, namespace: NamespaceQuery = None) -> MemoryHistory:
        """A memory's weight history from the audit log."""
        return await archive.inspect.why(own_scope(who, namespace), memory_id)

    @router.get("/v1/memories/{memory_id}/believe", responses=errors(401, 403, 404, 422, 503))
    async def believe(memory_id: uuid.UUID, who: Who, archive: Arch, namespace: NamespaceQuery = None) -> BelieveOut:
        """The chain an insight, narrative or fact was derived from, down to the turns."""
        chain = await archive.knowledge.why_do_i_believe(own_scope(who, namespace), memory_id)
        return BelieveOut(id=memory_id, chain=list(chain))

    @router.get("/v1/facts/{entity}", responses=errors(401, 403, 404, 422, 503))
    async def facts(
        entity: Annotated[OneLine, Path(min_length=1, max_length=512, description="Who or what the facts are about.")],
        who: Who,
        archive: Arch,
        namespace: NamespaceQuery = None,
    ) -> EntityFacts:
        """Current and past facts, and triples, about one entity (extracted by the night cycle)."""
        return await archive.knowledge.facts(own_scope(who, namespace), entity)


def reflexes() -> APIRouter:
    """Procedural memory: outcomes in, reflexes out."""
    router = APIRouter()

    @router.post("/v1/reflexes/outcomes", status_code=201, responses=WRITE)
    async def record_outcome(body: OutcomeIn, who: Who, archive: Arch) -> Reflex:
        """Count one outcome of an action taken in a context (procedural memory); the reflex with its counts."""
        return await archive.reflexes.record_outcome(
            own_scope(who, body.namespace),
            body.context,
            body.action,
            success=body.success,
            action_type=body.action_type,
            follows=body.follows,
        )

    @router.post("/v1/reflexes/search", responses=READ)
    async def reflexes_for(body: ReflexQueryIn, who: Who, archive: Arch) -> ReflexesOut:
        """The reflexes that fit a context best, with what tended to follow each."""
        scope = own_scope(who, body.namespace)
        found = await archive.reflexes.matching(scope, body.context, body.k, read_only=body.read_only)
        return ReflexesOut(reflexes=found)

    return router


def inner() -> APIRouter:
    """The inner life (issue 31): outcomes linked back, readiness, and what the inspector shows."""
    router = APIRouter()

    @router.post("/v1/feedback", status_code=201, responses=errors(400, 401, 403, 404, 413, 422, 503))
    async def feedback(body: FeedbackIn, who: Who, archive: Arch) -> FeedbackOut:
        """Link an outcome to a recall (its ``outcome_id``) or a gut delta: how it went, what was used.
        404 when your scope holds nothing with that outcome id. The outcome id names its scope: the
        namespace is needed only to say which one where the id could be in several (it never is)."""
        scope = own_scope(who, body.namespace)
        if body.namespace is None and who.namespace is None:  # the outcome's own namespace of the caller
            scope = await archive.reflexes.outcome_scope(who.entity_id, body.outcome_id) or scope
        found = await archive.inner.feedback(
            scope, body.outcome_id, body.value, used=body.used, kind=body.kind, detail=body.detail
        )
        return FeedbackOut(id=found)

    @router.get("/v1/readiness", responses=errors(401, 403, 422, 503))
    async def readiness(who: Who, archive: Arch, namespace: NamespaceQuery = None) -> ReadinessOut:
        """The ten bootstrap readiness milestones (cognitive-plan §5.2), each reached by a real event."""
        return ReadinessOut.of(await archive.inner.readiness(own_scope(who, namespace)))

    @router.get("/v1/inner", responses=errors(401, 403, 422, 503))
    async def inner_life(who: Who, archive: Arch, namespace: NamespaceQuery = None) -> InnerOut:
        """Milestones (as ``/v1/readiness`` answers them), gut axes, tensions, the blend's alphas and their
        history, safety events, promotions awaiting approval and persistent failures."""
        return InnerOut.of(await archive.inner.life(own_scope(who, namespace)))

    return router


def grants() -> APIRouter:
    """Who may read one's scopes."""
    router = APIRouter()

    @router.get("/v1/grants", responses=errors(401, 403, 422, 503))
    async def grantees(who: Who, archive: Arch, namespace: NamespaceQuery = None) -> GrantsOut:
        """The entities that may read your scope."""
        scope = own_scope(who, namespace)
        try:
            names = await archive.access.grants(scope)
        except UnknownScopeError:
            names = []  # a scope that holds nothing yet has no grants: not an error
        return GrantsOut(scope=str(scope), grantees=names)

    @router.post("/v1/grants", status_code=201, responses=WRITE)
    async def grant(body: GrantIn, who: Who, archive: Arch) -> GrantOut:
        """Let ``grantee`` read one of your scopes (one that holds something: else 404)."""
        created = await archive.access.grant(own_scope(who, body.namespace), body.grantee, export=body.export)
        return GrantOut(grantee=body.grantee, created=created)

    @router.delete("/v1/grants/{grantee}", responses=errors(401, 403, 422, 503))
    async def revoke(
        grantee: Annotated[Name, Path(description="The entity whose grant is withdrawn.")],
        who: Who,
        archive: Arch,
        namespace: NamespaceQuery = None,
    ) -> RevokeOut:
        return RevokeOut(grantee=grantee, revoked=await archive.access.revoke(own_scope(who, namespace), grantee))

    return router
