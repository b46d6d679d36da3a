"""Vocabularies and regular-expression tables of the offline extractor.

Seeds: archive-adr §4 (ingestion extracts entities, relationships and facts as
candidate records with confidence) and §9 (Phase A of the curator loop:
augmentation extracts candidate facts/triples from conversation traces).

Word lists (relations, identities, dull objects), the present-tense predicate
table (``PRESENT``: pattern, attribute, kind, confidence) and the patterns
:mod:`mnemo.cognition.text.statements` applies: clause rules anchored at a subject
("I …", "we …") and sentence rules ("my sister Anna", "my favourite x is y").
Case-insensitive unless a pattern says ``(?-i:…)``.
"""

from __future__ import annotations

import re
from typing import Literal

from mnemo.cognition.text.phrases import word_set

__all__ = [
    "AM_A",
    "AM_AGE",
    "AM_IDENTITY",
    "AM_MARRIED_TO",
    "AM_NAME",
    "AM_NOT",
    "AM_STATUS",
    "ANYMORE",
    "CANNOT_STAND",
    "CLAUSE_START",
    "DISLIKE",
    "DULL",
    "ENTITY_ATTRIBUTES",
    "EVENT_FUTURE",
    "EVENT_HAVE",
    "EVENT_PAST",
    "EVENT_STRONG",
    "EVENT_WILL",
    "FACT_KINDS",
    "FAVOURITE",
    "FAVOURITE_REV",
    "FIRED",
    "GERUND",
    "GOT_STATUS",
    "HAS",
    "HAVE_COUNT",
    "HEDGE",
    "HOBBIES",
    "HOME",
    "INTRANSITIVE",
    "MOVED",
    "MY_NAME",
    "MY_REL",
    "MY_REL_IS",
    "MY_REL_NAME",
    "NAME_IS_MY_REL",
    "NEW_JOB",
    "NOT_A_ROLE",
    "NOT_FAN",
    "NOT_REAL",
    "NO_LONGER",
    "NP_START",
    "OPEN_NP",
    "PLURAL",
    "POSITIVE",
    "PREFERENCE_SPLIT",
    "PRESENT",
    "QUIT_JOB",
    "RELATIONS",
    "RELATIVE",
    "REL_ADJ",
    "REL_WORD",
    "RETIRED",
    "SECONDARY",
    "SKIP_PREFIX",
    "STARTED_WORK",
    "STOPPED",
    "SUBJECTLESS",
    "TURNED",
    "UNDATED_STOP",
    "USED_TO",
    "FactKind",
]

FactKind = Literal["fact", "preference", "relation", "event"]
FACT_KINDS: frozenset[str] = frozenset({"fact", "preference", "relation", "event"})


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# ---------------------------------------------------------------- vocabularies

_ADV = (
    r"(?:(?:really|also|just|actually|absolutely|totally|truly|still|now|currently|mostly|usually|personally|"
    r"definitely|genuinely|honestly|recently|finally|already|even|do|kind\s+of|sort\s+of|kinda|so|very|"
    r"officially|originally|first|both|all|literally|seriously|especially|always|simply)\s+)*"
)
RELATIONS = {
    "mom": "mother", "mum": "mother", "mother": "mother", "mommy": "mother", "mama": "mother",
    "dad": "father", "father": "father", "daddy": "father", "papa": "father", "parents": "parents",
    "sister": "sister", "sisters": "sister", "brother": "brother", "brothers": "brother",
    "sibling": "sibling", "siblings": "sibling", "son": "son", "sons": "son", "daughter": "daughter",
    "daughters": "daughter", "kid": "child", "kids": "child", "child": "child", "children": "child",
    "husband": "husband", "hubby": "husband", "wife": "wife", "partner": "partner", "spouse": "spouse",
    "boyfriend": "boyfriend", "girlfriend": "girlfriend", "fiance": "fiance", "fiancé": "fiance",
    "fiancee": "fiance", "fiancée": "fiance", "grandma": "grandmother", "grandmother": "grandmother",
    "granny": "grandmother", "nana": "grandmother", "grandpa": "grandfather", "grandfather": "grandfather",
    "granddad": "grandfather", "grandad": "grandfather", "grandson": "grandson",
    "granddaughter": "granddaughter", "grandkids": "grandchild", "grandchildren": "grandchild",
    "aunt": "aunt", "uncle": "uncle", "cousin": "cousin", "cousins": "cousin", "niece": "niece",
    "nephew": "nephew", "friend": "friend", "friends": "friend", "bff": "best friend", "buddy": "friend",
    "boss": "boss", "manager": "manager", "coworker": "colleague", "co-worker": "colleague",
    "colleague": "colleague", "colleagues": "colleague", "roommate": "roommate", "flatmate": "roommate",
    "neighbor": "neighbour", "neighbour": "neighbour", "mentor": "mentor", "teacher": "teacher",
    "therapist": "therapist", "coach": "coach", "dog": "dog", "dogs": "dog", "puppy": "dog",
    "puppies": "dog", "pup": "dog", "pups": "dog", "cat": "cat", "cats": "cat", "kitten": "cat", "kitty": "cat",
    "pet": "pet", "pets": "pet", "horse": "horse", "bird": "bird", "parrot": "parrot", "hamster": "hamster",
    "rabbit": "rabbit", "bunny": "rabbit", "turtle": "turtle", "turtles": "turtle", "snake": "snake",
    "guinea pig": "guinea pig",
}  # fmt: skip
# Relations whose mere mention ("my husband", "my kids") says the speaker has one.
HAS = word_set("husband wife partner spouse boyfriend girlfriend fiance son daughter child sister brother")
HAS |= word_set("grandchild grandson granddaughter dog cat pet horse bird parrot hamster rabbit turtle snake")
PLURAL = {"child": "children", "grandchild": "grandchildren", "guinea pig": "guinea pigs"}
_REL = "(?P<r>" + "|".join(sorted((re.escape(k) for k in RELATIONS), key=len, reverse=True)) + ")"
_REL_ADJ = (
    r"(?:(?:older|younger|little|big|baby|twin|oldest|youngest|eldest|dear|beloved|new|old|lovely|"
    r"amazing|sweet|awesome|wonderful|two|three|four|\d|best|close|good|childhood|furry)\s+)*"
)
_COUNT_ADJ = (
    r"(?:(?:new|little|young|younger|older|old|grown|adult|small|big|beautiful|lovely|wonderful|amazing|"
    r"cute|adorable|adopted|rescue|twin|baby|teenage|furry|awesome|sweet|grown-up)\s+)*"
)
_IDENTITY = (
    r"(?P<adj>vegan|vegetarian|pescatarian|pregnant|retired|transgender|trans|gay|lesbian|bisexual|queer|"
    r"non-?binary|autistic|diabetic|left-handed|right-handed|unemployed|self-employed|christian|catholic|"
    r"muslim|jewish|buddhist|hindu|atheist|agnostic|introverted|extroverted|an?\s+introvert|an?\s+extrovert)"
)
_STATUS = r"(?P<status>married|single|divorced|engaged|widowed|separated)"
NOT_A_ROLE = word_set(
    "bit little lot tad part kind sort type mess wreck sucker bundle ball work fan believer firm huge big total "
    "real good great bad terrible lucky hard fast slow quick long whole nervous pro natural one couple few "
    "number strong true mix combination"
)
DULL = word_set(
    "great good fun blast lot amazing wonderful nice rough hard tough bad terrible awesome incredible fantastic "
    "best time chance feeling idea thought talk conversation moment day week lovely crazy busy wild really so "
    "such sense kick laugh feeling"
)


# ---------------------------------------------------------------- predicates after "I" / "I am"

ENTITY_ATTRIBUTES = frozenset({"lives in", "works at", "studies at", "from"})
# Predicates after "I" (present tense) or "I am" (copula / progressive); "v" is the value.
PRESENT: tuple[tuple[re.Pattern[str], str, FactKind, float], ...] = tuple(
    (_rx(p), attribute, kind, confidence)  # type: ignore[misc]
    for p, attribute, kind, confidence in (
        (r"^(?:live|am\s+living|reside|living|residing)\s+in\s+(?P<v>.+)", "lives in", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+(?:at|for)\s+(?P<v>.+)", "works at", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+as\s+(?P<v>.+)", "works as", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+in\s+(?P<v>.+)", "works in", "fact", 0.7),
        (r"^(?:study|am\s+studying|studying)\s+at\s+(?P<v>.+)", "studies at", "fact", 0.8),
        (r"^(?:study|am\s+studying|studying|(?:am\s+)?majoring\s+in|major\s+in)\s+(?P<v>.+)", "studies", "fact", 0.75),
        (r"^(?:teach|am\s+teaching|teaching)\s+(?P<v>.+)", "teaches", "fact", 0.7),
        (r"^(?:play|playing)\s+(?P<v>.+)", "plays", "fact", 0.65),
        (r"^(?:go|going)\s+to\s+(?P<v>.+)", "goes to", "fact", 0.55),
        (r"^(?:love|loving|adore)\s+(?P<v>.+)", "likes", "preference", 0.8),
        (r"^(?:like|liking|enjoy|enjoying)\s+(?P<v>.+)", "likes", "preference", 0.75),
        (r"^(?:prefer|preferring)\s+(?P<v>.+)", "prefers", "preference", 0.75),
        (r"^(?:hate|hating|detest|loathe)\s+(?P<v>.+)", "dislikes", "preference", 0.8),
        (r"^(?:dislike|disliking)\s+(?P<v>.+)", "dislikes", "preference", 0.75),
        (r"^(?:am\s+|be\s+)?(?:originally\s+)?from\s+(?P<v>.+)", "from", "fact", 0.8),
        (r"^(?:am|be)\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+|real\s+)?fan\s+of\s+(?P<v>.+)",
         "likes", "preference", 0.75),
        (r"^(?:am|be)\s+an?\s+(?:big\s+|huge\s+|massive\s+|total\s+|real\s+|die-hard\s+)?"
         r"(?P<v>[\w'-]+(?:\s+[\w'-]+){0,2})\s+fan\s*$", "likes", "preference", 0.75),
        (r"^(?:am|be)\s+(?:really\s+|so\s+|very\s+)?(?:into|passionate\s+about|obsessed\s+with|crazy\s+about)"
         r"\s+(?P<v>.+)", "likes", "preference", 0.7),
        (r"^(?:am|be)\s+(?:really\s+|very\s+|so\s+)?(?:interested\s+in|keen\s+on)\s+(?P<v>.+)",
         "interested in", "preference", 0.65),
        (r"^(?:am|be)\s+allergic\s+to\s+(?P<v>.+)", "allergic to", "fact", 0.8),
    )
)  # fmt: skip
AM_A = _rx(r"^(?:am|be)\s+(?:a|an)\s+(?P<v>.+)")
AM_IDENTITY = _rx(rf"^(?:am|be)\s+{_IDENTITY}\s*$")
AM_STATUS = _rx(rf"^(?:am|be)\s+(?:happily\s+)?{_STATUS}\s*$")
AM_MARRIED_TO = _rx(r"^(?:am|be)\s+(?:happily\s+)?(?P<rel>married|engaged)\s+to\s+(?P<n>\S+(?:\s+\S+)?)")
AM_AGE = _rx(r"^am\s+(?P<n>\d{1,3})(?P<yo>\s+years?\s+old|\s*yo)?\s*$")
AM_NAME = _rx(r"^am\s+(?-i:(?P<n>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))\s*$")
PREFERENCE_SPLIT = re.compile(r"\s+(?:and|or)\s+", re.IGNORECASE)
SECONDARY = {"works at": ("as", "works as"), "works as": ("at", "works at"), "studies": ("at", "studies at")}
GERUND = {
    "playing": "play", "living": "live", "working": "work", "studying": "study", "going": "go",
    "liking": "like", "loving": "love", "enjoying": "enjoy", "teaching": "teach",
}  # fmt: skip


# Clause rules: patterns on a clause that starts at its subject ("I …", or "we …" where noted).
_S = r"^(?P<subj>I|we)\s+"
_I = r"^(?P<subj>I)\s+"
_HAVE = r"(?:have\s+|had\s+)?"
NO_LONGER = _rx(_I + r"(?P<am>am\s+)?no\s+longer\s+" + _ADV + r"(?P<rest>.+)")
ANYMORE = _rx(_I + r"(?P<aux>do|did|am)\s+not\s+" + _ADV + r"(?P<rest>.+?)\s+any\s?more\b")
USED_TO = _rx(_I + r"used\s+to\s+(?P<be>be\s+)?(?P<rest>.+)")
STOPPED = _rx(_I + _HAVE + _ADV + r"(?:stopped|quit|gave\s+up)\s+(?P<rest>.+)")
QUIT_JOB = _rx(
    _I + _HAVE + _ADV + r"(?:quit|left|lost)\s+my\s+(?:\w+\s+)?job(?:\s+(?:at|with)\s+(?P<v>.+)|\s+as\s+(?P<role>.+))?"
)
FIRED = _rx(_I + _HAVE + _ADV + r"(?:got|was|been)\s+(?:fired|laid\s+off|let\s+go)(?:\s+(?:from|at|by)\s+(?P<v>.+))?")
DISLIKE = _rx(_I + r"(?:do\s+not|never)\s+" + _ADV + r"(?:like|love|enjoy)\s+(?P<v>.+)")
CANNOT_STAND = _rx(_I + r"(?:cannot|can\s+not)\s+" + _ADV + r"(?:stand|bear)\s+(?P<v>.+)")
NOT_FAN = _rx(_I + r"am\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(?P<v>.+)")
AM_NOT = _rx(_I + r"am\s+not\s+(?P<rest>(?:a|an)\s+.+|" + _IDENTITY + r"\s*$|" + _STATUS + r"\s*$)")
MOVED = _rx(_S + _HAVE + _ADV + r"(?:moved|relocated)\s+(?:back\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<v>.+)")
NEW_JOB = _rx(
    _I + r"(?:have\s+)?" + _ADV + r"(?:got|landed|started|accepted|took)\s+(?:a\s+|my\s+|the\s+)?(?:new\s+|first\s+)?"
    r"(?:job|position|role)\s+(?P<prep>at|with|as)\s+(?P<v>.+)"
)
STARTED_WORK = _rx(_I + _HAVE + _ADV + r"(?:started|began)\s+working\s+(?P<prep>at|for|as)\s+(?P<v>.+)")
GOT_STATUS = _rx(_S + _HAVE + _ADV + r"got\s+(?P<status>married|engaged|divorced)\b")
TURNED = _rx(_I + _ADV + r"turned\s+(?P<n>\d{1,3})\b")
RETIRED = _rx(_I + _HAVE + _ADV + r"retired\b")
HAVE_COUNT = _rx(
    _S + r"(?:have|have\s+got|own|got)\s+" + _ADV
    + r"(?P<c>\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+" + _COUNT_ADJ + _REL
    + r"(?=\s*$|\s+(?:named|called|and|who|that|which|too|as\s+well|now|already|at|from|in|last|this|yesterday|"
    r"recently|a\s+few|a\s+couple|two|three|\d)\b)(?:\s+(?:named|called)\s+(?P<names>.+))?"
)  # fmt: skip
POSITIVE = _rx(_I + _ADV + r"(?P<rest>.+)")
EVENT_STRONG = (
    r"went\s+to|attended|visited|graduated\s+from|adopted|travel?led\s+to|flew\s+to|volunteered\s+(?:at|for|with)|"
    r"participated\s+in|took\s+part\s+in|competed\s+in|signed\s+up\s+for|joined|been\s+to"
)
_EVENT_WEAK = (
    r"went(?:\s+on|\s+for|\s+out)?|started|began|finished(?:\s+up)?|completed|ran|hosted|organi[sz]ed|volunteered|"
    r"drove\s+to|took|painted|met(?:\s+up)?\s+with|met|bought|won|celebrated|performed(?:\s+(?:at|in))?|gave|made|"
    r"got\s+back\s+from|came\s+back\s+from|returned\s+from|saw|watched|read|wrote|baked|cooked|built|launched|"
    r"published|received|passed|threw|planted|tried(?:\s+out)?|checked\s+out|learned|learnt|climbed|hiked|"
    r"went\s+back\s+to|donated|graduated|competed|picked\s+up|set\s+up|opened|created|released|played(?:\s+(?:in|at))?|"
    r"got(?=\s+(?:a|an|my|our|some|new|the)\s)|had(?=\s+(?:a|an|my|our|some|the)\s)"
)
EVENT_PAST = _rx(_S + _HAVE + _ADV + r"(?P<verb>" + EVENT_STRONG + "|" + _EVENT_WEAK + r")\b\s*(?P<v>.*)")
SUBJECTLESS = _rx(
    r"^(?:just\s+|also\s+|finally\s+|recently\s+)?(?:"
    + EVENT_STRONG
    + "|"
    + _EVENT_WEAK
    + r"|(?:quit|lost)\s+my\s+job)\b"
)
EVENT_FUTURE = _rx(
    _S + r"(?:am|are|will\s+be)\s+" + _ADV + r"(?P<verb>going\s+to|planning\s+(?:to|on)|thinking\s+(?:about|of)|"
    r"hoping\s+to|about\s+to|getting\s+ready\s+for|preparing\s+for|moving\s+to|travel?ling\s+to|flying\s+to|"
    r"heading\s+to|having|hosting|attending|organi[sz]ing|celebrating|running|performing(?:\s+(?:at|in))?|taking|"
    r"starting|visiting|leaving\s+for|meeting|joining|throwing|launching|opening|competing\s+in|playing|holding|"
    r"going)\s+(?P<v>.+)"
)
EVENT_WILL = _rx(
    _S + r"will\s+" + _ADV + r"(?P<verb>go|visit|start|begin|attend|travel|fly|move|join|graduate|take|meet|"
    r"celebrate|run|host|perform|compete|launch|finish|have|get|see|try|open|release|throw|hold|speak|present|"
    r"teach|play|leave)\s+(?P<v>.+)"
)
EVENT_HAVE = _rx(_S + r"(?:have|has)\s+(?:a|an|my|our)\s+(?P<v>.+)")
INTRANSITIVE = word_set("graduated hiked ran climbed volunteered performed baked cooked competed")
UNDATED_STOP = _rx(r"^(?:bed|sleep|the\s+bathroom|the\s+toilet)\b")

# Sentence-level rules (not anchored at a subject).
_NAME_WORDS = r"(?P<n>\S+(?:\s+\S+)?)"
MY_NAME = _rx(r"\b(?:my\s+name\s+is|my\s+name's|(?<!not\s)call\s+me|I\s+am\s+called)\s+" + _NAME_WORDS)
FAVOURITE = _rx(
    r"\bmy\s+(?:all-time\s+|absolute\s+|personal\s+|very\s+)?fav(?:ou?rite|e)\s+(?P<x>[\w' -]{2,30}?)\s+"
    r"(?:is|are|has\s+to\s+be|would\s+(?:have\s+to\s+)?be)\s+(?:definitely\s+|probably\s+|still\s+)?(?P<v>.+)"
)
FAVOURITE_REV = _rx(
    r"^(?P<v>[\w' -]{2,40}?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+|still\s+)?my\s+(?:all-time\s+|absolute\s+)?"
    r"fav(?:ou?rite|e)(?:\s+(?P<x>[\w' -]{2,30}))?\s*$"
)
HOBBIES = _rx(r"\bmy\s+(?:favou?rite\s+)?hobb(?:y\s+is|ies\s+are|ies\s+include)\s+(?P<v>.+)")
_NAME_LIST = r"(?P<n>\S+(?:\s+(?:and\s+)?\S+){0,2})"
MY_REL_NAME = _rx(
    r"\b(?P<own>my|our)\s+"
    + _REL_ADJ
    + r"(?P<ex>ex-?)?"
    + _REL
    + r"(?P<comma>,)?\s+(?:(?:named|called)\s+)?"
    + _NAME_LIST
)
MY_REL_IS = _rx(r"\b(?P<own>my|our)\s+" + _REL_ADJ + _REL + r"(?:'s\s+name)?\s+is\s+" + _NAME_WORDS)
NAME_IS_MY_REL = _rx(
    r"(?:^|[\s,])(?P<n>[^\W\d_][\w'-]*)(?:,|\s+is)\s+(?P<own>my|our)\s+" + _REL_ADJ + _REL + r"\b(?!')"
)
_NOT_COMPOUND = (  # "my horse painting", "my dog food": not a relation
    r"\b(?!-)(?!\s+(?:\w+ing|food|toys?|bed|show|sitter|walker|park|breed|collar|leash|house|hair|print|lovers?|"
    r"person|people|owners?|costume|portrait|sculpture|figurine|mug|tattoo|shirt|group|chat|night|time|day|trip|"
    r"stuff|life)\b)"
)
MY_REL = _rx(  # "my husband and kids": the possessive covers both
    r"\bmy\s+" + _REL_ADJ + _REL + _NOT_COMPOUND
    + r"(?:\s+(?:and|&)\s+" + _REL_ADJ + _REL.replace("?P<r>", "?P<r2>") + _NOT_COMPOUND + ")?"
)  # fmt: skip
NOT_REAL = _rx(r"\b(?:if|wish|someday|one\s+day|future|dream|imagine|ex|late|former|would)\b")
HOME = _rx(r"\bmy\s+home\s*(?:country|town)(?:,|\s+is|\s+of)?\s+" + _NAME_WORDS)
SKIP_PREFIX = _rx(
    r"\b(?:if|unless|whether|wish|wished|suppose|imagine|pretend|dream|dreamed|dreamt|not|never|no|nobody|"
    r"nothing|neither|nor|cannot|hardly|barely|said|says|told|tells|asked|ask|thought|think|wonder|what|"
    r"would|could|should|might)\b"
)
RELATIVE = _rx(
    r"(?:\b(?:the|this|that|these|those|a|an|my|your|our|his|her|their|some|every|any|each)\s+(?:\S+\s+){1,3}|"
    r"\b(?:something|anything|everything|nothing|someone|anyone|everyone|whatever|what|stuff|things?|ones?)\s+)$"
)
HEDGE = _rx(r"\b(?:maybe|perhaps|probably|guess|suppose|believe|like|kinda|sort\s+of|kind\s+of)\b")
CLAUSE_START = _rx(r"[,;:&]|\s[-–—]+\s|\b(?:and|but|so|because|then|also|plus|or)\b")
OPEN_NP = _rx(r"\b(?:a|an)\s+\S+$")
NP_START = _rx(r"^,\s*(?:a|an|the|my|our|his|her|their|this|that|some|I|we|you|he|she|they|it|and|or|but|so)\b")

REL_WORD = _REL  # a relation word ("mom", "dog"), group "r"
REL_ADJ = _REL_ADJ  # the adjectives a relation word may take ("my late dog", "our old cat")
