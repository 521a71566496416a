"""Reads bounded by k, not by the vault (issue 13): one FTS5 statement picks the lexical candidates inside SQLite,
and session context reads pinned notes, habits and open questions through indexes, never a pass over every note.
Real SQLite and files; the fake embedder (the model does not matter here)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fakes import FakeEmbedder

from vault_cortex.cortex import Cortex
from vault_cortex.recall.pipeline import LEXICAL_BUDGET
from vault_cortex.recall.request import RecallRequest


def write(root: Path, path: str, text: str) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")


def vault(tmp_path: Path, *, links: bool) -> Path:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    for i in range(30):
        link = f" See [[note {(i + 1) % 30}]]." if links else ""
        write(root, f"long_term/note {i}.md", f"Note {i} about sourdough starters and oven {i % 4}.{link}\n")
    write(root, "soul/who.md", "---\npinned: true\nimportance: 0.9\n---\nI bake bread on Sundays.\n")
    write(root, "soul/values.md", "---\nimportance: 0.99\n---\nHonesty first.\n")
    write(root, "personality/style.md", "---\npinned: true\n---\nShort sentences.\n")
    write(root, "habits/Preheat the oven.md",
          "---\ntriggers: [oven, bake]\nweight: 0.8\n---\nAlways preheat the oven for 30 minutes.\n")
    write(root, "curiosities/Why does dough rise faster in summer.md",
          "---\nstatus: open\nproject: bakery\n---\nWhy does dough rise faster in summer?\n")
    return root


@contextmanager
def statements(cx: Cortex) -> Iterator[list[str]]:
    """Every SQL statement this thread's read connection runs meanwhile, with its values bound."""
    seen: list[str] = []
    conn = cx.db._r()
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def test_recall_scores_its_lexical_candidates_in_one_fts_statement(tmp_path: Path) -> None:
    with Cortex.open(vault(tmp_path, links=False), embedder=FakeEmbedder()) as cx:
        cx.sync()
        cx.recall(RecallRequest(query="sourdough oven", k=5), log_activity=False)  # warm caches
        with statements(cx) as seen:
            hits = cx.recall(RecallRequest(query="sourdough oven", k=5), log_activity=False).hits
        fts = [s for s in seen if "MATCH" in s]
        assert len(fts) == 1 and "LIMIT" in fts[0] and "UNION ALL" in fts[0], fts
        assert hits and all(h.lexical > 0 for h in hits)


def test_graph_neighbours_add_at_most_one_more_statement(tmp_path: Path) -> None:
    with Cortex.open(vault(tmp_path, links=True), embedder=FakeEmbedder()) as cx:
        cx.sync()
        with statements(cx) as seen:
            cx.recall(RecallRequest(query="sourdough oven", k=5), log_activity=False)
        assert 1 <= len([s for s in seen if "MATCH" in s]) <= 2


def test_lexical_top_n_with_listed_ids_is_the_union_of_both(tmp_path: Path) -> None:
    with Cortex.open(vault(tmp_path, links=False), embedder=FakeEmbedder()) as cx:
        cx.sync()
        every = cx.db.lexical("sourdough oven", 1000)
        top = cx.db.lexical("sourdough oven", 5)
        assert sorted(top, key=lambda i: -every[i]) == sorted(every, key=lambda i: -every[i])[:5]
        listed = sorted(every, key=lambda i: every[i])[:3]  # the weakest, far from the top 5
        both = cx.db.lexical("sourdough oven", 5, also=listed)
        assert both == {**top, **{i: every[i] for i in listed}}
        notes = frozenset(cx.db.note_ids(["long_term/note 3.md"]).values())
        assert {cx.db.chunks_by_id([i])[i].note_id for i in cx.db.lexical("sourdough", 5, notes=notes)} == notes


def test_context_reads_pinned_habits_and_questions_by_index(tmp_path: Path) -> None:
    with Cortex.open(vault(tmp_path, links=False), embedder=FakeEmbedder()) as cx:
        cx.sync()
        cx.graph()  # built once, as the server does after its start-up sync (then updated in place)
        with statements(cx) as seen:
            ctx = cx.context(task="bake sourdough in the oven in summer", project="bakery", budget_tokens=1500)
        text = ctx.markdown if hasattr(ctx, "markdown") else str(ctx)
        assert "I bake bread on Sundays" in text and "Short sentences" in text
        assert "Honesty first" not in text.split("Pinned")[-1].split("##")[0]  # pinned ones win over importance
        assert "preheat the oven" in text and "dough rise faster" in text
        plans = []
        for sql in seen:
            if sql.lstrip().upper().startswith("SELECT") and " notes" in sql:
                plan = " ".join(str(r[-1]) for r in cx.db._r().execute("EXPLAIN QUERY PLAN " + sql))
                plans.append((sql, plan))
        # the captures' own partial index is read whole (what a capture filter leaves out): bounded by the
        # captures, never by the notes
        scans = [(sql, plan) for sql, plan in plans if ("SCAN notes" in plan or "SCAN n " in plan)
                 and "USING INDEX notes_captures" not in plan]
        assert plans and not scans, scans


def test_without_pinned_notes_the_most_important_identity_notes_come(tmp_path: Path) -> None:
    root = vault(tmp_path, links=False)
    for p in ("soul/who.md", "personality/style.md"):
        (root / p).unlink()
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        assert [n.path for n in cx.db.pinned_notes(["personality", "soul"], 3)] == ["soul/values.md"]


def test_a_query_of_common_words_finds_by_its_rarer_words_and_scores_on_all_within_the_budget(
        tmp_path: Path) -> None:
    """Issue 13: BM25 scores every chunk that matches one of the query's words; at 100k notes a query of common
    words scored 150k chunks (~100 ms a recall). With a budget (recall's `pipeline.LEXICAL_BUDGET`), when the
    query's words together match more chunks than the budget, the top-N are found by the rarer words (the
    commonest dropped, as
    stopwords are), and what is found, and the listed ids, are scored on every word, exactly as FTS5 would;
    within the budget nothing changes."""
    root = vault(tmp_path, links=False)
    write(root, "long_term/thermometer.md", "Sourdough in the oven needs the probe thermometer at 96 degrees.\n")
    write(root, "long_term/probe.md", "The probe thermometer is in the drawer.\n")
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        query = "sourdough oven thermometer"
        exact = cx.db.lexical(query, 5)
        assert len(exact) == 5  # "sourdough" and "oven" match 31 chunks each
        rare = cx.db.lexical("thermometer", 5)
        assert len(rare) == 2
        full = cx.db.lexical(query, 5, only=sorted(rare))  # FTS5's own scores, on every word
        assert cx.db.lexical(query, 5, budget=10) == pytest.approx(full, rel=1e-12)
        assert full[next(iter(exact))] == max(full.values())  # the note with all three words is still first
        some = sorted(exact)
        assert cx.db.lexical(query, 5, only=some, budget=10) == pytest.approx(
            cx.db.lexical(query, 5, only=some), rel=1e-12)
        both = cx.db.lexical(query, 5, also=some, budget=10)
        assert set(both) == set(rare) | set(some)
        assert both == pytest.approx(cx.db.lexical(query, 5, only=sorted(both)), rel=1e-12)
        assert cx.db.lexical(query, 5, budget=100) == exact  # within the budget: unchanged
        assert LEXICAL_BUDGET == 3_000


def test_a_word_matching_more_chunks_than_the_budget_is_searched_among_the_newest(tmp_path: Path) -> None:
    """When even the rarest word of a query matches more chunks than the budget, the top-N come from the
    `budget` most recently written chunks that match (FTS5 walks its doclist backwards without scoring), so the
    cost stays the budget's; a filter on notes searches all of them."""
    root = vault(tmp_path, links=False)
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        newest = sorted(cx.db.lexical("sourdough", 100))[-8:]  # 31 chunks match
        got = cx.db.lexical("sourdough", 5, budget=8)
        assert len(got) == 5 and set(got) <= set(newest)
        assert got == pytest.approx(cx.db.lexical("sourdough", 5, only=sorted(got)), rel=1e-12)
        note = cx.db.note_ids(["long_term/note 0.md"])["long_term/note 0.md"]
        oldest = cx.db.lexical("sourdough", 5, notes=frozenset({note}), budget=8)
        assert len(oldest) == 1 and not set(oldest) & set(newest)


def test_over_the_budget_a_recall_looks_for_its_top_on_a_worker_while_it_searches_by_meaning(
        tmp_path: Path) -> None:
    """At 100k notes the rarer words' top-N takes FTS5 ~7 ms, outside Python's lock: a recall starts it on the
    lexical worker thread before its dense search and scores the dense candidates meanwhile. The scores are the
    ones one search gives (every word, FTS5's formula), in whichever order the two finish."""
    root = vault(tmp_path, links=False)
    write(root, "long_term/thermometer.md", "Sourdough in the oven needs the probe thermometer at 96 degrees.\n")
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        query = "sourdough oven thermometer"  # "sourdough" and "oven" match 31 chunks each: over a budget of 10
        cx.db.begin_lexical(query, 5, budget=10).finish()  # the worker opens its reader
        listed = sorted(cx.db.lexical("oven", 4))  # as the dense candidates would be
        ran: list[tuple[str, str]] = []
        for conn in cx.db._readers:
            conn.set_trace_callback(lambda sql: ran.append((threading.current_thread().name, sql)))
        try:
            got = cx.db.begin_lexical(query, 5, budget=10).finish(also=listed)
        finally:
            for conn in cx.db._readers:
                conn.set_trace_callback(None)
        top = [name for name, sql in ran if "ORDER BY s DESC" in sql]
        assert top and all(name.startswith("vault-cortex-read") for name in top), ran
        assert set(listed) <= set(got)
        assert got == pytest.approx(cx.db.lexical(query, 5, only=sorted(got)), rel=1e-12)
        assert got == pytest.approx(cx.db.lexical(query, 5, also=listed, budget=10), rel=1e-12)
        # words within the budget (they match 1 chunk of ~36): FTS5's own scores, as in an index smaller than it
        rare = cx.db.lexical("thermometer degrees", 5, also=listed, budget=10)
        assert rare == cx.db.lexical("thermometer degrees", 5, also=listed) and len(rare) == 1
