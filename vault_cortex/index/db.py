"""The derived index in SQLite (WAL): files, notes, chunks, links, tags, aliases, FTS5, skipped files.

Everything here can be rebuilt from the vault; deleting `.cortex/index/` loses nothing.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex.errors import IndexCorrupt, IndexUnavailable
from vault_cortex.files.chunk import Chunk, heading_text, join_head, split_head, stored_head
from vault_cortex.files.links import Dangling, Resolver, file_key, target_key, target_names
from vault_cortex.files.note import Note
from vault_cortex.files.vault import Skipped
from vault_cortex.index.activity import Activity
from vault_cortex.index.lexical import Lexical
from vault_cortex.index.schema import FILE_NAME, FTS, INDEXES, SCHEMA, SCHEMA_VERSION

log = logging.getLogger(__name__)


def is_corruption(exc: BaseException) -> bool:
    """Whether an error means the index file is damaged or gone (rebuild it), not busy or misused."""
    if isinstance(exc, IndexCorrupt | UnicodeDecodeError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    return (name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
            or "malformed" in text or "not a database" in text or "no such table" in text
            or "Could not decode to UTF-8" in text)


def is_index_lost(exc: BaseException) -> bool:
    """Whether an error means the index is damaged or its file was deleted under a running process."""
    if is_corruption(exc):
        return True
    return isinstance(exc, sqlite3.OperationalError) and (
        (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_CANTOPEN")
        or "unable to open database file" in str(exc))


class NoteRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    path: str
    title: str
    region: str
    importance: float | None
    created: str | None
    project: str | None
    layer: str | None
    pinned: bool
    mtime_ns: int


class ChunkRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    note_id: int
    ord: int
    heading: str
    text: str
    start_line: int
    end_line: int
    tokens: int


class LinkRow(msgspec.Struct, frozen=True, kw_only=True):
    src: str
    target: str
    subpath: str
    kind: str
    rel: str
    line: int
    dst: str | None
    ambiguous: tuple[str, ...]


class GraphRows(msgspec.Struct, frozen=True, kw_only=True):
    """What the note graph is built or updated from, read in one snapshot of the index."""

    index_id: str
    seq: int  # the change log's last sequence number for notes
    co_seq: int  # and for co-retrieved pairs
    notes: dict[str, tuple[str | None, list[tuple[str | None, str]]]]  # path -> (project, [(dst, rel)])
    gone: list[str]  # with `since`: changed paths that are no longer notes
    co: list[tuple[str, str, int, float]]  # (a, b, distinct queries, last time); 0 queries: the pair is gone
    full: bool  # every note and pair (not a change set)
    # a full read leaves `notes` empty and fills these columns instead (no Python object per link; one string
    # object per distinct path, project or relation): each note's path, project and number of links, then the
    # links of the notes in that order
    paths: list[str] = []
    projects: list[str | None] = []
    link_counts: list[int] = []
    link_dst: list[str | None] = []
    link_rel: list[str] = []


class FileState(msgspec.Struct, frozen=True, kw_only=True):
    fs_path: str
    size: int
    mtime_ns: int
    hash: str


def _note_row(r: Any) -> NoteRow:
    return NoteRow(id=r[0], path=r[1], title=r[2], region=r[3], importance=r[4], created=r[5], project=r[6],
                   layer=r[7], pinned=bool(r[8]), mtime_ns=r[9])


def _chunk_row(r: Any) -> ChunkRow:
    return ChunkRow(id=r[0], note_id=r[1], ord=r[2], heading=r[3], text=r[4], start_line=r[5], end_line=r[6],
                    tokens=r[7])


def quick_check(conn: sqlite3.Connection, what: str) -> str | None:
    """SQLite's quick_check of a connection's file, as a sentence naming `what` (None: it is fine)."""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        return f"{what} is damaged: {exc}"
    return None if row is not None and row[0] == "ok" else f"{what} failed its check: {row[0] if row else 'no answer'}"


def _add_link_names(conn: sqlite3.Connection) -> None:
    """Give an index made before `links.name` existed the column, filled from each link's target (once)."""
    if any(r[1] == "name" for r in conn.execute("PRAGMA table_info(links)")):
        return
    log.info("index: adding the indexed link names (once)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE links ADD COLUMN name TEXT")
        rows = conn.execute("SELECT rowid, target FROM links").fetchall()
        conn.executemany("UPDATE links SET name = ? WHERE rowid = ?", [(target_key(t), r) for r, t in rows])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _prepare(conn: sqlite3.Connection) -> None:
    """Settings, tables and indexes of an index connection (idempotent)."""
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(SCHEMA)
    _add_link_names(conn)
    conn.executescript(INDEXES)


def _create(path: Path) -> None:
    """Make a new, empty index at `path` whole before anyone can open it: it is made under another name and
    linked into place, so a reader opening `path` meanwhile (a request while a lost index is re-created) finds
    no file or a whole one, never one without its tables or its id. If another process made it first, its
    file stays."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            _prepare(conn)
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                             [("index_id", secrets.token_hex(8)), ("schema", SCHEMA_VERSION)])
        finally:
            conn.close()  # the last connection: SQLite checkpoints the WAL into the file and removes it
        try:
            os.link(temp, path)  # fails if the path exists: never replaces an index another process opened
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temp, path)
    finally:
        for name in (temp.name, temp.name + "-wal", temp.name + "-shm"):
            with suppress(FileNotFoundError):
                (path.parent / name).unlink()


class IndexDB:
    """One SQLite connection to `index.db`; the owner serialises writers."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                _create(path)
            self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise IndexUnavailable(f"cannot open the index at {path}: {exc}") from exc
        try:
            _prepare(self.conn)
        except sqlite3.Error as exc:
            self.conn.close()
            if is_corruption(exc):
                raise IndexCorrupt(f"the index at {path} is damaged: {exc}") from exc
            raise IndexUnavailable(f"cannot open the index at {path}: {exc}") from exc
        except IndexCorrupt:
            self.conn.close()
            raise
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self.lex = Lexical(self._r, lambda: self.change_seqs()[1])  # BM25 search over `chunks_fts`
        version = self.get_meta("schema")
        if self.get_meta("index_id") is None:  # names this index: a graph following its change log knows it
            self.set_meta("index_id", secrets.token_hex(8))
        if version is None:
            self.set_meta("schema", SCHEMA_VERSION)
        elif version == "1":
            try:
                self._migrate_from_1()
            except sqlite3.Error as exc:  # rolled back whole: the next open tries again
                self.conn.close()
                if is_corruption(exc):
                    raise IndexCorrupt(f"the index at {path} is damaged: {exc}") from exc
                raise IndexUnavailable(f"cannot move the index at {path} to schema {SCHEMA_VERSION}: {exc}") from exc
        elif version != SCHEMA_VERSION:
            raise IndexUnavailable(
                f"the index at {path.parent} has schema {version}, this version needs {SCHEMA_VERSION}: "
                "delete the folder and run `vault-cortex sync` to rebuild it"
            )

    def quick_check(self) -> str | None:
        """What SQLite's quick_check finds wrong (None: nothing). It reads the whole file, so it runs where a
        damaged index must be caught before it is trusted (serve start-up, doctor, verify), not at every open:
        elsewhere a damaged page surfaces as a corruption error on the read that meets it, and is handled there."""
        return quick_check(self.conn, f"the index at {self.path}")

    def _migrate_from_1(self) -> None:
        """Move an index of schema 1 to schema 2 in place, once: the embedded text each chunk stored (as long as
        its text) is dropped, keeping only a head `embed_texts` could not rebuild, and FTS5 is rebuilt over the
        chunks without its own copy of their text. Nothing is re-embedded: the chunk hashes stay as they were."""
        with self.write():
            if self.get_meta("schema") != "1":
                return  # another process moved it meanwhile
            log.info("index: moving %s to the compact format of schema %s (once)", self.path, SCHEMA_VERSION)
            self.conn.execute("ALTER TABLE chunks ADD COLUMN head TEXT")
            rows = self.conn.execute(
                "SELECT c.id, n.title, c.heading, c.text, c.embed_text FROM chunks c "
                "JOIN notes n ON n.id = c.note_id").fetchall()
            self.conn.executemany("UPDATE chunks SET head = ? WHERE id = ?", [
                (head, cid) for cid, title, heading, text, embedded in rows
                if (head := split_head(embedded, text)) != stored_head(title, heading)])
            self.conn.execute("ALTER TABLE chunks DROP COLUMN embed_text")
            self.conn.execute("DROP TABLE chunks_fts")
            self.conn.execute(FTS)
            self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
            self.set_meta("schema", SCHEMA_VERSION)
        with suppress(sqlite3.OperationalError):  # give the space back to the file system (unless busy)
            self.conn.execute("VACUUM")

    def _r(self) -> sqlite3.Connection:
        """This thread's read connection (WAL lets readers run while a sync writes)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # Read-only: a reader must not create an empty index.db where the file was deleted.
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False,
                                   isolation_level=None)
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA query_only=1")
            self._local.conn = conn
            self._readers.append(conn)
        return conn

    def close(self) -> None:
        for conn in self._readers:
            conn.close()
        self._readers.clear()
        self.lex.close()
        self.conn.close()

    # -- meta --------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- writes (call inside `with db.write():`) ------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction: committed whole or rolled back whole."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with suppress(sqlite3.Error):  # a damaged file can fail the rollback too: report the first error
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def file_states(self, paths: Iterable[str] | None = None) -> dict[str, FileState]:
        """The indexed state of every file (or of just these paths)."""
        sql = "SELECT path, fs_path, size, mtime_ns, hash FROM files"
        rows = self.conn.execute(sql) if paths is None else self._select_in(
            sql + " WHERE path IN ({marks})", list(paths), self.conn)
        return {p: FileState(fs_path=f, size=s, mtime_ns=m, hash=h) for p, f, s, m, h in rows}

    def set_file(self, path: str, state: FileState) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files(path, fs_path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)",
            (path, state.fs_path, state.size, state.mtime_ns, state.hash),
        )

    def delete_note(self, path: str) -> list[int]:
        """Remove a note and everything derived from it; returns the removed chunk ids."""
        row = self.conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))
        if row is None:
            return []
        # FTS5 holds no copy of the text: its terms are removed with the values that were indexed, read
        # before the chunks (and the note's title) go.
        indexed = self.conn.execute(
            "SELECT c.id, n.title, c.heading, c.text FROM chunks c JOIN notes n ON n.id = c.note_id "
            "WHERE c.note_id = ?", (row[0],)).fetchall()
        self.conn.executemany(
            "INSERT INTO chunks_fts(chunks_fts, rowid, title, heading, text) VALUES ('delete', ?, ?, ?, ?)", indexed)
        self.conn.execute("DELETE FROM notes WHERE id = ?", (row[0],))
        return [r[0] for r in indexed]

    def insert_note(self, note: Note, region: str, state: FileState, chunks: Sequence[Chunk],
                    noise: int) -> list[int]:
        """Insert a parsed note with its chunks, tags, aliases and raw links; returns the new chunk ids."""
        cur = self.conn.execute(
            "INSERT INTO notes(path, title, region, importance, created, project, layer, pinned, "
            "frontmatter, problems, noise, mtime_ns, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (note.path, note.title, region, note.importance, note.created, note.project, note.layer,
             int(note.pinned), json.dumps(note.frontmatter, default=str, ensure_ascii=False),
             json.dumps(list(note.problems)), noise, state.mtime_ns, state.hash),
        )
        note_id = cur.lastrowid
        assert note_id is not None
        ids: list[int] = []
        heading_of = [heading_text(c.heading_path) for c in chunks]
        for chunk, heading in zip(chunks, heading_of, strict=True):
            # The embedded text is not stored: `embed_texts` rebuilds it; only a head it would get wrong is kept.
            head = None if stored_head(note.title, heading) == chunk.head else chunk.head
            c = self.conn.execute(
                "INSERT INTO chunks(note_id, ord, heading, text, start_line, end_line, tokens, hash, head) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (note_id, chunk.ord, heading, chunk.text, chunk.start_line, chunk.end_line, chunk.tokens,
                 chunk.hash, head),
            )
            assert c.lastrowid is not None
            ids.append(c.lastrowid)
        self.conn.executemany(
            "INSERT INTO chunks_fts(rowid, title, heading, text) VALUES (?,?,?,?)",
            [(i, note.title, h, c.text) for i, h, c in zip(ids, heading_of, chunks, strict=True)],
        )
        self.conn.executemany("INSERT INTO tags(note_id, tag) VALUES (?,?)", [(note_id, t) for t in note.tags])
        self.conn.executemany(
            "INSERT INTO aliases(note_id, alias) VALUES (?,?)", [(note_id, a) for a in note.aliases]
        )
        self.conn.executemany(
            "INSERT INTO links(note_id, target, subpath, display, kind, rel, line, name) VALUES (?,?,?,?,?,?,?,?)",
            [(note_id, ln.target, ln.subpath, ln.display, ln.kind, ln.rel, ln.line, target_key(ln.target))
             for ln in note.links],
        )
        self.set_file(note.path, state)
        return ids

    def resolve_links(self, resolver: Resolver, only_paths: Iterable[str] | None = None, *,
                      dangling: bool = False) -> None:
        """Fill in each link's destination (or leave it dangling), for all notes or just some (and, with
        `dangling`, every link still dangling: a note added since may be its target)."""
        sql = "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.note_id"
        rows: list[tuple[int, str, str]]
        if only_paths is None:
            rows = self.conn.execute(sql).fetchall()
        else:
            rows = []
            for p in only_paths:
                rows += self.conn.execute(sql + " WHERE n.path = ?", (p,)).fetchall()
            if dangling:
                seen = {r[0] for r in rows}
                rows += [r for r in self.conn.execute(sql + " WHERE l.dst_path IS NULL") if r[0] not in seen]
        self.resolve_link_rows(resolver, rows)

    def set_attachments(self, paths: Iterable[str]) -> set[str] | None:
        """Remember the vault's attachments (the link targets that are not notes): the paths added or
        removed since, or None when they were not known before."""
        new = set(paths)
        old = {r[0] for r in self.conn.execute("SELECT path FROM attachments")}
        known = self.get_meta("attachments_known") is not None
        self.conn.executemany("DELETE FROM attachments WHERE path = ?", [(p,) for p in old - new])
        self.conn.executemany("INSERT INTO attachments(path) VALUES (?)", [(p,) for p in new - old])
        self.set_meta("attachments_known", "1")
        return (old ^ new) if known else None

    def link_targets(self, names: Iterable[str] | None = None) -> list[str] | None:
        """Every path a link can resolve to (notes and attachments) as the index knows them, or only those
        whose file name (lower-cased) is in `names`; None when no full sync recorded the attachments yet."""
        if self.get_meta("attachments_known") is None:
            return None
        sql = ("SELECT path FROM notes {where} UNION ALL SELECT path FROM attachments {where} "
               "UNION ALL SELECT path FROM skipped WHERE reason = 'binary file named .md'")
        if names is None:
            return [r[0] for r in self.conn.execute(sql.format(where=""))]
        wanted = set(names)
        if not wanted:
            return []
        if not all(n.isascii() for n in wanted):  # SQL's lower() folds ASCII only: one pass, filtered here
            paths = [r[0] for r in self.conn.execute(sql.format(where=""))]
            return [p for p in paths if p.lower().rpartition("/")[2] in wanted]
        out: list[str] = []
        names_ = sorted(wanted)
        for start in range(0, len(names_), 400):
            part = names_[start:start + 400]
            where = f"WHERE {FILE_NAME} IN ({','.join('?' * len(part))})"  # the indexed file-name expression
            out += [r[0] for r in self.conn.execute(sql.format(where=where), part + part)]
        return [p for p in out if p.lower().rpartition("/")[2] in wanted]

    def note_count(self) -> int:
        """The number of notes, from the counter the inserts and deletes keep (schema `_NOTE_COUNT`)."""
        return int(self._r().execute("SELECT value FROM meta WHERE key = 'note_count'").fetchone()[0])

    def links_naming(self, sources: Iterable[str], names: Iterable[str]) -> list[tuple[int, str, str]]:
        """(rowid, target, source) of the links written in `sources` and of every link whose target could
        name a file called one of `names` (lower-cased file names): the links a change to those files can
        resolve differently. The indexed `links.name` (`target_key`) finds the candidates; `target_names`
        decides."""
        sql = "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.note_id"
        rows: dict[int, tuple[int, str, str]] = {}
        for p in sources:
            rows.update((r[0], r) for r in self.conn.execute(sql + " WHERE n.path = ?", (p,)))
        keys = sorted({file_key(n) for n in names})
        if not keys:
            return list(rows.values())
        candidates: list[tuple[int, str, str]] = list(self.conn.execute(sql + " WHERE l.name IS NULL"))
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            candidates += self.conn.execute(f"{sql} WHERE l.name IN ({','.join('?' * len(part))})", part)
        wanted = set(names)
        for r in candidates:
            could = target_names(r[1])
            if r[0] not in rows and (could is None or wanted & set(could)):
                rows[r[0]] = r
        return list(rows.values())

    def resolve_link_rows(self, resolver: Resolver, rows: Iterable[tuple[int, str, str]]) -> None:
        """Fill in the destination of these links (rowid, target, source)."""
        updates: list[tuple[str | None, str | None, int]] = []
        for rowid, target, src in rows:
            res = resolver.resolve(target, src)
            if isinstance(res, Dangling):
                updates.append((None, None, rowid))
            else:
                updates.append((res.path, json.dumps(list(res.ambiguous)) if res.ambiguous else None, rowid))
        self.conn.executemany("UPDATE links SET dst_path = ?, ambiguous = ? WHERE rowid = ?", updates)

    def set_activity(self, activity: Activity) -> None:
        """Replace the replayed activity numbers (access counts, co-retrieval pairs, concept touches)."""
        self.conn.execute("DELETE FROM access")
        self.conn.execute("DELETE FROM co_retrieval")
        self.conn.execute("DELETE FROM touches")
        self.conn.executemany(
            "INSERT INTO access(path, count, last_ts) VALUES (?, ?, ?)",
            [(p, a.access_count, a.last_access.timestamp() if a.last_access else None)
             for p, a in activity.paths.items()])
        self.conn.executemany("INSERT INTO co_retrieval(a, b, count) VALUES (?, ?, ?)", activity.pairs())
        self.conn.execute("DELETE FROM co_queries")
        self.conn.executemany("INSERT INTO co_queries(a, b, query, last_ts) VALUES (?, ?, ?, ?)",
                              activity.query_pairs())
        self.conn.executemany(
            "INSERT INTO touches(concept, count, last_ts) VALUES (?, ?, ?)",
            [(c, t.touches, t.last_touch.timestamp()) for c, t in activity.concepts.items()])

    def add_activity(self, delta: Activity) -> None:
        """Fold newly appended events into the replayed numbers (counts add up, last times take the max)."""
        self.conn.executemany(
            "INSERT INTO access(path, count, last_ts) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "count = count + excluded.count, last_ts = max(coalesce(last_ts, 0), coalesce(excluded.last_ts, 0))",
            [(p, a.access_count, a.last_access.timestamp() if a.last_access else None)
             for p, a in delta.paths.items()])
        self.conn.executemany(
            "INSERT INTO co_retrieval(a, b, count) VALUES (?, ?, ?) ON CONFLICT(a, b) DO UPDATE SET "
            "count = count + excluded.count", delta.pairs())
        self.conn.executemany(
            "INSERT INTO co_queries(a, b, query, last_ts) VALUES (?, ?, ?, ?) ON CONFLICT(a, b, query) DO UPDATE "
            "SET last_ts = max(last_ts, excluded.last_ts)", delta.query_pairs())
        self.conn.executemany(
            "INSERT INTO touches(concept, count, last_ts) VALUES (?, ?, ?) ON CONFLICT(concept) DO UPDATE SET "
            "count = count + excluded.count, last_ts = max(last_ts, excluded.last_ts)",
            [(c, t.touches, t.last_touch.timestamp()) for c, t in delta.concepts.items()])

    def seen_lines(self, file: str) -> dict[str, int]:
        """How many times each line digest of an activity file was applied."""
        return dict(self.conn.execute("SELECT digest, count FROM activity_lines WHERE file = ?", (file,)).fetchall())

    def add_seen_lines(self, file: str, digests: Mapping[str, int]) -> None:
        self.conn.executemany(
            "INSERT INTO activity_lines(file, digest, count) VALUES (?, ?, ?) ON CONFLICT(file, digest) DO UPDATE "
            "SET count = count + excluded.count", [(file, d, n) for d, n in digests.items()])

    def clear_seen_lines(self) -> None:
        self.conn.execute("DELETE FROM activity_lines")

    def set_skipped(self, skipped: Iterable[Skipped], only: Iterable[str] | None = None) -> None:
        """Replace the skipped files (or, with `only`, the entries of those paths)."""
        if only is None:
            self.conn.execute("DELETE FROM skipped")
        else:
            self.conn.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in only])
        self.conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)",
                              [(s.path, s.reason) for s in skipped])

    # -- reads -------------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        q = self._r().execute
        return {
            "notes": q("SELECT count(*) FROM notes").fetchone()[0],
            "chunks": q("SELECT count(*) FROM chunks").fetchone()[0],
            "links": q("SELECT count(*) FROM links").fetchone()[0],
            "dangling": q("SELECT count(*) FROM links WHERE dst_path IS NULL").fetchone()[0],
            "skipped": q("SELECT count(*) FROM skipped").fetchone()[0],
            "noise": q("SELECT coalesce(sum(noise), 0) FROM notes").fetchone()[0],
        }

    def _select_in(self, sql: str, values: Sequence[Any], conn: sqlite3.Connection | None = None) -> Iterator[Any]:
        """Rows of a query with one `IN ({marks})`, 500 values at a time (SQLite's variable limit)."""
        for start in range(0, len(values), 500):
            part = list(values[start:start + 500])
            yield from (conn or self._r()).execute(sql.format(marks=",".join("?" * len(part))), part)

    def note_paths(self) -> list[str]:
        return [r[0] for r in self._r().execute("SELECT path FROM notes ORDER BY path")]

    def notes_by_id(self, ids: Iterable[int]) -> dict[int, NoteRow]:
        rows = self._select_in(
            "SELECT id, path, title, region, importance, created, project, layer, pinned, mtime_ns "
            "FROM notes WHERE id IN ({marks})", list(ids))
        return {r[0]: _note_row(r) for r in rows}

    def all_notes(self) -> list[NoteRow]:
        rows = self._r().execute(
            "SELECT id, path, title, region, importance, created, project, layer, pinned, mtime_ns FROM notes")
        return [_note_row(r) for r in rows]

    def note_facts(self) -> list[tuple[int, str, str, str | None, str | None, int]]:
        """(id, path, region, created, project, mtime_ns) of every note: what recall filters look at."""
        return self._r().execute("SELECT id, path, region, created, project, mtime_ns FROM notes").fetchall()

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        rows = self._select_in(
            "SELECT id, note_id, ord, heading, text, start_line, end_line, tokens FROM chunks WHERE id IN ({marks})",
            list(ids))
        return {r[0]: _chunk_row(r) for r in rows}

    def chunk_hashes(self) -> dict[int, str]:
        return dict(self._r().execute("SELECT id, hash FROM chunks").fetchall())

    def embed_texts(self, hashes: Sequence[str]) -> dict[str, str]:
        """The embedded text of the chunks with these hashes, rebuilt from the note's title, the chunk's heading
        and text (and its head, when stored): the very text that was hashed."""
        rows = self._select_in(
            "SELECT c.hash, n.title, c.heading, c.text, c.head FROM chunks c JOIN notes n ON n.id = c.note_id "
            "WHERE c.hash IN ({marks})", hashes)
        return {h: join_head(stored_head(title, heading) if head is None else head, text)
                for h, title, heading, text, head in rows}

    def lexical(self, query: str, limit: int, only: Sequence[int] | None = None,
                notes: frozenset[int] | None = None, also: Sequence[int] = (), budget: int = 0) -> dict[int, float]:
        """BM25 scores (higher is better) of the best `limit` chunks or of the given ids (`Lexical.search`)."""
        return self.lex.search(query, limit, only=only, notes=notes, also=also, budget=budget)

    def access(self) -> dict[str, tuple[int, float | None]]:
        return {p: (c, t) for p, c, t in self._r().execute("SELECT path, count, last_ts FROM access")}

    def co_retrieval(self) -> list[tuple[str, str, int]]:
        return self._r().execute("SELECT a, b, count FROM co_retrieval").fetchall()

    def co_diversity(self) -> list[tuple[str, str, int, float]]:
        """Each co-retrieved pair as (a, b, distinct queries that returned both, last time they did)."""
        return self._r().execute(
            "SELECT a, b, count(*), max(last_ts) FROM co_queries GROUP BY a, b ORDER BY a, b").fetchall()

    def change_seqs(self) -> tuple[str, int, int]:
        """(index id, last note change, last co-retrieval change): equal values mean the graph is current."""
        return self._seqs(self._r())

    @staticmethod
    def _seqs(conn: sqlite3.Connection) -> tuple[str, int, int]:
        meta = dict(conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('index_id', 'change_seq', 'co_change_seq')").fetchall())
        if len(meta) < 3:
            raise IndexCorrupt(f"the index's change log is missing from its meta table (has {sorted(meta)})")
        return str(meta["index_id"]), int(meta["change_seq"]), int(meta["co_change_seq"])

    def graph_rows(self, since: tuple[str, int, int] | None = None, *, limit: int = 0) -> GraphRows:
        """The graph's notes, links and co-retrieved pairs, in one read transaction: all of them, or (with
        `since` = (index id, note seq, pair seq)) only what the change log stamped after it. Falls back to all
        when the log is another index's, went backwards, or names more than `limit` notes."""
        conn = self._r()
        conn.execute("BEGIN")
        try:
            return self._graph_rows(conn, since, limit)
        finally:
            conn.execute("COMMIT")

    def _graph_rows(self, conn: sqlite3.Connection, since: tuple[str, int, int] | None, limit: int) -> GraphRows:
        ident, seq, co_seq = self._seqs(conn)
        paths: list[str] | None = None
        if since is not None and since[0] == ident and since[1] <= seq and since[2] <= co_seq:
            paths = [r[0] for r in conn.execute("SELECT path FROM changes WHERE seq > ?", (since[1],))]
            n_pairs = conn.execute("SELECT count(*) FROM co_changes WHERE seq > ?", (since[2],)).fetchone()[0]
            if len(paths) > limit or n_pairs > limit:
                paths = None
        if paths is None or since is None:
            return self._all_graph_rows(conn, ident, seq, co_seq)
        notes: dict[str, tuple[str | None, list[tuple[str | None, str]]]] = {}
        gone = []
        for path in paths:
            row = conn.execute("SELECT id, project FROM notes WHERE path = ?", (path,)).fetchone()
            if row is None:
                gone.append(path)
                continue
            links = conn.execute("SELECT dst_path, rel FROM links WHERE note_id = ?", (row[0],)).fetchall()
            notes[path] = (row[1], links)
        co = [(a, b, n, last or 0.0) for a, b, n, last in conn.execute(
            "SELECT c.a, c.b, count(q.query), max(q.last_ts) FROM co_changes c "
            "LEFT JOIN co_queries q ON q.a = c.a AND q.b = c.b WHERE c.seq > ? GROUP BY c.a, c.b", (since[2],))]
        return GraphRows(index_id=ident, seq=seq, co_seq=co_seq, notes=notes, gone=gone, co=co, full=False)

    @staticmethod
    def _all_graph_rows(conn: sqlite3.Connection, ident: str, seq: int, co_seq: int) -> GraphRows:
        """Every note, link and co-retrieved pair, as columns (a 100k-note vault has half a million links)."""
        ids: list[int] = []
        paths: list[str] = []
        projects: list[str | None] = []
        same: dict[str, str] = {}  # one string object per distinct path, project and relation
        for note_id, path, project in conn.execute("SELECT id, path, project FROM notes ORDER BY id"):
            ids.append(note_id)
            paths.append(same.setdefault(path, path))
            projects.append(project if project is None else same.setdefault(project, project))
        counts = [0] * len(ids)
        link_dst: list[str | None] = []
        link_rel: list[str] = []
        k = 0
        for note_id, dst, rel in conn.execute("SELECT note_id, dst_path, rel FROM links ORDER BY note_id"):
            while k < len(ids) and ids[k] < note_id:
                k += 1
            if k == len(ids) or ids[k] != note_id:
                continue
            counts[k] += 1
            link_dst.append(dst if dst is None else same.setdefault(dst, dst))
            link_rel.append(same.setdefault(rel, rel))
        co = conn.execute("SELECT a, b, count(*), max(last_ts) FROM co_queries GROUP BY a, b ORDER BY a, b").fetchall()
        return GraphRows(index_id=ident, seq=seq, co_seq=co_seq, notes={}, gone=[], co=co, full=True, paths=paths,
                         projects=projects, link_counts=counts, link_dst=link_dst, link_rel=link_rel)

    def access_of(self, paths: Iterable[str]) -> dict[str, tuple[int, float | None]]:
        """(access count, last access) of the given notes that have any."""
        rows = self._select_in("SELECT path, count, last_ts FROM access WHERE path IN ({marks})", list(paths))
        return {p: (c, t) for p, c, t in rows}

    def pinned_notes(self, regions: Sequence[str], limit: int) -> list[NoteRow]:
        """Notes of the regions marked pinned, else (none pinned) the `limit` most important, by the
        `notes_region` index rather than a pass over the vault; best first, as Python's `importance or 0.5`."""
        cols = "id, path, title, region, importance, created, project, layer, pinned, mtime_ns"
        order = " ORDER BY CASE WHEN importance IS NULL OR importance = 0 THEN 0.5 ELSE importance END DESC, path"
        marks = ",".join("?" * len(regions))
        q = self._r().execute
        rows = q(f"SELECT {cols} FROM notes WHERE region IN ({marks}) AND pinned = 1{order}", list(regions)).fetchall()
        if not rows:
            rows = q(f"SELECT {cols} FROM notes WHERE region IN ({marks}){order} LIMIT ?",
                     [*regions, limit]).fetchall()
        return [_note_row(r) for r in rows]

    def paths_under(self, folder: str) -> list[str]:
        """Note paths under a folder (`habits` → `habits/...`), sorted, by a range scan of the path index."""
        lo = folder.rstrip("/") + "/"
        hi = lo[:-1] + chr(ord("/") + 1)
        return [r[0] for r in self._r().execute(
            "SELECT path FROM notes WHERE path >= ? AND path < ? ORDER BY path", (lo, hi))]

    def edges(self) -> list[tuple[str, str | None, str]]:
        return self._r().execute(
            "SELECT n.path, l.dst_path, l.rel FROM links l JOIN notes n ON n.id = l.note_id").fetchall()

    def chunks_of(self, note_ids: Iterable[int]) -> dict[int, list[ChunkRow]]:
        """Every chunk of the given notes, in order."""
        ids = list(note_ids)
        out: dict[int, list[ChunkRow]] = {i: [] for i in ids}
        rows = self._select_in(
            "SELECT id, note_id, ord, heading, text, start_line, end_line, tokens FROM chunks "
            "WHERE note_id IN ({marks}) ORDER BY note_id, ord", ids)
        for r in rows:
            out[r[1]].append(_chunk_row(r))
        return out

    def notes_tagged(self, tag: str) -> set[int]:
        """Notes with the tag or a tag nested under it (`a` matches `a` and `a/b`, as in Obsidian)."""
        escaped = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._r().execute("SELECT note_id FROM tags WHERE tag = ? OR tag LIKE ? ESCAPE '\\'",
                                 (tag, escaped + "/%"))
        return {r[0] for r in rows}

    def chunk_ids_of(self, note_ids: frozenset[int]) -> list[int]:
        """Every chunk id of the given notes."""
        rows = self._r().execute("SELECT id FROM chunks WHERE note_id IN (SELECT value FROM json_each(?))",
                                 (json.dumps(sorted(note_ids)),))
        return [r[0] for r in rows]

    def note_ids(self, paths: Iterable[str]) -> dict[str, int]:
        return dict(self._select_in("SELECT path, id FROM notes WHERE path IN ({marks})", list(paths)))

    def frontmatter(self, path: str) -> dict[str, Any] | None:
        row = self._r().execute("SELECT frontmatter FROM notes WHERE path = ?", (path,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def aliases_of(self, prefix: str) -> list[tuple[str, str, str]]:
        """(path, title, alias-or-title) for notes under a folder, for matching concept names in text."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"  # a range scan of the path index
        rows = self._r().execute(
            "SELECT n.path, n.title, a.alias FROM notes n LEFT JOIN aliases a ON a.note_id = n.id "
            "WHERE n.path >= ? AND n.path < ? ORDER BY n.path", (prefix, end)).fetchall()
        return [(p, t, a or t) for p, t, a in rows]

    def links(self, *, dangling_only: bool = False, src: str | None = None) -> list[LinkRow]:
        """Links of every note (or of the note `src`), optionally only the dangling ones."""
        sql = ("SELECT n.path, l.target, l.subpath, l.kind, l.rel, l.line, l.dst_path, l.ambiguous "
               "FROM links l JOIN notes n ON n.id = l.note_id WHERE 1")
        args: list[str] = []
        if dangling_only:
            sql += " AND l.dst_path IS NULL"
        if src is not None:
            sql += " AND n.path = ?"
            args.append(src)
        return [
            LinkRow(src=r[0], target=r[1], subpath=r[2], kind=r[3], rel=r[4], line=r[5], dst=r[6],
                    ambiguous=tuple(json.loads(r[7])) if r[7] else ())
            for r in self._r().execute(sql + " ORDER BY n.path, l.line", args)
        ]

    def linking(self, path: str, name: str) -> list[str]:
        """Notes with a link that resolves to `path`, or whose target's last segment is `name` (case-folded)."""
        rows = self._r().execute(
            "SELECT DISTINCT n.path, l.target, l.dst_path FROM links l JOIN notes n ON n.id = l.note_id").fetchall()
        out = set()
        for src, target, dst in rows:
            last = target.rsplit("/", 1)[-1]
            last = last[:-3] if last.lower().endswith(".md") else last
            if dst == path or last.casefold() == name:
                out.add(src)
        return sorted(out)

    def skipped(self) -> list[Skipped]:
        rows = self._r().execute("SELECT path, reason FROM skipped ORDER BY path")
        return [Skipped(path=p, reason=r) for p, r in rows]

    def problems(self) -> list[tuple[str, str]]:
        out = []
        for path, problems in self._r().execute("SELECT path, problems FROM notes ORDER BY path"):
            out += [(path, p) for p in json.loads(problems)]
        return out

    def snapshot(self) -> dict[str, Any]:
        """A comparable picture of the whole index (for `verify`): notes, chunks, links, tags, aliases."""
        q = self._r().execute
        return {
            "notes": q("SELECT path, title, region, importance, created, project, layer, pinned, frontmatter, "
                       "problems, noise, hash FROM notes ORDER BY path").fetchall(),
            "chunks": q("SELECT n.path, c.ord, c.heading, c.text, c.start_line, c.end_line, c.tokens, c.hash, c.head "
                        "FROM chunks c JOIN notes n ON n.id = c.note_id ORDER BY n.path, c.ord").fetchall(),
            "links": q("SELECT n.path, l.target, l.subpath, l.display, l.kind, l.rel, l.line, l.dst_path, "
                       "l.ambiguous FROM links l JOIN notes n ON n.id = l.note_id "
                       "ORDER BY n.path, l.line, l.target, l.rel, l.kind, l.subpath").fetchall(),
            "tags": q("SELECT n.path, t.tag FROM tags t JOIN notes n ON n.id = t.note_id "
                      "ORDER BY n.path, t.tag").fetchall(),
            "aliases": q("SELECT n.path, a.alias FROM aliases a JOIN notes n ON n.id = a.note_id "
                         "ORDER BY n.path, a.alias").fetchall(),
            "skipped": q("SELECT path, reason FROM skipped ORDER BY path").fetchall(),
            "access": q("SELECT path, count, last_ts FROM access ORDER BY path").fetchall(),
            "co_retrieval": q("SELECT a, b, count FROM co_retrieval ORDER BY a, b").fetchall(),
            "co_queries": q("SELECT a, b, query, last_ts FROM co_queries ORDER BY a, b, query").fetchall(),
            "touches": q("SELECT concept, count, last_ts FROM touches ORDER BY concept").fetchall(),
        }
