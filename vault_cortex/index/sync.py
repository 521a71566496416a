"""Incremental sync: walk the vault, re-parse what changed (size/mtime, confirmed by hash), update the index."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from vault_cortex.config import Settings
from vault_cortex.files.chunk import Chunked, chunk_note
from vault_cortex.files.links import Resolver
from vault_cortex.files.note import RELATION_TYPES, Note, decode, is_binary, parse_note
from vault_cortex.files.vault import Skipped, VaultFile, content_hash, walk
from vault_cortex.index.activity import ACTIVITY_DIR
from vault_cortex.index.db import FileState, IndexDB
from vault_cortex.index.embed import Embedder
from vault_cortex.index.replay import replay_activity
from vault_cortex.index.vectors import EmbeddingCache, Vector, Vectors

log = logging.getLogger(__name__)

BATCH_NOTES = 32  # notes per write transaction and progress step: a killed sync keeps what it finished

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
    """Names, sizes and mtimes of the activity log's files: a change means the log must be replayed."""
    folder = root / ACTIVITY_DIR
    if not folder.is_dir():
        return ""
    parts = []
    for f in sorted(folder.glob("*.jsonl")):
        st = f.stat()
        parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
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


class _Changed(msgspec.Struct, kw_only=True):
    file: VaultFile
    state: FileState
    note: Note
    region: str
    chunked: Chunked


def sync(
    root: Path,
    db: IndexDB,
    vectors: Vectors,
    cache: EmbeddingCache,
    embedder: Callable[[], Embedder],
    settings: Settings,
    progress: Progress | None = None,
) -> SyncReport:
    """Bring the index in line with the files; never writes a note."""
    started = time.perf_counter()
    walked = walk(root, settings.index)
    states = db.file_states()
    skipped = list(walked.skipped)
    unchanged: list[tuple[str, FileState]] = []
    todo: list[tuple[VaultFile, bytes, str]] = []
    for f in walked.notes:
        old = states.get(f.path)
        if old and old.size == f.size and old.mtime_ns == f.mtime_ns and old.fs_path == f.fs_path:
            unchanged.append((f.path, old))
            continue
        try:
            data = (root / f.fs_path).read_bytes()
        except OSError as exc:
            skipped.append(Skipped(path=f.path, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if is_binary(data):
            skipped.append(Skipped(path=f.path, reason="binary file named .md"))
            continue
        digest = content_hash(data)
        if old and old.hash == digest:
            unchanged.append((f.path, FileState(fs_path=f.fs_path, size=f.size, mtime_ns=f.mtime_ns, hash=digest)))
            continue
        todo.append((f, data, digest))

    kept = {p for p, _ in unchanged} | {f.path for f, _, _ in todo}
    gone = sorted(set(states) - kept)
    new_hashes = {h for _, _, h in todo}
    renamed = sum(1 for p in gone if states[p].hash in new_hashes)
    added = sum(1 for f, _, _ in todo if f.path not in states)

    embed_seconds = 0.0
    counts = {"embedded": 0, "cached": 0, "noise": 0, "problems": 0}
    relation_types = RELATION_TYPES | frozenset(settings.relations)
    removed_ids: list[int] = []
    added_vectors: list[tuple[int, Vector]] = []

    with db.write():
        for path, state in unchanged:
            if states.get(path) != state:
                db.set_file(path, state)
        for path in gone:
            removed_ids += db.delete_note(path)

    total = len(todo)
    if progress and total:
        progress("index", 0, total)
    for start in range(0, total, BATCH_NOTES):
        batch = [_prepare(f, data, digest, settings, relation_types, embedder) for f, data, digest in
                 todo[start:start + BATCH_NOTES]]
        t0 = time.perf_counter()
        vecs = _vectors_for(batch, cache, embedder, counts)
        embed_seconds += time.perf_counter() - t0
        with db.write():
            for item in batch:
                removed_ids += db.delete_note(item.note.path)
                ids = db.insert_note(item.note, item.region, item.state, item.chunked.chunks,
                                     len(item.chunked.noise))
                added_vectors += [(i, vecs[c.hash]) for i, c in zip(ids, item.chunked.chunks, strict=True)]
                counts["noise"] += len(item.chunked.noise)
                counts["problems"] += len(item.note.problems)
        if progress:
            progress("index", min(start + BATCH_NOTES, total), total)

    paths_changed = bool(gone) or added > 0
    log_signature = activity_signature(root)
    replay_log = log_signature != db.get_meta("activity")
    with db.write():
        resolver = Resolver([f.path for f in walked.notes] + list(walked.attachments))
        db.resolve_links(resolver, None if paths_changed else [f.path for f, _, _ in todo])
        db.set_skipped(skipped)
        if replay_log:
            replay_activity(root, db)
            db.set_meta("activity", log_signature)
        if todo or gone or replay_log:
            db.set_meta("generation", str(int(db.get_meta("generation") or 0) + 1))
        db.set_meta("last_sync", time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    vectors.remove(removed_ids)
    if added_vectors:
        vectors.add([i for i, _ in added_vectors], np.stack([v for _, v in added_vectors]))
    repaired = reconcile_vectors(db, vectors, cache, embedder)
    if removed_ids or added_vectors or repaired:
        vectors.save()

    return SyncReport(
        notes=db.counts()["notes"],
        added=added - renamed,
        updated=total - added,
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


def _prepare(
    f: VaultFile,
    data: bytes,
    digest: str,
    settings: Settings,
    relation_types: frozenset[str],
    embedder: Callable[[], Embedder],
) -> _Changed:
    text, problems = decode(data)
    note = parse_note(f.path, text, relation_types)
    region, region_problem = region_of(note, settings)
    extra = problems + ((region_problem,) if region_problem else ())
    if extra:
        note = msgspec.structs.replace(note, problems=tuple(note.problems) + extra)
    chunked = chunk_note(note, embedder().count_tokens, settings.index.chunk_tokens)
    state = FileState(fs_path=f.fs_path, size=f.size, mtime_ns=f.mtime_ns, hash=digest)
    return _Changed(file=f, state=state, note=note, region=region, chunked=chunked)


def _vectors_for(
    batch: Sequence[_Changed], cache: EmbeddingCache, embedder: Callable[[], Embedder], counts: dict[str, int]
) -> dict[str, Vector]:
    """Vectors for every chunk of the batch, from the cache or the model (and then cached)."""
    model = embedder()
    texts = {c.hash: c.embed_text for item in batch for c in item.chunked.chunks}
    found = cache.get_many(model.model_id, texts)
    missing = [h for h in texts if h not in found]
    counts["cached"] += len(found)
    if missing:
        computed = model.embed([texts[h] for h in missing])
        fresh = {h: computed[i] for i, h in enumerate(missing)}
        cache.put_many(model.model_id, fresh)
        found.update(fresh)
        counts["embedded"] += len(missing)
    return found


def reconcile_vectors(
    db: IndexDB, vectors: Vectors, cache: EmbeddingCache, embedder: Callable[[], Embedder]
) -> int:
    """Make the vector index hold exactly the chunks in SQLite (after a crash or a lost file)."""
    hashes = db.chunk_hashes()
    have = vectors.keys()
    extra = have - set(hashes)
    missing = [i for i in hashes if i not in have]
    if extra:
        vectors.remove(extra)
    if missing:
        model = embedder()
        found = cache.get_many(model.model_id, (hashes[i] for i in missing))
        need = sorted({hashes[i] for i in missing} - set(found))
        if need:
            texts = db.embed_texts(need)
            computed = model.embed([texts[h] for h in need])
            fresh = {h: computed[k] for k, h in enumerate(need)}
            cache.put_many(model.model_id, fresh)
            found.update(fresh)
        vectors.add(missing, np.stack([found[hashes[i]] for i in missing]))
        log.info("restored %d vectors missing from the vector index", len(missing))
    return len(extra) + len(missing)
