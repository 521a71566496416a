"""Health of a vault and its index: parse problems, skipped files, links, drift; and rebuild-and-compare."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np

from vault_cortex.files.activity_files import conflicted
from vault_cortex.files.walk import Skipped, walk
from vault_cortex.index.db import IndexDB
from vault_cortex.index.restore import VECTOR_TOLERANCE, vector_problems
from vault_cortex.index.rows import LinkRow
from vault_cortex.index.sync import RACILY_CLEAN, Progress, sync
from vault_cortex.index.upkeep import Index
from vault_cortex.index.vectors import Vectors


class Doctor(msgspec.Struct, frozen=True, kw_only=True):
    """What is wrong or worth a look in the vault and its index."""

    problems: list[tuple[str, str]]  # (path, parse problem)
    skipped: list[Skipped]
    dangling: list[LinkRow]
    ambiguous: list[LinkRow]
    drift: list[str]  # files whose index entry is out of date, as "path: why"
    # versioned activity files holding git conflict markers, each with how to resolve it
    activity_conflicts: list[str] = msgspec.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.problems or self.skipped or self.dangling or self.ambiguous or self.drift
                    or self.activity_conflicts)


class Verify(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    differences: list[str]
    seconds: float



def doctor(index: Index) -> Doctor:
    """Parse problems, skipped files, dangling and ambiguous links, and index/file drift."""
    links = index.db.links()
    walked = walk(index.root, index.settings.index)
    states = index.db.file_states()
    drift = []
    on_disk = {f.path: f for f in walked.notes}
    skipped_now = {s.path for s in walked.skipped} | {s.path for s in index.db.skipped()}
    for path, f in on_disk.items():
        st = states.get(path)
        if st is None and path not in skipped_now:
            drift.append(f"{path}: on disk, not in the index")
        elif st is not None and (st.size not in (f.size, RACILY_CLEAN) or st.mtime_ns != f.mtime_ns):
            drift.append(f"{path}: changed on disk since the last sync")
    drift += [f"{p}: in the index, gone from disk" for p in sorted(set(states) - set(on_disk))]
    chunks, held = set(index.db.chunk_hashes()), index.vectors.keys()
    if chunks - held:
        drift.append(f"vectors: {len(chunks - held)} chunks have no vector (the next sync restores them)")
    if held - chunks:
        drift.append(f"vectors: {len(held - chunks)} vectors belong to no chunk (the next sync removes them)")
    return Doctor(
        problems=index.db.problems(),
        skipped=sorted({s.path: s for s in [*index.db.skipped(), *walked.skipped]}.values(),
                       key=lambda s: s.path),
        dangling=[ln for ln in links if ln.dst is None],
        ambiguous=[ln for ln in links if ln.ambiguous],
        drift=sorted(drift),
        activity_conflicts=[
            f"{path}: git conflict markers (a merge without the union driver); new events go to a sibling file "
            "meanwhile. Resolve it by keeping the lines of both sides and deleting the marker lines (<<<<<<<, "
            "=======, >>>>>>>), then commit; `.cortex/activity/*.jsonl merge=union` in .gitattributes merges "
            "these files without conflicts" for path in conflicted(index.root)],
    )


def verify(index: Index, progress: Progress | None = None) -> Verify:
    """Check every stored vector against the embedding cache, then rebuild the index into a temporary folder
    and compare it with the live one: rows, and each chunk's vector (content, not counts)."""
    started = time.perf_counter()
    model_id = index.embedder.model_id
    bad, _ = vector_problems(index.db, index.vectors, index.cache, model_id)
    differences = _vector_lines(index.db, bad, "stored vector differs from the embedding cache (or is not finite)")
    if bad:
        index.vectors.checked = False  # the sync below rebuilds the vector index from the cache
    index.sync()
    tmp = Path(tempfile.mkdtemp(prefix="vault-cortex-verify-"))
    try:
        embedder = index.embedder
        rebuilt_db = IndexDB(tmp / "index.db")
        try:
            rebuilt_vectors = Vectors(tmp / "vectors.usearch", embedder.dim)
            sync(index.root, rebuilt_db, rebuilt_vectors, index.cache, lambda: embedder, index.settings, progress)
            differences += _compare(index.db.snapshot(), rebuilt_db.snapshot())
            differences += _compare_vectors(index.db, index.vectors, rebuilt_db, rebuilt_vectors)
        finally:
            rebuilt_db.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Verify(ok=not differences, differences=differences,
                  seconds=round(time.perf_counter() - started, 2))


def _vector_lines(db: IndexDB, ids: list[int], why: str) -> list[str]:
    if not ids:
        return []
    chunks = db.chunks_by_id(ids[:20])
    notes = db.notes_by_id({c.note_id for c in chunks.values()})
    out = [f"vectors: {notes[c.note_id].path} chunk {c.ord}: {why}" for c in chunks.values() if c.note_id in notes]
    if len(ids) > 20:
        out.append(f"vectors: … {len(ids)} chunks in all")
    return out


def _compare_vectors(live_db: IndexDB, live: Vectors, rebuilt_db: IndexDB, rebuilt: Vectors) -> list[str]:
    """Each chunk's vector in the live index against the rebuild's, matched by (note, chunk order)."""
    def by_place(db: IndexDB) -> dict[tuple[str, int], int]:
        notes = db.all_notes()
        chunks = db.chunks_of(n.id for n in notes)
        return {(n.path, c.ord): c.id for n in notes for c in chunks.get(n.id, [])}

    a, b = by_place(live_db), by_place(rebuilt_db)
    out: list[str] = []
    wrong: list[int] = []
    places = sorted(set(a) & set(b))
    for start in range(0, len(places), 2000):
        part = places[start:start + 2000]
        mine = live.get([a[p] for p in part])
        theirs = rebuilt.get([b[p] for p in part])
        for place in part:
            x, y = mine.get(a[place]), theirs.get(b[place])
            if x is None or y is None or not np.isfinite(x).all() \
                    or float(np.abs(x - y).max()) > VECTOR_TOLERANCE:
                wrong.append(a[place])
    out += _vector_lines(live_db, wrong, "live vector differs from the rebuild's")
    if len(live) != len(a) or len(rebuilt) != len(b):
        out.append(f"vectors: live index has {len(live)} for {len(a)} chunks, "
                   f"rebuild has {len(rebuilt)} for {len(b)}")
    return out


def _compare(live: dict[str, list[tuple[object, ...]]], rebuilt: dict[str, list[tuple[object, ...]]]) -> list[str]:
    out = []
    for table in live:
        a, b = set(live[table]), set(rebuilt[table])
        for row in sorted(a - b, key=repr)[:20]:
            out.append(f"{table}: only in the live index: {row[:3]}")
        for row in sorted(b - a, key=repr)[:20]:
            out.append(f"{table}: only in the rebuild: {row[:3]}")
    return out
