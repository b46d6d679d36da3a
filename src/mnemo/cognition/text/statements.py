"""First-person statements in a sentence: the rules that turn clauses and sentences into hits.

Seeds: archive-adr §4 (ingestion extracts entities, relationships and facts;
each is first a *candidate* with provenance and confidence for the curator)
and §9 (Phase A of the curator loop: augmentation extracts candidate
facts/triples from conversation traces); DESIGN §2 (a contradicted fact is
closed, not deleted: negations produce ``negated`` hits).

:func:`clause_rules` (on a clause that starts at "I" / "we") and
:func:`sentence_rules` (on a whole sentence) return :class:`Hit` s: an
attribute, a value, a kind, a confidence, whether it is negated and which way
to resolve its date; :func:`mnemo.cognition.consolidation.extraction.extract` attributes
them to the speaker and dates them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from mnemo.cognition.consolidation.slots import ANY
from mnemo.cognition.text.patterns import (
    AM_A,
    AM_AGE,
    AM_IDENTITY,
    AM_MARRIED_TO,
    AM_NAME,
    AM_NOT,
    AM_STATUS,
    ANYMORE,
    CANNOT_STAND,
    DISLIKE,
    DULL,
    ENTITY_ATTRIBUTES,
    EVENT_FUTURE,
    EVENT_HAVE,
    EVENT_PAST,
    EVENT_STRONG,
    EVENT_WILL,
    FAVOURITE,
    FAVOURITE_REV,
    FIRED,
    GERUND,
    GOT_STATUS,
    HAS,
    HAVE_COUNT,
    HOBBIES,
    HOME,
    INTRANSITIVE,
    MOVED,
    MY_NAME,
    MY_REL,
    MY_REL_IS,
    MY_REL_NAME,
    NAME_IS_MY_REL,
    NEW_JOB,
    NO_LONGER,
    NOT_A_ROLE,
    NOT_FAN,
    NOT_REAL,
    PLURAL,
    POSITIVE,
    PREFERENCE_SPLIT,
    PRESENT,
    QUIT_JOB,
    RELATIONS,
    RETIRED,
    SECONDARY,
    STARTED_WORK,
    STOPPED,
    TURNED,
    UNDATED_STOP,
    USED_TO,
    FactKind,
)
from mnemo.cognition.text.phrases import LEAD, WINDOW, clause_of, clean_name, clean_value, clip, is_proper
from mnemo.cognition.text.timex import Direction, find_times, parse_count, resolve_time, strip_times

__all__ = ["Hit", "clause_rules", "sentence_rules"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One statement a rule found: the speaker's ``attribute`` is ``value`` (the extractor adds who and when)."""

    attribute: str
    value: str
    kind: FactKind
    confidence: float
    negated: bool = False
    direction: Direction | None = None  # resolve a date in this direction (None: no date)
    triple: bool = False  # also a triple (the value is a named entity)
    subject_we: bool = False
    about: str | None = None  # a relation of the speaker the statement is about ("mother"): "<speaker>'s mother"


def _hit(
    attribute: str,
    value: str | None,
    kind: FactKind,
    confidence: float,
    *,
    direction: Direction | None = None,
    triple: bool = False,
    subject_we: bool = False,
) -> list[Hit]:
    if value is None:
        return []
    return [Hit(attribute, value, kind, confidence, False, direction, triple, subject_we)]


def _negate(hit: Hit) -> Hit:
    return replace(hit, negated=True, direction=hit.direction or "past")


def _predicate(rest: str, base: float) -> list[Hit]:
    """Facts from what follows "I " (``rest`` starts with a verb or with "am"); ``base`` scales confidence."""
    rest = rest.strip()
    for pattern, attribute, kind, confidence in PRESENT:
        if m := pattern.match(rest):
            raw = m.group("v")
            if attribute == "prefers":
                raw = re.split(r"\s+(?:to|over|rather\s+than|than|instead\s+of)\s+", raw, maxsplit=1)[0]
            if kind == "preference":
                return _preferences(attribute, raw, confidence * base)
            hits: list[Hit] = []
            if attribute in SECONDARY:  # "work at Google as an engineer", "study biology at MIT"
                word, other = SECONDARY[attribute]
                parts = re.split(rf"\s+{word}\s+", clip(raw), maxsplit=1, flags=re.IGNORECASE)
                if len(parts) == 2:
                    raw = parts[0]
                    hits += _simple(other, parts[1], kind, confidence * base)
            return _simple(attribute, raw, kind, confidence * base) + hits
    if m := AM_MARRIED_TO.match(rest):
        relation = "spouse" if m.group("rel").lower() == "married" else "fiance"
        hits = _hit(relation, clean_name(m.group("n")), "relation", 0.85 * base, triple=True)
        return hits + _hit("relationship status", m.group("rel").lower(), "fact", 0.85 * base)
    if m := AM_STATUS.match(rest):
        return _hit("relationship status", m.group("status").lower(), "fact", 0.8 * base)
    if m := AM_IDENTITY.match(rest):
        return _hit("is", LEAD.sub("", m.group("adj").lower()), "fact", 0.75 * base)
    if m := AM_AGE.match(rest):
        age = int(m.group("n"))
        return _hit("age", str(age), "fact", (0.85 if m.group("yo") else 0.7) * base) if 0 < age <= 120 else []
    if m := AM_A.match(rest):
        return _role(m.group("v"), base)
    if m := AM_NAME.match(rest):
        return _hit("name", clean_name(m.group("n")), "fact", 0.55 * base)
    return []


def _simple(attribute: str, raw: str, kind: FactKind, confidence: float) -> list[Hit]:
    if attribute in ENTITY_ATTRIBUTES:
        value = clean_value(raw, max_words=5)
        return _hit(attribute, value, kind, confidence, triple=is_proper(value))
    return _hit(attribute, clean_value(raw, max_words=7), kind, confidence)


def _preferences(attribute: str, raw: str, confidence: float) -> list[Hit]:
    """ "hiking" / "trying new recipes and experimenting in the kitchen" (split when every part is a phrase)."""
    raw = clip(raw)
    if clean_value(raw, max_words=12) is None:
        return []  # "I love how it's …", "I love that you …"
    if re.match(r"^(?:the|this|that|these|those)\s", raw, re.IGNORECASE):
        confidence -= 0.2  # "I love the colours": about something in the conversation
    parts = PREFERENCE_SPLIT.split(raw)
    if len(parts) == 1 or any(len(LEAD.sub("", p).split()) < 2 for p in parts):
        parts = [raw]
    hits: list[Hit] = []
    for part in parts:
        hits += _hit(attribute, clean_value(part, max_words=6), "preference", confidence)
    return hits


def _role(raw: str, base: float) -> list[Hit]:
    """ "I am a nurse (at St Mary's)" -> is nurse (+ works at / studies at)."""
    words = raw.split()
    if not words or words[0].lower() in NOT_A_ROLE or re.match(r"^(?:\S+\s+){0,2}fan\b", raw, re.IGNORECASE):
        return []
    role_raw, org_raw = raw, None
    if m := re.match(r"^(?P<role>(?:[\w-]+\s+){0,2}[\w-]+)\s+(?:at|for)\s+(?P<org>.+)$", raw, re.IGNORECASE):
        role_raw, org_raw = m.group("role"), m.group("org")
    role_raw = re.split(r"\s+(?:who|that|with|in|from|of\s+the|and)\s+", clip(role_raw), maxsplit=1)[0]
    role = clean_value(role_raw, max_words=4)
    if role is None:
        return []
    hits = _hit("is", role if is_proper(role) else role.lower(), "fact", 0.7 * base)
    if org_raw is not None:
        org = clean_value(org_raw, max_words=5)
        attribute = "studies at" if role.lower().endswith("student") else "works at"
        if is_proper(org):  # "a guard for the team" says nothing about an employer
            hits += _hit(attribute, org, "fact", 0.7 * base, triple=True)
    return hits


OWN = re.compile(r"^(?:my|our)\s+", re.IGNORECASE)


def _stopped(rest: str) -> list[Hit]:
    """ "stopped playing chess" -> plays chess, negated; "stopped eating meat" -> does eating meat, negated;
    either also ends, in whatever slot, the open fact about the activity
    (:data:`~mnemo.cognition.consolidation.slots.ANY`)."""
    words = rest.split()
    if not words:
        return []
    if not words[0].lower().endswith("ing"):  # "gave up the gym", "quit Acme": what it names ends, in any slot
        return [_negate(h) for h in _hit(ANY, clean_value(clip(OWN.sub("", rest)), max_words=4), "fact", 0.65)]
    verb = GERUND.get(words[0].lower())
    hits = _predicate(" ".join([verb, *words[1:]]), 1.0) if verb else []
    activity = clean_value(clip(rest), max_words=5)
    hits = hits or _hit("does", activity, "fact", 0.7)
    return [_negate(h) for h in hits + _hit(ANY, activity, "fact", 0.65)]


def _ended(rest: str, base: float) -> list[Hit]:
    """ "no longer …", "not … anymore", "used to …": the predicate's fact ends; one no predicate reads
    ("I don't climb anymore", "I used to do pottery") ends the open fact about what it names, in any slot."""
    hits = _predicate(rest, base)
    if not hits:
        words = rest.split()
        activity = " ".join(words[1:]) if words and words[0].lower() in ("do", "go", "am", "have") else rest
        hits = _hit(ANY, clean_value(clip(activity), max_words=4), "fact", 0.6 * base)
    return [_negate(h) for h in hits]


# ---------------------------------------------------------------- the extractor


def clause_rules(clause: str, sentence: str) -> list[Hit]:
    """Hits for one clause that starts at its subject ("I …" / "we …")."""
    if m := NO_LONGER.match(clause):
        return _ended(("am " if m.group("am") else "") + m.group("rest"), 0.95)
    if m := ANYMORE.match(clause):
        return _ended(("am " if m.group("aux").lower() == "am" else "") + m.group("rest"), 0.85)
    if m := USED_TO.match(clause):
        return _ended(("am " if m.group("be") else "") + m.group("rest"), 0.8)
    if (m := QUIT_JOB.match(clause)) and m.group("role"):  # "I lost my job as a banker"
        return [_negate(h) for h in _hit("works as", clean_value(m.group("role"), max_words=4), "fact", 0.75)]
    if (m := QUIT_JOB.match(clause)) or (m := FIRED.match(clause)):
        value = clean_value(m.group("v"), max_words=5) if m.group("v") else ""
        return [_negate(h) for h in _hit("works at", value, "fact", 0.8, triple=is_proper(value))]
    if m := STOPPED.match(clause):
        return _stopped(m.group("rest"))
    if m := CANNOT_STAND.match(clause):
        return _preferences("dislikes", m.group("v"), 0.8)
    if m := DISLIKE.match(clause):
        return _preferences("dislikes", m.group("v"), 0.6)
    if m := NOT_FAN.match(clause):
        return _preferences("dislikes", m.group("v"), 0.65)
    if m := AM_NOT.match(clause):
        return [_negate(h) for h in _predicate("am " + m.group("rest"), 0.75) if h.attribute != "name"]
    we = clause[:2].lower() == "we"
    if m := MOVED.match(clause):
        new_place, old_place = m.group("v"), m.group("old")
        if old_place is None and (cut := re.match(r"(?P<v>.+?)\s+from\s+(?P<old>.+)", new_place)):
            new_place, old_place = cut.group("v"), cut.group("old")  # "moved to Lisbon from Toronto"
            old_place = re.split(r"\s+(?:for|because|with|after|when|since|and|so|but|to)\b", old_place)[0]
        value = clean_value(new_place, max_words=5)
        hits = _hit("lives in", value, "fact", 0.75, direction="past", triple=is_proper(value), subject_we=we)
        if old_place and hits:
            old = clean_value(old_place, max_words=5)
            hits += [_negate(h) for h in _hit("lives in", old, "fact", 0.6, triple=is_proper(old), subject_we=we)]
        return hits
    if (m := NEW_JOB.match(clause)) or (m := STARTED_WORK.match(clause)):
        if m.group("prep").lower() == "as":
            return _hit("works as", clean_value(m.group("v"), max_words=4), "fact", 0.75, direction="past")
        value = clean_value(m.group("v"), max_words=5)
        return _hit("works at", value, "fact", 0.75, direction="past", triple=is_proper(value))
    if m := GOT_STATUS.match(clause):
        status = m.group("status").lower()
        return _hit("relationship status", status, "fact", 0.8, direction="past", subject_we=we)
    if m := TURNED.match(clause):
        age = int(m.group("n"))
        return _hit("age", str(age), "fact", 0.75, direction="past") if 0 < age <= 120 else []
    if RETIRED.match(clause):
        return _hit("is", "retired", "fact", 0.75, direction="past")
    if m := HAVE_COUNT.match(clause):
        return _have_count(m, we)
    if hits := _events(clause, sentence):
        return hits
    if m := POSITIVE.match(clause):
        return _predicate(m.group("rest"), 1.0)
    return []


def _relation(m: re.Match[str]) -> str:
    word = m.group("r").lower()
    return RELATIONS.get(word, word)


def _have_count(m: re.Match[str], we: bool) -> list[Hit]:
    relation = _relation(m)
    count = parse_count(m.group("c"))
    if count == 1:
        hits = _hit("has", relation, "relation", 0.7, subject_we=we)
    else:
        noun = PLURAL.get(relation, relation + "s")
        hits = _hit(f"number of {noun}", str(count), "relation", 0.75, subject_we=we)
    for name in _names(m.group("names") or "", plural=count > 1):
        hits += _hit(relation, name, "relation", 0.8, triple=True, subject_we=we)
    return hits


def _names(raw: str, *, plural: bool) -> list[str]:
    out = []
    for part in re.split(r"\s+and\s+|\s*,\s*", raw.strip())[: 4 if plural else 1]:
        name = clean_name(part)
        if name is None:
            break
        out.append(name)
    return out


def _events(clause: str, sentence: str) -> list[Hit]:
    subj = clause.split()[0]
    if m := EVENT_FUTURE.match(clause):
        return _event(m.group("verb"), m.group("v"), sentence, "future", subj, dated_only=True)
    if m := EVENT_WILL.match(clause):
        return _event("will " + m.group("verb"), m.group("v"), sentence, "future", subj, dated_only=True)
    if m := EVENT_PAST.match(clause):
        verb = m.group("verb")
        strong = re.fullmatch(EVENT_STRONG, verb, re.IGNORECASE) is not None
        if strong and UNDATED_STOP.match(m.group("v")):
            return []
        return _event(verb, m.group("v"), sentence, "past", subj, dated_only=not strong)
    if m := EVENT_HAVE.match(clause):
        return _event("has", m.group("v"), sentence, "future", subj, dated_only=True)
    return []


def _event(verb: str, raw: str, sentence: str, direction: Direction, subj: str, *, dated_only: bool) -> list[Hit]:
    dated = _dated(clip(raw), direction) or _dated(sentence, direction)
    if dated_only and not dated:
        return []
    attribute = " ".join(verb.lower().split())
    value = clean_value(raw, max_words=8)
    if value is None and attribute in INTRANSITIVE and not strip_times(clip(raw)):
        value = attribute  # "I graduated in 2019"
    if value is None or (attribute in ("had", "got", "has", "having") and value.split()[0].lower() in DULL):
        return []
    confidence = (0.7 if dated else 0.5) - (0.1 if direction == "future" else 0.0)
    return _hit(attribute, value, "event", confidence, direction=direction, subject_we=subj.lower() == "we")


_PROBE = datetime(2000, 6, 14, 12, 0)  # any turn time: only whether a time fits the direction matters


def _dated(text: str, direction: Direction) -> bool:
    return any(resolve_time(kind, m, _PROBE, direction) for _s, _e, kind, m in find_times(text))


def sentence_rules(sentence: str) -> list[Hit]:
    hits: list[Hit] = []
    for m in MY_NAME.finditer(sentence):
        hits += _hit("name", clean_name(m.group("n")), "fact", 0.9)
    for m in FAVOURITE.finditer(sentence):
        what = (clean_value(m.group("x"), max_words=4) or "").lower()
        attribute: str
        if re.fullmatch(r"things?\s+to\s+do", what):
            attribute = "likes"
        elif not what or what.split()[0] in ("part", "thing", "things", "bit", "moment", "memory", "one", "way"):
            continue  # "my favourite part was …": about the conversation, not a lasting preference
        else:
            attribute = f"favourite {what}"
        hits += _hit(attribute, clean_value(clause_of(m.group("v")[:WINDOW]), max_words=6), "preference", 0.85)
    for clause in re.split(r"[,;:]|\s[-–—]+\s", sentence):
        if rev := FAVOURITE_REV.match(clause.strip(" .!")):
            what = (clean_value(rev.group("x") or "", max_words=4) or "").lower()
            attribute = f"favourite {what}" if what else "likes"
            hits += _hit(attribute, clean_value(rev.group("v"), max_words=4), "preference", 0.75)
    for m in HOBBIES.finditer(sentence):
        for item in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+", m.group("v")[:WINDOW])[:8]:
            hits += _hit("hobby", clean_value(item, max_words=4), "preference", 0.8)
    for m in MY_REL_NAME.finditer(sentence):
        word = m.group("r").lower()
        plural = word.endswith(("s", "ren"))
        if m.group("comma") and not plural and re.match(r"^\S+\s+and\b", m.group("n")):
            continue  # "my girlfriend, Toby and I": a list, not an apposition
        relation = ("ex-" if m.group("ex") else "") + _relation(m)
        confidence = 0.85 if m.group("own").lower() == "my" else 0.75
        for name in _names(m.group("n"), plural=plural):
            hits += _hit(relation, name, "relation", confidence, triple=True)
    for m in MY_REL_IS.finditer(sentence):
        hits += _hit(_relation(m), clean_name(m.group("n")), "relation", 0.85, triple=True)
    for m in NAME_IS_MY_REL.finditer(sentence):
        hits += _hit(_relation(m), clean_name(m.group("n")), "relation", 0.8, triple=True)
    if not NOT_REAL.search(sentence):
        for m in MY_REL.finditer(sentence):
            for word in filter(None, (m.group("r"), m.group("r2"))):
                relation = RELATIONS.get(word.lower(), word.lower())
                if relation in HAS:
                    hits += _hit("has", relation, "relation", 0.6)
    for m in HOME.finditer(sentence):
        hits += _hit("from", clean_name(m.group("n")), "fact", 0.75, triple=True)
    return hits
