"""Incremental sync: walk the vault, re-parse what changed (size/mtime, confirmed by hash), update the index.

One sync is a chain of short stages over one `_SyncRun` (httpx's `send` chain is the model): `_select` (under the
lock: the files compared with the index, the unchanged recorded, the gone removed) → `_write_notes` (each changed
note parsed and chunked, its vectors taken without the lock, written a short group at a time) → the scope's
`after_writes` (a full sync: the words merged, the vectors filled) → `_finish` (links resolved, the activity log
replayed, the vector file kept). A full or a targeted sync is chosen once, as the run's scope (`_Full`,
`_Targeted`): the stages ask it where the two differ.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path

import msgspec
import numpy as np

from vault_cortex import clock
from vault_cortex.config import Settings
from vault_cortex.errors import SyncCancelled
from vault_cortex.files.links import Resolver
from vault_cortex.files.note import RELATION_TYPES
from vault_cortex.files.walk import Walk, stat_notes, walk
from vault_cortex.index.db import IndexDB
from vault_cortex.index.derive import Derived, derivation, derive, vectors_for
from vault_cortex.index.embed import Embedder
from vault_cortex.index.progress import VECTORS, WORDS

# Re-exported: the modules that read a sync's progress, report or file states imported them from here.
from vault_cortex.index.progress import Indexing as Indexing
from vault_cortex.index.progress import Progress as Progress
from vault_cortex.index.progress import SyncReport as SyncReport
from vault_cortex.index.relations import fold_relations
from vault_cortex.index.replay import activity_signature, replay_activity
from vault_cortex.index.restore import LACKING, fill_vectors, reconcile_vectors, save_vectors, vectors_current
from vault_cortex.index.rows import FileState
from vault_cortex.index.scan import BINARY_NOTE, Scan, compare, file_state
from vault_cortex.index.scan import RACILY_CLEAN as RACILY_CLEAN
from vault_cortex.index.vectors import EmbeddingCache, Vector, Vectors

log = logging.getLogger(__name__)

BATCH_NOTES = 32  # at most this many notes per write transaction: a killed sync keeps what it wrote
GROUP_CHUNKS = 64  # and about this many chunks: the writer lock is held for one short transaction at a time
MERGE_AFTER = 1000  # a full sync that wrote or removed this many notes merges the words' index (`_merge_words`)
MERGE_PAGES = 2000  # pages merged per write transaction (about 0.6 s at 100,000 notes)
VECTOR_SAVE_SECONDS = 60.0  # a targeted sync saves the vector file at most this often (a full sync always)
def _groups(items: Iterable[Derived]) -> Iterator[list[Derived]]:
    """Notes in write groups of at most BATCH_NOTES notes and about GROUP_CHUNKS chunks (a big note alone)."""
    group: list[Derived] = []
    chunks = 0
    for item in items:
        n = len(item.chunked.chunks)
        if group and (len(group) >= BATCH_NOTES or chunks + n > GROUP_CHUNKS):
            yield group
            group, chunks = [], 0
        group.append(item)
        chunks += n
    if group:
        yield group


Lock = Callable[[], AbstractContextManager[object]]  # guards the index's writers for one short turn


def sync(
    root: Path,
    db: IndexDB,
    vectors: Vectors,
    cache: EmbeddingCache,
    embedder: Callable[[], Embedder],
    settings: Settings,
    progress: Progress | None = None,
    *,
    lock: Lock = nullcontext,
    stop: threading.Event | None = None,
    only: Sequence[str] | None = None,
    contents: bool = False,
    fill: bool = True,
) -> SyncReport:
    """Bring the index in line with the files (or, with `only`, just those vault paths); never writes a note.

    A full sync writes the notes words first (text, links, properties; vectors only from the embedding cache),
    then fills in the vectors the chunks lack (`fill_vectors`; with `fill` False that is left to the caller, who
    serves recall meanwhile). A targeted sync embeds what it writes before writing it (the cost follows the change).

    `lock` guards the index's writers: it is held while the vault is scanned and while each group of notes is
    written, and released while notes are parsed and embedded, so other writes go between. `stop` set means
    stop at the next embedding batch (SyncCancelled); what was written or cached so far stays. `contents`:
    read and hash every file, even one whose size and modification time are as indexed (a rewrite that kept
    both: `cp -p`, `rsync -t`, tar, a file system with coarse timestamps).
    """
    started = time.perf_counter()
    scope: _Full | _Targeted = _Full(fill, progress) if only is None else _Targeted(only, progress)
    run = _SyncRun(root=root, db=db, vectors=vectors, cache=cache, embedder=embedder, settings=settings, lock=lock,
                   stop=stop, scope=scope, derived=derivation(settings))
    scan = _select(run, contents)
    _write_notes(run, scan)
    scope.after_writes(run, scan)
    _finish(run, scan)
    return _report(run, scan, time.perf_counter() - started)


class _SyncRun(msgspec.Struct, kw_only=True):
    """One sync's context, passed down its stages: what it works on, and what it did so far."""

    root: Path
    db: IndexDB
    vectors: Vectors
    cache: EmbeddingCache
    embedder: Callable[[], Embedder]
    settings: Settings
    lock: Lock
    stop: threading.Event | None
    scope: _Full | _Targeted
    derived: str  # the settings' fingerprint (`derivation`)
    counts: dict[str, int] = msgspec.field(
        default_factory=lambda: {"embedded": 0, "cached": 0, "noise": 0, "problems": 0})
    embed_seconds: float = 0.0
    changed: bool = False  # a group was written


class _Full:
    """A sync of every note: the vault walked, the notes written words first (progress in notes written), their
    vectors filled after (unless the caller fills them), the links resolved, the vector file checked."""

    def __init__(self, fill: bool, progress: Progress | None) -> None:
        self.fill = fill
        self.progress = progress
        self.total = 0

    def rederive(self, db: IndexDB, derived: str) -> bool:
        """Settings that change what the index derives from the files (a region's default, an exclusion, the
        chunk size) changed: every note is re-derived, by a full sync (a targeted one leaves it to that)."""
        before = db.get_meta("derivation")
        if before != derived and before is not None:
            log.info("the index settings changed since the last sync: every note is parsed and chunked again")
        return before != derived

    def states(self, db: IndexDB) -> dict[str, FileState]:
        return db.file_states()

    def walk(self, root: Path, settings: Settings, states: dict[str, FileState]) -> Walk:
        return walk(root, settings.index)

    def covers(self, path: str) -> bool:
        return True

    def begin(self, items: Iterable[Derived], count: int) -> Iterable[Derived]:
        self.total = count
        if self.progress and count:
            self.progress(WORDS, 0, count)
        return items

    def vectors(self, run: _SyncRun, group: Sequence[Derived]) -> dict[str, Vector]:
        return vectors_for(group, run.cache, run.embedder, run.counts, run.stop)  # the cache's only

    def wrote(self, done: int) -> None:
        if self.progress:
            self.progress(WORDS, done, self.total)

    def after_writes(self, run: _SyncRun, scan: Scan) -> None:
        if len(scan.todo) + len(scan.gone) >= MERGE_AFTER:
            _merge_words(run.db, run.lock, run.stop)
        if self.fill:  # the notes' new chunks, a lost vector file, a changed model: without the lock
            t0 = time.perf_counter()
            fill_vectors(run.db, run.vectors, run.cache, run.embedder, run.counts, lock=run.lock, stop=run.stop,
                         progress=self.progress)
            run.embed_seconds += time.perf_counter() - t0

    def record(self, run: _SyncRun, scan: Scan, written: Sequence[str], moved: set[str]) -> None:
        """The skipped files and the attachments recorded; the links resolved: every one after an unfinished
        sync (a kill) or before the attachments were known, else those the change can touch. Inside a write."""
        db = run.db
        db.set_skipped(scan.skipped)
        attachments = db.set_attachments(scan.walked.attachments)
        if attachments is None or scan.pending_before:
            db.resolve_links(Resolver([f.path for f in scan.walked.notes] + list(scan.walked.attachments)), None)
        else:
            db.resolve_changed(written, sorted(moved | attachments), partial(_link_targets, run.root, run.settings))
        db.delete_meta("resolve_pending")
        db.set_meta("derivation", run.derived)

    def keep_vectors(self, run: _SyncRun) -> None:
        """The vector file checked against the chunks (unless the index says it is current) and saved."""
        db, vectors = run.db, run.vectors
        if vectors_current(db, vectors):
            _save_if_due(db, vectors)
            return
        repaired = reconcile_vectors(db, vectors, run.cache, run.embedder, embed=self.fill)
        if vectors.dirty or repaired or db.get_meta("vectors_stamp") != vectors.stamp():
            save_vectors(db, vectors)
        else:  # the saved file holds exactly the chunks: the next full sync need not look again
            with db.write():
                db.set_meta("vectors_seq", str(db.change_seqs()[1]))


class _Targeted:
    """A sync of just these vault paths (notes written, moved or deleted): the cost follows the change. Their
    chunks are embedded before they are written (progress in chunks embedded); only the links the change can
    touch are resolved; a marker an unfinished sync left is left to the full sync."""

    def __init__(self, only: Sequence[str], progress: Progress | None) -> None:
        self.only = only
        self.wanted = set(only)
        self.progress = progress
        self.embedded = 0
        self.to_embed = 0

    def rederive(self, db: IndexDB, derived: str) -> bool:
        return False

    def states(self, db: IndexDB) -> dict[str, FileState]:
        return db.file_states(self.wanted)

    def walk(self, root: Path, settings: Settings, states: dict[str, FileState]) -> Walk:
        fs_paths = {p: s.fs_path for p, s in states.items()}
        return stat_notes(root, settings.index, self.wanted, fs_paths) or walk(root, settings.index)

    def covers(self, path: str) -> bool:
        return path in self.wanted

    def begin(self, items: Iterable[Derived], count: int) -> Iterable[Derived]:
        listed = list(items)  # a few notes: parsed up front, to know how many chunks they hold
        self.to_embed = sum(len(item.chunked.chunks) for item in listed)
        if self.progress and count:
            self.progress(VECTORS, 0, self.to_embed)
        return listed

    def vectors(self, run: _SyncRun, group: Sequence[Derived]) -> dict[str, Vector]:
        return vectors_for(group, run.cache, run.embedder, run.counts, run.stop, self._tick)

    def _tick(self, chunks: int) -> None:
        self.embedded += chunks
        if self.progress:
            self.progress(VECTORS, self.embedded, self.to_embed)

    def wrote(self, done: int) -> None:
        pass  # its progress is in chunks embedded

    def after_writes(self, run: _SyncRun, scan: Scan) -> None:
        pass  # it embedded what it wrote

    def record(self, run: _SyncRun, scan: Scan, written: Sequence[str], moved: set[str]) -> None:
        """The skipped among these paths recorded; the links the change can touch resolved. Inside a write."""
        run.db.set_skipped(scan.skipped, only=self.only)
        run.db.resolve_changed(written, sorted(moved), partial(_link_targets, run.root, run.settings))
        if not scan.pending_before:  # a marker found at the start is left to the full sync
            run.db.delete_meta("resolve_pending")

    def keep_vectors(self, run: _SyncRun) -> None:
        _save_if_due(run.db, run.vectors)


def _select(run: _SyncRun, contents: bool) -> Scan:
    """The first stage, under the lock: the files compared with the index (`_scan`); the unchanged recorded, the
    gone removed, and, when anything changed, the marker that links need resolving set."""
    db = run.db
    with run.lock():
        scan = _scan(run, contents, run.scope.rederive(db, run.derived))
        removed_ids: list[int] = []
        with db.write():
            for path, state in scan.unchanged:
                if scan.states.get(path) != state:
                    db.set_file(path, state)
            for path in scan.gone:
                removed_ids += db.delete_note(path)
            if scan.todo or scan.gone:
                db.set_meta("resolve_pending", "1")
        run.vectors.remove(removed_ids)
    return scan


def _scan(run: _SyncRun, contents: bool = False, rederive: bool = False) -> Scan:
    """The index's states of the scope's files and the files as they are (the vault walked, or the scope's paths
    looked at), compared (`compare`)."""
    scanned_ns = time.time_ns()
    states = run.scope.states(run.db)
    walked = run.scope.walk(run.root, run.settings, states)
    return compare(run.root, walked, states, run.scope.covers, scanned_ns=scanned_ns, contents=contents,
                   rederive=rederive, pending_before=run.db.get_meta("resolve_pending") is not None)


def _write_notes(run: _SyncRun, scan: Scan) -> None:
    """Each changed note parsed and chunked, then, a short group at a time, its vectors taken (from the cache; a
    targeted sync also from the model) without the lock, and the group written under it."""
    relation_types = RELATION_TYPES | frozenset(run.settings.relations)
    items = (derive(f, data, file_state(f, digest, scan.scanned_ns), run.settings, relation_types, run.embedder)
             for f, data, digest in scan.todo)
    done = 0
    for group in _groups(run.scope.begin(items, len(scan.todo))):
        if run.stop is not None and run.stop.is_set():
            raise SyncCancelled("the sync was stopped; what it finished is kept")
        t0 = time.perf_counter()
        vecs = run.scope.vectors(run, group)
        run.embed_seconds += time.perf_counter() - t0
        _write_group(run, scan.states, group, vecs)
        done += len(group)
        run.scope.wrote(done)


def _write_group(run: _SyncRun, states: dict[str, FileState], group: Sequence[Derived],
                 vecs: dict[str, Vector]) -> None:
    """One group's rows and vectors, under the lock in one transaction; a note another writer indexed in a newer
    version meanwhile is left as it is."""
    db = run.db
    with run.lock():
        current = db.file_states([item.note.path for item in group])
        removed: list[int] = []
        new_ids: list[int] = []
        new_vecs: list[Vector] = []
        with db.write():
            for item in group:
                now = current.get(item.note.path)
                if now is not None and now != states.get(item.note.path) and now.hash != item.state.hash:
                    continue  # another writer indexed a newer version meanwhile
                removed += db.delete_note(item.note.path)
                chunk_ids = db.insert_note(item.note, item.region, item.state, item.chunked.chunks,
                                           len(item.chunked.noise))
                with_vector = [(i, vecs[c.hash]) for i, c in zip(chunk_ids, item.chunked.chunks, strict=True)
                               if c.hash in vecs]
                new_ids += [i for i, _ in with_vector]
                new_vecs += [v for _, v in with_vector]
                if len(with_vector) < len(chunk_ids):
                    db.set_meta(LACKING, "1")
                run.counts["noise"] += len(item.chunked.noise)
                run.counts["problems"] += len(item.note.problems)
            _next_generation(db)
        run.vectors.remove(removed)  # the group's vectors in one call each (new chunk ids are never reused)
        if new_ids:
            run.vectors.add(new_ids, np.stack(new_vecs))
        run.changed = True


def _finish(run: _SyncRun, scan: Scan) -> None:
    """The last stage, under the lock: the relations sidecar folded in, the links resolved as the scope says,
    the activity log replayed if it changed, the index's marks set, the vector file kept."""
    db = run.db
    log_signature = activity_signature(run.root)
    with run.lock():
        replay_log = log_signature != db.get_meta("activity")
        with db.write():
            written = [f.path for f, _, _ in scan.todo]
            sided = fold_relations(run.root, db, written)  # the relations sidecar's edges, as those notes' links
            # Paths a link may now resolve to differently: notes added or gone, binary notes (link targets
            # that are not indexed), attachments added or gone (the scope adds those).
            moved = {*scan.gone, *(f.path for f, _, _ in scan.todo if f.path not in scan.states),
                     *(s.path for s in scan.skipped if s.reason == BINARY_NOTE)}
            run.scope.record(run, scan, [*written, *sided], moved)
            if replay_log:
                replay_activity(run.root, db)
                db.set_meta("activity", log_signature)
            if scan.todo or scan.gone or replay_log or run.changed or sided:
                _next_generation(db)
            db.set_meta("last_sync", clock.local_now().strftime("%Y-%m-%dT%H:%M:%S%z"))
        run.scope.keep_vectors(run)


def _report(run: _SyncRun, scan: Scan, seconds: float) -> SyncReport:
    new_hashes = {h for _, _, h in scan.todo}
    renamed = sum(1 for p in scan.gone if scan.states[p].hash in new_hashes)
    added = sum(1 for f, _, _ in scan.todo if f.path not in scan.states)
    return SyncReport(
        notes=run.db.note_count(),
        added=added - renamed,
        updated=len(scan.todo) - added,
        deleted=len(scan.gone) - renamed,
        renamed=renamed,
        unchanged=len(scan.unchanged),
        skipped=len(scan.skipped),
        chunks_embedded=run.counts["embedded"],
        chunks_cached=run.counts["cached"],
        noise_blocks=run.counts["noise"],
        problems=run.counts["problems"],
        seconds=seconds,
        embed_seconds=run.embed_seconds,
    )


def _next_generation(db: IndexDB) -> None:
    """Mark the index changed: readers' caches keyed by the generation go stale. Inside a write."""
    db.set_meta("generation", str(int(db.get_meta("generation") or 0) + 1))


def _save_if_due(db: IndexDB, vectors: Vectors) -> None:
    """A vector file that writes changed is saved at most every VECTOR_SAVE_SECONDS (a full sync's check saves it
    whenever it repaired anything)."""
    if vectors.dirty and time.monotonic() - vectors.saved_at > VECTOR_SAVE_SECONDS:
        save_vectors(db, vectors)


def _merge_words(db: IndexDB, lock: Lock, stop: threading.Event | None) -> None:
    """After a sync that wrote much of the index, its words are merged into one FTS5 segment, a step at a time
    under the write lock (writes go between steps): a search then reads each word's doclist once, not once per
    segment (a first sync of 100,000 notes left 18; merging them takes some 14 s there)."""
    log.info("merging the index of words into one segment")
    while stop is None or not stop.is_set():
        with lock(), db.write():
            if not db.merge_words(MERGE_PAGES):
                return


def _link_targets(root: Path, settings: Settings) -> list[str]:
    """Every path a link can resolve to, as the files are now."""
    walked = walk(root, settings.index)
    return [f.path for f in walked.notes] + list(walked.attachments)
