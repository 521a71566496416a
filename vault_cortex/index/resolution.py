"""Where the index's links go: each link's destination filled in by a `Resolver`, the paths a link can resolve
to (notes and the attachments remembered here), and the links a change to some files can resolve differently.

Functions over the index's write connection (call inside `with db.write():`); `IndexDB` calls them on its own.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from vault_cortex.files.links import Dangling, Resolver, file_key, target_names
from vault_cortex.index.dbfile import get_meta, set_meta
from vault_cortex.index.schema import FILE_NAME


def resolve_links(conn: sqlite3.Connection, resolver: Resolver, only_paths: Iterable[str] | None = None, *,
                  dangling: bool = False) -> None:
    """Fill in each link's destination (or leave it dangling), for all notes or just some (and, with
    `dangling`, every link still dangling: a note added since may be its target)."""
    sql = "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.note_id"
    rows: list[tuple[int, str, str]]
    if only_paths is None:
        rows = conn.execute(sql).fetchall()
    else:
        rows = []
        for p in only_paths:
            rows += conn.execute(sql + " WHERE n.path = ?", (p,)).fetchall()
        if dangling:
            seen = {r[0] for r in rows}
            rows += [r for r in conn.execute(sql + " WHERE l.dst_path IS NULL") if r[0] not in seen]
    resolve_link_rows(conn, resolver, rows)


def set_attachments(conn: sqlite3.Connection, paths: Iterable[str]) -> set[str] | None:
    """Remember the vault's attachments (the link targets that are not notes): the paths added or
    removed since, or None when they were not known before."""
    new = set(paths)
    old = {r[0] for r in conn.execute("SELECT path FROM attachments")}
    known = get_meta(conn, "attachments_known") is not None
    conn.executemany("DELETE FROM attachments WHERE path = ?", [(p,) for p in old - new])
    conn.executemany("INSERT INTO attachments(path) VALUES (?)", [(p,) for p in new - old])
    set_meta(conn, "attachments_known", "1")
    return (old ^ new) if known else None


def link_targets(conn: sqlite3.Connection, names: Iterable[str] | None = None) -> list[str] | None:
    """Every path a link can resolve to (notes and attachments) as the index knows them, or only those
    whose file name (lower-cased) is in `names`; None when no full sync recorded the attachments yet."""
    if get_meta(conn, "attachments_known") is None:
        return None
    sql = ("SELECT path FROM notes {where} UNION ALL SELECT path FROM attachments {where} "
           "UNION ALL SELECT path FROM skipped WHERE reason = 'binary file named .md'")
    if names is None:
        return [r[0] for r in conn.execute(sql.format(where=""))]
    wanted = set(names)
    if not wanted:
        return []
    if not all(n.isascii() for n in wanted):  # SQL's lower() folds ASCII only: one pass, filtered here
        paths = [r[0] for r in conn.execute(sql.format(where=""))]
        return [p for p in paths if p.lower().rpartition("/")[2] in wanted]
    out: list[str] = []
    names_ = sorted(wanted)
    for start in range(0, len(names_), 400):
        part = names_[start:start + 400]
        where = f"WHERE {FILE_NAME} IN ({','.join('?' * len(part))})"  # the indexed file-name expression
        out += [r[0] for r in conn.execute(sql.format(where=where), part + part)]
    return [p for p in out if p.lower().rpartition("/")[2] in wanted]


def links_naming(conn: sqlite3.Connection, sources: Iterable[str], names: Iterable[str]) -> list[tuple[int, str, str]]:
    """(rowid, target, source) of the links written in `sources` and of every link whose target could
    name a file called one of `names` (lower-cased file names): the links a change to those files can
    resolve differently. The indexed `links.name` (`target_key`) finds the candidates; `target_names`
    decides."""
    sql = "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.note_id"
    rows: dict[int, tuple[int, str, str]] = {}
    for p in sources:
        rows.update((r[0], r) for r in conn.execute(sql + " WHERE n.path = ?", (p,)))
    keys = sorted({file_key(n) for n in names})
    if not keys:
        return list(rows.values())
    candidates: list[tuple[int, str, str]] = list(conn.execute(sql + " WHERE l.name IS NULL"))
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        candidates += conn.execute(f"{sql} WHERE l.name IN ({','.join('?' * len(part))})", part)
    wanted = set(names)
    for r in candidates:
        could = target_names(r[1])
        if r[0] not in rows and (could is None or wanted & set(could)):
            rows[r[0]] = r
    return list(rows.values())


def resolve_link_rows(conn: sqlite3.Connection, resolver: Resolver, rows: Iterable[tuple[int, str, str]]) -> None:
    """Fill in the destination of these links (rowid, target, source)."""
    updates: list[tuple[str | None, str | None, int]] = []
    for rowid, target, src in rows:
        res = resolver.resolve(target, src)
        if isinstance(res, Dangling):
            updates.append((None, None, rowid))
        else:
            updates.append((res.path, json.dumps(list(res.ambiguous)) if res.ambiguous else None, rowid))
    conn.executemany("UPDATE links SET dst_path = ?, ambiguous = ? WHERE rowid = ?", updates)


def resolve_changed(conn: sqlite3.Connection, written: Sequence[str], paths: Sequence[str],
                    all_targets: Callable[[], list[str]]) -> None:
    """Resolve the links of the notes just written and the links whose resolution a note added or removed
    at `paths` can change (those whose target names its file), over a resolver of just the files those
    links can name, read from the index: the cost follows the change, not the vault. `all_targets` gives every
    path a link can resolve to when no full sync recorded the attachments yet."""
    names = {p.lower().rpartition("/")[2] for p in paths}
    rows = links_naming(conn, written, names)
    if not rows:
        return
    needed: set[str] | None = set()
    for _, target, _ in rows:
        could = target_names(target)
        if could is None:
            needed = None
            break
        needed.update(could)  # type: ignore[union-attr]
    if needed is not None:
        needed |= {src.lower().rpartition("/")[2] for _, _, src in rows}  # `[[#Heading]]` names its own note
    targets = link_targets(conn, needed)
    if targets is None:  # no full sync recorded the attachments yet
        targets = all_targets()
    resolve_link_rows(conn, Resolver(targets), rows)
