"""Time expressions in chat text, resolved to an absolute start and a precision; no LLM.

Seeds: archive-adr §4 (what ingestion extracts is a candidate record with
provenance) and DESIGN §2 "Entity / Fact / Triple" (knowledge carries a
validity interval — a contradicted fact is closed, not deleted): the offline
extractor (:mod:`mnemo.cognition.consolidation.extraction`) dates a candidate with these.

:func:`find_times` finds non-overlapping expressions ("yesterday", "last
week", "three years ago", "5 May 2023", "next month", "on Friday");
:func:`resolve_time` turns one into an absolute start, truncated to its
precision (day, week, month, year), against the turn's time and in the
direction the verb says (a past event or a plan).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

__all__ = [
    "CALENDAR_WORDS",
    "PRECISIONS",
    "Direction",
    "Precision",
    "find_times",
    "first_time",
    "parse_count",
    "resolve_time",
    "strip_times",
]

Precision = Literal["day", "week", "month", "year"]
Direction = Literal["past", "future"]
PRECISIONS: frozenset[str] = frozenset({"day", "week", "month", "year"})

_SPACE = re.compile(r"\s+")

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3, "several": 3,
}  # fmt: skip
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3,
    "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CALENDAR_WORDS = frozenset(list(_MONTHS)[:12]) | frozenset(_WEEKDAYS)
"""The full month and weekday names, lower-cased (abbreviations such as "jan" may be names)."""
_N = (
    r"(?P<n>\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|an?|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve)"
)
# Month names only capitalised ("may" is a verb); weekday names in any case.
_MON = (
    r"(?-i:(?P<mon>January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec))\.?"
)
_WD_NAMES = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
_TIME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(?:on\s+)?(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
        ("dmy", r"\b(?:on\s+)?(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON
                + r",?(?:\s+(?P<y>\d{4}))?\b"),
        ("mdy", r"\b(?:on\s+)?" + _MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b(?!\d)(?:,?\s+(?P<y>\d{4})\b)?"),
        ("my", r"\b(?:in\s+|back\s+in\s+)?" + _MON + r",?\s+(?P<y>\d{4})\b"),
        ("month", r"\b(?P<rel>last|next|this|in|since|back\s+in|early|late|in\s+early|in\s+late)\s+" + _MON
                  + r"(?!\s*\d)"),
        ("year", r"\b(?:in|since|back\s+in|during|around)\s+(?P<y>(?:19|20)\d{2})\b(?!\s*-)"),
        ("ago", r"\b(?:(?:about|around|almost|nearly|over|roughly|like|just|only)\s+)?" + _N
                + r"\s+(?P<u>day|week|month|year)s?\s+ago\b"),
        ("ahead", r"\b(?:in\s+" + _N + r"\s+(?P<u>day|week|month|year)s?|(?P<n2>\d{1,3}|a|an|one|two|three)\s+"
                  r"(?P<u2>day|week|month|year)s?\s+from\s+now)\b"),
        ("rel", r"\b(?P<rel>last|next|this|past|previous|the\s+past|the\s+previous)\s+"
                r"(?P<u>week|month|year|weekend|" + _WD_NAMES + r")\b\.?"),
        ("word", r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|last\s+night|"
                 r"earlier\s+today|this\s+(?:morning|afternoon|evening)|today|tonight|tomorrow|the\s+other\s+day)\b"),
        ("weekday", r"\b(?:on\s+)?(?-i:(?P<wd>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday))\b"),
    )
)  # fmt: skip


def parse_count(text: str) -> int:
    """ "3" -> 3, "three" -> 3, "a couple of" -> 2, "a few" -> 3, "a" -> 1."""
    words = text.lower().split() or ["1"]
    for word in words:
        if word.isdigit():
            return int(word)
    for word in reversed(words):
        if word in _NUMBERS:
            return _NUMBERS[word]
    return 1


def find_times(text: str) -> list[tuple[int, int, str, re.Match[str]]]:
    """Non-overlapping time expressions in ``text`` as (start, end, kind, match), in text order."""
    found = [(m.start(), m.end(), name, m) for name, pattern in _TIME_PATTERNS for m in pattern.finditer(text)]
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    out: list[tuple[int, int, str, re.Match[str]]] = []
    for item in found:
        if not out or item[0] >= out[-1][1]:
            out.append(item)
    return out


def _at(at: datetime, year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=at.tzinfo)
    except ValueError:
        return None


def _midnight(at: datetime, days: int) -> datetime:
    return (at + timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(at: datetime, months: int) -> datetime:
    index = at.year * 12 + at.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=at.tzinfo)


def _shift_years(value: datetime | None, at: datetime, direction: Direction) -> datetime | None:
    """A month/day without a year: the occurrence on the side of ``at`` that ``direction`` says."""
    if value is None:
        return None
    today = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if direction == "past" and value > today:
        return _at(at, value.year - 1, value.month, value.day)
    if direction == "future" and value < today:
        return _at(at, value.year + 1, value.month, value.day)
    return value


def resolve_time(
    kind: str, match: re.Match[str], at: datetime | None, direction: Direction = "past"
) -> tuple[datetime, Precision] | None:
    """The absolute start and precision of a time expression found by :func:`find_times`.

    Relative expressions need ``at`` (the turn's time); ``None`` when it cannot be resolved
    (including dates that fall outside the calendar).
    """
    try:
        return _resolve(kind, match, at, direction)
    except (ValueError, OverflowError, KeyError, StopIteration):
        return None


def _resolve(
    kind: str, match: re.Match[str], at: datetime | None, direction: Direction
) -> tuple[datetime, Precision] | None:
    g = match.groupdict()
    if kind in ("iso", "dmy", "mdy", "my"):
        month = int(g["m"]) if kind == "iso" else _MONTHS[g["mon"].lower()]
        year = int(g["y"]) if g.get("y") else None
        day = int(g["d"]) if g.get("d") else 1
        if year is None and at is None:
            return None
        base = at if at is not None else datetime(2000, 1, 1)
        value = _at(base, year if year is not None else base.year, month, day)
        if year is None and at is not None:
            value = _shift_years(value, at, direction)
        return None if value is None else (value, "month" if kind == "my" else "day")
    if kind == "year":
        return datetime(int(g["y"]), 1, 1, tzinfo=at.tzinfo if at else None), "year"
    if at is None:
        return None
    if kind == "month":
        month = _MONTHS[g["mon"].lower()]
        rel = g["rel"].lower().split()[0]
        year = at.year
        if rel == "last" or (rel in ("in", "since", "back", "early", "late", "this") and direction == "past"):
            year -= int(month > at.month or (rel == "last" and month == at.month))
        elif rel == "next" or direction == "future":
            year += int(month < at.month or (rel == "next" and month == at.month))
        return datetime(year, month, 1, tzinfo=at.tzinfo), "month"
    if kind in ("ago", "ahead"):
        n = parse_count(g.get("n") or g.get("n2") or "1")
        unit = (g.get("u") or g.get("u2") or "day").lower()
        if kind == "ahead" and direction != "future":
            return None  # "in two weeks" after a past verb is a duration, not a date
        sign = -1 if kind == "ago" else 1
        if _wrong_way(sign, direction):
            return None
        if unit == "day":
            return _midnight(at, sign * n), "day"
        if unit == "week":
            return _midnight(at, sign * 7 * n), "week"
        if unit == "month":
            return _month_start(at, sign * n), "month"
        return datetime(at.year + sign * n, 1, 1, tzinfo=at.tzinfo), "year"
    if kind == "rel":
        rel = g["rel"].lower().split()[-1]
        step = {"last": -1, "past": -1, "previous": -1, "next": 1, "this": 0}[rel]
        if _wrong_way(step, direction):
            return None
        unit = g["u"].lower()
        if unit == "week":
            return _midnight(at, 7 * step), "week"
        if unit == "month":
            return _month_start(at, step), "month"
        if unit == "year":
            return datetime(at.year + step, 1, 1, tzinfo=at.tzinfo), "year"
        if unit == "weekend":  # the Saturday of last / this / next week
            return _midnight(at, -at.weekday() + 5 + 7 * step), "week"
        target = next(i for i, name in enumerate(_WEEKDAYS) if name.startswith(unit[:3]))
        return _weekday(at, target, "past" if step < 0 else "future", strict=step != 0), "day"
    if kind == "word":
        word = " ".join(g["w"].lower().split())
        offsets = {"yesterday": -1, "last night": -1, "the day before yesterday": -2, "tomorrow": 1}
        offsets |= {"the day after tomorrow": 2, "the other day": -3}
        if _wrong_way(offsets.get(word, 0), direction):
            return None
        return _midnight(at, offsets.get(word, 0)), "week" if word == "the other day" else "day"
    if kind == "weekday":
        return _weekday(at, _WEEKDAYS.index(g["wd"].lower()), direction, strict=False), "day"
    return None


def _wrong_way(step: int, direction: Direction) -> bool:
    """ "yesterday" cannot date a plan, "next week" cannot date what already happened."""
    return (step < 0 and direction == "future") or (step > 0 and direction == "past")


def _weekday(at: datetime, target: int, direction: Direction, *, strict: bool) -> datetime:
    if direction == "past":
        back = (at.weekday() - target) % 7 or (7 if strict else 0)
        return _midnight(at, -back)
    ahead = (target - at.weekday()) % 7 or (7 if strict else 0)
    return _midnight(at, ahead)


def first_time(text: str, at: datetime | None, direction: Direction) -> tuple[datetime, Precision] | None:
    for _start, _end, kind, match in find_times(text):
        resolved = resolve_time(kind, match, at, direction)
        if resolved is not None:
            return resolved
    return None


def strip_times(text: str) -> str:
    for start, end, _kind, _match in reversed(find_times(text)):
        text = text[:start] + " " + text[end:]
    return _SPACE.sub(" ", text).strip()
