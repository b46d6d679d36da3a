"""The read index's utterances: where each raw turn and block line sits in its session.

DESIGN §3 (the read index, :mod:`mnemo.recall.scope_index`). Neighbour smoothing asks for the
places of its anchors' neighbours; this answers as :func:`mnemo.store.search.positions` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from mnemo.recall.first_stage import Place, Positions

__all__ = ["UtteranceIndex"]


class UtteranceIndex:
    """Where each raw turn and each block line sits in its session, as
    :func:`mnemo.store.search.positions` reads it (a line whose raw turn is still there is only
    an anchor; a raw turn wins over its line)."""

    def __init__(self) -> None:
        self.at: dict[str, dict[uuid.UUID, set[Place]]] = {"turn": {}, "line": {}}
        self.sessions: dict[str, dict[str, dict[int, set[uuid.UUID]]]] = {"turn": {}, "line": {}}

    def load(self, rows: Sequence[tuple[str, uuid.UUID, str, int]]) -> None:
        for kind, item, session, number in rows:
            self.at[kind].setdefault(item, set()).add((session, number))
            self.sessions[kind].setdefault(session, {}).setdefault(number, set()).add(item)

    def remove(self, item: uuid.UUID) -> None:
        for kind in ("turn", "line"):
            for session, number in self.at[kind].pop(item, ()):
                numbers = self.sessions[kind][session]
                numbers[number].discard(item)
                if not numbers[number]:
                    del numbers[number]
                if not numbers:
                    del self.sessions[kind][session]

    def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        where: dict[uuid.UUID, Place] = {}
        bounds: dict[str, tuple[int, int]] = {}
        kinds: dict[uuid.UUID, str] = {}
        turns = self.at["turn"]
        for kind in ("line", "turn") if lines else ("turn",):  # a raw turn wins
            found = self._near(kind, ids, anchors, distance)
            if kind == "line":
                found = [(item, place) for item, place in found if item not in turns]
            for item, (session, number) in found:
                where[item] = (session, number)
                kinds[item] = kind
                numbers = self.sessions[kind][session]
                lo, hi = min(numbers), max(numbers)
                old = bounds.get(session, (lo, hi))
                bounds[session] = (min(old[0], lo), max(old[1], hi))
        return where, bounds, kinds

    def _near(
        self, kind: str, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int
    ) -> list[tuple[uuid.UUID, Place]]:
        """The ``kind`` utterances among ``ids``, and those within ``distance`` of an anchor's place
        (an anchor placed by its raw turn or by any line of it, for turns; by its lines, for lines)."""
        at, sessions = self.at[kind], self.sessions[kind]
        found = [(item, place) for item in dict.fromkeys(ids) for place in sorted(at.get(item, ()))]
        places: set[Place] = set()
        for anchor in anchors:
            places |= at.get(anchor, set())
            if kind == "turn":
                places |= self.at["line"].get(anchor, set())
        for session, number in sorted(places):
            numbers = sessions.get(session, {})
            for n in range(number - distance, number + distance + 1):
                found.extend((item, (session, n)) for item in sorted(numbers.get(n, ())))
        return found

    @property
    def nbytes(self) -> int:
        return sum(len(at) for at in self.at.values()) * 400
