"""The derived index in SQLite (WAL): files, notes, chunks, links, tags, aliases, FTS5, skipped files.

Everything here can be rebuilt from the vault; deleting `.cortex/index/` loses nothing. `IndexDB` is the way in;
beside it: the file itself (`dbfile.py`), the change log the graph follows (`changes.py`), where links go
(`resolution.py`), the links read (`link_reads.py`), the activity numbers (`activity_rows.py`), BM25 search
(`lexical.py`) and the row structs (`rows.py`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vault_cortex.files.activity import Activity
from vault_cortex.files.chunk import Chunk, heading_text, join_head, stored_head
from vault_cortex.files.links import Resolver, target_key
from vault_cortex.files.note import Note
from vault_cortex.files.walk import Skipped
from vault_cortex.index import activity_rows, changes, link_reads, resolution
from vault_cortex.index.changes import GraphRows
from vault_cortex.index.dbfile import (
    get_meta,
    open_index,
    open_reader,
    quick_check,
    select_in,
    set_meta,
    transaction,
)
from vault_cortex.index.lexical import Lexical, Search, TokenRows, merge_step
from vault_cortex.index.rows import ChunkRow, FileState, LinkRow, NoteRow, chunk_row, note_row
from vault_cortex.index.schema import CAPTURES


class IndexDB:
    """One SQLite connection to `index.db`; the owner serialises writers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = open_index(path)  # made whole if missing, prepared, named, moved to this schema
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self.lex = Lexical(self._r)  # BM25 search over `chunks_fts`
        self._token_rows = TokenRows()  # each token's row count, kept by the writes to `chunks_fts`

    def quick_check(self) -> str | None:
        """What SQLite's quick_check finds wrong (None: nothing). It reads the whole file, so it runs where a
        damaged index must be caught before it is trusted (serve start-up, doctor, verify), not at every open:
        elsewhere a damaged page surfaces as a corruption error on the read that meets it, and is handled there."""
        return quick_check(self.conn, f"the index at {self.path}")

    def _r(self) -> sqlite3.Connection:
        """This thread's read connection (WAL lets readers run while a sync writes)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_reader(self.path)
            self._local.conn = conn
            self._readers.append(conn)
        return conn

    def close(self) -> None:
        self.lex.close()  # first: its worker threads read through their own readers
        self._token_rows.close()
        for conn in self._readers:
            conn.close()
        self._readers.clear()
        self.conn.close()

    # -- meta --------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        return get_meta(self.conn, key)

    def set_meta(self, key: str, value: str) -> None:
        set_meta(self.conn, key, value)

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- writes (call inside `with db.write():`) ------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction (`with db.write():`): committed whole or rolled back whole. Before it commits,
        the row counts of the tokens its notes added and removed are written (`TokenRows`)."""
        try:
            with transaction(self.conn):
                yield
                self._token_rows.flush(self.conn)
        finally:
            self._token_rows.discard()

    def merge_words(self, pages: int) -> bool:
        """One step of merging the FTS5 index into one segment (`lexical.merge_step`): True while work remains."""
        return merge_step(self.conn, pages)

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
        self._token_rows.removed(indexed)
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
        indexed = [(i, note.title, h, c.text) for i, h, c in zip(ids, heading_of, chunks, strict=True)]
        self.conn.executemany("INSERT INTO chunks_fts(rowid, title, heading, text) VALUES (?,?,?,?)", indexed)
        self._token_rows.added(indexed)
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
        """Fill in each link's destination, for all notes or just some (`resolution.resolve_links`)."""
        resolution.resolve_links(self.conn, resolver, only_paths, dangling=dangling)

    def set_attachments(self, paths: Iterable[str]) -> set[str] | None:
        """Remember the vault's attachments: the paths added or removed since (`resolution.set_attachments`)."""
        return resolution.set_attachments(self.conn, paths)

    def link_targets(self, names: Iterable[str] | None = None) -> list[str] | None:
        """Every path a link can resolve to, or those with these file names (`resolution.link_targets`)."""
        return resolution.link_targets(self.conn, names)

    def links_naming(self, sources: Iterable[str], names: Iterable[str]) -> list[tuple[int, str, str]]:
        """The links a change to these files can resolve differently (`resolution.links_naming`)."""
        return resolution.links_naming(self.conn, sources, names)

    def resolve_changed(self, written: Sequence[str], paths: Sequence[str],
                        all_targets: Callable[[], list[str]]) -> None:
        """Resolve the links a change can touch: those of the notes written and those naming `paths`' files
        (`resolution.resolve_changed`)."""
        resolution.resolve_changed(self.conn, written, paths, all_targets)

    def note_count(self) -> int:
        """The number of notes, from the counter the inserts and deletes keep (schema `_NOTE_COUNT`)."""
        return int(self._r().execute("SELECT value FROM meta WHERE key = 'note_count'").fetchone()[0])

    def set_activity(self, activity: Activity) -> None:
        """Replace the replayed activity numbers (access counts, co-retrieval pairs, concept touches)."""
        activity_rows.set_activity(self.conn, activity)

    def add_activity(self, delta: Activity) -> None:
        """Fold newly appended events into the replayed numbers (counts add up, last times take the max)."""
        activity_rows.add_activity(self.conn, delta)

    def seen_lines(self, file: str) -> dict[str, int]:
        """How many times each line digest of an activity file was applied."""
        return activity_rows.seen_lines(self.conn, file)

    def add_seen_lines(self, file: str, digests: Mapping[str, int]) -> None:
        activity_rows.add_seen_lines(self.conn, file, digests)

    def clear_seen_lines(self) -> None:
        activity_rows.clear_seen_lines(self.conn)

    def set_skipped(self, skipped: Iterable[Skipped], only: Iterable[str] | None = None) -> None:
        """Replace the skipped files (or, with `only`, the entries of those paths)."""
        if only is None:
            self.conn.execute("DELETE FROM skipped")
        else:
            self.conn.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in only])
        self.conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)",
                              [(s.path, s.reason) for s in skipped])

    # -- reads -------------------------------------------------------------------------------------
    def chunk_count(self) -> int:
        return int(self._r().execute("SELECT count(*) FROM chunks").fetchone()[0])

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

    def _select_in(self, sql: str, values: Sequence[Any], conn: sqlite3.Connection | None = None) -> list[Any]:
        """Rows of a query with one `IN ({marks})` (`dbfile.select_in`), on this thread's reader by default."""
        return select_in(conn or self._r(), sql, values)

    def note_paths(self) -> list[str]:
        return [r[0] for r in self._r().execute("SELECT path FROM notes ORDER BY path")]

    def notes_by_id(self, ids: Iterable[int]) -> dict[int, NoteRow]:
        rows = self._select_in(
            "SELECT id, path, title, region, importance, created, project, layer, pinned, mtime_ns "
            "FROM notes WHERE id IN ({marks})", list(ids))
        return {r[0]: note_row(r) for r in rows}

    def all_notes(self) -> list[NoteRow]:
        rows = self._r().execute(
            "SELECT id, path, title, region, importance, created, project, layer, pinned, mtime_ns FROM notes")
        return [note_row(r) for r in rows]

    def note_facts(self) -> list[tuple[int, str, str, str | None, str | None, int]]:
        """(id, path, region, created, project, mtime_ns) of every note: what recall filters look at."""
        return self._r().execute("SELECT id, path, region, created, project, mtime_ns FROM notes").fetchall()

    def chunks_by_id(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        rows = self._select_in(
            "SELECT id, note_id, ord, heading, text, start_line, end_line, tokens FROM chunks WHERE id IN ({marks})",
            list(ids))
        return {r[0]: chunk_row(r) for r in rows}

    def chunk_hashes(self) -> dict[int, str]:
        return dict(self._r().execute("SELECT id, hash FROM chunks").fetchall())

    def hashes_of(self, ids: Sequence[int]) -> dict[int, str]:
        """The text hash of each of these chunks that exists."""
        return dict(self._select_in("SELECT id, hash FROM chunks WHERE id IN ({marks})", ids))

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

    def begin_lexical(self, query: str, limit: int, notes: frozenset[int] | None = None, budget: int = 0,
                      without: frozenset[int] = frozenset()) -> Search:
        """`lexical`'s search of the best `limit` chunks (of `notes`, of none of `without`) begun on a worker
        thread; `finish(also)` ends it (`Lexical.begin`)."""
        return self.lex.begin(query, limit, notes=notes, budget=budget, without=without)

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
        return changes.change_seqs(self._r())

    def graph_rows(self, since: tuple[str, int, int] | None = None, *, limit: int = 0) -> GraphRows:
        """The graph's notes, links and co-retrieved pairs since a point in the change log, or all of them
        (`changes.graph_rows`)."""
        return changes.graph_rows(self._r(), since, limit=limit)

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
        return [note_row(r) for r in rows]

    def paths_under(self, folder: str) -> list[str]:
        """Note paths under a folder (`habits` → `habits/...`), sorted, by a range scan of the path index."""
        lo = folder.rstrip("/") + "/"
        hi = lo[:-1] + chr(ord("/") + 1)
        return [r[0] for r in self._r().execute(
            "SELECT path FROM notes WHERE path >= ? AND path < ? ORDER BY path", (lo, hi))]

    def edges(self) -> list[tuple[str, str | None, str]]:
        return link_reads.edges(self._r())

    def chunks_of(self, note_ids: Iterable[int]) -> dict[int, list[ChunkRow]]:
        """Every chunk of the given notes, in order."""
        ids = list(note_ids)
        out: dict[int, list[ChunkRow]] = {i: [] for i in ids}
        rows = self._select_in(
            "SELECT id, note_id, ord, heading, text, start_line, end_line, tokens FROM chunks "
            "WHERE note_id IN ({marks}) ORDER BY note_id, ord", ids)
        for r in rows:
            out[r[1]].append(chunk_row(r))
        return out

    def capture_notes(self) -> frozenset[int]:
        """Ids of the captures (`properties.is_capture`), read by their partial index: the cost of the captures."""
        return frozenset(r[0] for r in self._r().execute(f"SELECT id FROM notes WHERE {CAPTURES}"))

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

    def properties_of(self, note_ids: Iterable[int], keys: Sequence[str]) -> dict[int, list[Any]]:
        """The values of some properties of each note, in the order of `keys` (None where unset), in one read.

        Read in Python, not with SQLite's json_extract: a property may hold what YAML allows and JSON does not
        (`.nan`, `.inf`, stored as NaN and Infinity), which SQLite refuses as malformed JSON."""
        rows = self._r().execute("SELECT id, frontmatter FROM notes WHERE id IN (SELECT value FROM json_each(?))",
                                 (json.dumps(sorted(set(note_ids))),))
        out = {}
        for i, raw in rows:
            front = json.loads(raw)
            out[i] = [front.get(k) for k in keys] if isinstance(front, dict) else [None] * len(keys)
        return out

    def followed(self, note_ids: Iterable[int]) -> dict[int, str]:
        """The note each of these notes `follows` (its `follows::` relation, resolved), for those that have one."""
        return link_reads.followed(self._r(), note_ids)

    def superseding(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """The notes that supersede each of these notes (a `supersedes` relation resolved to it), archived ones
        left out; only the notes some note supersedes. One indexed read (`links_dst`), whatever the vault's size."""
        return link_reads.superseding(self._r(), paths)

    def aliases_of(self, prefix: str) -> list[tuple[str, str, str]]:
        """(path, title, alias-or-title) for notes under a folder, for matching concept names in text."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"  # a range scan of the path index
        rows = self._r().execute(
            "SELECT n.path, n.title, a.alias FROM notes n LEFT JOIN aliases a ON a.note_id = n.id "
            "WHERE n.path >= ? AND n.path < ? ORDER BY n.path", (prefix, end)).fetchall()
        return [(p, t, a or t) for p, t, a in rows]

    def links(self, *, dangling_only: bool = False, src: str | None = None) -> list[LinkRow]:
        """Links of every note (or of the note `src`), optionally only the dangling ones."""
        return link_reads.links(self._r(), dangling_only=dangling_only, src=src)

    def linking(self, path: str, name: str) -> list[str]:
        """Notes with a link that resolves to `path`, or whose target's last segment is `name` (case-folded)."""
        return link_reads.linking(self._r(), path, name)

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
