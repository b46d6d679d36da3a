"""What a line of conversation is, and how to say it back: the offline responder's rules.

Seed: cognitive-plan §3.4 (every input goes through one pipeline; offline, System 1 answers from
memory); issue 28 item 8 (the offline agent quoted the user's question back as its answer).

* :func:`is_question`: whether a text asks something, decided offline from its form: a question
  mark, an interrogative opening ("what is ...", "which car do ..."), auxiliary inversion ("do I
  ...", "is my sister ..."), or a request for information ("tell me ...", "remind me ...").
  A text that asks anything in any of its sentences is a question: quoting it would quote one.
* :func:`told`: the statement inside "remember that ...", "note: ...", "FYI, ...".
* :func:`second_person`: the user's statement from the listener's side ("I am" -> "you are",
  "my" -> "your"), or None when that is not simple (the text already says "you").
* :func:`acknowledgement` ("Noted: you are allergic to peanuts.") and :func:`recital`
  ("From memory: you are allergic to peanuts."): the restatement, or the user's own words quoted
  when no simple restatement exists.

Conservative by design: a text it cannot restate is quoted, never rewritten into something the
user did not say. Pure functions; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["acknowledgement", "is_question", "recital", "second_person", "told"]

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_QUESTION_MARK = re.compile(r"[?？](?=[\s\"'”’)\]!?.]|$)")

WH = frozenset({"what", "who", "whom", "whose", "where", "when", "why", "how", "which"})
_WH_CONTRACTED = frozenset({
    "what's", "whats", "who's", "whos", "where's", "wheres", "when's", "why's", "how's", "hows", "what're",
    "who're", "where're", "how're",
})  # fmt: skip
AUX = frozenset({
    "am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "can", "could", "will", "would",
    "shall", "should", "may", "might", "must", "isn't", "aren't", "wasn't", "weren't", "don't", "doesn't",
    "didn't", "haven't", "hasn't", "hadn't", "can't", "couldn't", "won't", "wouldn't", "shouldn't",
})  # fmt: skip
"""Auxiliaries and modals: the verbs a question puts before its subject."""
SUBJECTS = frozenset({
    "i", "you", "we", "they", "he", "she", "it", "there", "my", "your", "our", "their", "his", "her", "its",
    "the", "a", "an", "this", "that", "these", "those", "any", "anyone", "anybody", "anything", "someone",
    "somebody", "something", "everyone", "everybody", "everything", "one",
})  # fmt: skip
"""Words that open a subject: after an auxiliary they make a question ("is my ..."); after a
wh-word they make a clause ("when I was young ...", "what my sister likes ...")."""
_ASKING = re.compile(
    r"^(?:please\s+)?(?:tell\s+me|remind\s+me|i\s+wonder|i\s+want\s+to\s+know|i['’]?d\s+like\s+to\s+know|"
    r"i\s+would\s+like\s+to\s+know|what\s+about|how\s+about|how\s+come)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(r"^(?:(?:so|and|but|hey|hi|ok|okay|well|oh|um|also|then|now|please)\b[\s,]*)+", re.IGNORECASE)
_TOLD = re.compile(
    r"^(?:(?:please|pls)\s+)?(?:"
    r"(?:(?:do\s+)?remember|note|keep\s+in\s+mind|don['’]?t\s+forget|never\s+forget|make\s+a\s+note)"
    r"(?:\s+that\b|\s*[:,\-–]|(?=\s+(?:i|i['’]m|my|me|we|our)\b))"
    r"|(?:fyi|for\s+the\s+record|just\s+so\s+you\s+know|by\s+the\s+way|btw)(?:\s*[:,\-–]|\b)"
    r")\s*",
    re.IGNORECASE,
)
_SECOND = re.compile(r"\b(?:you|your|yours|yourself|yourselves|you['’](?:re|ve|ll|d)|u|ur)\b", re.IGNORECASE)
_SWAP = {
    "i": "you", "i'm": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd", "me": "you", "my": "your",
    "mine": "yours", "myself": "yourself", "we": "you", "we're": "you're", "we've": "you've", "we'll": "you'll",
    "we'd": "you'd", "our": "your", "ours": "yours", "ourselves": "yourselves",
}  # fmt: skip
"""First person to second, by word; ``us`` only in lower case (``US`` is a country)."""
_LOWER_FIRST = frozenset({
    *_SWAP.values(), *WH, "the", "a", "an", "this", "that", "these", "those", "there", "it", "when", "since", "after",
    "before", "last", "every", "on", "in", "at", "for", "from", "as", "if", "because", "while", "once", "both",
    "all", "some", "most", "many", "one", "two", "three", "yesterday", "today", "tomorrow", "tonight",
})  # fmt: skip
"""Opening words that are not names: lower-cased after "Noted: " / "From memory: "."""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text) if s.strip()]


def _asks(sentence: str) -> bool:
    """Whether one sentence (without looking at its question mark) is interrogative in form."""
    sentence = _FILLER.sub("", sentence.strip(" \t\"'“”‘’([-–—*"))
    if _ASKING.match(sentence):
        return True
    words = _WORD.findall(sentence)
    if not words:
        return False
    first = words[0].lower().replace("’", "'")
    if first in _WH_CONTRACTED:
        return True
    if first in WH:
        for word in words[1:5]:  # "which car do ...", "how old am ...", "what kind of car do ..."
            low = word.lower().replace("’", "'")
            if low in AUX:
                return True
            if low in SUBJECTS or low in _SWAP or word[:1].isupper():
                return False  # a clause: "when I was young", "what my sister likes", "where Lena lives"
        return False
    if first in AUX and len(words) > 1:
        second = words[1]
        if first in ("have", "has", "had") and second.lower() in ("a", "an"):
            return False  # "have a nice day"
        return second.lower() in SUBJECTS or second[:1].isupper()
    return False


def is_question(text: str) -> bool:
    """Whether ``text`` asks anything: a question mark ending a sentence, an interrogative opening,
    auxiliary inversion or a request for information, in any of its sentences."""
    if not isinstance(text, str):
        return False
    if _QUESTION_MARK.search(text):
        return True
    return any(_asks(sentence) for sentence in _sentences(text))


def told(text: str) -> str:
    """The statement itself: "Remember that my dog is Pixel." -> "my dog is Pixel."."""
    stripped = text.strip()
    rest = _TOLD.sub("", stripped, count=1).strip()
    return rest if _WORD.search(rest) else stripped


def second_person(text: str) -> str | None:
    """``text`` from the listener's side: first person becomes second ("I am allergic" -> "you are
    allergic", "my dog" -> "your dog", "Lena and I were" -> "Lena and you were"); None when the
    text already addresses "you" (swapping both ways is not simple, so it is left to quoting)."""
    if _SECOND.search(text):
        return None
    words = list(_WORD.finditer(text))
    out: list[str] = []
    last = 0
    for index, match in enumerate(words):
        word = match.group()
        low = word.lower().replace("’", "'")
        new = word
        swapped = "you" if word == "us" else _SWAP.get(low) if low != "us" else None
        if swapped is not None:
            new = swapped.replace("'", "’") if "’" in word else swapped
            if _opens_sentence(text, match.start()) if low in _FIRST_I else word[:1].isupper():
                new = new[:1].upper() + new[1:]
        elif low in _BE and _after_i(words, index):
            new = _BE[low].replace("'", "’") if "’" in word else _BE[low]
        out.append(text[last : match.start()] + new)
        last = match.end()
    out.append(text[last:])
    return "".join(out)


_FIRST_I = frozenset({"i", "i'm", "i've", "i'll", "i'd"})
_BE = {"am": "are", "was": "were", "wasn't": "weren't"}
"""The forms of "to be" that change with the subject ("I am" -> "you are"); "am" alone is also a time."""
_ADVERBS = frozenset({"really", "also", "still", "never", "always", "just", "already", "once", "too", "not", "then"})


def _after_i(words: list[re.Match[str]], index: int, reach: int = 2) -> bool:
    """Whether word ``index`` follows a standalone "I", with at most ``reach - 1`` adverbs between."""
    for back in range(1, reach + 1):
        if index - back < 0:
            return False
        word = words[index - back].group()
        if word in ("I", "i"):
            return True
        if word.lower() not in _ADVERBS:
            return False
    return False


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'“‘([")
    return not before or before[-1] in ".!?;:\n"


def _restated(text: str) -> str:
    core = told(text).rstrip(" \t\n.!;,:")
    if not core:
        return '""'
    turned = second_person(core)
    if turned is None:
        return f'you said "{core}."'
    first = _WORD.match(turned)
    if first is not None and first.group().lower().replace("’", "'") in _LOWER_FIRST:
        turned = turned[:1].lower() + turned[1:]
    return turned + "."


def acknowledgement(text: str) -> str:
    """What the agent says to a statement it was told: "I am allergic to peanuts." -> "Noted: you are
    allergic to peanuts."; the user's words quoted when they cannot simply be restated."""
    return f"Noted: {_restated(text)}"


def recital(text: str) -> str:
    """How the agent answers with a statement it remembers: "From memory: you are allergic to
    peanuts." (a third-person memory stays as it is: "From memory: Maya's bike is red.")."""
    return f"From memory: {_restated(text)}"
