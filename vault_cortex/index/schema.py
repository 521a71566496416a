"""The index's SQLite schema: its tables and indexes, and the triggers that keep the change log the graph follows."""

from __future__ import annotations

from vault_cortex.files.properties import RAW_LAYER

SCHEMA_VERSION = "2"  # 2: no stored embed_text, FTS5 over the chunks (external content)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, fs_path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, title TEXT NOT NULL, region TEXT NOT NULL,
    importance REAL, created TEXT, project TEXT, layer TEXT, pinned INTEGER NOT NULL DEFAULT 0,
    frontmatter TEXT NOT NULL, problems TEXT NOT NULL, noise INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, tokens INTEGER NOT NULL, hash TEXT NOT NULL, head TEXT);
CREATE INDEX IF NOT EXISTS chunks_note ON chunks(note_id, ord);
CREATE VIEW IF NOT EXISTS chunk_texts AS
    SELECT c.id AS id, n.title AS title, c.heading AS heading, c.text AS text
    FROM chunks c JOIN notes n ON n.id = c.note_id;
{FTS}
CREATE TABLE IF NOT EXISTS links(
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, target TEXT NOT NULL,
    subpath TEXT NOT NULL, display TEXT, kind TEXT NOT NULL, rel TEXT NOT NULL, line INTEGER NOT NULL,
    dst_path TEXT, ambiguous TEXT, name TEXT);
CREATE INDEX IF NOT EXISTS links_note ON links(note_id);
CREATE INDEX IF NOT EXISTS links_dst ON links(dst_path);
CREATE TABLE IF NOT EXISTS relation_edges(src TEXT NOT NULL, rel TEXT NOT NULL, dst TEXT NOT NULL,
    PRIMARY KEY(src, rel, dst)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tags(note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, tag TEXT);
CREATE INDEX IF NOT EXISTS tags_tag ON tags(tag);
CREATE INDEX IF NOT EXISTS tags_note ON tags(note_id);
CREATE TABLE IF NOT EXISTS aliases(
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, alias TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS aliases_note ON aliases(note_id);
CREATE TABLE IF NOT EXISTS skipped(path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attachments(path TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS access(path TEXT PRIMARY KEY, count INTEGER NOT NULL, last_ts REAL);
CREATE TABLE IF NOT EXISTS co_retrieval(a TEXT NOT NULL, b TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY(a, b)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS co_queries(a TEXT NOT NULL, b TEXT NOT NULL, query TEXT NOT NULL, last_ts REAL NOT NULL,
    PRIMARY KEY(a, b, query)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes(path TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS changes_seq ON changes(seq);
CREATE TABLE IF NOT EXISTS co_changes(a TEXT NOT NULL, b TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(a, b)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS co_changes_seq ON co_changes(seq);
CREATE TABLE IF NOT EXISTS activity_lines(file TEXT NOT NULL, digest TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY(file, digest)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS touches(concept TEXT PRIMARY KEY, count INTEGER NOT NULL, last_ts REAL);
CREATE INDEX IF NOT EXISTS notes_region ON notes(region, pinned);
"""


# FTS5 keeps no copy of the text: it reads it from the chunks (`chunk_texts`) when it must, so a chunk's terms
# are removed from it while the chunk and its note's title still hold what was indexed (IndexDB.delete_note).
TOKENIZE = "porter unicode61 remove_diacritics 2"
FTS = f"""CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, heading, text, content = 'chunk_texts', content_rowid = 'id',
    tokenize = '{TOKENIZE}');"""
_SCHEMA = _SCHEMA.replace("{FTS}", FTS)
# Each token's row count in `chunks_fts` (`lexical.TokenRows` keeps it). Not in SCHEMA: an index made before it
# existed is told by its absence and gets it filled from FTS5's vocabulary once (`dbfile._add_token_rows`).
TOKEN_ROWS = "CREATE TABLE token_rows(token TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID"
# The change number `token_rows` was last kept at, recorded by each write transaction before it commits (a no-op
# when it did not move): a number behind `change_seq` at open says a version that does not keep it wrote notes.
SEAL_TOKEN_ROWS = ("INSERT OR REPLACE INTO meta(key, value) SELECT 'token_rows_at', s.value FROM meta s "
                   "WHERE s.key = 'change_seq' AND s.value IS NOT (SELECT value FROM meta WHERE key = 'token_rows_at')")


def _stamp(path: str) -> str:
    """Trigger statements stamping the note at `path` (an SQL expression) with the next change number."""
    return (f"UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'change_seq';\n"
            f"DELETE FROM changes WHERE path = {path};\n"
            f"INSERT INTO changes(path, seq) SELECT p, CAST(value AS INTEGER) FROM meta, (SELECT {path} AS p)\n"
            f"  WHERE key = 'change_seq' AND p IS NOT NULL;\n")


def _stamp_pair(row: str) -> str:
    """Trigger statements stamping a co-retrieved pair (`row` is NEW or OLD) with the next change number."""
    return (f"UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'co_change_seq';\n"
            f"DELETE FROM co_changes WHERE a = {row}.a AND b = {row}.b;\n"
            f"INSERT INTO co_changes(a, b, seq) SELECT {row}.a, {row}.b, CAST(value AS INTEGER) FROM meta\n"
            f"  WHERE key = 'co_change_seq';\n")


def _link_path(row: str) -> str:
    return f"(SELECT path FROM notes WHERE id = {row}.note_id)"


# The change log the graph follows: any write to a note's row or its links stamps the note with the next number
# of the `change_seq` counter, and any write to a co-retrieved pair stamps the pair (`co_change_seq`), whichever
# code path made the write. (Delete, then insert: a statement's own ON CONFLICT would override a trigger's.)
_LINK_MOVED = "WHEN OLD.dst_path IS NOT NEW.dst_path OR OLD.rel IS NOT NEW.rel OR OLD.note_id IS NOT NEW.note_id"
_TRIGGERS = "INSERT OR IGNORE INTO meta(key, value) VALUES ('change_seq', '0'), ('co_change_seq', '0');\n" + "".join(
    f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table} {when} BEGIN\n{body}END;\n"
    for name, event, table, when, body in [
        ("notes_changed_insert", "INSERT", "notes", "", _stamp("NEW.path")),
        ("notes_changed_delete", "DELETE", "notes", "", _stamp("OLD.path")),
        ("notes_changed_update", "UPDATE", "notes", "", _stamp("OLD.path") + _stamp("NEW.path")),
        ("links_changed_insert", "INSERT", "links", "", _stamp(_link_path("NEW"))),
        ("links_changed_delete", "DELETE", "links", "", _stamp(_link_path("OLD"))),
        ("links_changed_update", "UPDATE", "links", _LINK_MOVED,
         _stamp(_link_path("OLD")) + _stamp(_link_path("NEW"))),
        ("co_changed_insert", "INSERT", "co_queries", "", _stamp_pair("NEW")),
        ("co_changed_delete", "DELETE", "co_queries", "", _stamp_pair("OLD")),
        ("co_changed_update", "UPDATE", "co_queries", "", _stamp_pair("OLD") + _stamp_pair("NEW")),
    ]
)

# The number of notes, kept by the inserts and deletes themselves: `count(*)` reads every row (2 ms a write at
# 100k notes). Counted once when an index first gets the triggers.
_NOTE_COUNT = """INSERT OR IGNORE INTO meta(key, value) SELECT 'note_count', count(*) FROM notes
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'note_count');
CREATE TRIGGER IF NOT EXISTS notes_count_insert AFTER INSERT ON notes BEGIN
UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'note_count';
END;
CREATE TRIGGER IF NOT EXISTS notes_count_delete AFTER DELETE ON notes BEGIN
UPDATE meta SET value = CAST(value AS INTEGER) - 1 WHERE key = 'note_count';
END;
"""

SCHEMA = _SCHEMA + _TRIGGERS + _NOTE_COUNT  # run at every open: everything is IF NOT EXISTS / OR IGNORE

# Run after SCHEMA, once the migrations (db.py) added any column an older index lacks.
# A path's file name, lower-cased (ASCII), in SQL: the path less what `rtrim` leaves of it once every character
# but '/' is trimmed from the right. Indexed on notes and attachments, so a write finds the files its links can
# name by an index lookup, not a scan of every path.
FILE_NAME = "lower(replace(path, rtrim(path, replace(path, '/', '')), ''))"

# The captures (`properties.is_capture`), by a partial index holding only them: recall leaves them out (or keeps
# only them) at the cost of the captures, never of a pass over every note.
CAPTURES = f"layer = '{RAW_LAYER}'"

INDEXES = ("CREATE INDEX IF NOT EXISTS links_name ON links(name);\n"
           f"CREATE INDEX IF NOT EXISTS notes_captures ON notes(id) WHERE {CAPTURES};\n"
           f"CREATE INDEX IF NOT EXISTS notes_file_name ON notes({FILE_NAME});\n"
           f"CREATE INDEX IF NOT EXISTS attachments_file_name ON attachments({FILE_NAME});\n")
