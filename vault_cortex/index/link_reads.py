"""The index's links read: every edge, a note's links, the notes linking to one, and the `follows` and
`supersedes` relations as resolved.

Functions over a read connection; `IndexDB` calls them on its own.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from vault_cortex.files.paths import note_name
from vault_cortex.files.vault import ARCHIVE
from vault_cortex.index.dbfile import select_in
from vault_cortex.index.rows import LinkRow


def edges(conn: sqlite3.Connection) -> list[tuple[str, str | None, str]]:
    """(source, destination or None, relation) of every link."""
    return conn.execute(
        "SELECT n.path, l.dst_path, l.rel FROM links l JOIN notes n ON n.id = l.note_id").fetchall()


def followed(conn: sqlite3.Connection, note_ids: Iterable[int]) -> dict[int, str]:
    """The note each of these notes `follows` (its `follows::` relation, resolved), for those that have one."""
    rows = select_in(conn, "SELECT note_id, dst_path FROM links WHERE rel = 'follows' AND dst_path IS NOT NULL "
                     "AND note_id IN ({marks}) ORDER BY note_id, line", sorted(set(note_ids)))
    out: dict[int, str] = {}
    for note_id, dst in rows:
        out.setdefault(note_id, dst)
    return out


def superseding(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, list[str]]:
    """The notes that supersede each of these notes (a `supersedes` relation resolved to it), archived ones
    left out; only the notes some note supersedes. One indexed read (`links_dst`), whatever the vault's size."""
    rows = select_in(
        conn, "SELECT l.dst_path, n.path FROM links l JOIN notes n ON n.id = l.note_id WHERE l.rel = 'supersedes' "
        f"AND l.dst_path IN ({{marks}}) AND n.path NOT LIKE '{ARCHIVE}/%' ORDER BY l.dst_path, n.path",
        sorted(set(paths)))
    out: dict[str, list[str]] = {}
    for old, new in rows:
        if new != old and new not in out.get(old, ()):
            out.setdefault(old, []).append(new)
    return out


def links(conn: sqlite3.Connection, *, dangling_only: bool = False, src: str | None = None) -> list[LinkRow]:
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
        for r in conn.execute(sql + " ORDER BY n.path, l.line", args)
    ]


def linking(conn: sqlite3.Connection, path: str, name: str) -> list[str]:
    """Notes with a link that resolves to `path`, or whose target's last segment is `name` (case-folded)."""
    rows = conn.execute(
        "SELECT DISTINCT n.path, l.target, l.dst_path FROM links l JOIN notes n ON n.id = l.note_id").fetchall()
    out = set()
    for src, target, dst in rows:
        if dst == path or note_name(target).casefold() == name:
            out.add(src)
    return sorted(out)
