"""Chunk vectors: a usearch index (cosine, f16) keyed by chunk id, and the embedding cache in SQLite."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime  # noqa: F401  # must be loaded before usearch: the other order segfaults (clashing native libs)
from usearch.index import Index  # noqa: I001

from vault_cortex.errors import IndexCorrupt, IndexUnavailable
from vault_cortex.index.db import quick_check

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]


# A rowid table: SQLite keeps a 1.5 KB vector inline in a table row, but spills it to an overflow page in a
# WITHOUT ROWID (index) row, which cost 4.7 KB a vector on disk instead of 2.2 KB.
_CACHE_COLUMNS = "model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY(model, hash)"


class EmbeddingCache:
    """Vectors keyed by (model id, chunk hash), so a rebuild of the index re-embeds nothing."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        try:
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout=5000")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute(f"CREATE TABLE IF NOT EXISTS cache({_CACHE_COLUMNS})")
                self._migrate()
        except sqlite3.Error as exc:
            if not readonly and ("malformed" in str(exc) or "not a database" in str(exc)):
                raise IndexCorrupt(f"the embedding cache at {path} is damaged: {exc}") from exc
            raise IndexUnavailable(f"cannot open the embedding cache at {path}: {exc}") from exc
        self._lock = threading.Lock()  # one statement sequence at a time on the shared connection

    def _migrate(self) -> None:
        """Move a cache of the first format (a WITHOUT ROWID table: each 1.5 KB vector spilled onto an overflow
        page, 4.7 KB a vector on disk) into a rowid table (2.2 KB a vector), once, keeping every vector."""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'cache'").fetchone()
        if row is None or "WITHOUT ROWID" not in row[0].upper():
            return
        log.info("embedding cache: moving to the compact format (once)")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(f"CREATE TABLE cache_new({_CACHE_COLUMNS})")
            self.conn.execute("INSERT OR REPLACE INTO cache_new(model, hash, vec) SELECT model, hash, vec FROM cache")
            self.conn.execute("DROP TABLE cache")
            self.conn.execute("ALTER TABLE cache_new RENAME TO cache")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self.conn.execute("VACUUM")

    def quick_check(self) -> str | None:
        """What SQLite's quick_check finds wrong with the cache (None: nothing); O(file size), see IndexDB."""
        with self._lock:
            return quick_check(self.conn, f"the embedding cache at {self.path}")

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        wanted = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(wanted), 500):
                part = wanted[start:start + 500]
                rows = self.conn.execute(
                    f"SELECT hash, vec FROM cache WHERE model = ? AND hash IN ({','.join('?' * len(part))})",
                    [model, *part],
                ).fetchall()
                for h, blob in rows:
                    if len(blob) % 4 == 0:  # a torn or foreign blob is a miss, not a crash
                        out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, vectors: Mapping[str, Vector]) -> None:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany(
                    "INSERT OR REPLACE INTO cache(model, hash, vec) VALUES (?, ?, ?)",
                    [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class Vectors:
    """The usearch index of chunk vectors; added with one thread (usearch #735 loses vectors otherwise).

    Every method takes a short lock, so searches run while a sync changes the index between them.
    """

    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self._lock = threading.RLock()
        self._index: Index | None = None  # read from the file on first use: a sync with nothing to do never does
        self.problem = ""  # why a saved file was not usable (it is rebuilt from the cache)
        # Whether the vectors held were checked against the embedding cache (or built here): a file read
        # from disk is checked by the next sync unless it is the very file this index last saved (`stamp`).
        self.checked = not path.exists()
        # Changed since the file was saved. A write does not save the file (it costs the whole index): the
        # embedding cache and SQLite are the durable truth, and a sync restores what a stale file lacks.
        self.dirty = False
        self.saved_at = time.monotonic()
        self._opened = self.stamp()  # the file whose stamp the owner compared with the index's

    @property
    def index(self) -> Index:
        """The usearch index, read from the file the first time it is needed."""
        with self._lock:
            if self._index is None:
                self._index = self._load()
            return self._index

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def _load(self) -> Index:
        fresh = Index(ndim=self.dim, metric="cos", dtype="f16")
        if self.stamp() != self._opened:
            self.checked = False  # replaced since it was opened: not the file the index's stamp vouched for
        if not self.path.exists():
            return fresh
        try:
            loaded = Index.restore(str(self.path), view=False)
        except Exception as exc:  # noqa: BLE001 - a corrupt derived file is rebuilt, not fatal
            self.problem = f"vector file unreadable, rebuilt: {exc}"
            log.warning("%s", self.problem)
            return fresh
        return loaded if loaded is not None and loaded.ndim == self.dim else fresh

    def stamp(self) -> str:
        """Size and mtime of the saved file ("" when there is none): a different stamp means another hand."""
        try:
            st = self.path.stat()
        except OSError:
            return ""
        return f"{st.st_size}:{st.st_mtime_ns}"

    def reset(self) -> None:
        """Drop every vector (to rebuild them from the cache)."""
        with self._lock:
            self._index = Index(ndim=self.dim, metric="cos", dtype="f16")
            self.dirty = True

    def __len__(self) -> int:
        with self._lock:
            return len(self.index)

    def keys(self) -> set[int]:
        with self._lock:
            return {int(k) for k in np.asarray(self.index.keys)}

    def add(self, ids: Sequence[int], vectors: Vector) -> None:
        with self._lock:
            if len(ids):
                self.dirty = True
                self.index.add(np.asarray(ids, dtype=np.uint64), np.asarray(vectors, dtype=np.float32), threads=1)

    def remove(self, ids: Iterable[int]) -> None:
        with self._lock:
            keys = [i for i in ids]
            if keys:
                self.dirty = True
                self.index.remove(np.asarray(keys, dtype=np.uint64))

    def search(self, query: Vector, count: int) -> dict[int, float]:
        """Cosine similarity of the `count` nearest chunks."""
        with self._lock:
            if len(self.index) == 0 or count <= 0:
                return {}
            matches = self.index.search(np.asarray(query, dtype=np.float32), min(count, len(self.index)))
            return {int(k): 1.0 - float(d) for k, d in zip(matches.keys, matches.distances, strict=True)}

    def search_among(self, query: Vector, ids: Sequence[int], count: int) -> dict[int, float]:
        """Cosine similarity of the `count` chunks nearest to the query among the given ids (exact)."""
        got = self.get(ids)
        if not got or count <= 0:
            return {}
        keys = list(got)
        matrix = np.stack([got[k] for k in keys])
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        sims = matrix @ np.asarray(query, dtype=np.float32) / norms
        top = np.argsort(-sims, kind="stable")[:count]
        return {keys[i]: float(sims[i]) for i in top}

    def similarity(self, query: Vector, ids: Sequence[int]) -> dict[int, float]:
        """Exact cosine similarity of the query to the given chunks (those present)."""
        if not ids:
            return {}
        out: dict[int, float] = {}
        for i, vec in self.get(ids).items():
            if vec is not None:
                norm = float(np.linalg.norm(vec)) or 1.0
                out[int(i)] = float(np.dot(vec, query)) / norm
        return out

    def get(self, ids: Sequence[int]) -> dict[int, Vector]:
        with self._lock:
            if not ids:
                return {}
            got: Any = self.index.get(np.asarray(ids, dtype=np.uint64), dtype="f32")
            if len(ids) == 1 and not isinstance(got, tuple):
                got = (got,)
            return {int(i): np.asarray(v, dtype=np.float32) for i, v in zip(ids, got, strict=True) if v is not None}

    def save(self) -> None:
        with self._lock:
            tmp = self.path.with_suffix(".tmp")
            self.index.save(str(tmp))
            os.replace(tmp, self.path)
            self.dirty = False
            self.saved_at = time.monotonic()
