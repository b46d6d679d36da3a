"""Small hand-made conversations with known flux arcs and facts, for the night-cycle tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mnemo import AsyncArchive, Scope

ROUTINE = [
    "I cooked pasta with tomato sauce tonight.",
    "Nice, pasta with tomato sauce is a good dinner.",
    "I cooked pasta with garlic and olive oil today.",
    "Pasta with garlic and olive oil is a good dinner too.",
    "Tomorrow I will cook pasta with tomato sauce again.",
    "Pasta with tomato sauce again sounds like a good dinner.",
    "I cooked pasta with tomato sauce and basil.",
    "Pasta with tomato sauce and basil is a good dinner.",
]
SPIKE = [
    "Our Kubernetes cluster keeps evicting the Postgres replica because of memory pressure on node seven.",
    "Why would the kubelet evict a replica with a guaranteed quality-of-service class?",
    "Ephemeral storage from WAL archiving fills the node; eviction thresholds trigger regardless of QoS.",
    "I see, so the WAL archive on the node disk causes the eviction.",
    "Exactly, move the WAL archive to object storage.",
    "That makes sense, I will move the WAL archive to object storage.",
]
BREAKTHROUGH = "I see, so the WAL archive on the node disk causes the eviction."
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def arc_conversation() -> list[str]:
    """Routine, an unexpected technical problem that gets resolved, routine again (one arc)."""
    return ROUTINE + ROUTINE + SPIKE + ROUTINE[:6]


async def record(
    archive: AsyncArchive,
    scope: Scope,
    session: str,
    texts: list[str],
    start: datetime,
    speakers: tuple[str, str] = ("Alice", "Bob"),
) -> None:
    for i, text in enumerate(texts):
        await archive.record_turn(
            scope,
            session,
            "user" if i % 2 == 0 else "assistant",
            text,
            speaker=speakers[i % 2],
            created_at=start + timedelta(minutes=i),
        )
