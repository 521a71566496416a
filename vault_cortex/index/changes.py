"""The index's change log, as the note graph follows it: its sequence numbers, and the notes, links and
co-retrieved pairs read all at once or only as changed since a point in the log.

Functions over a read connection; `IndexDB.change_seqs` and `IndexDB.graph_rows` call them on their own.
"""

from __future__ import annotations

import sqlite3

import msgspec

from vault_cortex.errors import IndexCorrupt


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


def change_seqs(conn: sqlite3.Connection) -> tuple[str, int, int]:
    """(index id, last note change, last co-retrieval change): equal values mean the graph is current."""
    meta = dict(conn.execute(
        "SELECT key, value FROM meta WHERE key IN ('index_id', 'change_seq', 'co_change_seq')").fetchall())
    if len(meta) < 3:
        raise IndexCorrupt(f"the index's change log is missing from its meta table (has {sorted(meta)})")
    return str(meta["index_id"]), int(meta["change_seq"]), int(meta["co_change_seq"])


def graph_rows(conn: sqlite3.Connection, since: tuple[str, int, int] | None = None, *, limit: int = 0) -> GraphRows:
    """The graph's notes, links and co-retrieved pairs, in one read transaction: all of them, or (with
    `since` = (index id, note seq, pair seq)) only what the change log stamped after it. Falls back to all
    when the log is another index's, went backwards, or names more than `limit` notes."""
    conn.execute("BEGIN")
    try:
        return _graph_rows(conn, since, limit)
    finally:
        conn.execute("COMMIT")


def _graph_rows(conn: sqlite3.Connection, since: tuple[str, int, int] | None, limit: int) -> GraphRows:
    ident, seq, co_seq = change_seqs(conn)
    paths: list[str] | None = None
    if since is not None and since[0] == ident and since[1] <= seq and since[2] <= co_seq:
        paths = [r[0] for r in conn.execute("SELECT path FROM changes WHERE seq > ?", (since[1],))]
        n_pairs = conn.execute("SELECT count(*) FROM co_changes WHERE seq > ?", (since[2],)).fetchone()[0]
        if len(paths) > limit or n_pairs > limit:
            paths = None
    if paths is None or since is None:
        return _all_graph_rows(conn, ident, seq, co_seq)
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
