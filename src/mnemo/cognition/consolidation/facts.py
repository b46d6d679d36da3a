"""Facts worth keeping: a fact reads as a sentence on its own, fragments are dropped, near-duplicates
share one canonical value.

Seeds: archive-adr §4 (extracted facts are records a reader can audit) and §9 (mention count as a
quality signal: a fact said again is counted, not copied); issue 28 item 5.

* :func:`sentence` renders ``entity`` / ``attribute`` / ``value`` as the sentence a fact is stored,
  searched and shown as: "Maya's sister is Lena", "Melanie has a child", "Caroline is from Sweden",
  "Jon is getting ready for a dance comp", "Jon has been to Paris".
* :func:`reads_as_sentence` checks a stored fact's text on its own (a verb after the subject).
* :func:`is_fragment` says whether a value cannot make such a sentence: empty, only function words,
  cut off after a function word ("works at", "went to the"), or a bare pronoun ("went to it").
* :func:`canonical_value` (and :func:`content_words`, its words that carry content) is what two
  values that say the same thing share: casefolded, articles and possessive determiners dropped
  anywhere, plural ``-s`` dropped, the entity's own name in a
  possessive dropped ("took Melanie's kids to the park" = "took kids to park").
"""

from __future__ import annotations

import re
import unicodedata

from mnemo.cognition.text.patterns import HAS, RELATIONS
from mnemo.cognition.text.phrases import word_set

__all__ = ["canonical_value", "content_words", "is_fragment", "sentence"]

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[\w'’-]+")

# words that carry no content of their own: a value made only of these, or ending in one, is cut off
_FUNCTION = word_set(
    "a an the my our your his her their its this that these those some any and or but so to of in "
    "on at for with from by about into onto over under as than then like just also very really is "
    "are was were be been being am do does did have has had will would can could should"
)
_PRONOUN = word_set("it this that them these those one something stuff things thing there here him her")
_DETERMINERS = word_set("a an the my our your his her their its")

# the extractor's relation words (patterns.RELATIONS, HAS; "ex-" ones too) read "X's <relation> is <name>";
# "has" + a bare relation reads "X has a <relation>"
_KIN = frozenset(RELATIONS.values()) | HAS | word_set("friend mentor boss manager colleague coworker roommate")
_RELATIONS = _KIN | {f"ex-{r}" for r in _KIN} | word_set("neighbour neighbor puppy kitten fish") | {"best friend"}
# predicates that are an adjective or a participle after "is": "Caroline is from Sweden"
_COPULA = ("from", "interested in", "married to", "allergic to", "afraid of", "engaged to", "into", "part of")


def _words(text: str) -> list[str]:
    return [w.casefold().strip("'’-") for w in _WORD.findall(unicodedata.normalize("NFKC", text))]


def is_fragment(attribute: str, value: str) -> bool:
    """Whether ``attribute`` + ``value`` cannot read as a sentence's predicate and object."""
    words = _words(value)
    if not words or not _words(attribute):
        return True
    if all(w in _FUNCTION or w in _PRONOUN for w in words):
        return True  # "the", "to it", "a lot of the": nothing the object is about
    return words[-1] in _FUNCTION - {"in", "on", "up", "out", "over"}  # "went to the": cut off


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _relation(attribute: str) -> str | None:
    a = _SPACE.sub(" ", attribute.strip().casefold())
    return a if a in _RELATIONS else None


def sentence(entity: str, attribute: str, value: str) -> str:
    """``entity`` ``attribute`` ``value`` as one sentence (the module docstring's examples)."""
    entity, attribute, value = (_SPACE.sub(" ", p).strip() for p in (entity, attribute, value))
    a = attribute.casefold()
    if (relation := _relation(attribute)) is not None:
        return f"{entity}'s {relation} is {value}"
    if a == "has" and _relation(value) is not None:
        return f"{entity} has {_article(value)} {value}"
    if a == "has" or a.startswith("number of "):
        return f"{entity} has {value}" if a == "has" else f"{entity} has {value} {a.removeprefix('number of ')}"
    if a.startswith("favourite ") or a in ("name", "hobby", "relationship status"):
        return f"{entity}'s {attribute} is {value}"
    if a == "age":
        return f"{entity} is {value} years old" if value.isdigit() else f"{entity}'s age is {value}"
    if a in _COPULA or a.split()[0].endswith("ing"):
        return f"{entity} is {attribute} {value}"
    if a.startswith("been "):
        return f"{entity} has {attribute} {value}"
    return f"{entity} {attribute} {value}"


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def canonical_value(entity: str, value: str) -> str:
    """What two values that say the same thing about ``entity`` share (the module docstring)."""
    own = {f"{w}'s" for w in _words(entity)} | {f"{w}’s" for w in _words(entity)} | set(_words(entity))
    kept = [_stem(w) for w in _words(value) if w not in _DETERMINERS and w not in own]
    return " ".join(kept)


def content_words(entity: str, text: str) -> frozenset[str]:
    """The words of ``text`` that carry content, in :func:`canonical_value` form (function words out)."""
    return frozenset(w for w in canonical_value(entity, text).split() if w not in _FUNCTION)


_NOT_A_VERB = _FUNCTION - {"is", "are", "was", "were", "has", "had", "have", "does", "did", "will", "can", "likes"}


def reads_as_sentence(entity: str, text: str) -> bool:
    """Whether ``text``, a fact about ``entity``, reads as a sentence: it opens with the entity, a verb
    follows ("Maya lives in …", "Maya's sister is Lena", "Maya has a dog"), not a bare noun, a
    preposition or a participle ("Maya sister Lena", "Maya from Lisbon", "Maya going to …",
    "Maya has sister"), and its object is not cut off. The check reads the text, not how it was made."""
    if not text.startswith(entity):
        return False
    rest = _words(text[len(entity) :])
    if len(rest) < 2 or is_fragment("x", " ".join(rest[1:])):
        return False
    first = rest[0]
    if first == "s":  # "Maya's <relation> is <value>"
        return "is" in rest[2:] or "are" in rest[2:]
    if first in _NOT_A_VERB or _RELATIONS & {first, " ".join(rest[:2])} or first.endswith("ing") or first == "been":
        return False
    return not (first == "has" and rest[1] in _RELATIONS)
