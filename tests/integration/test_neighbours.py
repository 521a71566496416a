"""A memory lifted by the company it keeps, on real files with the real model: a documentation-like vault
(headings, sections, links) and the starter vault, each ranked with `recall.company` off and on."""

from __future__ import annotations

import json
from pathlib import Path

from recalled import digest, recall

from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder


def test_a_section_is_lifted_past_another_note_by_the_note_it_links_with(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("neighbours")
    expected = json.loads((root / "expected.json").read_text())
    before = digest(root)
    alone = [h.path for h in recall(root, embedder, expected["query"], expected["mode"], company=0.0)]
    hits = recall(root, embedder, expected["query"], expected["mode"])
    paths = [h.path for h in hits]
    assert alone.index(expected["lifted"]) > alone.index(expected["passes"]), "alone it ranks below"
    assert paths.index(expected["lifted"]) < paths.index(expected["passes"]), "in its company above"
    lifted = hits[paths.index(expected["lifted"])]
    assert f"lifted by its neighbour [[{expected['lifted_by']}]]" in lifted.reason
    assert lifted.heading.endswith("Rolling back a bad release")
    held_off = recall(root, embedder, expected["query"], expected["mode"], company=0.0)
    assert all("lifted" not in h.reason for h in held_off)
    assert digest(root) == before, "recall never writes a note"


def test_the_starter_vault_lifts_the_handoff_by_the_question_it_links_with(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = digest(root)
    query = "dashboard froze during a long read"
    alone = [h.path for h in recall(root, embedder, query, "focus", company=0.0)]
    hits = recall(root, embedder, query, "focus")
    paths = [h.path for h in hits]
    assert "HANDOFF.md" in alone and "HANDOFF.md" in paths
    assert paths.index("HANDOFF.md") < alone.index("HANDOFF.md")
    assert paths.index("HANDOFF.md") < paths.index("linguistic/Commit messages.md")
    assert "lifted by its neighbour [[Why does the WAL file grow during long reads]]" in \
        hits[paths.index("HANDOFF.md")].reason
    assert digest(root) == before, "recall never writes a note"
