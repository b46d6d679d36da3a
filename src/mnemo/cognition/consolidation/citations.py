"""Citations between blocks: a later block that refers back to an earlier block's subject cites it.

Seed: memory-architecture §7.2 ("Citation: block A explicitly references block
B", the ``citations`` field; after encoding, related blocks of different days
are connected by "explicit citations", §4.4). Offline, a subject is a name the
text uses mid-sentence with a capital (a person, a place, a project) or a token
with digits (a version, a model number), minus the conversation's own speakers
and the calendar's words. A later block cites an earlier one when they share a
subject that few earlier blocks mention: a rare shared name is a reference, a
name every block mentions is not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from mnemo.cognition.text.timex import CALENDAR_WORDS

__all__ = ["cite", "subjects"]

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’.-]*[A-Za-z0-9]|[0-9][A-Za-z0-9.-]*[A-Za-z][A-Za-z0-9.-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(]\s*)$")
# words capitalised by convention, not because they name a subject
_NOT_SUBJECTS = CALENDAR_WORDS | frozenset(
    "i i'm i've i'll i'd ok okay hey hi hello yes no oh wow thanks".split()  # noqa: SIM905
)


def subjects(text: str, exclude: Iterable[str] = ()) -> frozenset[str]:
    """The subjects ``text`` names (lower-cased): capitalised words not opening a sentence, and
    words with both letters and digits; ``exclude`` (speakers' names) and calendar words left out."""
    skip = {e.lower() for e in exclude} | _NOT_SUBJECTS
    found = set()
    for match in _WORD.finditer(text):
        word = match.group(0).rstrip(".").replace("’", "'")
        key = word.lower().removesuffix("'s")
        if len(key) < 3 or key in skip:
            continue
        has_digit = any(c.isdigit() for c in word)
        if has_digit or (word[0].isupper() and not _SENTENCE_START.search(text[: match.start()])):
            found.add(key)
    return frozenset(found)


def cite(
    new: Sequence[frozenset[str]], earlier: Sequence[frozenset[str]], *, rare: int = 2, most: int = 3
) -> list[list[tuple[int, int]]]:
    """For each new block, the earlier blocks it cites as ``(index, shared subjects)``, most shared
    first, ``most`` at most: those sharing a subject that at most ``rare`` earlier blocks name."""
    df = Counter(s for block in earlier for s in block)
    out = []
    for block in new:
        wanted = {s for s in block if df[s] <= rare}
        shared = [(i, len(wanted & e)) for i, e in enumerate(earlier) if wanted & e]
        shared.sort(key=lambda x: (-x[1], -x[0]))
        out.append(shared[:most])
    return out
