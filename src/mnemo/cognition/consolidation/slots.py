"""Slots of a person's state: which facts one state change closes (issue 40 item 3).

Seeds: DESIGN §2 (a contradicted fact is closed, not deleted); cognitive-plan §4.4 (a new value
closes the old one); issue 40 item 3 (a state change closes the open value of its slot; a slot is
recognised beyond fixed phrasings).

A *slot* is what a fact's attribute and value are about: where someone lives (``residence``), who
employs them (``employer``), their ``role``, ``partner``, ``school``, ``vehicle``, ``diet``,
``relationship`` status. :func:`slot_of` reads it from the attribute and, where the attribute says
too little ("is vegan"), from the value. A slot in :data:`ONE_VALUE` holds one value at a time: a
new value closes the open one, whatever attribute said it ("my boyfriend Tom" is closed by "my
husband Sam"). :data:`ANY` is the attribute of an ending whose slot the sentence does not say ("I
left Google", "Luna passed away", "I sold my Civic"): it closes the open facts whose value
:func:`value_matches` it, in any slot. Closing stays per (entity, slot).
"""

from __future__ import annotations

import re
import unicodedata

from mnemo.cognition.text.phrases import word_set

__all__ = ["ANY", "ONE_VALUE", "slot_of", "value_matches"]

ANY = "*"
"""The attribute of an ending that names what ended but not its slot."""

_ATTRIBUTE_SLOT = {
    "lives in": "residence",
    "works at": "employer",
    "works for": "employer",
    "works as": "role",
    "studies at": "school",
    "drives": "vehicle",
    "diet": "diet",
    "relationship status": "relationship",
    **{r: "partner" for r in ("partner", "husband", "wife", "spouse", "boyfriend", "girlfriend", "fiance")},
}
_DIETS = word_set("vegan vegetarian pescatarian keto paleo carnivore flexitarian omnivore gluten-free dairy-free")
ONE_VALUE = frozenset({"residence", "employer", "role", "school", "vehicle", "diet", "relationship", "partner"})
"""Slots with one value at a time: a new value closes the open one."""

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_][\w'-]*")
_WEAK = word_set(
    "a an the my our your his her their its this that these those some of to in on at for with from and or "
    "by new old little big dear beloved sweet"
)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def slot_of(attribute: str, value: str) -> str | None:
    """The slot ``attribute`` = ``value`` fills, or ``None`` (likes, went to, sister … accumulate)."""
    a = _norm(attribute)
    if a in _ATTRIBUTE_SLOT:
        return _ATTRIBUTE_SLOT[a]
    if a in ("is", "eats", "became") and _DIETS & set(_norm(value).split()):
        return "diet"
    return None


def _stem(word: str) -> str:
    """A light stem: "climbing" = "climb", "running" = "run", "dogs" = "dog"."""
    word = word.strip("'-").removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
                word = word[:-1]  # "runn" -> "run", but "skill" stays
            break
    return word


def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(_norm(text)) if w not in _WEAK)


def value_matches(ended: str, value: str) -> bool:
    """Whether the ending of ``ended`` ("climbing", "Luna", "Honda Civic") is about ``value``
    ("goes climbing every Saturday", "Luna", "a silver Honda Civic"): every content word of
    ``ended`` (lightly stemmed) is in ``value``."""
    want = _stems(ended)
    return bool(want) and want <= _stems(value)
