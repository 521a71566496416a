"""What a question asks for, pure: the people it names and the kind of answer it wants (its cues), matched
against a candidate memory's people (its `speaker`, `author` and `people` properties) and text.

A question naming a person favours the memories by or about that person over the ones that merely mention
or address them; a "when" question favours the memories holding a time expression. Each cue a candidate meets
closes a share of what its score lacks of 1, and the why-line names it (ranking, never filtering).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import msgspec

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
_AUX = r"(?:do|does|did|has|have|had|is|are|was|were|can|could|would|will|should)\b"
# a question asking for several things, which its memories may tell in different sessions or notes: a plural
# thing asked about ("What activities does…", "Which cities has…", "In what ways is…", "What musical artists
# has…"), kinds of it ("What types of pottery…"), or "both", "how many", "what are some"
_PLURAL = rf"(?!{_AUX})[a-z][\w/'-]*[^s\W]s"  # "activities", "artists/bands"; not "class", "was"
_MANY = re.compile(
    r"^\W*(?:in\s+)?(?:what|which)\s+(?:(?:kinds|types|sorts)\s+of\b"
    rf"|(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?:(?!{_AUX})[\w+/'-]+\s+){{0,2}}?{_PLURAL}\s+{_AUX})"
    r"|\bboth\b|\bhow many\b|^\W*what are some\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:/\d+)?")


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """What a query asks for: the people it names (lower-cased, as the memories' properties spell them),
    whether it asks when, whether it asks what may be inferred rather than what was said, and whether it asks for
    several things."""

    people: frozenset[str] = frozenset()
    when: bool = False
    infers: bool = False
    many: bool = False  # it asks for several things, which may lie in different sessions


@lru_cache(maxsize=4096)
def person_name(value: str) -> str:
    """A person as a property holds them, plain: `[[Ines Marlow|Ines]]` → `Ines Marlow`."""
    value = value.strip()
    if value.startswith("[[") and value.endswith("]]"):
        value = value[2:-2].split("|", 1)[0].split("#", 1)[0]
    return " ".join(value.split())


def people_in(values: Iterable[Any]) -> tuple[str, ...]:
    """The people named by property values (each a name, a link to a person note, or a list of them)."""
    out: list[str] = []
    for value in values:
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and (name := person_name(v)):
                out.append(name)
    return tuple(dict.fromkeys(out))


def asked(query: str, people: Iterable[str]) -> Asked:
    """The cues of a query, given the people the candidates are by or about: a person counts as named when
    the query holds their whole name or their first name, as whole words, in any case."""
    named = frozenset(p.lower() for p in people if _named_in(p).search(query))
    return Asked(people=named, when=bool(_WHEN.search(query)), infers=bool(_INFERS.search(query)),
                 many=bool(_MANY.search(query)))


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
    time: bool = False


def match(asked: Asked, people: Iterable[str], text: str) -> Match:
    """How a candidate (by or about `people`, saying `text`) meets what the query asks for."""
    person = next((p for p in people if p.lower() in asked.people), "") if asked.people else ""
    return Match(person=person, time=asked.when and holds_time(text))


def cue_signals(m: Match, person: float, when: float) -> dict[str, float]:
    """The signals a match adds, each the share of what the score lacks of 1 that it closes: `person` for a
    memory by or about a person the query names, `time` for one holding a time when the query asks when."""
    out = {}
    if m.person and person > 0:
        out["person"] = person
    if m.time and when > 0:
        out["time"] = when
    return out


def raised(score: float, met: dict[str, float]) -> float:
    """A score raised by the cues a candidate met: each closes its share of the way left to 1, so the score
    stays in [0, 1] and a weak match gains more than a strong one."""
    for share in met.values():
        score += (1.0 - score) * share
    return score


def phrases(m: Match, met: dict[str, float]) -> list[str]:
    """The why-line's words for the cues a candidate met."""
    out = []
    if "person" in met:
        out.append(f"by or about {m.person}, whom the query names")
    if "time" in met:
        out.append("holds a time, as the query asks when")
    return out
