"""The append-only activity log `.cortex/activity/YYYY-MM.jsonl` and its replay into access statistics.

One self-contained JSON line per event. Git merges the files with `merge=union`, so two clones that both
appended keep every line of both; replay is a commutative fold (counts and maxima), so the order of lines,
and therefore of a union merge, never changes the numbers. What a read logs (recall, open) waits in the
machine-local pending files until it is flushed into the versioned ones (files/activity_files.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import msgspec

from vault_cortex.files.activity_files import ACTIVITY_DIR as ACTIVITY_DIR  # where the versioned log lives
from vault_cortex.files.activity_files import append_line, log_files, month_key
from vault_cortex.privacy import fingerprint, redact

log = logging.getLogger(__name__)
CO_RETRIEVAL_TOP = 5  # pairs are counted among each recall's first results only: at most 10 pairs a recall

LIBRARY_CLIENT = "api"  # who logs when no adapter bound a client: a program calling the library in-process
_client: ContextVar[str] = ContextVar("vault_cortex_client", default=LIBRARY_CLIENT)


def current_client() -> str:
    """Who is asking: the client the adapter running this call bound (`acting_as`), which every event logs."""
    return _client.get()


@contextmanager
def acting_as(client: str) -> Iterator[None]:
    """Within it, every event logged and every change made is `client`'s ("http", "mcp", "cli", "hook"): each
    adapter binds its client once, where its calls enter, so no call can forget or misname it. A context
    variable: it follows the call into `anyio.to_thread.run_sync` and `asyncio` tasks, not into a bare thread.
    Also a decorator: `acting_as("mcp")(tool)`."""
    token = _client.set(client)
    try:
        yield
    finally:
        _client.reset(token)


def bind_client(client: str) -> None:
    """Bind `client` for the rest of the current context: for an adapter that runs its work in a context of its
    own (`contextvars.Context.run`), where `acting_as` cannot surround the calls."""
    _client.set(client)


# Timestamps must carry a zone: naive ones cannot be compared with the rest, so such a line is malformed.
Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]


class _Base(msgspec.Struct, frozen=True, kw_only=True, tag_field="event", omit_defaults=True):
    """Fields every event has; `event` (the tag) names its kind. Unknown fields are ignored on read."""

    ts: Timestamp  # UTC, whole seconds on write: "2026-11-30T01:02:03Z"
    client: str  # who: "http", "mcp", "cli", "hook", "api" (the library in-process), "sleep", "import", ...


class RecallEvent(_Base, frozen=True, kw_only=True, tag="recall"):
    """A recall and the paths it returned, best first. A hook's query is kept as its keyed fingerprint and its
    length, its text left empty (see `gated`)."""

    query: str
    mode: str
    paths: tuple[str, ...]
    query_hash: str | None = None  # privacy.fingerprint of the query under the vault's key
    query_chars: int | None = None  # how long the query was


class OpenEvent(_Base, frozen=True, kw_only=True, tag="open"):
    """A note opened or read in full."""

    path: str


class TouchEvent(_Base, frozen=True, kw_only=True, tag="touch"):
    """A resonance concept touched, optionally by a note."""

    concept: str
    path: str | None = None


class FeedbackEvent(_Base, frozen=True, kw_only=True, tag="feedback"):
    """A judgement that a recalled note was (or was not) useful."""

    path: str
    useful: bool
    query: str | None = None


class EditEvent(_Base, frozen=True, kw_only=True, tag="edit"):
    """A note edited, moved or archived through vault-cortex (`op`: append, replace_section, move, ...)."""

    path: str
    op: str
    dest: str | None = None  # where a move or archive put the note


Event = RecallEvent | OpenEvent | TouchEvent | FeedbackEvent | EditEvent
KINDS = frozenset({"recall", "open", "touch", "feedback", "edit"})


class _Kind(msgspec.Struct):
    """Just the tag of a line, to tell a newer client's event kind from a broken line."""

    event: str


class PathActivity(msgspec.Struct, frozen=True, kw_only=True):
    """What the log says about one note."""

    access_count: int  # recalls that returned it + opens + useful feedback
    last_access: datetime | None  # latest of those, UTC; None when only negative feedback exists
    recalled: int = 0
    opened: int = 0
    useful: int = 0
    not_useful: int = 0


class ConceptActivity(msgspec.Struct, frozen=True, kw_only=True):
    """How often and how lately a resonance concept was touched."""

    touches: int
    last_touch: datetime


class Activity(msgspec.Struct, frozen=True, kw_only=True):
    """Everything replayed from the log; keys are sorted so equal logs give identical values."""

    paths: dict[str, PathActivity] = msgspec.field(default_factory=dict)
    co_retrieved: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)  # [a][b] with a < b
    # [a][b][query key] = the last time (epoch seconds) a recall of that query returned both: diversity and age
    co_queries: dict[str, dict[str, dict[str, float]]] = msgspec.field(default_factory=dict)
    concepts: dict[str, ConceptActivity] = msgspec.field(default_factory=dict)
    events: int = 0

    def co_count(self, a: str, b: str) -> int:
        """How many recalls returned both notes among their top results."""
        lo, hi = (a, b) if a < b else (b, a)
        return self.co_retrieved.get(lo, {}).get(hi, 0)

    def pairs(self) -> list[tuple[str, str, int]]:
        """Every co-retrieved pair as (a, b, count) with a < b, sorted."""
        return [(a, b, n) for a, row in self.co_retrieved.items() for b, n in row.items()]

    def query_pairs(self) -> list[tuple[str, str, str, float]]:
        """Every (a, b, query key, last time) of a pair returned together by recalls of that query, sorted."""
        return [(a, b, q, t) for a, row in self.co_queries.items() for b, qs in row.items() for q, t in qs.items()]


def query_key(query: str) -> str:
    """A short fingerprint of a query as typed, case and spacing ignored: recalls of one query count once."""
    return hashlib.sha256(" ".join(query.lower().split()).encode("utf-8")).hexdigest()[:16]


def recall_key(event: RecallEvent) -> str:
    """What tells a recall's query from another's: its keyed fingerprint (a hook's), else its text's."""
    return event.query_hash or query_key(event.query)


HOOK_CLIENT = "hook"  # the Claude Code hooks: what they ask comes from an agent session


def gated(event: Event, key: Callable[[], bytes] | None, *, keep_hook_queries: bool = False) -> Event:
    """The event as it may be written: every query through the privacy gate (`privacy.redact`), and a hook's
    recall without its text (its keyed fingerprint and length stand for it) unless `keep_hook_queries`. With no
    `key`, a hook's query keeps only its length."""
    if isinstance(event, RecallEvent) and event.client == HOOK_CLIENT and not keep_hook_queries:
        if not event.query:
            return event
        return msgspec.structs.replace(event, query="", query_chars=len(event.query),
                                       query_hash=fingerprint(event.query, key()) if key else None)
    if isinstance(event, RecallEvent | FeedbackEvent) and event.query:
        return msgspec.structs.replace(event, query=redact(event.query).text)
    return event


def stamp(now: datetime) -> datetime:
    """`now` in UTC, truncated to whole seconds, as the log stores it; a naive datetime is a bug."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("activity timestamps must be timezone-aware")
    return now.astimezone(UTC).replace(microsecond=0)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)


def encode(event: Event) -> bytes:
    """One log line, newline included, with the timestamp normalised to UTC seconds."""
    event = msgspec.structs.replace(event, ts=stamp(event.ts))
    return _encoder.encode(event) + b"\n"


def append(vault_root: Path, event: Event, *, key: Callable[[], bytes] | None = None,
           keep_hook_queries: bool = False) -> None:
    """Append one event, through the privacy gate (`gated`), as a single O_APPEND write, so concurrent writers
    never interleave lines. What a read logs (a recall, an open) goes to the machine-local pending file until it
    is flushed; the rest, logged by writes that change a note anyway, to the versioned log."""
    event = gated(event, key, keep_hook_queries=keep_hook_queries)
    append_line(vault_root, f"{stamp(event.ts):%Y-%m}", encode(event),
                pending=isinstance(event, RecallEvent | OpenEvent))


def decode_lines(data: bytes) -> tuple[list[Event], int]:
    """Events of one file's bytes in line order, and the count of malformed lines (skipped)."""
    events: list[Event] = []
    bad = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            events.append(_decoder.decode(line))
        except msgspec.DecodeError:
            try:
                kind = msgspec.json.decode(line, type=_Kind).event
            except msgspec.DecodeError:
                kind = ""
            if kind and kind not in KINDS:
                continue  # a kind a newer version writes: not ours to judge
            bad += 1
    return events, bad


def read_events(vault_root: Path) -> tuple[list[Event], int]:
    """All events, versioned and pending, by month then file and line, and how many malformed lines were
    skipped."""
    events: list[Event] = []
    bad = 0
    for path in log_files(vault_root):
        got, skipped = decode_lines(path.read_bytes())
        if skipped:
            log.warning("skipped %d malformed activity line(s) in %s", skipped, path.name)
        events += got
        bad += skipped
    return events, bad


def read_since(vault_root: Path, since: datetime) -> list[Event]:
    """Events at or after `since`, reading only the month files that can hold them."""
    first = f"{stamp(since):%Y-%m}.jsonl"
    cutoff = stamp(since)
    events: list[Event] = []
    for path in log_files(vault_root):
        if month_key(path) >= first:
            events += [e for e in decode_lines(path.read_bytes())[0] if e.ts >= cutoff]
    return events


def _pairs(paths: Iterable[str]) -> Iterable[tuple[str, str]]:
    """Unordered pairs (a < b) of distinct paths."""
    unique = sorted(set(paths))
    for i, a in enumerate(unique):
        for b in unique[i + 1:]:
            yield a, b


def _keep_latest(last: dict[str, datetime], key: str, ts: datetime) -> None:
    if key not in last or ts > last[key]:
        last[key] = ts


def _co_recalled(pairs: Counter[tuple[str, str]], queries: dict[tuple[str, str], dict[str, float]],
                 returned: Sequence[str], key: str, when: float) -> None:
    """Count each pair one recall returned together, and remember the query (its latest time) that did."""
    pairs.update(_pairs(returned))
    for pair in _pairs(returned):
        seen = queries.setdefault(pair, {})
        seen[key] = max(seen.get(key, when), when)


def replay(events: Iterable[Event], *, top: int = CO_RETRIEVAL_TOP) -> Activity:
    """Fold events into per-note, per-pair and per-concept numbers; any order of the same events agrees."""
    access: Counter[str] = Counter()
    recalled: Counter[str] = Counter()
    opened: Counter[str] = Counter()
    useful: Counter[str] = Counter()
    not_useful: Counter[str] = Counter()
    last: dict[str, datetime] = {}
    pairs: Counter[tuple[str, str]] = Counter()
    queries: dict[tuple[str, str], dict[str, float]] = {}
    touches: Counter[str] = Counter()
    last_touch: dict[str, datetime] = {}
    count = 0

    def accessed(path: str, ts: datetime) -> None:
        access[path] += 1
        _keep_latest(last, path, ts)

    for event in events:
        count += 1
        ts = event.ts.astimezone(UTC)  # one representation per instant, whatever offset was written
        if isinstance(event, RecallEvent):
            returned = list(dict.fromkeys(event.paths))  # a path listed twice is one access
            for path in returned:
                recalled[path] += 1
                accessed(path, ts)
            _co_recalled(pairs, queries, returned[:top], recall_key(event), ts.timestamp())
        elif isinstance(event, OpenEvent):
            opened[event.path] += 1
            accessed(event.path, ts)
        elif isinstance(event, FeedbackEvent):
            if event.useful:
                useful[event.path] += 1
                accessed(event.path, ts)
            else:
                not_useful[event.path] += 1
        elif isinstance(event, EditEvent):
            continue  # edits are history for `recent`; they do not count as accesses
        else:
            touches[event.concept] += 1
            _keep_latest(last_touch, event.concept, ts)

    every = sorted(set(access) | set(not_useful))
    nested: dict[str, dict[str, int]] = {}
    for (a, b), n in sorted(pairs.items()):
        nested.setdefault(a, {})[b] = n
    return Activity(
        paths={
            p: PathActivity(access_count=access[p], last_access=last.get(p), recalled=recalled[p],
                            opened=opened[p], useful=useful[p], not_useful=not_useful[p])
            for p in every
        },
        co_retrieved=nested,
        co_queries={a: {b: dict(sorted(queries[(a, b)].items())) for b in row} for a, row in nested.items()},
        concepts={c: ConceptActivity(touches=touches[c], last_touch=last_touch[c]) for c in sorted(touches)},
        events=count,
    )
