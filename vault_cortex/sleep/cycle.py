"""Sleep, the IO side: gather a plan's inputs, apply a plan with a journal, resume, roll back, commit.

Applying re-checks each file's hash and skips (and reports) a file that changed. Every step is journalled
(`.cortex/sleep/journal.jsonl`, fsync'd) before and after it runs, with the original bytes backed up first,
so a run killed at any point can be resumed or rolled back without losing or half-writing a note.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import numpy as np

from vault_cortex.config import Settings
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.activity import Event, FeedbackEvent, OpenEvent, RecallEvent, query_key, read_events
from vault_cortex.files.paths import top_folder
from vault_cortex.files.properties import parse_datetime
from vault_cortex.files.relations import RELATIONS_PATH
from vault_cortex.files.vault import content_hash
from vault_cortex.identity.habits import HABITS_DIR
from vault_cortex.identity.resonance import DEFAULT_WEIGHT, RESONANCE_DIR, as_weight, last_feedback, last_touches
from vault_cortex.index.db import IndexDB
from vault_cortex.index.rows import NoteRow
from vault_cortex.index.upkeep import Index
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.recaller import Recaller
from vault_cortex.sleep.consolidate import DEFAULT_MODE, MODES, SleepMode, make_plan
from vault_cortex.sleep.journal import (
    ApplyReport,
    Skip,
    apply,
    interrupted,
    load_plan,
    plan_file,
    recover,
    resume,
    rollback,
    save_plan,
)
from vault_cortex.sleep.operations import (
    STATE_PATH,
    Memo,
    Plan,
    State,
    World,
    plan_markdown,
)
from vault_cortex.store.change import Vault

__all__ = ["DEFAULT_MODE", "MODES", "ApplyReport", "Plan", "Skip", "SleepMode", "apply", "gather", "interrupted",
           "load_plan", "next_nightly", "plan", "plan_file", "plan_markdown", "recover", "resume", "rollback"]

log = logging.getLogger(__name__)


# -- gathering ----------------------------------------------------------------------------------------------

def gather(index: Index, recaller: Recaller, now: datetime) -> tuple[World, dict[str, np.ndarray]]:
    """Sync, then read what planning needs: notes and texts, links, graph health, activity, vectors, state."""
    index.sync()
    root, db = index.root, index.db
    state, state_hash = load_state(root)
    relations, relations_hash = load_relations(root)
    links = _Links.read(db)
    events, _ = read_events(root)
    use = _Use.read(events)
    since = [e for e in events if state.last_sleep is None or e.ts > state.last_sleep]
    graph = recaller.graph()
    weight_use = {**last_feedback(root, HABITS_DIR, events), **last_touches(db, root, events=events)}
    memos = [m for row in db.all_notes() if (m := _memo(root, db, row, links, use, graph)) is not None]
    taken = frozenset([*db.note_paths(), *(s.path for s in db.skipped())])
    world = World(
        now=now, notes=tuple(memos), taken=taken, health=recaller.graph_health(), state=state, state_hash=state_hash,
        co_pairs=tuple((a, b, len(use.queries[(a, b)])) for (a, b) in sorted(use.pairs)),
        pair_last={f"{a}|{b}": max(ts) for (a, b), ts in use.pairs.items()},
        events_since=len(since), recalls_since=sum(isinstance(e, RecallEvent) for e in since),
        opens_since=sum(isinstance(e, OpenEvent) for e in since), weight_use=weight_use,
        relations=relations, relations_hash=relations_hash)
    return world, note_vectors(index, [m.path for m in memos])


class _Links(NamedTuple):
    """Each note's neighbours by any link, the notes it is co_retrieved with, and those it is derived_from."""

    neighbours: dict[str, set[str]]
    co_listed: dict[str, set[str]]
    derived: dict[str, list[str]]

    @classmethod
    def read(cls, db: IndexDB) -> _Links:
        out = cls(defaultdict(set), defaultdict(set), defaultdict(list))
        for ln in db.links():
            if ln.dst and ln.dst != ln.src:
                out.neighbours[ln.src].add(ln.dst)
                out.neighbours[ln.dst].add(ln.src)
                if ln.rel == "co_retrieved":
                    out.co_listed[ln.src].add(ln.dst)
                elif ln.rel == "derived_from":
                    out.derived[ln.src].append(ln.dst)
        return out


class _Use(NamedTuple):
    """When each note was used (recalled, opened, found useful), and the pairs recalled together: when, and by
    which distinct queries (one query recalled again and again counts once)."""

    used: dict[str, list[datetime]]
    pairs: dict[tuple[str, str], list[datetime]]
    queries: dict[tuple[str, str], set[str]]

    @classmethod
    def read(cls, events: Iterable[Event]) -> _Use:
        out = cls(defaultdict(list), defaultdict(list), defaultdict(set))
        for e in events:
            if isinstance(e, RecallEvent):
                top = list(dict.fromkeys(e.paths))
                for p in top:
                    out.used[p].append(e.ts)
                key = query_key(e.query)
                for i, a in enumerate(top[:5]):
                    for b in top[i + 1:5]:
                        out.pairs[(a, b) if a < b else (b, a)].append(e.ts)
                        out.queries[(a, b) if a < b else (b, a)].add(key)
            elif isinstance(e, OpenEvent) or (isinstance(e, FeedbackEvent) and e.useful):
                out.used[e.path].append(e.ts)
        return out


def _memo(root: Path, db: IndexDB, row: NoteRow, links: _Links, use: _Use, graph: Graph) -> Memo | None:
    """What planning reads of one indexed note (None: its file is gone)."""
    try:
        data = (root / row.path).read_bytes()
    except OSError:
        return None
    fm = db.frontmatter(row.path) or {}
    created = parse_datetime(row.created) if row.created else None
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    weighted = top_folder(row.path) in (HABITS_DIR, RESONANCE_DIR) and "weight" in fm
    baseline = as_weight(fm.get("baseline"), DEFAULT_WEIGHT) if weighted else None
    used = use.used[row.path]
    return Memo(
        path=row.path, title=row.title, region=row.region, hash=content_hash(data), text=text,
        mtime=datetime.fromtimestamp(row.mtime_ns / 1e9, UTC), cortex=_str(fm.get("cortex")),
        importance=row.importance, created=created, layer=row.layer, pinned=row.pinned,
        status=_str(fm.get("status")), session=_str(fm.get("session")), project=row.project,
        tags=_strs(fm.get("tags")), aliases=_strs(fm.get("aliases")), relations=_relations(fm.get("relations")),
        degree=graph.degree(row.path), neighbours=tuple(sorted(links.neighbours[row.path])),
        co_listed=tuple(sorted(links.co_listed[row.path])), derived_from=tuple(links.derived[row.path]),
        accesses=sum(1 for t in used if created is None or t >= created),
        last_access=max(used, default=None),
        weight=as_weight(fm["weight"], baseline) if baseline is not None else None, baseline=baseline)


def note_vectors(index: Index, paths: Iterable[str]) -> dict[str, np.ndarray]:
    """Each note's whole-note vector: the normalised mean of its chunk vectors."""
    ids = index.db.note_ids(paths)
    chunks = index.db.chunks_of(ids.values())
    wanted = [c.id for cs in chunks.values() for c in cs]
    got = index.vectors.get(wanted)
    out = {}
    for path, note_id in ids.items():
        vecs = [got[c.id] for c in chunks.get(note_id, []) if c.id in got]
        if vecs:
            v = np.mean(np.stack(vecs), axis=0).astype(np.float32)
            out[path] = v / (float(np.linalg.norm(v)) or 1.0)
    return out


def _str(v: Any) -> str | None:
    return str(v) if v is not None and not isinstance(v, dict | list) else None


def _strs(v: Any) -> tuple[str, ...]:
    items = v if isinstance(v, list) else [v] if isinstance(v, str) else []
    return tuple(str(x) for x in items if isinstance(x, str | int | float))


def _relations(v: Any) -> dict[str, list[str]]:
    if not isinstance(v, dict):
        return {}
    return {str(k): list(_strs(x)) for k, x in v.items() if _strs(x)}


def load_state(root: Path) -> tuple[State, str | None]:
    path = root / STATE_PATH
    if not path.exists():
        return State(), None
    data = path.read_bytes()
    try:
        return msgspec.json.decode(data, type=State), content_hash(data)
    except msgspec.DecodeError:
        log.warning("%s is not valid; decay counts from each note's last use", STATE_PATH)
        return State(), content_hash(data)


def load_relations(root: Path) -> tuple[str | None, str | None]:
    """The relations sidecar's text and hash; (None, None) when the vault has none (its notes take the edges)."""
    try:
        data = (root / RELATIONS_PATH).read_bytes()
    except FileNotFoundError:
        return None, None
    return data.decode("utf-8", "replace"), content_hash(data)


# -- plans ---------------------------------------------------------------------------------------------------

def plan(index: Index, recaller: Recaller, vault: Vault, mode: str = DEFAULT_MODE, *, save: bool = True) -> Plan:
    """Plan a sleep over the index, the recall's graph and the vault (its settings and clock); with `save`, keep
    it as `.cortex/sleep/plan-<id>.json` to apply by id (a preview, such as an HTTP GET, writes nothing). No note
    changes either way."""
    world, vectors = gather(index, recaller, vault.clock())
    embedder = index.embedder
    p = make_plan(world, vectors, settings=vault.settings, mode=mode, embed=embedder.embed,
                  count_tokens=embedder.count_tokens)
    if p.ops and save:
        save_plan(vault, p)
    return p


def next_nightly(settings: Settings, now: datetime) -> datetime | None:
    """When the next nightly sleep is due (in now's time zone), or None when `sleep.nightly` is off."""
    cfg = settings.sleep
    if not cfg.nightly:
        return None
    try:
        hour, minute = (int(x) for x in cfg.nightly_at.split(":"))
        due = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    except ValueError as exc:
        raise InvalidRequest(f"sleep.nightly_at must be HH:MM, not {cfg.nightly_at!r}") from exc
    return due if due > now else due + timedelta(days=1)


