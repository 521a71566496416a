"""Memories that echo each other, on real files with the real model: a small garden-notes vault (headings,
sections, no links between the notes) where a note that barely matches the question rises with the note that
answers it, by the rare words they share, and the starter vault; each ranked with `recall.echo` at 0 as the
control; recall never writes a note."""

from __future__ import annotations

from pathlib import Path

from recalled import digest, recall, write_vault

from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder

NOTES = {
    "garden/Greenhouse planting.md": "# Greenhouse planting\n\n## Tomatoes\n\nInes planted the tomatoes in the "
    "greenhouse this spring: Brandywine and Cherokee Purple, both heirloom\nvarieties, started from seed on heat "
    "mats and moved to the south bench.\n",
    "garden/Seed order.md": "# Seed order\n\nThe order from the heirloom catalogue arrived: Brandywine, Cherokee "
    "Purple and a packet of Genovese basil.\nStore the packets in the cool cupboard until sowing.\n",
    "ops/Greenhouse vents.md": "# Greenhouse vents\n\nThe greenhouse roof vents stick open when the controller "
    "loses power; the manual crank is behind the door.\n",
    "ops/Heating.md": "# Heating\n\nThe greenhouse heater is set to 8 degrees; the thermostat sits on the north "
    "wall.\n",
    "ops/Rainwater tank.md": "# Rainwater tank\n\nThe tank overflows in heavy rain; the overflow pipe runs to the "
    "pond.\n",
    "garden/Compost.md": "# Compost\n\nTurn the compost every two weeks; add dry leaves when it smells.\n",
}








def test_a_note_that_barely_matches_rises_with_the_note_it_echoes(tmp_path: Path, embedder: Embedder) -> None:
    root = write_vault(tmp_path / "garden", NOTES)
    before = digest(root)
    query = "What did Ines plant in the greenhouse?"
    alone = [h.path for h in recall(root, embedder, query, echo=0)]
    hits = recall(root, embedder, query)
    order = [h.path for h in hits]
    assert order[0] == alone[0] == "garden/Greenhouse planting.md"
    assert alone.index("ops/Greenhouse vents.md") < alone.index("garden/Seed order.md"), "alone it ranks below"
    assert order.index("garden/Seed order.md") < order.index("ops/Greenhouse vents.md"), "echoed, above"
    echoed = hits[order.index("garden/Seed order.md")]
    assert 'echoes [[Greenhouse planting]] ("brandywine", "cherokee", "heirloom"; 1.00)' in echoed.reason
    assert echoed.signals["echo"] > 0
    assert "echoes" not in hits[order.index("ops/Greenhouse vents.md")].reason, "it shares nothing rare"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def test_the_starter_vault_keeps_its_best_answer_and_names_its_echoes(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = digest(root)
    query = "Why is the WAL growing?"
    alone = recall(root, embedder, query, echo=0)
    hits = recall(root, embedder, query)
    assert hits[0].path == alone[0].path == "curiosities/Why does the WAL file grow during long reads.md"
    assert any("echoes [[Why does the WAL file grow during long reads]]" in h.reason for h in hits[1:])
    assert all("echoes" not in h.reason for h in alone)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"
