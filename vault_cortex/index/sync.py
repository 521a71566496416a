"""Incremental sync: walk the vault, re-parse what changed (size/mtime, confirmed by hash), update the index."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import msgspec
import numpy as np

from vault_cortex import clock
from vault_cortex.config import Settings
from vault_cortex.errors import SyncCancelled
from vault_cortex.files.activity_files import file_key, log_files
from vault_cortex.files.chunk import Chunked, chunk_note
from vault_cortex.files.links import Resolver, target_names
from vault_cortex.files.note import RELATION_TYPES, Note, decode, is_binary, parse_note
from vault_cortex.files.vault import Skipped, VaultFile, Walk, content_hash, stat_notes, walk
from vault_cortex.index.db import IndexDB
from vault_cortex.index.embed import Embedder
from vault_cortex.index.relations import fold_relations
from vault_cortex.index.replay import replay_activity
from vault_cortex.index.restore import (
    LACKING,
    cached_vectors,
    embed_batches,
    fill_vectors,
    reconcile_vectors,
    save_vectors,
    vectors_current,
)
from vault_cortex.index.rows import FileState
from vault_cortex.index.vectors import EmbeddingCache, Vector, Vectors

log = logging.getLogger(__name__)

BATCH_NOTES = 32  # at most this many notes per write transaction: a killed sync keeps what it wrote
GROUP_CHUNKS = 64  # and about this many chunks: the writer lock is held for one short transaction at a time
CHUNK_CAP_PROBLEM = "too many chunks"
BINARY_NOTE = "binary file named .md"
MERGE_AFTER = 1000  # a full sync that wrote or removed this many notes merges the words' index (`_merge_words`)
MERGE_PAGES = 2000  # pages merged per write transaction (about 0.6 s at 100,000 notes)
VECTOR_SAVE_SECONDS = 60.0  # a targeted sync saves the vector file at most this often (a full sync always)
# A file modified this close to a scan may be rewritten within the same timestamp tick, keeping its size and
# mtime (FAT's 2 s is the coarsest common tick; SMB shares and ext4's jiffy clock are finer): it is recorded
# "racily clean" (git's term) and the next sync hashes it again. Files older than that are trusted by stat.
RACY_WINDOW_NS = 2_000_000_000
RACILY_CLEAN = -1  # the size recorded for such a file: it never matches a stat, so the next sync re-hashes

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class SyncReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one sync did."""

    notes: int  # notes in the index afterwards
    added: int
    updated: int
    deleted: int
    renamed: int
    unchanged: int
    skipped: int
    chunks_embedded: int
    chunks_cached: int
    noise_blocks: int
    problems: int
    seconds: float
    embed_seconds: float


def activity_signature(root: Path) -> str:
    """Names, sizes and mtimes of the activity log's files (versioned and pending): a change means the log must
    be replayed."""
    parts = []
    for f in log_files(root):
        st = f.stat()
        parts.append(f"{file_key(root, f)}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def region_of(note: Note, settings: Settings) -> tuple[str, str | None]:
    """The note's region: its `cortex:`, else its top folder if that is a region, else the default."""
    known = settings.regions.order
    problem = None
    if note.cortex:
        if note.cortex in known:
            return note.cortex, None
        problem = f"cortex {note.cortex!r} is not a configured region ({', '.join(known)})"
    top, sep, _ = note.path.partition("/")
    if sep and top in known:
        return top, problem
    return settings.regions.default, problem


def derivation(settings: Settings) -> str:
    """A fingerprint of the settings the index derives from the files with (regions, exclusions, chunking,
    relation types): when it changes, a full sync re-derives every note (the embeddings stay cached)."""
    idx = settings.index
    return content_hash(msgspec.json.encode([settings.regions.order, settings.regions.default, sorted(idx.exclude),
                                             idx.max_file_mb, idx.chunk_tokens, idx.max_chunks_per_note,
                                             sorted(settings.relations)]))


WORDS, VECTORS = "words", "vectors"  # the phases of indexing: notes written (searchable by words, links and
# properties), then their chunks' vectors filled in behind (searchable by meaning)


class Indexing(msgspec.Struct, frozen=True, kw_only=True):
    """How far a running sync is: in phase "words", notes written of the notes to write; in phase "vectors",
    chunks given their vector of the chunks that lack one (recall finds those by words only meanwhile), or, in a
    sync of a few changed notes (which embeds before it writes), of the chunks it writes."""

    done: int
    total: int
    phase: str = WORDS


class _Changed(msgspec.Struct, kw_only=True):
    file: VaultFile
    state: FileState
    note: Note
    region: str
    chunked: Chunked


def file_state(f: VaultFile, digest: str, scanned_ns: int) -> FileState:
    """What the index records of a file it hashed during a scan that started at `scanned_ns` (wall clock):
    a file modified within RACY_WINDOW_NS of that is marked racily clean, to be hashed again next time."""
    racy = f.mtime_ns >= scanned_ns - RACY_WINDOW_NS
    return FileState(fs_path=f.fs_path, size=RACILY_CLEAN if racy else f.size, mtime_ns=f.mtime_ns, hash=digest)


def _groups(items: Iterable[_Changed]) -> Iterator[list[_Changed]]:
    """Notes in write groups of at most BATCH_NOTES notes and about GROUP_CHUNKS chunks (a big note alone)."""
    group: list[_Changed] = []
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


def sync(
    root: Path,
    db: IndexDB,
    vectors: Vectors,
    cache: EmbeddingCache,
    embedder: Callable[[], Embedder],
    settings: Settings,
    progress: Progress | None = None,
    *,
    lock: Callable[[], AbstractContextManager[object]] = nullcontext,
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
    derived = derivation(settings)
    with lock():
        # Settings that change what the index derives from the files (a region's default, an exclusion, the
        # chunk size) changed: every note is re-derived, by a full sync (a targeted one leaves it to that).
        rederive = only is None and db.get_meta("derivation") != derived
        if rederive and db.get_meta("derivation") is not None:
            log.info("the index settings changed since the last sync: every note is parsed and chunked again")
        scanned_ns = time.time_ns()
        scan = _scan(root, db, settings, only, scanned_ns, contents, rederive)
        walked, states, skipped, unchanged, todo, gone = scan
        removed_ids: list[int] = []
        # A sync that does not finish leaves links unresolved (and new paths unknown to older links): the
        # marker makes the next sync resolve every link. A targeted sync leaves a marker it did not set alone.
        pending_before = db.get_meta("resolve_pending") is not None
        with db.write():
            for path, state in unchanged:
                if states.get(path) != state:
                    db.set_file(path, state)
            for path in gone:
                removed_ids += db.delete_note(path)
            if todo or gone:
                db.set_meta("resolve_pending", "1")
        vectors.remove(removed_ids)

    new_hashes = {h for _, _, h in todo}
    renamed = sum(1 for p in gone if states[p].hash in new_hashes)
    added = sum(1 for f, _, _ in todo if f.path not in states)

    embed_seconds = 0.0
    counts = {"embedded": 0, "cached": 0, "noise": 0, "problems": 0}
    relation_types = RELATION_TYPES | frozenset(settings.relations)
    changed = False

    items: Iterable[_Changed] = (_prepare(f, data, file_state(f, digest, scanned_ns), settings, relation_types,
                                          embedder) for f, data, digest in todo)
    done = 0
    embedded, to_embed = 0, 0  # a targeted sync embeds before it writes: its progress is in chunks embedded
    if only is not None:
        items = list(items)  # a few notes: parsed up front, to know how many chunks they hold
        to_embed = sum(len(item.chunked.chunks) for item in items)
    if progress and todo:
        progress(*((VECTORS, 0, to_embed) if only is not None else (WORDS, 0, len(todo))))

    def tick(chunks: int) -> None:
        nonlocal embedded
        embedded += chunks
        if progress:
            progress(VECTORS, embedded, to_embed)

    for group in _groups(items):
        if stop is not None and stop.is_set():
            raise SyncCancelled("the sync was stopped; what it finished is kept")
        t0 = time.perf_counter()
        vecs = _vectors_for(group, cache, embedder, counts, stop, tick if only is not None else None)
        embed_seconds += time.perf_counter() - t0

        with lock():
            current = db.file_states([item.note.path for item in group])
            removed: list[int] = []
            new_ids: list[int] = []
            new_vecs: list[Vector] = []
            with db.write():
                for item in group:
                    now = current.get(item.note.path)
                    before = states.get(item.note.path)
                    if now is not None and now != before and now.hash != item.state.hash:
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
                    counts["noise"] += len(item.chunked.noise)
                    counts["problems"] += len(item.note.problems)
                db.set_meta("generation", str(int(db.get_meta("generation") or 0) + 1))
            vectors.remove(removed)  # the group's vectors in one call each (new chunk ids are never reused)
            if new_ids:
                vectors.add(new_ids, np.stack(new_vecs))
            changed = True
        done += len(group)
        if progress and only is None:
            progress(WORDS, done, len(todo))

    if only is None and len(todo) + len(gone) >= MERGE_AFTER:
        _merge_words(db, lock, stop)

    if only is None and fill:  # the notes' new chunks, a lost vector file, a changed model: without the lock
        t0 = time.perf_counter()
        fill_vectors(db, vectors, cache, embedder, counts, lock=lock, stop=stop, progress=progress)
        embed_seconds += time.perf_counter() - t0

    log_signature = activity_signature(root)
    with lock():
        replay_log = log_signature != db.get_meta("activity")
        with db.write():
            written = [f.path for f, _, _ in todo]
            sided = fold_relations(root, db, written)  # the relations sidecar's edges, as those notes' links
            # Paths a link may now resolve to differently: notes added or gone, binary notes (link targets
            # that are not indexed), attachments added or gone.
            moved = {*gone, *(f.path for f, _, _ in todo if f.path not in states),
                     *(s.path for s in skipped if s.reason == BINARY_NOTE)}
            if only is None:
                db.set_skipped(skipped)
                attachments = db.set_attachments(walked.attachments)
            else:
                db.set_skipped(skipped, only=only)
            # The marker found at the start is an unfinished sync's (a kill): the full sync resolves every
            # link. A targeted sync (notes written through the API) leaves a marker it found to the full sync.
            if only is None and (attachments is None or pending_before):
                db.resolve_links(Resolver([f.path for f in walked.notes] + list(walked.attachments)), None)
            else:
                if only is None and attachments:
                    moved |= attachments
                _resolve_changed(root, db, settings, [*written, *sided], sorted(moved))
            if only is None or not pending_before:
                db.delete_meta("resolve_pending")
            if replay_log:
                replay_activity(root, db)
                db.set_meta("activity", log_signature)
            if todo or gone or replay_log or changed or sided:
                db.set_meta("generation", str(int(db.get_meta("generation") or 0) + 1))
            db.set_meta("last_sync", clock.local_now().strftime("%Y-%m-%dT%H:%M:%S%z"))
            if only is None:
                db.set_meta("derivation", derived)
        if only is None and not vectors_current(db, vectors):
            repaired = reconcile_vectors(db, vectors, cache, embedder, embed=fill)
            if vectors.dirty or repaired or db.get_meta("vectors_stamp") != vectors.stamp():
                save_vectors(db, vectors)
            else:  # the saved file holds exactly the chunks: the next full sync need not look again
                with db.write():
                    db.set_meta("vectors_seq", str(db.change_seqs()[1]))
        elif vectors.dirty and time.monotonic() - vectors.saved_at > VECTOR_SAVE_SECONDS:
            save_vectors(db, vectors)

    return SyncReport(
        notes=db.note_count(),
        added=added - renamed,
        updated=len(todo) - added,
        deleted=len(gone) - renamed,
        renamed=renamed,
        unchanged=len(unchanged),
        skipped=len(skipped),
        chunks_embedded=counts["embedded"],
        chunks_cached=counts["cached"],
        noise_blocks=counts["noise"],
        problems=counts["problems"],
        seconds=time.perf_counter() - started,
        embed_seconds=embed_seconds,
    )


def _merge_words(db: IndexDB, lock: Callable[[], AbstractContextManager[object]],
                 stop: threading.Event | None) -> None:
    """After a sync that wrote much of the index, its words are merged into one FTS5 segment, a step at a time
    under the write lock (writes go between steps): a search then reads each word's doclist once, not once per
    segment (a first sync of 100,000 notes left 18; merging them takes some 14 s there)."""
    log.info("merging the index of words into one segment")
    while stop is None or not stop.is_set():
        with lock(), db.write():
            if not db.merge_words(MERGE_PAGES):
                return


def _resolve_changed(root: Path, db: IndexDB, settings: Settings, written: Sequence[str],
                     paths: Sequence[str]) -> None:
    """Resolve the links of the notes just written and the links whose resolution a note added or removed
    at `paths` can change (those whose target names its file), over a resolver of just the files those
    links can name, read from the index: the cost follows the change, not the vault. Call inside a write."""
    names = {p.lower().rpartition("/")[2] for p in paths}
    rows = db.links_naming(written, names)
    if not rows:
        return
    needed: set[str] | None = set()
    for _, target, _ in rows:
        could = target_names(target)
        if could is None:
            needed = None
            break
        needed.update(could)  # type: ignore[union-attr]
    if needed is not None:
        needed |= {src.lower().rpartition("/")[2] for _, _, src in rows}  # `[[#Heading]]` names its own note
    targets = db.link_targets(needed)
    if targets is None:  # no full sync recorded the attachments yet
        targets = _link_targets(root, settings)
    db.resolve_link_rows(Resolver(targets), rows)


_Scan = tuple[Walk, dict[str, FileState], list[Skipped], list[tuple[str, FileState]],
              list[tuple[VaultFile, bytes, str]], list[str]]


def _scan(root: Path, db: IndexDB, settings: Settings, only: Sequence[str] | None, scanned_ns: int,
          contents: bool = False, rederive: bool = False) -> _Scan:
    """Walk the vault: which notes are unchanged (size/mtime, else hash), changed (with their bytes) or gone.
    A note recorded racily clean has no size to match, so it is hashed again."""
    wanted = None if only is None else set(only)
    if wanted is None:
        states = db.file_states()
        walked = walk(root, settings.index)
    else:
        states = db.file_states(wanted)
        walked = stat_notes(root, settings.index, wanted, {p: s.fs_path for p, s in states.items()}) or walk(
            root, settings.index)
    skipped = [s for s in walked.skipped if wanted is None or s.path in wanted]
    unchanged: list[tuple[str, FileState]] = []
    todo: list[tuple[VaultFile, bytes, str]] = []
    for f in walked.notes:
        if wanted is not None and f.path not in wanted:
            continue
        old = states.get(f.path)
        if (not contents and not rederive and old and old.size == f.size and old.mtime_ns == f.mtime_ns
                and old.fs_path == f.fs_path):
            unchanged.append((f.path, old))
            continue
        try:
            data = (root / f.fs_path).read_bytes()
        except OSError as exc:
            skipped.append(Skipped(path=f.path, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if is_binary(data):
            skipped.append(Skipped(path=f.path, reason=BINARY_NOTE))
            continue
        digest = content_hash(data)
        if old and old.hash == digest and not rederive:
            unchanged.append((f.path, file_state(f, digest, scanned_ns)))
            continue
        todo.append((f, data, digest))
    kept = {p for p, _ in unchanged} | {f.path for f, _, _ in todo}
    candidates = set(states) if wanted is None else set(states) & wanted
    gone = sorted(candidates - kept)
    return walked, states, skipped, unchanged, todo, gone


def _link_targets(root: Path, settings: Settings) -> list[str]:
    """Every path a link can resolve to, as the files are now."""
    walked = walk(root, settings.index)
    return [f.path for f in walked.notes] + list(walked.attachments)


def _prepare(
    f: VaultFile,
    data: bytes,
    state: FileState,
    settings: Settings,
    relation_types: frozenset[str],
    embedder: Callable[[], Embedder],
) -> _Changed:
    text, problems = decode(data)
    note = parse_note(f.path, text, relation_types)
    region, region_problem = region_of(note, settings)
    extra = problems + ((region_problem,) if region_problem else ())
    chunked = chunk_note(note, embedder().count_tokens, settings.index.chunk_tokens)
    cap = settings.index.max_chunks_per_note
    if len(chunked.chunks) > cap:
        extra += (f"{CHUNK_CAP_PROBLEM}: {len(chunked.chunks)} chunks, only the first {cap} are indexed "
                  "(index.max_chunks_per_note)",)
        chunked = msgspec.structs.replace(chunked, chunks=chunked.chunks[:cap])
    if extra:
        note = msgspec.structs.replace(note, problems=tuple(note.problems) + extra)
    return _Changed(file=f, state=state, note=note, region=region, chunked=chunked)


def _vectors_for(
    batch: Sequence[_Changed], cache: EmbeddingCache, embedder: Callable[[], Embedder], counts: dict[str, int],
    stop: threading.Event | None = None, tick: Callable[[int], None] | None = None,
) -> dict[str, Vector]:
    """Vectors for the chunks of the batch: from the cache, and with `tick` (a targeted sync) the rest from the
    model, told how many chunks each step gave a vector (each EMBED_BATCH embedded is cached at once: a kill loses
    at most one batch; a set `stop` is obeyed between)."""
    model = embedder()
    texts = {c.hash: c.embed_text for item in batch for c in item.chunked.chunks}
    found = cached_vectors(cache, model, texts)
    counts["cached"] += len(found)
    if tick is not None:
        def chunks_of(hashes: Collection[str]) -> None:
            if hashes:
                tick(sum(1 for item in batch for c in item.chunked.chunks if c.hash in hashes))

        chunks_of(found)
        missing = [h for h in texts if h not in found]
        found.update(embed_batches(model, cache, {h: texts[h] for h in missing}, counts, stop, chunks_of))
    return found
