"""Do two notes say the same thing? Pure: two texts in, agree or disagree with the points that decided it.

Similarity only proposes a merge; this check decides it. Two notes agree only when every point that can be
checked in words matches: numbers with their units, dates, negation, reversal and correction words, and
proper names. A merge of a decision with its reversal, or of a measurement with its correction, would make
memory more confidently wrong, so any difference is a disagreement and the plan keeps both notes.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?" \
         r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r"\b(?:,?\s+(\d{4}))?", re.I)
_MONTH_DAY = re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?", re.I)
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:[.,]\d+)*)\s*(%|°[CF]?|[^\W\d_][\w/]*)?", re.UNICODE)
# Words that turn a statement around; one note having more of one than the other is a disagreement.
TURNS = ("no longer", "not", "cannot", "never", "no", "instead", "switched", "switch", "stopped", "anymore",
         "was wrong", "were wrong", "wrong", "corrected", "correction", "actually", "replaced", "reverted",
         "rather than", "cancelled", "canceled", "dropped")
_TURN = re.compile(r"(?<!\w)(" + "|".join(re.escape(t) for t in sorted(TURNS, key=len, reverse=True))
                   + r")(?!\w)|n['’]t(?!\w)", re.I)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_START = re.compile(r"(?:[.!?:;\"“(]|\n[ \t]*(?:[-*+>#]+|\d+[.)])?)[ \t]*$")
UNITLESS = ""


class Agreement(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on two texts, with the points that agree (for a merge) or differ (for a supersession)."""

    agree: bool
    same: list[str] = msgspec.field(default_factory=list)
    differ: list[str] = msgspec.field(default_factory=list)


def dates(text: str) -> set[str]:
    """Dates a text names, as `YYYY-MM-DD` or `MM-DD` when no year is written."""
    out: set[str] = set()
    for y, m, d in _ISO.findall(text):
        out.add(f"{y}-{m}-{d}")
    for d, mon, y in _DAY_MONTH.findall(text):
        out.add(_date(y, mon, d))
    for mon, d, y in _MONTH_DAY.findall(text):
        out.add(_date(y, mon, d))
    return out


def _date(year: str, month: str, day: str) -> str:
    md = f"{MONTHS.index(month[:3].lower()) + 1:02d}-{int(day):02d}"
    return f"{year}-{md}" if year else md


def _without_dates(text: str) -> str:
    for pattern in (_ISO, _DAY_MONTH, _MONTH_DAY):
        text = pattern.sub(" ", text)
    return text


def numbers(text: str) -> dict[str, set[float]]:
    """Numbers a text states, grouped by the unit written after each (`""` when none), dates left out."""
    out: dict[str, set[float]] = {}
    for raw, unit in _NUMBER.findall(_without_dates(text)):
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        out.setdefault((unit or UNITLESS).casefold(), set()).add(value)
    return out


def turns(text: str) -> Counter[str]:
    """How often each negation, reversal or correction word occurs."""
    return Counter(m.group(0).casefold().replace("’", "'")[-3:] if m.group(0)[-2:] in ("'t", "’t")
                   else m.group(0).casefold() for m in _TURN.finditer(text))


def names(text: str, known: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Proper names: capitalised words inside a sentence, acronyms, and sentence-first words capitalised elsewhere
    or among `known` (the names of the note it is compared with)."""
    inside: set[str] = set()
    first: set[str] = set()
    for m in _WORD.finditer(text):
        word = re.sub(r"['’]s$", "", m.group(0)).rstrip("'’-")
        if not word[0].isupper():
            continue
        if len(word) > 1 and word.isupper():
            inside.add(word)
        elif _starts_sentence(text, m.start()):
            first.add(word)
        elif word != "I":
            inside.add(word)
    return inside | (first & (inside | known))


def _starts_sentence(text: str, i: int) -> bool:
    before = text[max(0, i - 16):i]
    return bool(_SENTENCE_START.search("\n" + before if i <= 16 else before))


def _fmt(values: set[float]) -> str:
    return ", ".join(f"{v:g}" for v in sorted(values))


def agreement(a: str, b: str) -> Agreement:
    """Whether `a` and `b` agree on every checkable point; each point named for the plan's reason text."""
    same: list[str] = []
    differ: list[str] = []
    na, nb = numbers(a), numbers(b)
    for unit in sorted(set(na) & set(nb)):
        label = f" {unit}" if unit else ""
        if na[unit] == nb[unit]:
            same.append(f"{_fmt(na[unit])}{label}")
        else:
            differ.append(f"{_fmt(na[unit])}{label} ≠ {_fmt(nb[unit])}{label}")
    da, db = dates(a), dates(b)
    if da and db:
        (same if da == db else differ).append(
            ", ".join(sorted(da)) if da == db else f"dates {', '.join(sorted(da))} ≠ {', '.join(sorted(db))}")
    ta, tb = turns(a), turns(b)
    for word in sorted(set(ta) | set(tb)):
        if ta[word] == tb[word]:
            same.append(f'"{word}"')
        else:
            differ.append(f'"{word}" {ta[word]}× ≠ {tb[word]}×')
    pa, pb = names(a), names(b)
    pa, pb = names(a, pb), names(b, pa)  # "Grandma's birthday…" and "…roses for Grandma" name the same person
    if pa == pb:
        same += sorted(pa)
    else:
        only = [f"{x} (first only)" for x in sorted(pa - pb)] + [f"{x} (second only)" for x in sorted(pb - pa)]
        differ.append("names: " + ", ".join(only))
    return Agreement(agree=not differ, same=same, differ=differ)


def complete_groups(size: int, pairs: list[tuple[float, int, int]]) -> list[list[int]]:
    """Groups of 2+ items in which every pair is among `pairs` (complete linkage, most similar joined first).

    A group never chains: c joins a and b only if c pairs with both, so two notes below the bar are never
    merged through a third.
    """
    ok = {(min(i, j), max(i, j)) for _, i, j in pairs}
    group = {i: [i] for i in range(size)}
    for _, i, j in sorted(pairs, reverse=True):
        gi, gj = group[i], group[j]
        if gi is gj or not all((min(a, b), max(a, b)) in ok for a in gi for b in gj):
            continue
        gi.extend(gj)
        for k in gj:
            group[k] = gi
    seen: list[list[int]] = []
    for g in group.values():
        if len(g) > 1 and not any(g is s for s in seen):
            seen.append(g)
    return sorted(sorted(g) for g in seen)
