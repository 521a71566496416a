"""The vector index kept equal to the index's chunks: embedding in batches (cached at once, stoppable, with
progress), restoring what the vector file lacks (a lost file, a changed model) from the embedding cache or the
model, checking stored vectors against the cache, and saving the file with the stamp that says it is current.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager

import numpy as np

from vault_cortex.errors import SyncCancelled
from vault_cortex.index.db import IndexDB
from vault_cortex.index.embed import Embedder, busy
from vault_cortex.index.vectors import EmbeddingCache, Vector, Vectors

log = logging.getLogger(__name__)

# Set while chunks were written without their vector (words first), until fill_vectors has given every chunk one:
# a vector file saved meanwhile is current (it holds no wrong vector) yet lacks chunks.
LACKING = "vectors_lacking"
EMBED_BATCH = 8  # chunks embedded (and cached) between two looks at the stop flag and two progress steps
FILL_TURN = 32  # chunks embedded per turn of filling in vectors: added to the vector index under the lock at once
BULK_CHUNKS = 256  # a fill of at least this many chunks runs the model's batches side by side (`busy`)
FILL_WINDOW = 2048  # chunk texts read from the index at a time and sorted by length (alike lengths batch together)
# Largest difference per component between a stored vector and its cache entry: the vector index stores int8
# (x * 127 truncated: off by up to 1/127 = 7.9e-3) and the cache float16 (off by up to 4.9e-4 for |x| <= 1).
VECTOR_TOLERANCE = 1e-2

def cached_vectors(cache: EmbeddingCache, model: Embedder, hashes: Collection[str]) -> dict[str, Vector]:
    """The usable cache entries of these chunk hashes (the model's size, finite)."""
    found = cache.get_many(model.model_id, hashes)
    return {h: v for h, v in found.items() if v.shape == (model.dim,) and np.isfinite(v).all()}


def embed_batches(model: Embedder, cache: EmbeddingCache, texts: Mapping[str, str], counts: dict[str, int],
                  stop: threading.Event | None = None,
                  done: Callable[[set[str]], None] | None = None) -> dict[str, Vector]:
    """Embed these texts (by chunk hash) EMBED_BATCH at a time, caching each batch at once (a kill loses at most
    one), obeying a set `stop` between batches (SyncCancelled) and telling `done` the hashes of each batch; a
    non-finite vector from the model becomes a neutral unit vector. Returns the vectors as stored."""
    hashes = list(texts)
    out: dict[str, Vector] = {}
    for start in range(0, len(hashes), EMBED_BATCH):
        if stop is not None and stop.is_set():
            raise SyncCancelled("the sync was stopped; what it finished is kept")
        part = hashes[start:start + EMBED_BATCH]
        computed = model.embed([texts[h] for h in part])
        fresh = {h: computed[i] for i, h in enumerate(part) if np.isfinite(computed[i]).all()}
        if len(fresh) < len(part):
            log.warning("the model gave %d non-finite vectors; those chunks get a neutral unit vector",
                        len(part) - len(fresh))
            neutral = np.zeros(model.dim, dtype=np.float32)
            neutral[0] = 1.0
            fresh.update({h: neutral for h in part if h not in fresh})
        out.update(cache.put_many(model.model_id, fresh))  # as stored: what a rebuild would read back
        counts["embedded"] += len(part)
        if done is not None:
            done(set(part))
    return out


def fill_vectors(db: IndexDB, vectors: Vectors, cache: EmbeddingCache, embedder: Callable[[], Embedder],
                 counts: dict[str, int], *, lock: Callable[[], AbstractContextManager[object]],
                 stop: threading.Event | None = None, pause: Callable[[], bool] | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> int:
    """Give every chunk without a vector its vector: the bulk of a first index (notes are written words first),
    a lost vector file, a changed model. Runs without the write lock but for short turns (`lock`), each adding
    FILL_TURN chunks' vectors, so recall finds them by meaning as they come and writes go on between. Texts are
    embedded in length order within windows of FILL_WINDOW (batches of alike lengths: little padding), each turn
    cached at once (a stopped or killed fill resumes where it was); progress is phase "vectors" in chunks. `stop`
    set: SyncCancelled; `pause()` true: return between turns. Returns how many chunks are left without a vector."""
    ids_of = _lacking(db, vectors, lock)
    if not ids_of:
        return 0
    model = embedder()
    total = sum(len(ids) for ids in ids_of.values())
    done = 0

    def add(found: Mapping[str, Vector]) -> None:
        """Under the lock: the vectors of the chunks that still hold these texts and have none yet."""
        ids = [i for h in found for i in ids_of[h]]
        with lock():
            now = db.hashes_of(ids)
            keep = [i for i in vectors.lacking([i for i in ids if i in now]) if now[i] in found]
            if keep:
                vectors.add(keep, np.stack([found[now[i]] for i in keep]))

    def tick(hashes: Collection[str]) -> None:
        nonlocal done
        done += sum(len(ids_of[h]) for h in hashes)
        if progress is not None:
            progress("vectors", done, total)

    if progress is not None:
        progress("vectors", 0, total)
    log.info("giving %d chunks their vectors", total)
    order = sorted(ids_of)
    with busy(model, bulk=total >= BULK_CHUNKS):  # the model keeps its run buffers from first turn to last
        for start in range(0, len(order), FILL_WINDOW):
            window = order[start:start + FILL_WINDOW]
            found = cached_vectors(cache, model, window)  # embedded before a stop, a kill, or by another process
            counts["cached"] += len(found)
            if found:
                add(found)
                tick(found)
            texts = db.embed_texts([h for h in window if h not in found])  # chunks deleted meanwhile are left out
            tick([h for h in window if h not in found and h not in texts])
            alike = sorted(texts, key=lambda h: len(texts[h]))
            for turn in range(0, len(alike), FILL_TURN):
                if pause is not None and pause():
                    return total - done
                part = alike[turn:turn + FILL_TURN]
                add(embed_batches(model, cache, {h: texts[h] for h in part}, counts, stop, tick))
    with lock():
        if len(vectors) >= db.chunk_count():  # none lacks now (a words-first sync may have written more since)
            _filled(db)
    return total - done


def _lacking(db: IndexDB, vectors: Vectors, lock: Callable[[], AbstractContextManager[object]]) -> dict[str, list[int]]:
    """The ids of the chunks without a vector, by their text's hash (none when the index says every chunk has one)."""
    with lock():
        if vectors_current(db, vectors) and db.get_meta(LACKING) is None:
            return {}  # the usual case: the saved file holds every chunk (and it is not even read)
        if len(vectors) >= db.chunk_count():
            _filled(db)
            return {}
        hashes = db.chunk_hashes()
        have = vectors.keys()
    ids_of: dict[str, list[int]] = {}
    for i, h in hashes.items():
        if i not in have:
            ids_of.setdefault(h, []).append(i)
    return ids_of


def _filled(db: IndexDB) -> None:
    if db.get_meta(LACKING) is not None:
        with db.write():
            db.delete_meta(LACKING)


def save_vectors(db: IndexDB, vectors: Vectors) -> None:
    """Write the vector file and record its stamp (so the next open knows it is the file this index saved) and
    the note change it is current with."""
    vectors.save()
    with db.write():
        db.set_meta("vectors_stamp", vectors.stamp())
        db.set_meta("vectors_seq", str(db.change_seqs()[1]))


VECTORS_AUDIT = "2"  # versions before it could save a file short of another process's vectors, marked current


def vectors_current(db: IndexDB, vectors: Vectors) -> bool:
    """Whether the vector file is the one this index saved, unchanged since, and no note (so no chunk) changed
    after it was saved: then it holds exactly the index's chunks, and a full sync need not read or check it.
    An index no full sync has audited since VECTORS_AUDIT is never current (once: see `reconcile_vectors`)."""
    return (vectors.checked and not vectors.dirty and vectors.stamp() == db.get_meta("vectors_stamp")
            and db.get_meta("vectors_seq") == str(db.change_seqs()[1]) and not vectors.other_format()
            and db.get_meta("vectors_audit") == VECTORS_AUDIT)


def vector_problems(db: IndexDB, vectors: Vectors, cache: EmbeddingCache, model_id: str) -> tuple[list[int], int]:
    """Chunk ids whose stored vector is not finite or differs from its embedding-cache entry by more than
    VECTOR_TOLERANCE (int8 storage is off by up to 1/127); and how many stored vectors had no cache entry to compare."""
    hashes = db.chunk_hashes()
    have = vectors.keys()
    ids = sorted(i for i in hashes if i in have)
    bad: list[int] = []
    unchecked = 0
    for start in range(0, len(ids), 2000):
        part = ids[start:start + 2000]
        stored = vectors.get(part)
        cached = cache.get_many(model_id, {hashes[i] for i in part})
        for i in part:
            vec = stored.get(i)
            if vec is None or not np.isfinite(vec).all():
                bad.append(i)
                continue
            ref = cached.get(hashes[i])
            if ref is None or ref.shape != vec.shape or not np.isfinite(ref).all():
                unchecked += 1
            elif float(np.abs(vec - ref).max()) > VECTOR_TOLERANCE:
                bad.append(i)
    return bad, unchecked


def reconcile_vectors(
    db: IndexDB, vectors: Vectors, cache: EmbeddingCache, embedder: Callable[[], Embedder], *, embed: bool = True
) -> int:
    """Make the vector index hold exactly the chunks in SQLite (after a crash or a lost file), and, when its
    file was not the one this index saved, check every vector's content: any corrupt one means the whole
    vector index (its graph may be corrupt too) is rebuilt from the embedding cache. Runs under the write
    lock: run `fill_vectors` first (without it), so that what this adds comes from the cache. Without `embed`,
    chunks the cache does not hold are left without a vector (for `fill_vectors`, words first)."""
    rebuilt = 0
    held = len(vectors)  # reads the file first (a file of another storage type is moved over and unchecked)
    if not vectors.checked and held:
        bad, _ = vector_problems(db, vectors, cache, embedder().model_id)
        if bad:
            log.warning("%d stored vectors were corrupt: rebuilding the vector index from the embedding cache",
                        len(bad))
            rebuilt = len(vectors)
            vectors.reset()
    vectors.checked = True
    if db.get_meta("vectors_audit") != VECTORS_AUDIT:
        with db.write():
            db.set_meta("vectors_audit", VECTORS_AUDIT)
    hashes = db.chunk_hashes()
    have = vectors.keys()
    extra = have - set(hashes)
    missing = [i for i in hashes if i not in have]
    if extra:
        vectors.remove(extra)
    if missing:
        model = embedder()
        found = cached_vectors(cache, model, {hashes[i] for i in missing})
        need = sorted({hashes[i] for i in missing} - set(found))
        if need and embed:  # chunks written since `fill_vectors` ran (it embeds the bulk without the lock)
            found.update(embed_batches(model, cache, db.embed_texts(need), {"embedded": 0}))
        missing = [i for i in missing if hashes[i] in found]
        if missing:
            vectors.add(missing, np.stack([found[hashes[i]] for i in missing]))
        if missing and not rebuilt:
            log.info("restored %d vectors missing from the vector index", len(missing))
    return len(extra) + len(missing) + rebuilt
