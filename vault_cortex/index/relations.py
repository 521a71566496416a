"""The relations sidecar (files/relations.py) folded into the index: its edges become links of the notes they are
from (link kind `sidecar`), so the graph, recall and sleep read them as they read the notes' own relations.

The cost follows the change. The file's size, modification time and inode are kept; only when they change is it
read, its edges compared with those the index holds (`relation_edges`), and the sidecar links of just the notes
whose edges differ rewritten — the change log then stamps those notes, so the live graph updates only them. A
note indexed again (its file changed, so its links were written afresh) gets its sidecar links back from
`relation_edges`, without reading the file. A new index reads the file whole: the edges come back from it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from vault_cortex.files.links import target_key
from vault_cortex.files.relations import KIND, RELATIONS_PATH, Relation, parse
from vault_cortex.index.db import IndexDB

SIGNATURE = "relations"  # the meta key of the file's signature as last read
ABSENT = "absent"


def signature(root: Path) -> str:
    """What tells a changed sidecar from the one last read: its size, modification time and inode."""
    try:
        st = (root / RELATIONS_PATH).stat()
    except FileNotFoundError:
        return ABSENT
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def fold_relations(root: Path, db: IndexDB, written: Sequence[str]) -> list[str]:
    """Bring the index's sidecar links in line with the file, for the notes whose edges changed and the notes
    just `written`; returns those notes (their new links are to be resolved). Call inside a write transaction."""
    conn = db.conn
    changed: set[str] = set()
    now = signature(root)
    if now != db.get_meta(SIGNATURE):
        try:
            edges = parse((root / RELATIONS_PATH).read_bytes()) if now != ABSENT else set()
        except FileNotFoundError:
            edges = set()
        had: set[Relation] = {(s, r, d) for s, r, d in conn.execute("SELECT src, rel, dst FROM relation_edges")}
        gone, added = had - edges, edges - had
        conn.executemany("DELETE FROM relation_edges WHERE src = ? AND rel = ? AND dst = ?", sorted(gone))
        conn.executemany("INSERT INTO relation_edges(src, rel, dst) VALUES (?, ?, ?)", sorted(added))
        changed = {e[0] for e in gone | added}
        db.set_meta(SIGNATURE, now)
    if written:
        changed |= {r[0] for r in conn.execute(
            "SELECT DISTINCT src FROM relation_edges WHERE src IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(set(written))),))}
    out = []
    for src in sorted(changed):
        row = conn.execute("SELECT id FROM notes WHERE path = ?", (src,)).fetchone()
        if row is None:
            continue  # not a note (yet): its edges wait in relation_edges until it is indexed
        conn.execute("DELETE FROM links WHERE note_id = ? AND kind = ?", (row[0], KIND))
        conn.executemany(
            "INSERT INTO links(note_id, target, subpath, display, kind, rel, line, name) VALUES (?,?,'',NULL,?,?,0,?)",
            [(row[0], dst, KIND, rel, target_key(dst))
             for rel, dst in conn.execute("SELECT rel, dst FROM relation_edges WHERE src = ? ORDER BY rel, dst",
                                          (src,))])
        out.append(src)
    return out
