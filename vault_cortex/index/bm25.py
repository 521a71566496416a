"""BM25 of a few listed chunks outside FTS5: the score FTS5's bm25() gives them, at the cost of those chunks.

FTS5 scores a listed chunk by walking every word's whole doclist (and counting each word's rows first), so
scoring 100 chunks on a word found in 75,000 of them costs the 75,000. Here the listed chunks are tokenized
by an in-memory FTS5 table with the index's own tokenizer (Porter stems and all), their occurrences read back
with `fts5vocab`, and FTS5's formula (`fts.bm25`) applied with the index's statistics: the row count and
token total from its averages record, each row's size from its docsize table, each word's row count from
the caller (`IndexDB._doc_freqs`, recounted every thousand changes). With current counts it is equal to FTS5's
bm25() (`tests/integration/test_bm25.py`); with counts a few hundred changes old, within what those changes
move a word's idf.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from vault_cortex.index.fts import COLUMN_WEIGHTS, COLUMNS, bm25, idf, varints
from vault_cortex.index.schema import TOKENIZE

_WEIGHT = dict(zip(COLUMNS, COLUMN_WEIGHTS, strict=True))


class Tokens:
    """An in-memory FTS5 table with the index's tokenizer, holding the chunks being scored (one per thread)."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.executescript(f"""
            CREATE VIRTUAL TABLE rows USING fts5({", ".join(COLUMNS)}, content = '', tokenize = '{TOKENIZE}');
            CREATE VIRTUAL TABLE row_words USING fts5vocab(rows, instance);
            CREATE VIRTUAL TABLE terms USING fts5(term, content = '', tokenize = '{TOKENIZE}');
            CREATE VIRTUAL TABLE term_words USING fts5vocab(terms, instance);""")

    def close(self) -> None:
        self.conn.close()

    def phrases(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each query term as the tokens FTS5 matches it by (a quoted term of several tokens is a phrase)."""
        q = self.conn.execute
        q("INSERT INTO terms(terms) VALUES ('delete-all')")
        self.conn.executemany("INSERT INTO terms(rowid, term) VALUES (?, ?)", enumerate(terms))
        out: list[list[tuple[int, str]]] = [[] for _ in terms]
        for doc, token, offset in q("SELECT doc, term, offset FROM term_words"):
            out[doc].append((offset, token))
        return [tuple(t for _, t in sorted(p)) for p in out]

    def frequencies(self, rows: Sequence[tuple[int, str, str, str]],
                    phrases: Sequence[tuple[str, ...]]) -> dict[int, list[float]]:
        """Each row's column-weighted count of each phrase (rows matching none are left out)."""
        q = self.conn.execute
        q("INSERT INTO rows(rows) VALUES ('delete-all')")
        q("BEGIN")  # one transaction: FTS5 writes its segment once, not once per row
        self.conn.executemany(f"INSERT INTO rows(rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?)", rows)
        q("COMMIT")
        at: dict[str, set[tuple[int, str, int]]] = {}
        for token in {t for p in phrases for t in p}:
            at[token] = set(q("SELECT doc, col, offset FROM row_words WHERE term = ?", (token,)).fetchall())
        out: dict[int, list[float]] = {}
        for i, phrase in enumerate(phrases):
            if not phrase:
                continue
            for doc, col, offset in at[phrase[0]]:
                if all((doc, col, offset + j) in at[t] for j, t in enumerate(phrase[1:], 1)):
                    out.setdefault(doc, [0.0] * len(phrases))[i] += _WEIGHT[col]
        return out


def scores(conn: sqlite3.Connection, tokens: Tokens, terms: Sequence[str], hits: Mapping[str, int],
           ids: Sequence[int]) -> dict[int, float]:
    """FTS5's BM25 (higher is better) of the listed chunks that match any term; `hits` is each term's row
    count in the index (FTS5 would count it by reading the term's whole doclist)."""
    if not ids or not terms:
        return {}
    record = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if record is None:
        return {}
    n_rows, *totals = varints(record[0])
    if not n_rows:
        return {}
    listed = "(SELECT value FROM json_each(?))"
    wanted = "[" + ",".join(str(int(i)) for i in ids) + "]"
    rows = conn.execute(f"SELECT id, title, heading, text FROM chunk_texts WHERE id IN {listed}", (wanted,)).fetchall()
    sizes = {i: sum(varints(sz)) for i, sz in
             conn.execute(f"SELECT id, sz FROM chunks_fts_docsize WHERE id IN {listed}", (wanted,))}
    freqs = tokens.frequencies(rows, tokens.phrases(terms))
    idfs = [idf(n_rows, hits.get(t, 0)) for t in terms]
    avgdl = sum(totals) / n_rows
    return {i: bm25(f, idfs, sizes[i], avgdl) for i, f in freqs.items() if i in sizes}
