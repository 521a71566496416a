"""What a question asks for, pure: the people it names and the kind of answer it wants (its cues), matched
against a candidate memory's people (its `speaker`, `author` and `people` properties) and text.

A question naming a person favours the memories by or about that person over the ones that merely mention
or address them; a "when" question favours the memories holding a time expression; a query naming a time
("in May 2023", "on 9 December 2023", "yesterday") favours the memories written then. Each cue a candidate meets
closes a share of what its score lacks of 1 (`signals.Cued`), and the why-line names it (ranking, never
filtering).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

import msgspec

from vault_cortex.files.links import wikilink

PEOPLE_PROPERTIES = ("speaker", "author", "people")  # the properties naming whom a memory is by or about

# a question asking what may be inferred ("Would she…?", "What might…", "…likely…"), not a request ("Could you…")
_INFERS = re.compile(r"^\W*(?:would|could|might)\b(?! you\b)|\b(?:might|likely|probably|possibly)\b", re.IGNORECASE)
_WHEN = re.compile(r"\b(?:when|since when|what (?:year|month|day|date|time)|how long ago)\b", re.IGNORECASE)
_MONTHS = "January February March April May June July August September October November December".split()
_MONTH = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\b")  # capitalised: "May", not "may"
_TIME_WORDS = frozenset("""yesterday today tonight tomorrow recently lately ago weekend weekends monday tuesday
    wednesday thursday friday saturday sunday""".split())
_RELATIVE = frozenset("last next this past".split())
_SPANS = frozenset("week month year night morning evening summer winter spring autumn fall".split())
_SPAN = re.compile(rf"\b(?:{'|'.join(_RELATIVE)}) (?:{'|'.join(_SPANS)})\b")
_WORDS = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"\d+(?:/\d+)?")
# the times a query names: a day ("9 December 2023", "December 9th, 2023", "2023-12-09"), a month of a year
# ("May 2023"), a month after a preposition ("in July": that month of any year; "May I…" names none), a year
# after one ("in 2023"), and a few relative to today ("yesterday", "last week", "this month")
_MONTH_NUMBER = {m.lower(): i for i, m in enumerate(_MONTHS, 1)}
_MONTH_NAME = "(" + "|".join(_MONTHS) + ")"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH_NAME},? ((?:19|20)\d\d)\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH_NAME} (\d{{1,2}})(?:st|nd|rd|th)?,? ((?:19|20)\d\d)\b")
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH_NAME},? ((?:19|20)\d\d)\b")
_IN_MONTH = re.compile(rf"\b(?:in|on|during|throughout|through|of|early|late|mid)[ -]{_MONTH_NAME}\b", re.IGNORECASE)
_IN_YEAR = re.compile(r"\b(?:in|during|throughout|through|of)(?: the year)? ((?:19|20)\d\d)\b(?![-/]\d)",
                      re.IGNORECASE)
_RELATIVE_TIME = re.compile(r"\b(yesterday|today|(?:last|this) (?:week|month|year))\b", re.IGNORECASE)


class Period(msgspec.Struct, frozen=True, kw_only=True):
    """A time a query names: its first and last day, or a month of every year (`month`, no days)."""

    label: str  # as a why-line says it: "on 9 December 2023", "in May 2023", "in July", "yesterday"
    first: date | None = None
    last: date | None = None
    month: int = 0  # a month named without its year: that month of any year

    def holds(self, day: date) -> bool:
        """Whether a memory written on `day` was written in this time."""
        if self.month:
            return day.month == self.month
        return self.first is not None and self.last is not None and self.first <= day <= self.last


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """What a query asks for: the people it names (lower-cased, as the memories' properties spell them),
    whether it asks when, and whether it asks what may be inferred rather than what was said."""

    people: frozenset[str] = frozenset()
    when: bool = False
    infers: bool = False
    periods: tuple[Period, ...] = ()  # the times it names


@lru_cache(maxsize=4096)
def person_name(value: str) -> str:
    """A person as a property holds them, plain: `[[Ines Marlow|Ines]]` → `Ines Marlow`."""
    link = wikilink(value)
    return " ".join((value if link is None else link[0]).split())


def people_in(values: Iterable[Any]) -> tuple[str, ...]:
    """The people named by property values (each a name, a link to a person note, or a list of them)."""
    out: list[str] = []
    for value in values:
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and (name := person_name(v)):
                out.append(name)
    return tuple(dict.fromkeys(out))


def asked(query: str, people: Iterable[str], today: date | None = None) -> Asked:
    """The cues of a query, given the people the candidates are by or about: a person counts as named when
    the query holds their whole name or their first name, as whole words, in any case. Times relative to
    `today` ("yesterday", "last week") are named only when it is given."""
    named = frozenset(p.lower() for p in people if _named_in(p).search(query))
    return Asked(people=named, when=bool(_WHEN.search(query)), infers=bool(_INFERS.search(query)),
                 periods=periods_named(query, today))


def periods_named(query: str, today: date | None = None) -> tuple[Period, ...]:
    """The times a query names, each once, a day before the month and year that hold it (a date's month and
    year are not named again on their own)."""
    out: list[Period] = []
    taken: list[tuple[int, int]] = []  # spans of the query already read as a time

    def add(m: re.Match[str], period: Period | None) -> None:
        if period is not None and not any(a < m.end() and m.start() < b for a, b in taken):
            out.append(period)
            taken.append(m.span())

    for m in _DAY_MONTH_YEAR.finditer(query):
        add(m, _day(int(m[3]), _MONTH_NUMBER[m[2].lower()], int(m[1]), f"on {m[0]}"))
    for m in _MONTH_DAY_YEAR.finditer(query):
        add(m, _day(int(m[3]), _MONTH_NUMBER[m[1].lower()], int(m[2]), f"on {m[0]}"))
    for m in _ISO_DAY.finditer(query):
        add(m, _day(int(m[1]), int(m[2]), int(m[3]), f"on {m[0]}"))
    for m in _MONTH_YEAR.finditer(query):
        year, month = int(m[2]), _MONTH_NUMBER[m[1].lower()]
        add(m, Period(label=f"in {m[0]}", first=date(year, month, 1),
                      last=date(year, month, calendar.monthrange(year, month)[1])))
    for m in _IN_MONTH.finditer(query):
        if m[1] in _MONTHS:  # capitalised, as a month is written
            add(m, Period(label=f"in {m[1]}", month=_MONTH_NUMBER[m[1].lower()]))
    for m in _IN_YEAR.finditer(query):
        add(m, Period(label=f"in {m[1]}", first=date(int(m[1]), 1, 1), last=date(int(m[1]), 12, 31)))
    if today is not None:
        for m in _RELATIVE_TIME.finditer(query):
            add(m, _relative(m[1].lower(), today))
    return tuple(dict.fromkeys(out))


def _day(year: int, month: int, day: int, label: str) -> Period | None:
    try:
        when = date(year, month, day)
    except ValueError:  # "31 February 2023" names no day
        return None
    return Period(label=label, first=when, last=when)


def _relative(words: str, today: date) -> Period:
    """"yesterday", "today", "last week" (Monday to Sunday before this one), "this week" (Monday to today),
    "last month", "this month", "last year", "this year"."""
    if words in ("yesterday", "today"):
        day = today - timedelta(days=1) if words == "yesterday" else today
        return Period(label=words, first=day, last=day)
    which, span = words.split()
    if span == "week":
        first = today - timedelta(days=today.weekday(), weeks=1 if which == "last" else 0)
        last = first + timedelta(days=6)
    elif span == "month":
        first = today.replace(day=1)
        if which == "last":
            first = (first - timedelta(days=1)).replace(day=1)
        last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
    else:
        first = date(today.year - (which == "last"), 1, 1)
        last = first.replace(month=12, day=31)
    return Period(label=words, first=first, last=min(last, today))  # "this …" ends today


@lru_cache(maxsize=1024)
def _named_in(person: str) -> re.Pattern[str]:
    first = person.split()[0] if " " in person else ""
    names = [person, first] if len(first) > 2 else [person]
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.IGNORECASE)


def holds_time(text: str) -> bool:
    """Whether a text holds a time expression: a year or a date, a month (capitalised: "May", not "may") or a
    weekday, or a relative one ("yesterday", "last week", "two days ago"). It runs on every candidate of a
    "when" question, so a regex runs only where a cheaper test found what it looks for."""
    lower = text.lower()
    words = set(_WORDS.findall(lower))
    if not _TIME_WORDS.isdisjoint(words):
        return True
    if not _RELATIVE.isdisjoint(words) and not _SPANS.isdisjoint(words) and _SPAN.search(lower):
        return True
    if any(m in text for m in _MONTHS) and _MONTH.search(text):
        return True
    return any("/" in n or (len(n) == 4 and n[:2] in ("19", "20")) for n in _NUMBER.findall(text))  # 2026, 18/3


class Match(msgspec.Struct, frozen=True, kw_only=True):
    """How a candidate answers a query's cues: the named person it is by or about, whether it holds a time."""

    person: str = ""  # as the memory's property spells it
    when: bool = False  # holds a time expression, the query asking when
    period: str = ""  # the time the query names that the memory was written in (its label)


def match(asked: Asked, people: Iterable[str], text: str, written: date | None = None) -> Match:
    """How a candidate (by or about `people`, saying `text`, written on the day `written`) meets what the query
    asks for."""
    person = next((p for p in people if p.lower() in asked.people), "") if asked.people else ""
    period = next((p.label for p in asked.periods if p.holds(written)), "") if asked.periods and written else ""
    return Match(person=person, when=asked.when and holds_time(text), period=period)
