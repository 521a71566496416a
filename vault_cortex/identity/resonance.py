"""Resonance: concepts whose `weight` rises when touched and decays toward a claimed `baseline`.

The weight lives in the concept's note (one line changes per touch or decay); touches are appended to the
activity log, so counts replay from it. Habits share the weight maths and the minimal weight writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex.config import Settings
from vault_cortex.errors import InvalidRequest, NoteNotFound
from vault_cortex.files.activity import Event, FeedbackEvent, TouchEvent, current_client, read_events
from vault_cortex.files.edit import edit_bytes, set_property
from vault_cortex.files.links import unwrap
from vault_cortex.files.note import parse_note
from vault_cortex.files.paths import note_name
from vault_cortex.files.properties import DEFAULT_WEIGHT as DEFAULT_WEIGHT  # re-exported for habits and sleep
from vault_cortex.files.properties import as_weight as as_weight  # re-exported for habits and sleep
from vault_cortex.files.properties import read_aliases
from vault_cortex.files.vault import content_hash
from vault_cortex.index.db import IndexDB
from vault_cortex.recall.pipeline import parse_time
from vault_cortex.recall.rank import halved
from vault_cortex.store.change import Vault

RESONANCE_DIR = "resonance"
CATEGORIES = ("identity", "relationship", "aesthetic", "theme", "concept", "emotional")
TOUCH_STEP = 0.1  # weight added to a concept each time it is touched, capped at 1.0
CLOSE = 0.2  # |actual - claimed| within this reads as "lived as claimed"


class WeightChange(msgspec.Struct, frozen=True, kw_only=True):
    """A note's weight before and after a touch, a reinforcement or a decay step, and why."""

    path: str
    name: str
    before: float
    after: float
    baseline: float
    written: bool  # the note's `weight:` line was rewritten
    reason: str


class DecayPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Weights pulled toward their baselines: every one that moves, previewed or applied."""

    folder: str
    half_life_days: float
    applied: bool
    changes: list[WeightChange]
    unchanged: int  # notes already at (or within rounding of) where decay leaves them


class ConceptUse(msgspec.Struct, frozen=True, kw_only=True):
    """One concept's claimed value (baseline) beside its actual use in the report window."""

    path: str
    name: str
    category: str
    claimed: float  # the baseline
    weight: float
    touches: int
    mentions: int  # notes created or modified in the window that name or link the concept
    mentioned_in: list[str]  # a few of those notes
    actual: float  # touches + mentions, relative to the most-used concept (0..1)
    gap: float  # actual - claimed
    verdict: str


class ResonanceReport(msgspec.Struct, frozen=True, kw_only=True):
    days: int
    since: datetime
    concepts: list[ConceptUse]


class ConceptInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A resonance note's identity for the report: the names it goes by and its values."""

    path: str
    name: str
    names: tuple[str, ...]  # casefolded: file name, aliases
    category: str
    weight: float
    baseline: float


# -- pure ------------------------------------------------------------------------------------------------
def toward_baseline(weight: float, baseline: float, days: float, half_life_days: float) -> float:
    """The weight after `days` of exponential decay toward the baseline (distance halves every half-life)."""
    if half_life_days <= 0 or days <= 0:
        return weight
    return baseline + (weight - baseline) * halved(days, half_life_days)


def raised(weight: float, step: float) -> float:
    """The weight after one touch or reinforcement: up by step, capped at 1."""
    return round(min(1.0, max(0.0, weight) + step), 3)


def decay_step(path: str, fm: Mapping[str, Any], last_use: datetime, now: datetime,
               half_life_days: float) -> WeightChange:
    """What decay does to one note's weight, given when it was last used or written."""
    baseline = as_weight(fm.get("baseline"), DEFAULT_WEIGHT)
    before = as_weight(fm.get("weight"), baseline)
    days = max(0.0, (now - last_use).total_seconds() / 86400)
    after = round(toward_baseline(before, baseline, days, half_life_days), 3)
    return WeightChange(path=path, name=note_name(path), before=before, after=after, baseline=baseline, written=False,
                        reason=f"{days:.1f} days since last use; half-life {half_life_days:g} days")


def name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive whole-word pattern for a concept's names (so `craft` does not match `aircraft`)."""
    alts = sorted({n.casefold() for n in names if len(n.strip()) > 2}, key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, alts)) + r")(?!\w)", re.I) if alts else None


def report_rows(concepts: Sequence[ConceptInfo], touches: Mapping[str, int],
                mentions: Mapping[str, list[str]]) -> list[ConceptUse]:
    """Claimed vs actual per concept; actual is use (touches + mentions) relative to the most-used concept."""
    use = {c.path: touches.get(c.path, 0) + len(mentions.get(c.path, [])) for c in concepts}
    top = max(use.values(), default=0)
    rows = []
    for c in concepts:
        actual = round(use[c.path] / top, 2) if top else 0.0
        gap = round(actual - c.baseline, 2)
        verdict = ("no use of any concept in the window" if not top else "lived as claimed" if abs(gap) <= CLOSE
                   else "claimed more than lived" if gap < 0 else "lived more than claimed")
        found = mentions.get(c.path, [])
        rows.append(ConceptUse(path=c.path, name=c.name, category=c.category, claimed=c.baseline, weight=c.weight,
                               touches=touches.get(c.path, 0), mentions=len(found), mentioned_in=found[:5],
                               actual=actual, gap=gap, verdict=verdict))
    return sorted(rows, key=lambda r: (r.gap, r.path))


def half_life(settings: Settings) -> float:
    """Days for the distance between a concept's weight and its baseline to halve."""
    return settings.resonance.half_life_days


# -- IO, through the one write path (store/change.py) -----------------------------------------------------
def folder_paths(vault: Vault, folder: str) -> list[str]:
    return vault.index.db.paths_under(folder)


def bump(vault: Vault, path: str, step: float, reason: str) -> WeightChange:
    """Raise a note's weight by step (capped at 1) as one changed line; refused if the note changed meanwhile."""
    with vault.change() as tx:
        data = tx.read(path)
        fm = parse_note(path, data.decode("utf-8", "replace")).frontmatter
        baseline = as_weight(fm.get("baseline"), DEFAULT_WEIGHT)
        before = as_weight(fm.get("weight"), baseline)
        after = raised(before, step)
        written = after != before or "weight" not in fm
        if written:
            tx.edit(path, lambda old: edit_bytes(old, lambda text: set_property(text, "weight", after)),
                    content_hash(data))
    return WeightChange(path=path, name=note_name(path), before=before, after=after, baseline=baseline,
                        written=written, reason=reason)


def decay_folder(vault: Vault, folder: str, half_life_days: float, last_used: Mapping[str, datetime],
                 dry_run: bool) -> DecayPlan:
    """Pull every weight in a folder toward its baseline for the time since the note was last used or written.

    Counting from the later of the last use (activity log) and the last write (file mtime) makes applying
    twice harmless: the second run only decays for the time since the first.
    """
    now = vault.clock()
    changes, unchanged = [], 0
    with vault.change() as tx:
        for path in folder_paths(vault, folder):
            try:
                data = tx.read(path)
                mtime = datetime.fromtimestamp((vault.root / path).stat().st_mtime, UTC)
            except (NoteNotFound, FileNotFoundError):
                continue  # deleted since the last sync
            fm = parse_note(path, data.decode("utf-8", "replace")).frontmatter
            last = max(mtime, last_used.get(path, mtime))
            change = decay_step(path, fm, last, now, half_life_days)
            if change.after == change.before:
                unchanged += 1
                continue
            if not dry_run:
                tx.edit(path, partial(edit_bytes, edit=partial(set_property, key="weight", value=change.after)),
                        content_hash(data))
                change = msgspec.structs.replace(change, written=True)
            changes.append(change)
    return DecayPlan(folder=folder, half_life_days=half_life_days, applied=not dry_run, changes=changes,
                     unchanged=unchanged)


def concepts(db: IndexDB) -> list[ConceptInfo]:
    """Every indexed resonance note with its names and values."""
    out = []
    for path in db.paths_under(RESONANCE_DIR):
        fm = db.frontmatter(path) or {}
        names = (note_name(path), *read_aliases(fm.get("aliases"))[0])
        baseline = as_weight(fm.get("baseline"), DEFAULT_WEIGHT)
        category = str(fm.get("category") or "concept").strip().lower()
        out.append(ConceptInfo(path=path, name=note_name(path), names=tuple(n.casefold() for n in names),
                               category=category, weight=as_weight(fm.get("weight"), baseline), baseline=baseline))
    return out


def resolve(vault: Vault, concept: str) -> str:
    """The resonance note a concept names: its path, file name, or one of its aliases (any case)."""
    wanted = unwrap(concept).removesuffix(".md").casefold()
    if not wanted:
        raise InvalidRequest("name a resonance concept to touch")
    known = concepts(vault.index.db)
    for c in known:
        if wanted in (c.path.removesuffix(".md").casefold(), *c.names):
            return c.path
    names = ", ".join(c.name for c in known) or "none yet"
    raise NoteNotFound(f"no resonance note named {concept!r} (concepts: {names}); create one in {RESONANCE_DIR}/")


def touch(vault: Vault, concept: str, *, by: str | None = None) -> WeightChange:
    """Raise a concept's weight by TOUCH_STEP (one line) and log the touch."""
    path = resolve(vault, concept)
    step = TOUCH_STEP
    change = bump(vault, path, step, f"touched{f' by {by}' if by else ''}")
    vault.log(TouchEvent(ts=vault.clock(), client=current_client(), concept=note_name(path), path=by))
    return change


def decay(vault: Vault, *, dry_run: bool = True) -> DecayPlan:
    """Preview (or apply) decay of every concept's weight toward its baseline."""
    used = last_touches(vault.index.db, vault.root)
    return decay_folder(vault, RESONANCE_DIR, half_life(vault.settings), used, dry_run)


def last_touches(db: IndexDB, root: Path, since: datetime | None = None,
                 events: Sequence[Event] | None = None) -> dict[str, datetime]:
    """The last logged touch of each concept note (touches name a concept by file name or alias).

    events: the activity log already read (read from the vault when None).
    """
    return {p: max(times) for p, times in _touch_times(db, root, since, events).items()}


def _touch_times(db: IndexDB, root: Path, since: datetime | None,
                 events: Sequence[Event] | None = None) -> dict[str, list[datetime]]:
    by_name = {n: c.path for c in concepts(db) for n in c.names}
    out: dict[str, list[datetime]] = {}
    for event in read_events(root)[0] if events is None else events:
        if isinstance(event, TouchEvent) and (since is None or event.ts >= since):
            path = by_name.get(event.concept.casefold())
            if path:
                out.setdefault(path, []).append(event.ts)
    return out


def last_feedback(root: Path, folder: str, events: Sequence[Event] | None = None) -> dict[str, datetime]:
    """The last `useful` feedback logged for each note in a folder (a reinforced habit)."""
    out: dict[str, datetime] = {}
    for event in read_events(root)[0] if events is None else events:
        if isinstance(event, FeedbackEvent) and event.useful and event.path.startswith(folder + "/"):
            out[event.path] = max(event.ts, out.get(event.path, event.ts))
    return out


def report(vault: Vault, days: int | None = None) -> ResonanceReport:
    """Claimed (baseline) vs actual use: touches and mentions in notes created or modified in the last days."""
    days = vault.settings.resonance.report_days if days is None else days
    if not 1 <= days <= 36500:
        raise InvalidRequest(f"days must be between 1 and 36500, not {days}")
    since = vault.clock() - timedelta(days=days)
    known = concepts(vault.index.db)
    touches = {p: len(t) for p, t in _touch_times(vault.index.db, vault.root, since).items()}
    linked = {(src, dst) for src, dst, _ in vault.index.db.edges() if dst}
    patterns = {c.path: name_pattern(c.names) for c in known}
    recent = [n for n in vault.index.db.all_notes() if not n.path.startswith(RESONANCE_DIR + "/")
              and max(parse_time(n.created) or 0.0, n.mtime_ns / 1e9) >= since.timestamp()]
    chunks = vault.index.db.chunks_of(n.id for n in recent)
    mentions: dict[str, list[str]] = {}
    for note in sorted(recent, key=lambda n: n.path):
        text = "\n".join([note.title, *(c.text for c in chunks.get(note.id, []))])
        for c in known:
            pattern = patterns[c.path]
            if (note.path, c.path) in linked or (pattern and pattern.search(text)):
                mentions.setdefault(c.path, []).append(note.path)
    return ResonanceReport(days=days, since=since, concepts=report_rows(known, touches, mentions))
