"""The recall pipeline with the fake embedder: every signal reported, modes reorder, warm resonance lifts.

A real SQLite index in tmp_path, no model: the embedder is the Protocol seam (tests/fakes.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fakes import FakeEmbedder

from vault_cortex import Cortex
from vault_cortex.config import SIGNALS, load_settings

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
    cx = Cortex(root.resolve(), load_settings(root, env={}), FakeEmbedder())
    cx.clock = lambda: datetime(2026, 11, 30, tzinfo=UTC)
    cx.sync()
    return cx


def test_every_signal_is_reported_in_range(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        hits = cx.recall("kiln firing cone", k=4, log_activity=False).hits
        assert hits[0].path == "scientific/Kiln firing log.md"
        for hit in hits:
            assert set(hit.signals) == set(SIGNALS)
            assert all(0.0 <= v <= 1.0 for v in hit.signals.values()) and hit.reason
        assert hits[0].signals["importance"] == 0.9 and hits[0].signals["region"] == 0.7


def test_graph_neighbour_joins_without_a_text_match(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        hits = {h.path: h for h in cx.recall("kiln firing cone", k=5, log_activity=False).hits}
        glaze = hits["artistic/Glaze ideas.md"]
        assert glaze.signals["graph"] > 0.5 and glaze.signals["relevance"] < 0.5


def test_warm_resonance_lifts_only_in_warm_modes(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        cold = {h.path: h for h in cx.recall("clay", k=5, log_activity=False).hits}
        warm = {h.path: h for h in cx.recall("clay", k=5, mode="identity", log_activity=False).hits}
        throwing = "artistic/Craft of throwing.md"  # artistic is a warm region and names the concept
        assert cold[throwing].signals["resonance"] == 0.0
        assert warm[throwing].signals["resonance"] == 0.9
        assert warm["long_term/Clay storage.md"].signals["resonance"] == 0.0  # long_term is cold


def test_budgeted_recall_uses_the_model_tokenizer_and_keeps_the_budget(tmp_path: Path) -> None:
    with vault(tmp_path) as cx:
        ctx = cx.recall("clay kiln glaze", k=5, budget_tokens=80, log_activity=False).context
        assert ctx is not None and ctx.tokens <= 80
        assert cx.embedder.count_tokens(ctx.markdown) == ctx.tokens
