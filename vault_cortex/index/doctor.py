"""Health of a vault and its index: parse problems, skipped files, links, drift; and rebuild-and-compare."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Protocol

import msgspec

from vault_cortex.files.vault import Skipped, walk
from vault_cortex.index.db import IndexDB, LinkRow
from vault_cortex.index.host import Searchable
from vault_cortex.index.sync import Progress, sync
from vault_cortex.index.vectors import EmbeddingCache, Vectors


class Checked(Searchable, Protocol):
    """What the doctor reads: the store, its vectors and the embedding cache they are checked against."""

    @property
    def cache(self) -> EmbeddingCache: ...


class Doctor(msgspec.Struct, frozen=True, kw_only=True):
    """What is wrong or worth a look in the vault and its index."""

    problems: list[tuple[str, str]]  # (path, parse problem)
    skipped: list[Skipped]
    dangling: list[LinkRow]
    ambiguous: list[LinkRow]
    drift: list[str]  # files whose index entry is out of date, as "path: why"

    @property
    def ok(self) -> bool:
        return not (self.problems or self.skipped or self.dangling or self.ambiguous or self.drift)


class Verify(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    differences: list[str]
    seconds: float



def doctor(cx: Checked) -> Doctor:
    """Parse problems, skipped files, dangling and ambiguous links, and index/file drift."""
    links = cx.db.links()
    walked = walk(cx.root, cx.settings.index)
    states = cx.db.file_states()
    drift = []
    on_disk = {f.path: f for f in walked.notes}
    skipped_now = {s.path for s in walked.skipped} | {s.path for s in cx.db.skipped()}
    for path, f in on_disk.items():
        st = states.get(path)
        if st is None and path not in skipped_now:
            drift.append(f"{path}: on disk, not in the index")
        elif st is not None and (st.size != f.size or st.mtime_ns != f.mtime_ns):
            drift.append(f"{path}: changed on disk since the last sync")
    drift += [f"{p}: in the index, gone from disk" for p in sorted(set(states) - set(on_disk))]
    return Doctor(
        problems=cx.db.problems(),
        skipped=sorted({s.path: s for s in [*cx.db.skipped(), *walked.skipped]}.values(),
                       key=lambda s: s.path),
        dangling=[ln for ln in links if ln.dst is None],
        ambiguous=[ln for ln in links if ln.ambiguous],
        drift=sorted(drift),
    )


def verify(cx: Checked, progress: Progress | None = None) -> Verify:
    """Rebuild the index into a temporary folder and compare it with the live one."""
    started = time.perf_counter()
    cx.sync()
    tmp = Path(tempfile.mkdtemp(prefix="vault-cortex-verify-"))
    try:
        embedder = cx.embedder
        rebuilt_db = IndexDB(tmp / "index.db")
        try:
            rebuilt_vectors = Vectors(tmp / "vectors.usearch", embedder.dim)
            sync(cx.root, rebuilt_db, rebuilt_vectors, cx.cache, lambda: embedder, cx.settings, progress)
            differences = _compare(cx.db.snapshot(), rebuilt_db.snapshot())
            if len(cx.vectors) != len(rebuilt_vectors):
                differences.append(
                    f"vectors: live index has {len(cx.vectors)}, rebuild has {len(rebuilt_vectors)}")
        finally:
            rebuilt_db.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Verify(ok=not differences, differences=differences,
                  seconds=round(time.perf_counter() - started, 2))


def _compare(live: dict[str, list[tuple[object, ...]]], rebuilt: dict[str, list[tuple[object, ...]]]) -> list[str]:
    out = []
    for table in live:
        a, b = set(live[table]), set(rebuilt[table])
        for row in sorted(a - b, key=repr)[:20]:
            out.append(f"{table}: only in the live index: {row[:3]}")
        for row in sorted(b - a, key=repr)[:20]:
            out.append(f"{table}: only in the rebuild: {row[:3]}")
    return out
