"""Lexical search: BM25 over the index's FTS5 table, its work bounded by a budget rather than by the vault.

The top N come from FTS5 (`ORDER BY bm25 LIMIT`). Past the budget (`recall.lexical_budget`), the candidates are
found by the query's rarer words (among the newest matching chunks when even the rarest matches more), and
scored on every word outside FTS5: FTS5 scores a listed chunk by walking every word's whole doclist (and
counting each word's rows first), so scoring 100 chunks on a word found in 75,000 of them costs the 75,000.
Here the listed chunks are tokenized by an in-memory FTS5 table with the index's own tokenizer (Porter stems
and all), their occurrences read back with `fts5vocab`, and FTS5's formula (`fts.bm25`) applied with the
index's statistics: the row count and token total from its averages record, each row's size from its docsize
table, each word's row count from the index's `token_rows` table (`Lexical.doc_freqs`), which every write that
changes `chunks_fts` keeps equal to FTS5's own counts (`TokenRows`). It equals FTS5's bm25()
(`tests/integration/test_bm25.py`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from vault_cortex.index.fts import COLUMN_WEIGHTS, COLUMNS, bm25, fts_match, fts_terms, idf, rarest, varints
from vault_cortex.index.schema import SEAL_TOKEN_ROWS, TOKENIZE

_WEIGHT = dict(zip(COLUMNS, COLUMN_WEIGHTS, strict=True))
WORKERS = 2  # threads finding searches' row counts and top chunks (each reads through its own connection)


class Lexical:
    """BM25 search over `chunks_fts`, read through the index's per-thread read connection (`reader`)."""

    def __init__(self, reader: Callable[[], sqlite3.Connection]) -> None:
        self._r = reader
        self._local = threading.local()
        self._scratch: list[Tokens] = []  # each thread's in-memory tokenizer
        self._pool: ThreadPoolExecutor | None = None  # the worker threads `begin` finds the top on
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        with self._pool_lock:  # first: the workers read through their own readers
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        for tokens in self._scratch:
            tokens.close()
        self._scratch.clear()

    def _tokens(self) -> Tokens:
        """This thread's in-memory tokenizer."""
        tokens: Tokens | None = getattr(self._local, "tokens", None)
        if tokens is None:
            tokens = self._local.tokens = Tokens()
            self._scratch.append(tokens)
        return tokens

    def search(self, query: str, limit: int, only: Sequence[int] | None = None,
               notes: frozenset[int] | None = None, also: Sequence[int] = (), budget: int = 0,
               without: frozenset[int] = frozenset()) -> dict[int, float]:
        """BM25 scores (higher is better) of the best `limit` chunks, or of the given chunk ids; with `notes`,
        only chunks of those notes, and with `without`, no chunk of those notes (both filtered inside the search,
        so `limit` of them come back when they exist); with `also`, the scores of those chunks too (those that
        match).

        The top `limit` are picked by FTS5 inside SQLite (`ORDER BY bm25 LIMIT`); the listed ids are filtered
        with `+rowid`, before scoring, so only they are scored. With a `budget`, BM25's work stays bounded by
        the budget, not by the vault. A query whose words match more than `budget` chunks together picks its top
        `limit` by its rarer words only (`fts.rarest`: the words too common in this vault to tell chunks apart),
        and when even its rarest word matches more, among the `budget` most recently written chunks that match
        (unless `notes` narrows the search). The chunks so found and the listed ones are then scored on every
        word outside FTS5 (`scores`, the same score at the cost of those chunks), so the budget changes
        which chunks are found, never their scores."""
        if only is None:
            return self.begin(query, limit, notes=notes, budget=budget, without=without).finish(also)
        terms = fts_terms(query)
        if not terms:
            return {}
        if not 0 < budget < self.max_chunk_id() or sum((freqs := self.doc_freqs(terms)).values()) <= budget:
            return self._fts_scores(fts_match(terms), only)
        return scores(self._r(), self._tokens(), terms, freqs, only)

    def begin(self, query: str, limit: int, notes: frozenset[int] | None = None, budget: int = 0,
              without: frozenset[int] = frozenset()) -> Search:
        """A search (see `search`) begun: `Search.finish(also)` ends it with the chunks the caller lists.

        In an index of more chunks than the budget, the top `limit` is looked for on a worker thread, while the
        caller does other work (the dense search) and then scores the chunks it lists: SQLite works outside
        Python's lock, so they run at once. In a smaller index one FTS5 statement finds and scores both when the
        listed chunks are known."""
        terms = fts_terms(query)
        if not terms or not 0 < budget < self.max_chunk_id():
            return Search(self, terms, limit, (notes, without), budget, None)
        freqs = self.doc_freqs(terms)
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="vault-cortex-read")
            top = self._pool.submit(self._find, terms, limit, notes, budget, freqs, without)
        return Search(self, terms, limit, (notes, without), budget, (freqs, top))

    def _find(self, terms: list[str], limit: int, notes: frozenset[int] | None, budget: int,
              freqs: Mapping[str, int], without: frozenset[int] = frozenset()) -> dict[int, float]:
        """On the worker: the top `limit` chunks, scored by FTS5 when the words match no more than `budget`
        chunks together, else found by the rarer words (their scores then do not count: `Search.finish` scores
        them on every word)."""
        if sum(freqs.values()) <= budget:
            return self._fts_top(fts_match(terms), limit, notes=notes, without=without)
        picked = fts_match(rarest(terms, dict(freqs), budget) or terms)
        floor = self._newest_match(picked, budget, without) if notes is None else None
        return self._fts_top(picked, limit, notes=notes, floor=floor, without=without)

    _SCORED = (f"SELECT rowid, -bm25(chunks_fts, {', '.join(map(str, COLUMN_WEIGHTS))}) AS s FROM chunks_fts "
                "WHERE chunks_fts MATCH ?")
    # `+rowid` keeps a listed-ids filter out of FTS5, which would otherwise run the match once per listed id
    _LISTED = " AND +rowid IN (SELECT value FROM json_each(?))"
    _OF_NOTES = "+rowid {op} (SELECT id FROM chunks WHERE note_id IN (SELECT value FROM json_each(?)))"

    def _fts_scores(self, match: str, ids: Sequence[int]) -> dict[int, float]:
        """BM25 scores of the listed chunks that match."""
        return self._fts_rows(self._SCORED + self._LISTED, [match, json.dumps(list(ids))]) if ids else {}

    def _fts_top(self, match: str, limit: int, notes: frozenset[int] | None = None, also: Sequence[int] = (),
                 floor: int | None = None, without: frozenset[int] = frozenset()) -> dict[int, float]:
        """The best `limit` matching chunks (of `notes`, of none of `without`, from chunk id `floor` on), and the
        listed `also` that match, in one statement."""
        sql, args = self._SCORED, list[Any]([match])
        if floor is not None:
            sql += " AND rowid >= ?"
            args.append(floor)
        if notes is not None:
            sql += " AND " + self._OF_NOTES.format(op="IN")
            args.append(json.dumps(sorted(notes)))
        if without:
            sql += " AND " + self._OF_NOTES.format(op="NOT IN")
            args.append(json.dumps(sorted(without)))
        sql = f"SELECT * FROM ({sql} ORDER BY s DESC LIMIT ?)"
        args.append(limit)
        if also:
            sql += f" UNION ALL {self._SCORED}{self._LISTED}"
            args += [match, json.dumps(list(also))]
        return self._fts_rows(sql, args)

    def _fts_rows(self, sql: str, args: Sequence[Any]) -> dict[int, float]:
        try:
            return {int(r): float(v) for r, v in self._r().execute(sql, args)}
        except sqlite3.OperationalError:
            return {}

    def _newest_match(self, match: str, count: int, without: frozenset[int] = frozenset()) -> int | None:
        """The lowest chunk id among the `count` newest chunks matching (ids grow as chunks are written), leaving
        out the chunks of the `without` notes; None when fewer match. FTS5 walks its doclists backwards by rowid
        without scoring, so this is cheap."""
        sql, args = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", list[Any]([match])
        if without:
            sql += " AND " + self._OF_NOTES.format(op="NOT IN")
            args.append(json.dumps(sorted(without)))
        try:
            row = self._r().execute(sql + " ORDER BY rowid DESC LIMIT 1 OFFSET ?", (*args, count - 1)).fetchone()
        except sqlite3.OperationalError:
            return None
        return None if row is None else int(row[0])

    def max_chunk_id(self) -> int:
        """At least the number of chunks (ids only grow), in one B-tree step."""
        return int(self._r().execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks match each term: a term of one token by the index's `token_rows` table (kept by every
        write to `chunks_fts`, `TokenRows`: one B-tree step, where FTS5 would walk the token's whole doclist), a
        phrase (a term FTS5 splits, foo_bar) by its MATCH."""
        phrases = self._tokens().phrases(terms)
        singles = sorted({p[0] for p in phrases if len(p) == 1})
        held = dict(self._r().execute(
            "SELECT token, rows FROM token_rows WHERE token IN (SELECT value FROM json_each(?))",
            (json.dumps(singles),))) if singles else {}
        return {t: int(held.get(p[0], 0)) if len(p) == 1 else self._phrase_rows(t)
                for t, p in zip(terms, phrases, strict=True)}

    def _phrase_rows(self, term: str) -> int:
        """How many chunks match a term FTS5 reads as a phrase (or as nothing)."""
        try:
            return int(self._r().execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                         (fts_match([term]),)).fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def merge_step(conn: sqlite3.Connection, pages: int) -> bool:
    """One bounded step (about `pages` pages written) of merging `chunks_fts`'s segments into one, inside the
    caller's write transaction; True while work remains. FTS5 writes a segment per transaction and merges them
    only level by level, so a first sync in 32-note transactions leaves many (18 at 100,000 notes), and every
    query then reads each word's doclist once per segment. FTS5's `merge` with a negative page count merges
    across levels as `optimize` does, a step at a time; a step that changed fewer than two rows did nothing."""
    before = conn.total_changes
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('merge', ?)", (-pages,))
    return conn.total_changes - before >= 2


class Search:
    """A search begun by `Lexical.begin`; its top chunks come from the worker."""

    def __init__(self, lex: Lexical, terms: list[str], limit: int,
                 notes: tuple[frozenset[int] | None, frozenset[int]], budget: int,
                 pending: tuple[Mapping[str, int], Future[dict[int, float]]] | None) -> None:
        """`notes`: the notes searched (None: all) and those left out; `pending`: the words' row counts and the
        top chunks being found on the worker; None when one FTS5 statement does it all (`Lexical.begin`)."""
        self._lex, self._terms, self._limit, (self._notes, self._without) = lex, terms, limit, notes
        self._budget, self._pending = budget, pending

    def finish(self, also: Sequence[int] = ()) -> dict[int, float]:
        """The scores of the top chunks and of the listed `also` that match (the scores `Lexical.search`
        gives). Past the budget, the listed chunks are tokenized on this thread while the worker looks for the
        top; within it, FTS5 scores them here while the worker finds the top."""
        if not self._terms:
            return {}
        lex, listed = self._lex, list(dict.fromkeys(also))
        if self._pending is None:  # FTS5 finds and scores them all, in one statement
            return lex._fts_top(fts_match(self._terms), self._limit, notes=self._notes, also=listed,
                                without=self._without)
        freqs, top = self._pending
        if sum(freqs.values()) <= self._budget:  # within the budget: FTS5 scores the listed ones too
            return {**lex._fts_scores(fts_match(self._terms), listed), **top.result()}
        tokens, conn = lex._tokens(), lex._r()
        phrases = tokens.phrases(self._terms)
        counts, sizes = counted(conn, tokens, phrases, listed)  # while the worker looks for the top
        seen = set(listed)
        more, more_sizes = counted(conn, tokens, phrases, [i for i in top.result() if i not in seen])
        return bm25_of(conn, self._terms, freqs, {**counts, **more}, {**sizes, **more_sizes})


class Tokens:
    """An in-memory FTS5 table with the index's tokenizer, holding the chunks being scored (one per thread)."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.executescript(f"""
            CREATE VIRTUAL TABLE rows USING fts5({", ".join(COLUMNS)}, content = '', tokenize = '{TOKENIZE}');
            CREATE VIRTUAL TABLE row_words USING fts5vocab(rows, instance);
            CREATE VIRTUAL TABLE row_tokens USING fts5vocab(rows, row);
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
        self._hold(rows)
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

    def rows_holding(self, rows: Sequence[tuple[int, str, str, str]]) -> dict[str, int]:
        """How many of the rows (id, title, heading, text; ids distinct) hold each token."""
        self._hold(rows)
        return dict(self.conn.execute("SELECT term, doc FROM row_tokens"))

    def _hold(self, rows: Sequence[tuple[int, str, str, str]]) -> None:
        """Tokenize the rows into the in-memory table, in place of what it held."""
        q = self.conn.execute
        q("INSERT INTO rows(rows) VALUES ('delete-all')")
        q("BEGIN")  # one transaction: FTS5 writes its segment once, not once per row
        self.conn.executemany(f"INSERT INTO rows(rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?)", rows)
        q("COMMIT")


class TokenRows:
    """Each token's row count in `chunks_fts`, kept in the index's `token_rows` table by the writes that change
    it, so a search reads a word's row count in one step instead of walking its doclist. The rows a write
    transaction indexes and removes are noted (`added`, `removed`: the values FTS5 was given), tokenized again
    with the index's tokenizer at its end, and their counts added and taken away before it commits (`flush`);
    a transaction rolled back forgets them (`discard`). The owner serialises writers."""

    _ADD = ("INSERT INTO token_rows(token, rows) VALUES (?, ?) "
            "ON CONFLICT(token) DO UPDATE SET rows = rows + excluded.rows")

    def __init__(self) -> None:
        self._tokens: Tokens | None = None
        self._added: list[tuple[int, str, str, str]] = []
        self._removed: list[tuple[int, str, str, str]] = []

    def added(self, rows: Iterable[tuple[int, str, str, str]]) -> None:
        self._added += rows

    def removed(self, rows: Iterable[tuple[int, str, str, str]]) -> None:
        self._removed += rows

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write the noted rows' counts into `token_rows`, inside the caller's write transaction, and record the
        change number they are kept at (`SEAL_TOKEN_ROWS`: an index written by a version that does not keep
        them is counted again when it is next opened, `dbfile._add_token_rows`)."""
        if self._added or self._removed:
            if self._tokens is None:
                self._tokens = Tokens()
            delta = Counter(self._tokens.rows_holding(self._added) if self._added else {})
            delta.subtract(self._tokens.rows_holding(self._removed) if self._removed else {})
            self.discard()
            conn.executemany(self._ADD, [(t, n) for t, n in delta.items() if n])
            conn.executemany("DELETE FROM token_rows WHERE token = ? AND rows <= 0",
                             [(t,) for t, n in delta.items() if n < 0])
        conn.execute(SEAL_TOKEN_ROWS)

    def discard(self) -> None:
        self._added.clear()
        self._removed.clear()

    def close(self) -> None:
        if self._tokens is not None:
            self._tokens.close()
            self._tokens = None


def scores(conn: sqlite3.Connection, tokens: Tokens, terms: Sequence[str], hits: Mapping[str, int],
           ids: Sequence[int]) -> dict[int, float]:
    """FTS5's BM25 (higher is better) of the listed chunks that match any term, computed outside FTS5; `hits` is
    each term's row count in the index (FTS5 would count it by reading the term's whole doclist)."""
    if not ids or not terms:
        return {}
    counts, sizes = counted(conn, tokens, tokens.phrases(terms), ids)
    return bm25_of(conn, terms, hits, counts, sizes)


def counted(conn: sqlite3.Connection, tokens: Tokens, phrases: Sequence[tuple[str, ...]],
            ids: Sequence[int]) -> tuple[dict[int, list[float]], dict[int, int]]:
    """Each listed chunk's column-weighted count of each phrase (`Tokens.phrases`; chunks matching none left
    out), and each listed chunk's size in tokens as the index holds it."""
    if not ids:
        return {}, {}
    listed = "(SELECT value FROM json_each(?))"
    wanted = "[" + ",".join(str(int(i)) for i in ids) + "]"
    rows = conn.execute(f"SELECT id, title, heading, text FROM chunk_texts WHERE id IN {listed}", (wanted,)).fetchall()
    sizes = {i: sum(varints(sz)) for i, sz in
             conn.execute(f"SELECT id, sz FROM chunks_fts_docsize WHERE id IN {listed}", (wanted,))}
    return tokens.frequencies(rows, phrases), sizes


def bm25_of(conn: sqlite3.Connection, terms: Sequence[str], hits: Mapping[str, int],
            counts: Mapping[int, Sequence[float]], sizes: Mapping[int, int]) -> dict[int, float]:
    """FTS5's bm25() of chunks from their phrase counts and sizes (`counted`), with the index's row count and
    token totals and each term's row count `hits`."""
    record = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if record is None or not counts:
        return {}
    n_rows, *totals = varints(record[0])
    if not n_rows:
        return {}
    idfs = [idf(n_rows, hits.get(t, 0)) for t in terms]
    avgdl = sum(totals) / n_rows
    return {i: bm25(f, idfs, sizes[i], avgdl) for i, f in counts.items() if i in sizes}
