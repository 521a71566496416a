"""Recall that thinks, on real files with the real model: graph lift, decay, activity replay, modes, context."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from vault_cortex import Cortex, InvalidRequest
from vault_cortex.config import load_settings
from vault_cortex.files.activity import OpenEvent, RecallEvent, acting_as, append
from vault_cortex.files.activity_files import PENDING_DIR, flush
from vault_cortex.files.vault import init_vault
from vault_cortex.recall.model import load_model
from vault_cortex.recall.pipeline import GATHERED
from vault_cortex.recall.request import RecallRequest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vaults"


def test_graph_signal_lifts_a_linked_note_with_no_match(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    expected = json.loads((root / "expected.json").read_text())
    (root / ".cortex").mkdir(exist_ok=True)
    shipped = load_model()
    alone = msgspec.structs.replace(shipped, cues=msgspec.structs.replace(shipped.cues, company=0.0))
    with Cortex.open(root, embedder=embedder, model=alone) as cx:  # the control: no neighbour lift either
        cx.sync()
        focus = [h.path for h in cx.recall(RecallRequest(query=expected["query"], k=5, mode="focus")).hits]
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        balanced = cx.recall(RecallRequest(query=expected["query"], k=5)).hits
        paths = [h.path for h in balanced]
        assert paths[0] == expected["top"]
        lifted = next(h for h in balanced if h.path == expected["lifted_by_graph"])
        assert lifted.signals["relevance"] < 0.5
        assert lifted.signals["graph"] > 0.5
        assert "linked to the top results" in lifted.reason
        assert paths.index(expected["lifted_by_graph"]) == 1
        assert focus.index(expected["lifted_by_graph"]) > 1, "without the graph it ranks lower"


def test_every_hit_has_signals_in_range_and_a_reason(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(fixture_vault("graph_lift"), embedder=embedder) as cx:
        cx.sync()
        for mode in ("balanced", "focus", "explore", "identity", "recent"):
            result = cx.recall(RecallRequest(query="watering plants", k=5, mode=mode))
            assert result.mode == mode
            for hit in result.hits:
                seven = {"relevance", "region", "importance", "coactivation", "graph", "recency", "resonance"}
                assert set(hit.signals) == seven, "no cue met here: no conversation, no question asked"
                assert all(0.0 <= v <= 1.0 for v in hit.signals.values())
                assert 0.0 <= hit.score <= 1.0 and hit.reason
            scores = [h.score for h in result.hits]
            assert scores == sorted(scores, reverse=True)
        with pytest.raises(InvalidRequest, match="unknown mode 'nope'"):
            cx.recall(RecallRequest(query="x", mode="nope"))


def test_a_user_mode_from_config(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    (root / ".cortex").mkdir(exist_ok=True)
    (root / ".cortex/config.toml").write_text("[modes.lexical]\nrelevance = 1.0\n")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.recall(RecallRequest(query="bicycle chain", k=1,
                                       mode="lexical")).hits[0].path == "long_term/Bicycle chain care.md"


def test_decay_sinks_an_unused_note_but_a_specific_query_still_finds_it(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "decay"
    (root / ".cortex").mkdir(parents=True)
    old_created = "2024-01-10T09:00"
    for name, created in (("Garden plan old", old_created), ("Garden plan new", "2026-11-20T09:00")):
        (root / "long_term").mkdir(exist_ok=True)
        (root / f"long_term/{name}.md").write_text(
            f"---\ncortex: long_term\nimportance: 0.8\ncreated: {created}\n---\n"
            f"Plan for the vegetable garden: tomatoes along the south fence, beans on the trellis. {name}.\n")
    old = root / "long_term/Garden plan old.md"
    stamp = datetime(2024, 1, 10, tzinfo=UTC).timestamp()
    os.utime(old, (stamp, stamp))
    before = old.read_bytes()
    with Cortex.open(root, embedder=embedder, clock=lambda: datetime(2026, 11, 30, tzinfo=UTC)) as cx:
        cx.sync()
        hits = cx.recall(RecallRequest(query="vegetable garden plan", k=2)).hits
        assert [h.path for h in hits] == ["long_term/Garden plan new.md", "long_term/Garden plan old.md"]
        new, aged = hits
        assert aged.signals["importance"] < 0.2 < new.signals["importance"]
        assert cx.recall(RecallRequest(query="Garden plan old", k=1)).hits[0].path == "long_term/Garden plan old.md"
    assert old.read_bytes() == before, "decay never writes a note"


def test_identity_regions_do_not_decay(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "soulful"
    (root / "soul").mkdir(parents=True)
    (root / ".cortex").mkdir()
    (root / "soul/Values.md").write_text("---\nimportance: 0.9\ncreated: 2020-01-01\n---\nHonesty over comfort.\n")
    stamp = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(root / "soul/Values.md", (stamp, stamp))
    with Cortex.open(root, embedder=embedder, clock=lambda: datetime(2026, 11, 30, tzinfo=UTC)) as cx:
        cx.sync()
        assert cx.recall(RecallRequest(query="honesty", k=1)).hits[0].signals["importance"] == 0.9


def test_activity_replays_into_the_index_and_a_rebuild_gives_the_same_numbers(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        for _ in range(3):
            cx.recall(RecallRequest(query="sourdough starter", k=3))
        cx.vault.log(OpenEvent(ts=datetime.now(UTC), client="test", path="long_term/Proofing box.md"))
        cx.sync()
        access = cx.db.access()
        assert access["scientific/Sourdough starter feeding.md"][0] == 3
        assert access["long_term/Proofing box.md"][0] == 4
        pairs = {(a, b): n for a, b, n in cx.db.co_retrieval()}
        assert pairs[("long_term/Proofing box.md", "scientific/Sourdough starter feeding.md")] == 3
        live = cx.db.snapshot()
        assert cx.verify().ok
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".cortex/index" / name).unlink(missing_ok=True)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.db.snapshot() == live


def test_co_retrieval_feeds_the_coactivation_signal(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    now = datetime.now(UTC)
    for i in range(6):  # six distinct queries: one query recalled six times would count once (co_strength)
        append(root, RecallEvent(ts=now, client="test", query=f"q{i}", mode="balanced",
                                 paths=("long_term/Houseplant watering.md", "long_term/Bicycle chain care.md")))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        hits = {h.path: h for h in cx.recall(RecallRequest(query="watering the fern and the cactus", k=5,
                                                           mode="explore")).hits}
        assert hits["long_term/Bicycle chain care.md"].signals["coactivation"] > 0.5


def test_recall_is_logged_with_its_paths(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        with acting_as("cli"):  # who asked: bound by the adapter, here as the CLI binds it
            result = cx.recall(RecallRequest(query="tax receipts", k=2))
    files = sorted((root / PENDING_DIR).glob("*.jsonl"))  # a read is machine-local until it is flushed
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert lines[-1]["event"] == "recall" and lines[-1]["client"] == "cli"
    assert lines[-1]["paths"] == [h.path for h in result.hits]


def test_budgeted_recall_packs_within_the_budget(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(fixture_vault("graph_lift"), embedder=embedder) as cx:
        cx.sync()
        for budget in (60, 120, 400):
            ctx = cx.recall(RecallRequest(query="sourdough starter", k=5, budget_tokens=budget)).context
            assert ctx is not None
            assert cx.embedder.count_tokens(ctx.markdown) <= budget
            assert all(i.obsidian_uri.startswith("obsidian://open?vault=") for i in ctx.items)
            assert all(i.wikilink.startswith("[[") for i in ctx.items)


def test_session_start_context(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "v"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        ctx = cx.context(task="fix the regression in the collector's timestamp rounding", budget_tokens=1200)
        sections = [g.name for g in ctx.context.groups]
        assert sections[0] == "Pinned"
        assert "Habits" in sections and "Handoff" in sections
        assert sections.index("Habits") < sections.index("Handoff")
        assert any(i.path == "habits/Write the test first.md" for i in ctx.context.items)
        assert ctx.open_questions == 2 and ctx.nudge.startswith("> 2 open questions")
        assert ctx.markdown.startswith("## soul/") and "open question" not in ctx.markdown  # none bears on it
        assert cx.embedder.count_tokens(ctx.markdown) <= 1200
        wal = cx.context(task="why does the WAL file keep growing during long reads", budget_tokens=1200)
        assert wal.matching_questions and "match this task" in wal.nudge
        assert "Open questions" in [g.name for g in wal.context.groups]


def test_remember_and_link_write_minimal_atomic_notes(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "v"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        doc = cx.remember("The ESP32 brown-out detector trips when the cell drops below 3.3 V.",
                          tags=["hardware"], importance=0.6, relations={"supports": ["ESP32 deep sleep current"]})
        assert doc.path.startswith("short_term/") and doc.path.endswith(".md")
        assert cx.recall(RecallRequest(query="brown-out detector", k=1)).hits[0].path == doc.path
        text = (root / doc.path).read_text()
        assert "cortex: short_term" in text and '"[[ESP32 deep sleep current]]"' in text
        before = (root / "scientific/SQLite WAL mode.md").read_text().splitlines()
        cx.link("scientific/SQLite WAL mode.md", "related_to", "long_term/Prefer boring technology")
        after = (root / "scientific/SQLite WAL mode.md").read_text().splitlines()
        assert len(after) - len(before) in (1, 2, 3) and set(before) <= set(after)
        with pytest.raises(InvalidRequest):
            cx.link("scientific/SQLite WAL mode.md", "Bad Rel", "x")
        with pytest.raises(InvalidRequest):
            cx.remember("   ")
        again = cx.remember("The ESP32 brown-out detector trips when the cell drops below 3.3 V.")
        assert again.path != doc.path, "never overwrites an existing note"


def test_related_excludes_itself_and_what_it_links(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "v"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        result = cx.related("short_term/2026-11-28 dashboard froze.md", k=5)
        paths = [h.path for h in result.hits]
        assert result.hits and "short_term/2026-11-28 dashboard froze.md" not in paths
        linked = {ln.dst for ln in cx.db.links() if ln.src == "short_term/2026-11-28 dashboard froze.md"}
        assert linked and not (linked & set(paths))


def test_graph_health_on_the_template(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "v"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        h = cx.graph_health()
        assert h.notes >= 12 and h.dangling == [("long_term/Prefer boring technology.md",
                                                  "Grafana vs a hand-rolled dashboard")]
        assert h.articulation_points and h.bridges


def test_archived_notes_only_with_include_archive(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    (root / "archive").mkdir()
    shutil.move(root / "long_term/Tax filing checklist.md", root / "archive/Tax filing checklist.md")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert all(not h.path.startswith("archive/") for h in cx.recall(RecallRequest(query="tax receipts", k=5)).hits)
        assert cx.recall(RecallRequest(query="tax receipts", k=1,
                                       include_archive=True)).hits[0].path == "archive/Tax filing checklist.md"


def test_incremental_activity_replay_equals_a_full_one(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("graph_lift")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        for q in ("sourdough", "proofing box heat", "bicycle chain", "sourdough starter"):
            cx.recall(RecallRequest(query=q, k=3))
            cx.sync()  # folds in just the appended line
        flush(root)  # the recalls reach the versioned log, which another clone's lines are merged into
        cx.sync()
        incremental = cx.db.snapshot()
        log_file = next((root / ".cortex/activity").glob("*.jsonl"))
        lines = log_file.read_bytes().splitlines(keepends=True)
        # a union merge may put another clone's line anywhere: the prefix changes, so the log is replayed whole
        other = lines[0].replace(b'"client":"api"', b'"client":"other"')
        log_file.write_bytes(lines[0] + other + b"".join(lines[1:]))
        cx.sync()
        merged = cx.db.snapshot()
    assert merged["access"] != incremental["access"]
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".cortex/index" / name).unlink(missing_ok=True)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.db.snapshot() == merged


def test_asking_for_more_results_than_the_searches_gather_widens_them(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """Each search gathers `pipeline.GATHERED` chunks, or as many as the results asked for: k results come back
    whenever k notes match."""
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / "long_term").mkdir()
    for i in range(GATHERED + 20):
        (root / "long_term" / f"Garden note {i}.md").write_text(
            f"# Garden note {i}\n\nIn the garden, bed {i} holds {['beans', 'kale', 'leeks', 'garlic'][i % 4]}.\n",
            encoding="utf-8")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert len(cx.recall(RecallRequest(query="garden bed", k=10)).hits) == 10
        assert len(cx.recall(RecallRequest(query="garden bed", k=GATHERED + 15)).hits) == GATHERED + 15


def test_session_start_context_keeps_recalls_rules(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """The context's recall part is recall's: `recall.k` notes, the archive left out unless the settings keep it,
    and a task over `recall.max_query_chars` refused (before, it was cut without a word and ranked max_k notes)."""
    root = tmp_path / "v"
    init_vault(root)
    (root / "archive" / "Old kiln notes.md").write_text("The kiln firing schedule for stoneware glaze.\n")
    task = "kiln firing schedule for stoneware glaze"
    base = load_settings(root, env={})
    small = msgspec.structs.replace(base, recall=msgspec.structs.replace(base.recall, k=2, max_query_chars=60))
    with Cortex.open(root, embedder=embedder, settings=small) as cx:
        cx.sync()
        ctx = cx.context(task=task, budget_tokens=4000)
        recalled = [i.path for i in ctx.context.items if not i.section]
        assert len(recalled) <= 2 and "archive/Old kiln notes.md" not in recalled  # nothing else bears on kilns
        with pytest.raises(InvalidRequest, match="60"):
            cx.context(task="x" * 61)
    keeps = msgspec.structs.replace(small, index=msgspec.structs.replace(small.index, include_archive=True))
    with Cortex.open(root, embedder=embedder, settings=keeps) as cx:
        ctx = cx.context(task=task, budget_tokens=4000)
        assert "archive/Old kiln notes.md" in [i.path for i in ctx.context.items if not i.section]
