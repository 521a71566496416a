"""Recent activity: notes created, changed, recalled and opened over the last days, grouped by day.

From the files' times (the `created:` property, the modification time) and the activity log (recalls, opens,
edits). Pure: takes note rows and events, returns values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta, tzinfo

import msgspec

from vault_cortex.errors import InvalidRequest
from vault_cortex.files.activity import EditEvent, Event, OpenEvent, RecallEvent, stamp
from vault_cortex.files.properties import parse_datetime
from vault_cortex.index.rows import NoteRow

__all__ = ["KINDS", "Day", "Recent", "RecentItem", "recent"]

KINDS: tuple[str, ...] = ("created", "changed", "recalled", "opened")
MAX_DAYS = 3660


class RecentItem(msgspec.Struct, frozen=True, kw_only=True):
    """One note and what happened to it on a day: `count` times, the last at `last` (UTC)."""

    path: str
    kind: str  # created, changed, recalled, opened
    count: int
    last: datetime
    detail: str = ""  # edits: the operations (append, move, ...); recalls: the last query


class Day(msgspec.Struct, frozen=True, kw_only=True):
    date: str  # YYYY-MM-DD in the given time zone
    items: list[RecentItem]


class Recent(msgspec.Struct, frozen=True, kw_only=True):
    """Days newest first; within a day, items newest first."""

    days: int
    kinds: list[str]
    since: datetime
    groups: list[Day]
    total: int


def check(days: int, kinds: Sequence[str] | None) -> tuple[int, list[str]]:
    if not 1 <= days <= MAX_DAYS:
        raise InvalidRequest(f"days must be between 1 and {MAX_DAYS}, not {days}")
    chosen = list(dict.fromkeys(kinds)) if kinds else list(KINDS)
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        raise InvalidRequest(f"unknown kind {unknown[0]!r}; kinds: {', '.join(KINDS)}")
    return days, chosen


def recent(notes: Iterable[NoteRow], events: Iterable[Event], *, now: datetime, days: int,
           kinds: Sequence[str] | None = None, tz: tzinfo | None = None) -> Recent:
    """What happened to which notes since `days` days before now, grouped by day in `tz` (default: local), newest
    first; the log keeps whole seconds, so what happened within one second is listed by path."""
    days, chosen = check(days, kinds)
    since = now - timedelta(days=days)
    acc: dict[tuple[str, str, str], tuple[int, datetime, str]] = {}

    def add(kind: str, path: str, ts: datetime, detail: str = "", counts: bool = True) -> None:
        """Count one event; a file's modification time only marks a change (the logged edits count it)."""
        if kind not in chosen or ts < since or ts > now + timedelta(minutes=5):
            return
        date = ts.astimezone(tz).date().isoformat()
        count, last, old = acc.get((date, path, kind), (0, ts, ""))
        if kind == "changed":
            detail = ", ".join(d for d in dict.fromkeys([*old.split(", "), detail]) if d)
        elif ts < last:
            detail = old
        acc[(date, path, kind)] = (count + counts, max(last, ts), detail)

    for n in notes:
        created = _utc(parse_datetime(n.created, naive=None))  # as typed: local time, like `remember` writes it
        if created is not None:
            add("created", n.path, created)
        modified = stamp(datetime.fromtimestamp(n.mtime_ns / 1e9, UTC))  # whole seconds, as the log keeps its edits
        if created is None or modified - created > timedelta(minutes=1):
            add("changed", n.path, modified, counts=False)
    for e in events:
        ts = e.ts.astimezone(UTC)
        if isinstance(e, RecallEvent):
            for p in dict.fromkeys(e.paths):
                add("recalled", p, ts, e.query[:200] or f"a hook's query ({e.query_chars or 0} characters, not kept)")
        elif isinstance(e, OpenEvent):
            add("opened", e.path, ts)
        elif isinstance(e, EditEvent):
            if e.op == "create":  # the note's `created` (above) counts it; a note without one is listed here
                add("created", e.path, ts, counts=False)
            else:
                add("changed", e.dest or e.path, ts, e.op)
    by_day: dict[str, list[RecentItem]] = {}
    for (date, path, kind), (count, last, detail) in acc.items():
        by_day.setdefault(date, []).append(RecentItem(path=path, kind=kind, count=max(1, count), last=last,
                                                      detail=detail))
    groups = [Day(date=d, items=sorted(items, key=lambda i: (-i.last.timestamp(), i.path, i.kind)))
              for d, items in sorted(by_day.items(), reverse=True)]
    return Recent(days=days, kinds=chosen, since=since, groups=groups, total=sum(len(g.items) for g in groups))


def _utc(when: datetime | None) -> datetime | None:
    """A date in UTC; None for one that has no UTC time (year 1 east of Greenwich, year 9999 west of it): it is
    never within the days asked for, and must not fail the whole answer."""
    try:
        return when.astimezone(UTC) if when is not None else None
    except (OverflowError, ValueError):
        return None
