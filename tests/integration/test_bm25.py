"""BM25 outside FTS5 (`index.lexical.scores`) gives FTS5's own bm25() scores: same tokenizer (Porter stems, folded
diacritics, words split where unicode61 splits them, as phrases), same column weights, same statistics.
Real SQLite index of a real vault; the fake embedder (vectors do not matter here)."""

from __future__ import annotations

import random

import pytest
from fakes import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.cortex import Cortex
from vault_cortex.index.dbfile import transaction
from vault_cortex.index.fts import fts_match, fts_terms
from vault_cortex.index.lexical import Tokens, scores
from vault_cortex.recall.request import RecallRequest

# stems (running/runs/ran), diacritics (café/cafe, naïve), words unicode61 splits (foo_bar, x2y), numbers, case
WORDS = ("run running runs ran runner café cafe naïve naive foo_bar snake_case_name x2y 42 2026 Oven oven ovens "
         "baked baking bread starter sourdough thermometer probe drawer degrees Ünïcödé über uber").split()


@pytest.fixture(scope="module")
def cortex(tmp_path_factory: pytest.TempPathFactory) -> Cortex:
    root = tmp_path_factory.mktemp("bm25") / "vault"
    (root / ".cortex").mkdir(parents=True)
    rnd = random.Random(13)
    for i in range(120):
        title = " ".join(rnd.choices(WORDS, k=rnd.randint(1, 3)))
        sections = "\n\n".join(f"## {' '.join(rnd.choices(WORDS, k=2))}\n\n"
                               + " ".join(rnd.choices(WORDS, k=rnd.randint(3, 60))) + "."
                               for _ in range(rnd.randint(1, 3)))
        (root / "long_term").mkdir(exist_ok=True)
        (root / "long_term" / f"{title} {i}.md").write_text(f"# {title}\n\n{sections}\n", encoding="utf-8")
    cx = Cortex.open(root, embedder=FakeEmbedder())
    cx.sync()
    return cx


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from([*WORDS, "absent", "RUN", "Cafe"]), min_size=1, max_size=5),
       picks=st.lists(st.integers(min_value=0, max_value=400), max_size=60))
def test_scores_outside_fts5_equal_fts5s_bm25(cortex: Cortex, words: list[str], picks: list[int]) -> None:
    db = cortex.db
    query = " ".join(words)
    ids = sorted(set(picks))
    fts5 = db.lexical(query, 10, only=ids)
    terms = fts_terms(query)
    tokens = Tokens()
    try:
        ours = scores(db._r(), tokens, terms, db.lex.doc_freqs(terms), ids)
    finally:
        tokens.close()
    assert ours == pytest.approx(fts5, rel=1e-9, abs=1e-12)


def test_a_recall_over_the_budget_scores_its_candidates_on_every_word(cortex: Cortex) -> None:
    """With a budget smaller than the vault, the candidates FTS5 finds by the rarer words are scored on all the
    query's words, equal to FTS5's scores of those chunks."""
    db = cortex.db
    query = "running oven thermometer"
    got = db.lexical(query, 8, budget=5)
    assert got and got == pytest.approx(db.lexical(query, 8, only=sorted(got)), rel=1e-9)


def _segments(cx: Cortex) -> int:
    return int(cx.db._r().execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def test_a_sync_that_wrote_many_notes_leaves_one_segment_and_the_same_scores(
        tmp_path_factory: pytest.TempPathFactory, cortex: Cortex, monkeypatch: pytest.MonkeyPatch) -> None:
    """FTS5 writes a segment per write transaction; a full sync that wrote many notes merges them into one, so a
    search reads each word's doclist once. The scores are FTS5's own before and after."""
    from vault_cortex.index import sync

    assert _segments(cortex) > 1  # 120 notes in transactions of 32, below the merge threshold: not merged
    root = tmp_path_factory.mktemp("bm25-merged") / "vault"
    (root / ".cortex").mkdir(parents=True)
    for path in (cortex.root / "long_term").iterdir():
        (root / "long_term").mkdir(exist_ok=True)
        (root / "long_term" / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(sync, "MERGE_AFTER", 100)
    monkeypatch.setattr(sync, "MERGE_PAGES", 1)  # several steps, each in its own transaction
    with Cortex.open(root, embedder=FakeEmbedder()) as merged:
        merged.sync()
        assert _segments(merged) == 1
        for query in ("running oven thermometer", "café naive", "sourdough starter baking bread"):
            assert merged.recall(RecallRequest(query=query, k=10)).hits
            assert merged.db.lexical(query, 30) == pytest.approx(cortex.db.lexical(query, 30), rel=1e-9)


def test_the_row_count_of_each_word_is_fts5s_after_any_writes_and_in_an_index_made_before_it_was_kept(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """BM25's idf needs each word's row count. A word of one token is read from the index's `token_rows`, which
    every write to FTS5 keeps (`lexical.TokenRows`); a word FTS5 splits (foo_bar) is counted by its MATCH. Both
    equal FTS5's own count of the rows its MATCH finds after rounds of random deletes, rewrites, new notes and
    renames (a title is indexed), after a write that was rolled back, in an index made before the counts were
    kept (filled once, from FTS5's vocabulary, when it is opened) and in one a version that does not keep them
    wrote (counted again when opened; an index whose counts are current is not)."""
    root = tmp_path_factory.mktemp("bm25-counts") / "vault"
    (root / ".cortex").mkdir(parents=True)
    (root / "long_term").mkdir()
    rnd = random.Random(5)
    words = [*{w for w in fts_terms(" ".join(WORDS))}, "absent"]

    def text() -> str:
        return f"# {' '.join(rnd.choices(WORDS, k=2))}\n\n{' '.join(rnd.choices(WORDS, k=30))}\n"

    def fts5s(cx: Cortex) -> dict[str, int]:
        return {w: cx.db._r().execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                      (fts_match([w]),)).fetchone()[0] for w in words}

    def assert_fts5s(cx: Cortex) -> None:
        counts = cx.db.lex.doc_freqs(words)
        assert counts == fts5s(cx) and counts["absent"] == 0 and counts["foo_bar"] > 0

    for i in range(40):
        (root / "long_term" / f"n{i}.md").write_text(text(), encoding="utf-8")
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        assert_fts5s(cx)
        for _ in range(4):
            notes = sorted((root / "long_term").glob("*.md"))
            for path in rnd.sample(notes, 12):
                match rnd.randrange(4):
                    case 0:
                        path.unlink()
                    case 1:
                        path.write_text(text(), encoding="utf-8")
                    case 2:
                        path.rename(path.with_name(f"{rnd.choice(WORDS)} {rnd.randrange(10**6)}.md"))
                    case _:
                        (root / "long_term" / f"new {rnd.randrange(10**6)}.md").write_text(text(), encoding="utf-8")
            cx.sync()
            assert_fts5s(cx)
        with pytest.raises(RuntimeError), cx.db.write():
            cx.db.delete_note(cx.db.note_paths()[0])
            raise RuntimeError("rolled back")
        assert_fts5s(cx)
        with transaction(cx.db.conn):  # as a version that does not keep the counts writes: FTS5 alone
            cx.db.delete_note(cx.db.note_paths()[0])
            cx.db._token_rows.discard()
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:  # counted again when opened
        assert_fts5s(cx)
        cx.db.conn.execute("DROP TABLE token_rows")  # as an index made before the counts were kept
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        assert_fts5s(cx)
        cx.db.conn.execute("UPDATE token_rows SET rows = rows + 1")  # marked, to see they are not counted again
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:  # a sealed index is not walked at each open
        assert cx.db.lex.doc_freqs(words) == {w: n + (n > 0 and "_" not in w) for w, n in fts5s(cx).items()}
