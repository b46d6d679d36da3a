"""State changes: the statements that close a slot's open value, or open a new one (issue 40 item 3).

Seeds: DESIGN §2 (a contradicted fact is closed, not deleted); cognitive-plan §4.4 (a new value
closes the old one); issue 40 item 3 (moving, leaving, quitting, resigning, stopping, selling,
dying, breaking up, retiring, "no longer", "not anymore", "used to", "these days", "switched to";
the job of an accepted offer is the job).

One table, :data:`_CHANGES`, maps a state-change verb phrase to the slot it ends or starts; the
value is read after it. An ending whose slot the phrase does not say ("I left Google", "I sold my
Civic", "Luna passed away") gets the attribute :data:`~mnemo.cognition.consolidation.slots.ANY`: the night closes
the open fact whose value it names, in whatever slot (:mod:`mnemo.cognition.consolidation.slots`). Statements
about a relative ("my mom moved from Seville to Valencia", "she moved …" after "my mom …") are
about ``<speaker>'s <relation>`` (:attr:`Hit.about`).

:func:`change_clause_rules` reads a clause that starts at "I" / "we"; :func:`change_sentence_rules`
a whole sentence (deaths, break-ups, relatives); :func:`last_relation` the relation a later "she"
or "he" is about.
"""

from __future__ import annotations

import re

from mnemo.cognition.consolidation.slots import ANY
from mnemo.cognition.text.patterns import REL_ADJ, REL_WORD, RELATIONS
from mnemo.cognition.text.phrases import clause_of, clean_name, clean_value, clip, is_proper
from mnemo.cognition.text.statements import Hit

__all__ = ["change_clause_rules", "change_sentence_rules", "last_relation"]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_ADV = r"(?:(?:just|finally|officially|recently|already|actually|sadly|eventually|now|also|have|had|has)\s+)*"
_SUBJ = r"^(?:I|we)\s+" + _ADV
_NAME = r"(?-i:(?P<n>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?))"
_PARTNERS = ("partner", "boyfriend", "girlfriend", "husband", "wife", "spouse", "fiance")
_ONE_THING = _rx(r"\s+(?:after|before|since|for|because|when|with|in|at|on|last|this|to|and)\b")
_VERB_AFTER = _rx(r"\s+(?:is|was|are|were|will|has|had|went|starts|started|ends|ended|felt|feels)\b")
_OWN = _rx(r"^(?:my|our)\s+")
_ORG_NOT_JOB = _rx(r"\b(?:club|group|gym|choir|band|league|class|classes|community|society|circle|crew|team)\b")

# (verb phrase after "I" / "we", what it does, attribute): "start" opens the attribute's value,
# "end" closes it (an empty value: whatever value is open).
_CHANGES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (_rx(_SUBJ + p + r"\b\s*(?P<v>.*)$"), what, attribute)
    for p, what, attribute in (
        (r"(?:accepted|took|got|signed|said\s+yes\s+to)\s+(?:the|an|a|their|his|her|my)\s+(?:job\s+)?offer"
         r"\s+(?:from|at|with)", "start", "works at"),
        (r"(?:joined|started\s+at|start\s+at|am\s+starting\s+at|began\s+at|am\s+now\s+at|am\s+currently\s+at)",
         "start-org", "works at"),
        (r"(?:got\s+|was\s+|been\s+)?promoted\s+to", "start", "works as"),
        (r"(?:resigned|handed\s+in\s+(?:my|our)\s+notice|gave\s+(?:my\s+)?notice|stepped\s+down|"
         r"(?:was|got|been)\s+made\s+redundant|retired)(?:\s+(?:from|at|with|as))?", "end-job", "works at"),
        (r"(?:left|quit|sold|gave\s+away|rehomed|ditched|dropped\s+out\s+of|moved\s+(?:out\s+of|away\s+from)|"
         r"cancel+ed|got\s+rid\s+of|no\s+longer\s+(?:have|own|drive|do|go\s+to))", "end", ANY),
        (r"(?:took\s+up|got\s+into|picked\s+up)", "start-hobby", "hobby"),
        (r"(?:switched|changed|moved\s+over)\s+(?:from\s+(?P<old>.+?)\s+)?to", "switch", ANY),
        (r"(?:drive|am\s+driving|bought|got)\s+(?:a|an)\s+(?:new\s+|used\s+|second-hand\s+)?"
         r"(?=(?-i:[A-Z]))", "start", "drives"),
        (r"(?:went|am\s+now|became|turned|have\s+gone)\s+(?=(?:vegan|vegetarian|pescatarian|keto)\b)",
         "start-diet", "is"),
    )
)  # fmt: skip
_BROKE_UP = _rx(
    r"(?:broke\s+up|split\s+up|separated|divorced|got\s+divorced|called\s+it\s+(?:quits|off)|ended\s+things|"
    r"are\s+no\s+longer\s+together|are\s+not\s+together\s+any\s?more)"
)
_SPLIT = _rx(_SUBJ + _BROKE_UP.pattern + r"(?:\s+with\s+" + _NAME + r")?")
_NO_LONGER_WITH = _rx(r"^I\s+am\s+(?:no\s+longer|not)\s+(?:together\s+)?with\s+" + _NAME)
_NAME_AND_I_SPLIT = _rx(_NAME + r"\s+and\s+I\s+" + _ADV + _BROKE_UP.pattern)
_DIED = r"(?:passed\s+away|passed|died|was\s+put\s+down|was\s+put\s+to\s+sleep|ran\s+away|went\s+missing)"
_THEIR_REL = r"\b(?:my|our)\s+(?:late\s+)?" + REL_ADJ + REL_WORD + r"(?:,?\s+" + _NAME + r")?,?\s+"
_REL_DIED = _rx(_THEIR_REL + r"(?:has\s+|had\s+)?" + _ADV + _DIED + r"\b")
_LOST_REL = _rx(
    r"\b(?:I|we)\s+" + _ADV + r"(?:lost|had\s+to\s+put\s+down|put\s+down|said\s+goodbye\s+to|buried|rehomed|"
    r"gave\s+away)\s+(?:my|our)\s+" + REL_ADJ + REL_WORD + r"(?:,?\s+" + _NAME + r")?"
)
_NAME_DIED = _rx(r"(?:^|[\s,])" + _NAME + r",?\s+(?:has\s+|had\s+)?" + _ADV + _DIED + r"\b")
_LOST_NAME = _rx(r"\b(?:I|we)\s+" + _ADV + r"(?:lost|(?:had\s+to\s+)?put|said\s+goodbye\s+to|buried)\s+" + _NAME)
_PRONOUN_DIED = _rx(r"(?:^|[,;]\s*)(?:she|he|they)\s+(?:has\s+|have\s+|had\s+)?" + _ADV + _DIED + r"\b")
_MOVED = r"(?:has\s+|have\s+)?" + _ADV + r"(?:moved|relocated)\s+(?:back\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<v>.+)"
_REL_MOVED = _rx(r"\b(?:my|our)\s+" + REL_ADJ + REL_WORD + r"(?:\s+" + _NAME + r")?\s+" + _MOVED)
_PRONOUN_MOVED = _rx(r"^(?:she|he|they)\s+" + _MOVED)
_REL_STATE = _rx(
    r"\b(?:my|our)\s+" + REL_ADJ + REL_WORD + r"(?:,?\s+" + _NAME + r",?)?\s+(?:now\s+|still\s+|currently\s+)?"
    r"(?P<verb>lives|works)\s+(?P<prep>in|at|for)\s+(?P<v>.+)"
)
_JOB_NOUNS = (  # the job of an offer that came through, of a first day, is the job; a last day ends it
    (_rx(r"\b(?:the|an|my|their)\s+(?:job\s+)?offer\s+(?:from\s+(?P<v2>.+?)\s+)?(?:finally\s+|just\s+)?"
         r"(?:came\s+through|was\s+confirmed|arrived|is\s+official|went\s+through)(?:\s+from\s+(?P<v>.+))?"), "start"),
    (_rx(r"\bmy\s+(?:very\s+)?first\s+(?:day|week|month|shift|weeks|months)\s+(?:at|with)\s+(?P<v>.+)(?P<v2>)"),
     "start"),
    (_rx(r"\bmy\s+new\s+(?:job|position|role|employer|workplace)\s+(?:at|with)\s+(?P<v>.+)(?P<v2>)"), "start"),
    (_rx(r"\bmy\s+last\s+(?:day|week|shift)\s+(?:at|with)\s+(?P<v>.+)(?P<v2>)"), "end"),
)  # fmt: skip
_ADOPTED = _rx(
    r"\b(?:I|we)\s+" + _ADV + r"(?:adopted|got|rescued|brought\s+home|took\s+in)\s+(?:a|an|another)\s+" + REL_ADJ
    + REL_WORD + r",?\s+(?:named|called)\s+" + _NAME
)  # fmt: skip
_MENTION = _rx(r"\b(?:my|our)\s+(?:late\s+)?" + REL_ADJ + REL_WORD + r"\b")


def _relation(word: str) -> str:
    return RELATIONS.get(word.lower(), word.lower())


def _end(attribute: str, value: str, confidence: float, about: str | None = None) -> Hit:
    return Hit(attribute, value, "fact", confidence, negated=True, direction="past", about=about)


def _start(attribute: str, value: str | None, confidence: float, about: str | None = None) -> list[Hit]:
    if value is None:
        return []
    return [Hit(attribute, value, "fact", confidence, direction="past", triple=is_proper(value), about=about)]


def change_clause_rules(clause: str) -> list[Hit]:
    """Hits of a state change in a clause that starts at "I" / "we" (the module docstring)."""
    if m := _SPLIT.match(clause):
        return _split(m.group("n"))
    if m := _NO_LONGER_WITH.match(clause):
        return _split(m.group("n"))
    for pattern, what, attribute in _CHANGES:
        if m := pattern.match(clause):
            return _change(what, attribute, m)
    return []


def _value(m: re.Match[str], max_words: int = 5) -> str | None:
    raw = _OWN.sub("", clause_of(m.group("v") or "").strip())  # "sold my Civic": the Civic
    return clean_value(clip(raw), max_words=max_words) if raw else None


def _change(what: str, attribute: str, m: re.Match[str]) -> list[Hit]:
    value, role = _value(m), None
    if value and attribute == "works at" and what in ("start", "start-org"):  # "joined Deloitte as an analyst"
        value, *rest = re.split(r"\s+as\s+(?:an?\s+)?", value, maxsplit=1, flags=re.IGNORECASE)
        role = clean_value(rest[0], max_words=4) if rest else None
    hits = _change_value(what, attribute, m, value)
    return hits + (_start("works as", role, 0.7) if hits and role else [])


def _change_value(what: str, attribute: str, m: re.Match[str], value: str | None) -> list[Hit]:
    if what == "start":
        return _start(attribute, value, 0.75)
    if what == "start-org":  # "I joined Typeform", not "I joined a book club"
        return _start(attribute, value, 0.7) if is_proper(value) and not _ORG_NOT_JOB.search(value or "") else []
    if what == "start-hobby":
        return _start(attribute, value.lower() if value else None, 0.65)
    if what == "start-diet":
        return _start(attribute, (value or "").split()[0].lower() or None, 0.75)
    if what == "end-job":  # "I resigned (from Acme)": the employer and the role end
        return [_end("works at", value or "", 0.8), _end("works as", "", 0.7)]
    if what == "switch":  # "I switched from Jira to Linear": Jira ends, in whatever slot it was
        old = m.group("old")
        old_value = clean_value(clip(old), max_words=4) if old else None
        return [_end(ANY, old_value, 0.65)] if old_value else []
    value = _ONE_THING.split(value)[0] if value else None  # "Acme after six years": Acme
    return [_end(ANY, value, 0.7)] if value else []


def _split(name: str | None) -> list[Hit]:
    """A break-up: the partner (the one named, else whoever it is) ends; the status says so."""
    value = clean_name(name) if name else ""
    return [_end("partner", value or "", 0.8), *_start("relationship status", "single", 0.6)]


def change_sentence_rules(sentence: str, context: str | None = None) -> list[Hit]:
    """Hits of a state change anywhere in ``sentence``: deaths, break-ups named by the partner,
    relatives' moves and homes; ``context`` is the relation a leading "she" / "he" is about."""
    hits: list[Hit] = []
    for m in [*_REL_DIED.finditer(sentence), *_LOST_REL.finditer(sentence)]:
        hits += _died(_relation(m.group("r")), m.group("n"))
    for m in [*_NAME_DIED.finditer(sentence), *_LOST_NAME.finditer(sentence)]:
        if (name := clean_name(m.group("n"))) is not None and name.lower() not in RELATIONS:
            hits.append(_end(ANY, name, 0.7))
    died = _PRONOUN_DIED.search(sentence)  # "my old dog, she passed away" / "… She died."
    if died and (who := last_relation(sentence[: died.start()]) or context):
        hits += _died(who, None)
    for m in _NAME_AND_I_SPLIT.finditer(sentence):
        hits += _split(m.group("n"))
    hits += _relative_moves(sentence, context)
    for m in _ADOPTED.finditer(sentence):  # "we adopted a cat named Miso": the pet is Miso
        if (name := clean_name(m.group("n"))) is not None:
            hits.append(Hit(_relation(m.group("r")), name, "relation", 0.8, direction="past", triple=True))
    for m in _REL_STATE.finditer(sentence):
        attribute = "lives in" if m.group("verb").lower() == "lives" else "works at"
        if attribute == "lives in" and m.group("prep").lower() != "in":
            continue
        hits += _start(attribute, clean_value(clip(clause_of(m.group("v"))), max_words=5), 0.7, _relation(m.group("r")))
    for pattern, what in _JOB_NOUNS:
        for m in pattern.finditer(sentence):
            raw = _VERB_AFTER.split(clause_of(m.group("v") or m.group("v2") or ""))[0]  # "KPMG is the end": KPMG
            value = clean_value(clip(raw), max_words=5)
            if what == "start":
                hits += _start("works at", value, 0.7)
            elif value:
                hits.append(_end("works at", value, 0.75))
    return hits


def _died(relation: str, name: str | None) -> list[Hit]:
    """Who died (or was lost, rehomed) ends as the speaker's ``relation``; "has a <relation>" ends too."""
    value = clean_name(name) if name else None
    hits = [_end(relation, value or "", 0.75), _end("has", relation, 0.6)]
    return hits + ([_end(ANY, value, 0.7)] if value else [])


def _relative_moves(sentence: str, context: str | None) -> list[Hit]:
    found = [(m, _relation(m.group("r"))) for m in _REL_MOVED.finditer(sentence)]
    if context and (m := _PRONOUN_MOVED.match(sentence)):
        found.append((m, context))
    hits: list[Hit] = []
    for m, about in found:
        raw = m.group("v")
        if m.group("old") is None and (cut := re.match(r"(?P<v>.+?)\s+from\s+(?P<old>.+)", raw)):
            raw, old = cut.group("v"), cut.group("old")
        else:
            old = m.group("old")
        new = hits_new = _start("lives in", clean_value(clip(clause_of(raw)), max_words=5), 0.7, about)
        hits += new
        if old and hits_new and (old_value := clean_value(clip(clause_of(old)), max_words=5)):
            hits.append(_end("lives in", old_value, 0.6, about))
    return hits


def last_relation(sentence: str) -> str | None:
    """The last relation ``sentence`` names ("my mom", "our dog"): who a later "she" is about."""
    found = list(_MENTION.finditer(sentence))
    return _relation(found[-1].group("r")) if found else None
