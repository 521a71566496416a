"""The recall pipeline with the fake embedder: every signal reported, modes reorder, warm resonance lifts.

A real SQLite index in tmp_path, no model: the embedder is the Protocol seam (tests/fakes.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fakes import FakeEmbedder

from vault_cortex import Cortex
from vault_cortex.config import SIGNALS, load_settings
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.pipeline import in_thread
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import gate

NOTES = {
    "scientific/Kiln firing log.md": "---\nimportance: 0.9\n---\nThe kiln reached cone six after nine hours.\n",
    "artistic/Glaze ideas.md": "A celadon glaze over carved porcelain; see [[Kiln firing log]].\n",
    "long_term/Clay storage.md": "Keep the clay wrapped and damp in the shed.\n",
    "artistic/Craft of throwing.md": "Centering the clay is the whole craft of throwing pots.\n",
    "resonance/Craft.md": "---\nweight: 0.9\nbaseline: 0.5\ncategory: aesthetic\n---\nCraft: care in making.\n",
}


def vault(tmp_path: Path) -> Cortex:
    root = tmp_path / "v"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    cx = Cortex(root.resolve(), load_settings(root, env={}), FakeEmbedder(),
                clock=lambda: datetime(2026, 11, 30, tzinfo=UTC))
    cx.sync()
    return cx


def test_every_signal_is_reported_in_range(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        hits = cx.recall(RecallRequest(query="kiln firing cone", k=4), log_activity=False).hits
        assert hits[0].path == "scientific/Kiln firing log.md"
        for hit in hits:
            assert set(hit.signals) == set(SIGNALS)
            assert all(0.0 <= v <= 1.0 for v in hit.signals.values()) and hit.reason
        assert hits[0].signals["importance"] == 0.9 and hits[0].signals["region"] == 0.7


def test_graph_neighbour_joins_without_a_text_match(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        hits = {h.path: h for h in cx.recall(RecallRequest(query="kiln firing cone", k=5), log_activity=False).hits}
        glaze = hits["artistic/Glaze ideas.md"]
        assert glaze.signals["graph"] > 0.5 and glaze.signals["relevance"] < 0.5


def test_warm_resonance_lifts_only_in_warm_modes(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        cold = {h.path: h for h in cx.recall(RecallRequest(query="clay", k=5), log_activity=False).hits}
        warm = {h.path: h for h in cx.recall(RecallRequest(query="clay", k=5, mode="identity"),
                                             log_activity=False).hits}
        throwing = "artistic/Craft of throwing.md"  # artistic is a warm region and names the concept
        assert cold[throwing].signals["resonance"] == 0.0
        assert warm[throwing].signals["resonance"] == 0.9
        assert warm["long_term/Clay storage.md"].signals["resonance"] == 0.0  # long_term is cold


def test_budgeted_recall_uses_the_model_tokenizer_and_keeps_the_budget(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        ctx = cx.recall(RecallRequest(query="clay kiln glaze", k=5, budget_tokens=80), log_activity=False).context
        assert ctx is not None and ctx.tokens <= 80
        assert cx.embedder.count_tokens(ctx.markdown) == ctx.tokens


def test_a_turn_a_few_exchanges_from_the_best_is_in_its_thread(tmp_path: Path) -> None:
    # an imported conversation: each exchange follows the one before (`follows::`), as transcripts are written
    turns = ["Ana: are you ready for Sunday?", "Mira: ready, nervous about the hills",
             "Mira: I ran the marathon on Sunday and crossed the finish line!", "Ana: how was it?",
             "Mira: I felt proud at the finish, and grateful to my family.", "Ana: lovely", "Ana: and the knee?",
             "Mira: the knee is fine; the marathon medal hangs by the door near the finish photo."]
    root = tmp_path / "v"
    (root / "chat").mkdir(parents=True)
    for i, text in enumerate(turns, 1):
        follows = f"\nfollows:: [[T{i - 1}]]\n" if i > 1 else "\n"
        (root / "chat" / f"T{i}.md").write_text(text + follows, encoding="utf-8")
    (root / "Marathon shoes.md").write_text("Shoes for the marathon finish line, not in the chat.\n", encoding="utf-8")
    with Cortex(root.resolve(), load_settings(root, env={}), FakeEmbedder()) as cx:
        cx.sync()
        query = "marathon finish line on Sunday"
        _, weights = cx.recaller.mode(None)
        scored = cx.recaller.ranked(query, cx.embedder.embed([query])[0], weights)
        assert scored[0].note.path == "chat/T3.md"
        thread = {s.note.path for s in scored if s.thread}
        near = {f"chat/T{i}.md" for i in (1, 2, 4, 5, 6, 7)}  # up to four exchanges either side of T3
        assert "chat/T5.md" in thread and thread == near & {s.note.path for s in scored}
        assert {"chat/T8.md", "Marathon shoes.md"} <= {s.note.path for s in scored} - thread, "five on, or no turn"
        verdicts = {s.note.path: v for s, v in zip(scored, gate(scored, query, cx.push_gate()), strict=False)}
        assert verdicts["chat/T5.md"].features["thread"] == 1.0 and verdicts["chat/T8.md"].features["thread"] == 0


def test_in_thread_is_a_few_exchanges_either_side_of_the_best() -> None:
    turns = [f"t{i}" for i in range(1, 11)]
    g = Graph([*turns, "note"], [(turns[i], turns[i - 1], "follows") for i in range(1, 10)])
    assert in_thread(g, ["t5", "t1", "t3", "t9", "t10", "note"], 4) == {"t1", "t3", "t9"}
    assert in_thread(g, ["note", "t1", "t2"], 4) == set(), "the best is no exchange"
    assert in_thread(g, ["t5"], 4) == set()
