"""`Index`: a vault's derived index kept usable, standing alone: opening it, moving a damaged or lost one aside to
be rebuilt, the write lock, sync, status and the model loaded on first use. It knows nothing of the facade: the
`Cortex` composes one (`cx.index`), and the one write path (`store/change.py`) holds its write lock."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import msgspec

from vault_cortex import clock
from vault_cortex.config import Settings
from vault_cortex.errors import IndexCorrupt, IndexUnavailable
from vault_cortex.index.db import IndexDB
from vault_cortex.index.dbfile import is_corruption
from vault_cortex.index.embed import Embedder, Tokenizer, load_embedder, load_tokenizer
from vault_cortex.index.progress import VECTORS, WORDS, Indexing, Progress, SyncReport
from vault_cortex.index.restore import fill_vectors, reconcile_vectors, save_vectors, vectors_current
from vault_cortex.index.sync import sync
from vault_cortex.index.vectors import EmbeddingCache, Vectors

log = logging.getLogger(__name__)

INDEX_DIR = ".cortex/index"


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Serialise index writers across processes (a server, a CLI sync, an MCP stdio server on one vault)."""
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class Index:
    """A vault's derived index kept usable: opened, checked, set aside and rebuilt when damaged, written under
    one lock, synced with the files. `replaced` counts the times the index was set aside for an empty one while
    open: what others derived from it (the recall's caches) is read again when it moves."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 index_dir: Path | None = None, cache: EmbeddingCache | None = None) -> None:
        self.root = root
        self.replaced = 0  # times `recover` set the index aside for an empty one
        self.settings = settings
        self.index_dir = index_dir or root / INDEX_DIR
        try:
            self.index_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise IndexUnavailable(f"{self.index_dir} is a file, not a folder: move it away and the index is "
                                   "built again from the notes") from None
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None  # the model's, alone: to count tokens without loading the model
        self._write_lock = threading.RLock()
        self._write_depth = 0
        self._write_owner: int | None = None
        self._sync_lock = threading.Lock()  # one full sync at a time; it takes the write lock in short turns
        self.stopping = threading.Event()  # set by stop(): a running sync returns at its next embedding batch
        self.indexing: Indexing | None = None  # how far the running sync is, for status and recall
        self.recovered: str | None = None  # what was wrong with the index when it was last moved aside
        self.suspect: str | None = None  # an error seen elsewhere that says the index is damaged or gone
        self._db_ino = 0
        self.db = self._open_db()
        self._owns_cache = cache is None
        self.cache = cache or self._open_cache()
        self.vectors = Vectors(self.index_dir / "vectors.usearch", lambda: self.dim)  # the model only when needed
        # The note change the vectors held here reflect: another process's writes show as the change log moving
        # past it, and are taken in (`_catch_up`) before this process writes or saves the vector file.
        self._vectors_seq: int | None = None
        if self.vectors.stamp() == self.db.get_meta("vectors_stamp"):
            self.vectors.checked = True  # the very file this index saved last
            saved = self.db.get_meta("vectors_seq")
            self._vectors_seq = int(saved) if saved and saved.isdigit() else None

    # -- a damaged or lost index is moved aside and rebuilt (it is derived data) -----------------------
    def _open_db(self) -> IndexDB:
        path = self.index_dir / "index.db"
        try:
            db = IndexDB(path)
        except IndexCorrupt as exc:
            self._set_aside(str(exc), ("index.db", "index.db-wal", "index.db-shm", "vectors.usearch"))
            db = IndexDB(path)
        self._db_ino = path.stat().st_ino
        return db

    def _open_cache(self, damaged: str | None = None) -> EmbeddingCache:
        """The embedding cache; one found damaged (`damaged` says how, or opening it fails) is set aside."""
        if damaged is None:
            try:
                return EmbeddingCache(self.index_dir / "embeddings.db")
            except IndexCorrupt as exc:
                damaged = str(exc)
        self._set_aside(damaged, ("embeddings.db", "embeddings.db-wal", "embeddings.db-shm"))
        return EmbeddingCache(self.index_dir / "embeddings.db")

    def _set_aside(self, reason: str, names: Sequence[str]) -> None:
        """Move damaged index files to .cortex/index/broken-<time>/ and say so in one line."""
        folder = self.index_dir / f"broken-{datetime.fromtimestamp(clock.wall(), UTC).strftime('%Y%m%dT%H%M%S.%f')}"
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            with suppress(FileNotFoundError):
                os.replace(self.index_dir / name, folder / name)
        reason = " ".join(reason.split())
        reason = reason if len(reason) <= 160 else reason[:159] + "…"
        self.recovered = (f"the index was damaged ({reason}); moved it to {folder} and rebuilding it from the "
                          "files and the embedding cache")
        log.warning("%s", self.recovered)

    def check_index(self) -> None:
        """Run SQLite's quick_check over the index and the embedding cache, and move a damaged one aside to be
        rebuilt. It reads both files whole (seconds at 100k notes), so serve runs it at start-up and doctor and
        verify run it, not every open: elsewhere damage surfaces as an error on the read that meets it."""
        problem = self.db.quick_check()
        if problem:
            self.recover(problem)
        problem = self.cache.quick_check() if self._owns_cache else None
        if problem:
            with self.writing():
                self.cache.close()
                self.cache = self._open_cache(problem)

    def index_file_lost(self) -> bool:
        """Whether index.db was deleted or replaced under this process."""
        try:
            return (self.index_dir / "index.db").stat().st_ino != self._db_ino
        except FileNotFoundError:
            return True

    def recover(self, reason: str) -> None:
        """Move the damaged (or deleted) index aside and open an empty one; the next sync rebuilds it."""
        with self.writing():
            # The old connections are not closed here: a request may be reading through them this moment
            # (it fails or finishes on the moved file); they close when the last user lets go.
            names = ["index.db", "index.db-wal", "index.db-shm", "vectors.usearch"]
            self._set_aside(reason, names)
            self.db = self._open_db()
            self.vectors = Vectors(self.index_dir / "vectors.usearch", lambda: self.dim)
            self._vectors_seq = None
            self.replaced += 1
            self.suspect = None

    def close(self) -> None:
        if self.vectors.dirty:  # written since the last save (a write does not save the whole file)
            try:
                with self.writing():
                    self._catch_up()  # the file saved holds what other processes added too
                    save_vectors(self.db, self.vectors)
            except Exception:  # noqa: BLE001 - the next sync restores the vectors from the cache
                log.exception("saving the vector index at close failed")
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
    def model_loaded(self) -> bool:
        return self._embedder is not None

    def count_tokens(self, text: str) -> int:
        """Wordpieces of `text` as the model counts them, without loading the model when nothing loaded it yet: a
        hook that only packs text (the habits of a tool call, on every tool call) pays for the tokenizer (~0.06 s),
        not the model (~0.4 s)."""
        if self._embedder is not None:
            return self._embedder.count_tokens(text)
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.settings.embedding)
        return self._tokenizer.count(text)

    @property
    def dim(self) -> int:
        if self._embedder is not None:
            return self._embedder.dim
        saved = self.db.get_meta("dim")
        return int(saved) if saved else self.embedder.dim

    # -- index ---------------------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None, *, contents: bool = False, fill: bool = True) -> SyncReport:
        """Re-index what changed since the last sync; never writes a note.

        Notes are written words first, then the chunks without a vector get one; with `fill` False that is left
        to `fill_vectors` (the server: the vault is searchable by words, links and properties meanwhile).

        The write lock is taken only while the vault is scanned and while each small group of notes is
        written, so a note saved meanwhile (`write_note`) waits for one short transaction, not for the model.
        Called by a thread already holding the write lock, the whole sync runs under it. `contents`: hash every
        file, not only those whose size or modification time changed (`vault-cortex sync --full`).
        """
        if self.holds_write_lock():
            return self._sync(progress, nullcontext, tracked=True, contents=contents, fill=fill)
        with self._sync_lock, write_lock(self.index_dir / "sync.lock"):
            return self._sync(progress, self.writing, tracked=True, contents=contents, fill=fill)

    def fill_vectors(self, progress: Progress | None = None, pause: Callable[[], bool] | None = None) -> int:
        """Give the chunks a words-first sync left without a vector their vectors, in short turns under the write
        lock (recall finds each by meaning as it comes); return between turns when `pause()` says so (changes
        wait for a sync). Returns how many chunks still lack a vector (0: done; the vector file is saved if this
        fill gave any)."""
        if self.suspect or self.index_file_lost():
            self.indexing = None
            return 0  # the next sync recovers the index first
        with self._sync_lock:
            def track(phase: str, done: int, total: int) -> None:
                self.indexing = Indexing(done=done, total=total, phase=phase)
                if progress is not None:
                    progress(phase, done, total)

            counts = {"embedded": 0, "cached": 0}
            try:
                left = fill_vectors(self.db, self.vectors, self.cache, lambda: self.embedder, counts,
                                    lock=partial(self._turn, self.writing), stop=self.stopping, pause=pause,
                                    progress=track)
            finally:
                self.indexing = None
            # saved once a fill has given vectors; a write's own vectors wait for the next save (see sync's
            # VECTOR_SAVE_SECONDS): the whole file is not rewritten after every save the watcher syncs
            if not left and self.vectors.dirty and counts["embedded"] + counts["cached"]:
                with self.writing():
                    self._catch_up()
                    save_vectors(self.db, self.vectors)
            return left

    def sync_paths(self, paths: Sequence[str]) -> SyncReport:
        """Re-index just these vault paths (a note written, moved or deleted): the cost follows the change.
        A path the index already has at the same size and mtime costs a stat. Called under the write lock (a
        write's own indexing), it runs under it and leaves the progress of a running full sync alone."""
        if self.holds_write_lock():
            return self._sync(None, nullcontext, only=list(paths), tracked=False)
        with self._sync_lock, write_lock(self.index_dir / "sync.lock"):
            # a big note is embedded outside the lock
            return self._sync(None, self.writing, only=list(paths), tracked=True)

    def holds_write_lock(self) -> bool:
        """Whether this thread holds the vault's write lock (`writing()`)."""
        return self._write_owner == threading.get_ident()

    def _sync(self, progress: Progress | None, lock: Callable[[], AbstractContextManager[object]],
              only: Sequence[str] | None = None, *, tracked: bool, contents: bool = False,
              fill: bool = True) -> SyncReport:
        """A sync under `lock`; `tracked`: it reports its progress in `indexing` (a write's own sync does not)."""
        if self.suspect or self.index_file_lost():
            self.recover(self.suspect or "index.db was deleted or replaced while in use")
            only = None  # an empty index: every note, not just the ones written
        try:
            return self._sync_once(progress, lock, only, tracked or only is None, contents, fill)
        except Exception as exc:
            if not is_corruption(exc):
                raise
            self.recover(f"{type(exc).__name__}: {exc}")
            return self._sync_once(progress, lock, None, True, contents, fill)

    def _sync_once(self, progress: Progress | None, lock: Callable[[], AbstractContextManager[object]],
                   only: Sequence[str] | None, tracked: bool, contents: bool = False,
                   fill: bool = True) -> SyncReport:
        with lock():
            if self._check_model():
                only = None  # every chunk needs a vector of the new model: a full sync restores them

        def track(phase: str, done: int, total: int) -> None:
            self.indexing = Indexing(done=done, total=total, phase=phase)
            if progress is not None:
                progress(phase, done, total)

        try:
            report = sync(self.root, self.db, self.vectors, self.cache, lambda: self.embedder, self.settings,
                          track if tracked else progress, lock=partial(self._turn, lock), stop=self.stopping,
                          only=only, contents=contents, fill=fill)
        except BaseException:
            if tracked and self.indexing is None:  # it stopped before its words: the index is not whole
                self.indexing = Indexing(done=0, total=0, phase=WORDS)
            raise  # else `indexing` stays where it stopped (its phase, done and total) until a sync ends well
        if tracked:
            # words first (`fill` False): the vectors come next (`fill_vectors`), so until they do, recall must
            # not say the index is whole
            self.indexing = None if fill else Indexing(done=0, total=0, phase=VECTORS)
        return report

    @contextmanager
    def _turn(self, lock: Callable[[], AbstractContextManager[object]]) -> Iterator[None]:
        """One turn of a sync under the write lock: the vectors first take in what other processes wrote since
        this one last looked, and afterwards reflect every note change up to this turn's own."""
        with lock():
            known = self._vectors_seq is not None
            if known:  # unknown (a file this index did not save): the full sync restores it, without the lock
                self._catch_up()
            try:
                yield
            finally:
                with suppress(IndexCorrupt):  # known, or made exact by this turn (a full sync's restore)
                    if known or vectors_current(self.db, self.vectors):
                        self._vectors_seq = self.db.change_seqs()[1]

    def _catch_up(self) -> None:
        """Under the write lock: when the change log moved past what the vectors held here reflect, another
        process (a CLI command, the stdio MCP server, a second serve) wrote notes, and its vectors are only in
        its memory or its save of the file: make this process's vectors exactly the index's chunks again (the
        vectors come from the shared embedding cache), so that no save of the file drops what it added."""
        seq = self.db.change_seqs()[1]
        if seq == self._vectors_seq:
            return
        repaired = reconcile_vectors(self.db, self.vectors, self.cache, lambda: self.embedder)
        if repaired:
            log.info("took in %d vector changes made by another process", repaired)
        self._vectors_seq = seq

    def expect_sync(self) -> None:
        """A sync of the whole vault is on its way (a server's start-up sync): until it has run, `indexing`
        says the index may not be whole, from the first request on."""
        self.indexing = Indexing(done=0, total=0)

    def stop(self) -> None:
        """Ask a running sync to stop at its next embedding batch (the server is shutting down)."""
        self.stopping.set()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the vault's write lock: one writer thread here, and one writer process per vault."""
        with self._write_lock:
            if self._write_depth:
                self._write_depth += 1
                try:
                    yield
                finally:
                    self._write_depth -= 1
                return
            with write_lock(self.index_dir / "write.lock"):
                self._write_depth = 1
                self._write_owner = threading.get_ident()
                try:
                    yield
                finally:
                    self._write_depth = 0
                    self._write_owner = None

    def _check_model(self) -> bool:
        """Whether the model differs from the one the index was built with: then every vector must be rebuilt.
        The old model's vector file is dropped here (derived data, and wrong for the new model: a sync killed
        before it saves a new one must not trust it); the full sync that follows embeds every chunk without
        the write lock, with progress, stoppable, resuming from the cache (restore.fill_vectors)."""
        saved = self.db.get_meta("model")
        if self._embedder is None and saved is not None and not self.settings.embedding.model_dir:
            return False  # the bundled model; loading it is deferred until something needs embedding
        model = self.embedder
        if saved == model.model_id:
            return False
        if saved is not None:
            log.warning("model changed from %s to %s: re-embedding every chunk", saved, model.model_id)
        (self.index_dir / "vectors.usearch").unlink(missing_ok=True)
        self.vectors = Vectors(self.index_dir / "vectors.usearch", model.dim)
        with self.db.write():
            self.db.set_meta("model", model.model_id)
            self.db.set_meta("dim", str(model.dim))
            self.db.delete_meta("vectors_stamp")
        return saved is not None  # a new index has no vectors to rebuild

    def status(self) -> dict[str, object]:
        counts = self.db.counts()
        return {
            "vault": str(self.root),
            **counts,
            "vectors": len(self.vectors),
            "model": self.db.get_meta("model"),
            "last_sync": self.db.get_meta("last_sync"),
            "indexing": msgspec.to_builtins(self.indexing) if self.indexing else None,
        }
