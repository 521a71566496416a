"""Chunk vectors: a usearch index (cosine, int8) keyed by chunk id, and the embedding cache in SQLite (float16)."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import vault_cortex.index.embed  # noqa: F401  # onnxruntime (telemetry off) loads before usearch: the other order segfaults

# isort: split
from usearch.index import Index

from vault_cortex.errors import IndexCorrupt, IndexUnavailable
from vault_cortex.index.dbfile import quick_check

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
# int8 components (x * 127, truncated: off by < 1/127 each): half the bytes of f16, and recall measured no worse
# (LoCoMo R@1/5/10 0.339/0.607/0.719 with int8, 0.331/0.604/0.718 with f16).
DTYPE = "i8"
DEAD_MAX = 2048  # removed vectors usearch keeps (left out of answers) before they are removed in one batch


# A rowid table: SQLite keeps a vector inline in a table row, but spills a long one to an overflow page in a
# WITHOUT ROWID (index) row. A vector is float16 (768 bytes at 384 dims: half of float32, and well inside the
# vector index's own int8 error); the model is a number (`models`), a hex hash its 16 bytes.
_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS models(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS vectors(model INTEGER NOT NULL, hash BLOB NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY(model, hash));
"""
_HEX = frozenset("0123456789abcdef")


def _key(h: str) -> bytes | str:
    """A chunk hash as stored: the bytes of a lower-case hex hash (half the size), any other text as it is."""
    return bytes.fromhex(h) if len(h) % 2 == 0 and h and _HEX.issuperset(h) else h


def _unkey(k: bytes | str) -> str:
    return k.hex() if isinstance(k, bytes) else k


def _blob(v: Vector) -> bytes:
    return np.asarray(v, dtype=np.float16).tobytes()


class EmbeddingCache:
    """Vectors keyed by (model id, chunk hash), so a rebuild of the index re-embeds nothing."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        self._models: dict[str, int] = {}
        try:
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout=5000")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.executescript(_CACHE_SCHEMA)
                self._migrate()
        except sqlite3.Error as exc:
            if not readonly and ("malformed" in str(exc) or "not a database" in str(exc)):
                raise IndexCorrupt(f"the embedding cache at {path} is damaged: {exc}") from exc
            raise IndexUnavailable(f"cannot open the embedding cache at {path}: {exc}") from exc
        self._lock = threading.Lock()  # one statement sequence at a time on the shared connection

    def _migrate(self) -> None:
        """Move a cache of an earlier format (table `cache`: model text, hex hash text, float32 vector; first
        WITHOUT ROWID, then a rowid table) into `vectors` (model number, hash bytes, float16 vector), once,
        keeping every vector (as float16)."""
        def old_table() -> bool:
            return self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cache'").fetchone() is not None

        if not old_table():
            return
        self.conn.execute("BEGIN IMMEDIATE")
        if not old_table():  # another process moved it meanwhile
            self.conn.execute("COMMIT")
            return
        log.info("embedding cache: moving to the compact float16 format (once)")
        try:
            last = None
            while True:
                rows = self.conn.execute(
                    "SELECT model, hash, vec FROM cache WHERE (model, hash) > (?, ?) ORDER BY model, hash LIMIT 5000",
                    last or ("", "")).fetchall()
                if not rows:
                    break
                self.conn.executemany(
                    "INSERT OR REPLACE INTO vectors(model, hash, vec) VALUES (?, ?, ?)",
                    [(self._model_id(m, create=True), _key(h), _blob(np.frombuffer(v, dtype=np.float32)))
                     for m, h, v in rows if len(v) % 4 == 0])
                last = rows[-1][:2]
            self.conn.execute("DROP TABLE cache")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._models.clear()
            raise
        self.conn.execute("COMMIT")
        with suppress(sqlite3.OperationalError):  # give the space back to the file system (unless busy)
            self.conn.execute("VACUUM")

    def _model_id(self, model: str, *, create: bool = False) -> int | None:
        """The number a model's vectors are stored under (made, with `create`, if it has none yet)."""
        got = self._models.get(model)
        if got is None:
            row = self.conn.execute("SELECT id FROM models WHERE name = ?", (model,)).fetchone()
            if row is None and create:
                row = (self.conn.execute("INSERT INTO models(name) VALUES (?)", (model,)).lastrowid,)
            if row is None:
                return None
            got = self._models[model] = int(row[0])
        return got

    def quick_check(self) -> str | None:
        """What SQLite's quick_check finds wrong with the cache (None: nothing); O(file size), see IndexDB."""
        with self._lock:
            return quick_check(self.conn, f"the embedding cache at {self.path}")

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        wanted = [_key(h) for h in dict.fromkeys(hashes)]
        with self._lock:
            number = self._model_id(model)
            if number is None:
                return out
            for start in range(0, len(wanted), 500):
                part = wanted[start:start + 500]
                rows = self.conn.execute(
                    f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({','.join('?' * len(part))})",
                    [number, *part],
                ).fetchall()
                for h, blob in rows:
                    if len(blob) % 2 == 0:  # a torn or foreign blob is a miss, not a crash
                        out[_unkey(h)] = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
        return out

    def put_many(self, model: str, vectors: Mapping[str, Vector]) -> dict[str, Vector]:
        """Store the vectors; returns them as stored (float16, read back as float32), which is what the vector
        index must hold so that a rebuild from this cache gives it byte for byte."""
        stored = {h: np.asarray(v, dtype=np.float16).astype(np.float32) for h, v in vectors.items()}
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                number = self._model_id(model, create=True)
                self.conn.executemany(
                    "INSERT OR REPLACE INTO vectors(model, hash, vec) VALUES (?, ?, ?)",
                    [(number, _key(h), _blob(v)) for h, v in stored.items()],
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                self._models.clear()
                raise
            self.conn.execute("COMMIT")
        return stored

    def close(self) -> None:
        self.conn.close()


class Vectors:
    """The usearch index of chunk vectors; added with one thread (usearch #735 loses vectors otherwise).

    Every method takes a short lock, so searches run while a sync changes the index between them.
    """

    def __init__(self, path: Path, dim: int | Callable[[], int]) -> None:
        """`dim` may be given as a function, called the first time the vectors are read or written: a process
        that only writes files (the capture hook) then never loads the model to learn it."""
        self.path = path
        self._dim = dim
        self._lock = threading.RLock()
        self._index: Index | None = None  # read from the file on first use: a sync with nothing to do never does
        self._dead: set[int] = set()  # removed, but still in usearch until `purge` (see `remove`)
        self.problem = ""  # why a saved file was not usable (it is rebuilt from the cache)
        # Whether the vectors held were checked against the embedding cache (or built here): a file read
        # from disk is checked by the next sync unless it is the very file this index last saved (`stamp`).
        self.checked = not path.exists()
        # Changed since the file was saved. A write does not save the file (it costs the whole index): the
        # embedding cache and SQLite are the durable truth, and a sync restores what a stale file lacks.
        self.dirty = False
        self.saved_at = time.monotonic()
        self._converted = False  # moved from another storage type and not saved since
        self._opened = self.stamp()  # the file whose stamp the owner compared with the index's

    @property
    def index(self) -> Index:
        """The usearch index, read from the file the first time it is needed."""
        with self._lock:
            if self._index is None:
                self._index = self._load()
            return self._index

    @property
    def dim(self) -> int:
        if callable(self._dim):
            self._dim = self._dim()
        return self._dim

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def other_format(self) -> bool:
        """Whether the saved file stores vectors of another type (f16 before int8): read from its header, so
        a full sync converts it even when nothing else would make it read the file."""
        try:
            meta = Index.metadata(str(self.path)) if self.path.exists() else None
        except Exception:  # noqa: BLE001 - an unreadable header is the load's problem to report
            return False
        return meta is not None and str(meta.get("kind_scalar", "")).rsplit(".", 1)[-1].lower() != DTYPE

    def _load(self) -> Index:
        fresh = Index(ndim=self.dim, metric="cos", dtype=DTYPE)
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
        if loaded is None or loaded.ndim != self.dim:
            return fresh
        return loaded if str(loaded.dtype) == str(fresh.dtype) else self._convert(loaded)

    def _convert(self, old: Index) -> Index:
        """The vectors of a file of another storage type (f16 before int8) in an index of this one, once: not
        re-embedded. The file is not the one this index saved, so the next sync checks every vector against
        the embedding cache (and rebuilds from it if any is off)."""
        was = str(old.dtype).rsplit(".", 1)[-1].lower()
        log.info("vector index: moving %d vectors from %s to %s storage (once)", len(old), was, DTYPE)
        new = Index(ndim=self.dim, metric="cos", dtype=DTYPE)
        keys = np.asarray(old.keys, dtype=np.uint64)
        for start in range(0, len(keys), 10_000):
            part = keys[start:start + 10_000]
            new.add(part, np.asarray(old.get(part, dtype="f32"), dtype=np.float32), threads=1)
        self.dirty = True
        self._converted = True
        self.checked = False
        return new

    def stamp(self) -> str:
        """Size and mtime of the saved file ("" when there is none, or it was of another storage type): a
        different stamp means another hand."""
        if self._converted:
            return ""
        try:
            st = self.path.stat()
        except OSError:
            return ""
        return f"{st.st_size}:{st.st_mtime_ns}"

    def reset(self) -> None:
        """Drop every vector (to rebuild them from the cache)."""
        with self._lock:
            self._index = Index(ndim=self.dim, metric="cos", dtype=DTYPE)
            self._dead.clear()
            self.dirty = True

    def __len__(self) -> int:
        with self._lock:
            return len(self.index) - len(self._dead)

    def keys(self) -> set[int]:
        with self._lock:
            return {int(k) for k in np.asarray(self.index.keys)} - self._dead

    def lacking(self, ids: Sequence[int]) -> list[int]:
        """Those of these chunk ids that have no vector."""
        with self._lock:
            if not ids:
                return []
            there = np.atleast_1d(self.index.contains(np.asarray(ids, dtype=np.uint64)))
            return [int(i) for i, held in zip(ids, there, strict=True) if not held or int(i) in self._dead]

    def add(self, ids: Sequence[int], vectors: Vector) -> None:
        with self._lock:
            if len(ids):
                self.dirty = True
                if not self._dead.isdisjoint(ids):  # usearch still holds those keys: take them out first
                    self.purge()
                self.index.add(np.asarray(ids, dtype=np.uint64), np.asarray(vectors, dtype=np.float32), threads=1)

    def remove(self, ids: Iterable[int]) -> None:
        """Take chunks out. usearch makes the next add or search after any removal pay a pass over the whole
        index (~6 ms at 300k vectors), so a write would pay it every time: the vectors stay in usearch, set
        aside in `_dead` and left out of every answer, and are removed in one batch (`purge`) when there are
        `DEAD_MAX` of them or the file is saved."""
        with self._lock:
            keys = {int(i) for i in ids} - self._dead
            if keys:
                self.dirty = True
                self._dead |= {k for k, there in zip(sorted(keys), np.atleast_1d(
                    self.index.contains(np.asarray(sorted(keys), dtype=np.uint64))), strict=True) if there}
                if len(self._dead) > DEAD_MAX:
                    self.purge()

    def purge(self) -> None:
        """Remove the set-aside vectors from usearch (one batch)."""
        with self._lock:
            if self._dead:
                self.index.remove(np.asarray(sorted(self._dead), dtype=np.uint64))
                self._dead.clear()

    def search(self, query: Vector, count: int, skip: frozenset[int] = frozenset()) -> dict[int, float]:
        """Cosine similarity of the `count` nearest chunks (vectors set aside by `remove` left out, and the
        `skip` ones: a few more are fetched, four times as many each round while too few are left)."""
        with self._lock:
            total = len(self.index)
            if total - len(self._dead) <= 0 or count <= 0:
                return {}
            left = len(self._dead) + len(skip)
            extra = min(left, count)  # an edited chunk's old vector is often near its new one
            while True:
                fetch = min(count + extra, total)
                matches = self.index.search(np.asarray(query, dtype=np.float32), fetch)
                found = {k: 1.0 - float(d) for key, d in zip(matches.keys, matches.distances, strict=True)
                         if (k := int(key)) not in self._dead and k not in skip}
                if len(found) >= count or fetch >= total or extra >= left:
                    return dict(list(found.items())[:count])
                extra = min(left, extra * 4) if skip else left

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
            return {int(i): np.asarray(v, dtype=np.float32) for i, v in zip(ids, got, strict=True)
                    if v is not None and int(i) not in self._dead}

    def save(self) -> None:
        with self._lock:
            self.purge()
            tmp = self.path.with_suffix(".tmp")
            self.index.save(str(tmp))
            os.replace(tmp, self.path)
            self.dirty = False
            self._converted = False
            self.saved_at = time.monotonic()
