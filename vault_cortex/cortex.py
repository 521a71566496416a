"""The facade: one `Cortex` per vault, which every adapter (CLI, HTTP, MCP, hooks) calls in-process."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import msgspec

from vault_cortex.config import Settings, load_settings
from vault_cortex.embed import Embedder, load_embedder
from vault_cortex.errors import InvalidRequest, NoteNotFound, VaultNotFound
from vault_cortex.index import IndexDB, LinkRow
from vault_cortex.rank import best_per_note, fuse, snippet
from vault_cortex.sync import Progress, SyncReport, reconcile_vectors, sync
from vault_cortex.vault import Skipped, atomic_write, content_hash, note_path, walk
from vault_cortex.vectors import EmbeddingCache, Vectors

log = logging.getLogger(__name__)

INDEX_DIR = ".cortex/index"


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled note: its best chunk, score and the two components of relevance."""

    path: str
    title: str
    region: str
    score: float
    dense: float
    lexical: float
    heading: str
    snippet: str
    line: int


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    query: str
    hits: list[Hit]
    took_ms: float


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


class NoteDoc(msgspec.Struct, frozen=True, kw_only=True):
    """A note's full text and its ETag (the content hash), for read-modify-write with If-Match."""

    path: str
    content: str
    etag: str


class Cortex:
    """A vault and its derived index."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 index_dir: Path | None = None, cache: EmbeddingCache | None = None) -> None:
        self.root = root
        self.settings = settings
        self.index_dir = index_dir or root / INDEX_DIR
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._vector_lock = threading.RLock()
        self.db = IndexDB(self.index_dir / "index.db")
        self._owns_cache = cache is None
        self.cache = cache or EmbeddingCache(self.index_dir / "embeddings.db")
        self.vectors = Vectors(self.index_dir / "vectors.usearch", self.dim)
        if self.vectors.problem:
            log.warning("%s", self.vectors.problem)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
             embedder: Embedder | None = None) -> Cortex:
        """Open a vault folder (its `.cortex/config.toml` is optional) and its index."""
        root = Path(path).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"no vault at {root}: run `vault-cortex init {root}` to create one")
        return cls(root.resolve(), load_settings(root, env), embedder)

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()
        if self._owns_cache:
            self.cache.close()

    # -- the model, loaded on first use -------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    self._embedder = load_embedder(self.settings.embedding)
        return self._embedder

    @property
    def dim(self) -> int:
        if self._embedder is not None:
            return self._embedder.dim
        saved = self.db.get_meta("dim")
        return int(saved) if saved else self.embedder.dim

    # -- index ---------------------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None) -> SyncReport:
        """Re-index what changed since the last sync; never writes a note."""
        with self._write_lock, self._vector_lock:
            self._check_model()
            return sync(self.root, self.db, self.vectors, self.cache, lambda: self.embedder, self.settings,
                        progress)

    def _check_model(self) -> None:
        """A different model than the index was built with means every vector must be rebuilt."""
        saved = self.db.get_meta("model")
        if self._embedder is None and saved is not None and not self.settings.embedding.model_dir:
            return  # the bundled model; loading it is deferred until something needs embedding
        model = self.embedder
        if saved != model.model_id:
            if saved is not None:
                log.warning("model changed from %s to %s: re-embedding every chunk", saved, model.model_id)
            self.vectors = Vectors(self.index_dir / "vectors.usearch.new", model.dim)
            self.vectors.path = self.index_dir / "vectors.usearch"
            with self.db.write():
                self.db.set_meta("model", model.model_id)
                self.db.set_meta("dim", str(model.dim))
            reconcile_vectors(self.db, self.vectors, self.cache, lambda: model)
            self.vectors.save()

    def status(self) -> dict[str, object]:
        counts = self.db.counts()
        return {
            "vault": str(self.root),
            **counts,
            "vectors": len(self.vectors),
            "model": self.db.get_meta("model"),
            "last_sync": self.db.get_meta("last_sync"),
        }

    # -- recall --------------------------------------------------------------------------------------
    def recall(self, query: str, *, k: int | None = None) -> Recall:
        """Notes for a query: dense and BM25 candidates fused, each note's best chunk, best first."""
        started = time.perf_counter()
        query = self._check_query(query)
        k = self._check_k(k)
        rs = self.settings.recall
        qvec = self.embedder.embed([query])[0]
        with self._vector_lock:
            dense = self.vectors.search(qvec, rs.candidates)
            lexical = self.db.lexical(query, rs.candidates)
            dense.update(self.vectors.similarity(qvec, [i for i in lexical if i not in dense]))
        lexical.update(self.db.lexical(query, rs.candidates, only=[i for i in dense if i not in lexical]))
        fused = fuse(dense, lexical, rs.dense_weight, rs.lexical_weight)
        chunks = self.db.chunks_by_id(f.chunk_id for f in fused)
        best = best_per_note(fused, {i: c.note_id for i, c in chunks.items()})[:k]
        notes = self.db.notes_by_id(chunks[f.chunk_id].note_id for f in best)
        hits = []
        for f in best:
            chunk = chunks[f.chunk_id]
            note = notes[chunk.note_id]
            hits.append(Hit(path=note.path, title=note.title, region=note.region, score=round(f.relevance, 4),
                            dense=round(f.dense, 4), lexical=round(f.lexical, 4), heading=chunk.heading,
                            snippet=snippet(chunk.text, query), line=chunk.start_line))
        return Recall(query=query, hits=hits, took_ms=round((time.perf_counter() - started) * 1000, 2))

    def _check_query(self, query: str) -> str:
        query = (query or "").strip()
        if not query:
            raise InvalidRequest("the query is empty")
        if len(query) > self.settings.recall.max_query_chars:
            raise InvalidRequest(
                f"the query is {len(query)} characters; the limit is {self.settings.recall.max_query_chars}")
        return query

    def _check_k(self, k: int | None) -> int:
        k = self.settings.recall.k if k is None else k
        if not 1 <= k <= self.settings.recall.max_k:
            raise InvalidRequest(f"k must be between 1 and {self.settings.recall.max_k}, not {k}")
        return k

    # -- notes ---------------------------------------------------------------------------------------
    def read_note(self, path: str) -> NoteDoc:
        """A note's text and ETag; the path must be a vault-relative .md path outside dot-folders."""
        file = note_path(self.root, path)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise NoteNotFound(f"no note at {path!r}") from None
        except IsADirectoryError:
            raise NoteNotFound(f"{path!r} is a folder, not a note") from None
        return NoteDoc(path=path, content=data.decode("utf-8", errors="replace"), etag=content_hash(data))

    def write_note(self, path: str, content: str, if_match: str | None) -> NoteDoc:
        """Create (if_match None: the note must not exist) or replace a note whose ETag still matches."""
        file = note_path(self.root, path)
        data = content.encode("utf-8")
        with self._write_lock:
            atomic_write(file, data, if_match)
            self.sync()
        return NoteDoc(path=path, content=content, etag=content_hash(data))

    # -- health --------------------------------------------------------------------------------------
    def doctor(self) -> Doctor:
        """Parse problems, skipped files, dangling and ambiguous links, and index/file drift."""
        links = self.db.links()
        walked = walk(self.root, self.settings.index)
        states = self.db.file_states()
        drift = []
        on_disk = {f.path: f for f in walked.notes}
        skipped_now = {s.path for s in walked.skipped} | {s.path for s in self.db.skipped()}
        for path, f in on_disk.items():
            st = states.get(path)
            if st is None and path not in skipped_now:
                drift.append(f"{path}: on disk, not in the index")
            elif st is not None and (st.size != f.size or st.mtime_ns != f.mtime_ns):
                drift.append(f"{path}: changed on disk since the last sync")
        drift += [f"{p}: in the index, gone from disk" for p in sorted(set(states) - set(on_disk))]
        return Doctor(
            problems=self.db.problems(),
            skipped=sorted({s.path: s for s in [*self.db.skipped(), *walked.skipped]}.values(),
                           key=lambda s: s.path),
            dangling=[ln for ln in links if ln.dst is None],
            ambiguous=[ln for ln in links if ln.ambiguous],
            drift=sorted(drift),
        )

    def verify(self, progress: Progress | None = None) -> Verify:
        """Rebuild the index into a temporary folder and compare it with the live one."""
        started = time.perf_counter()
        self.sync()
        tmp = Path(tempfile.mkdtemp(prefix="vault-cortex-verify-"))
        try:
            rebuilt = Cortex(self.root, self.settings, self.embedder, index_dir=tmp, cache=self.cache)
            try:
                rebuilt.sync(progress)
                differences = _compare(self.db.snapshot(), rebuilt.db.snapshot())
                if len(self.vectors) != len(rebuilt.vectors):
                    differences.append(
                        f"vectors: live index has {len(self.vectors)}, rebuild has {len(rebuilt.vectors)}")
            finally:
                rebuilt.close()
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
