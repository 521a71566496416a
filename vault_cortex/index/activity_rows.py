"""The activity numbers the index replays from the activity log: each note's accesses, the co-retrieved pairs
and the queries that returned both, concepts' touches, and the line digests of each log file already applied.

Functions over the index's write connection (call inside `with db.write():`); `IndexDB` calls them on its own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from vault_cortex.files.activity import Activity


def set_activity(conn: sqlite3.Connection, activity: Activity) -> None:
    """Replace the replayed activity numbers (access counts, co-retrieval pairs, concept touches)."""
    conn.execute("DELETE FROM access")
    conn.execute("DELETE FROM co_retrieval")
    conn.execute("DELETE FROM touches")
    conn.executemany(
        "INSERT INTO access(path, count, last_ts) VALUES (?, ?, ?)",
        [(p, a.access_count, a.last_access.timestamp() if a.last_access else None)
         for p, a in activity.paths.items()])
    conn.executemany("INSERT INTO co_retrieval(a, b, count) VALUES (?, ?, ?)", activity.pairs())
    conn.execute("DELETE FROM co_queries")
    conn.executemany("INSERT INTO co_queries(a, b, query, last_ts) VALUES (?, ?, ?, ?)",
                          activity.query_pairs())
    conn.executemany(
        "INSERT INTO touches(concept, count, last_ts) VALUES (?, ?, ?)",
        [(c, t.touches, t.last_touch.timestamp()) for c, t in activity.concepts.items()])


def add_activity(conn: sqlite3.Connection, delta: Activity) -> None:
    """Fold newly appended events into the replayed numbers (counts add up, last times take the max)."""
    conn.executemany(
        "INSERT INTO access(path, count, last_ts) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
        "count = count + excluded.count, last_ts = max(coalesce(last_ts, 0), coalesce(excluded.last_ts, 0))",
        [(p, a.access_count, a.last_access.timestamp() if a.last_access else None)
         for p, a in delta.paths.items()])
    conn.executemany(
        "INSERT INTO co_retrieval(a, b, count) VALUES (?, ?, ?) ON CONFLICT(a, b) DO UPDATE SET "
        "count = count + excluded.count", delta.pairs())
    conn.executemany(
        "INSERT INTO co_queries(a, b, query, last_ts) VALUES (?, ?, ?, ?) ON CONFLICT(a, b, query) DO UPDATE "
        "SET last_ts = max(last_ts, excluded.last_ts)", delta.query_pairs())
    conn.executemany(
        "INSERT INTO touches(concept, count, last_ts) VALUES (?, ?, ?) ON CONFLICT(concept) DO UPDATE SET "
        "count = count + excluded.count, last_ts = max(last_ts, excluded.last_ts)",
        [(c, t.touches, t.last_touch.timestamp()) for c, t in delta.concepts.items()])


def seen_lines(conn: sqlite3.Connection, file: str) -> dict[str, int]:
    """How many times each line digest of an activity file was applied."""
    return dict(conn.execute("SELECT digest, count FROM activity_lines WHERE file = ?", (file,)).fetchall())


def add_seen_lines(conn: sqlite3.Connection, file: str, digests: Mapping[str, int]) -> None:
    conn.executemany(
        "INSERT INTO activity_lines(file, digest, count) VALUES (?, ?, ?) ON CONFLICT(file, digest) DO UPDATE "
        "SET count = count + excluded.count", [(file, d, n) for d, n in digests.items()])


def clear_seen_lines(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM activity_lines")
