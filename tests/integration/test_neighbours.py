"""A memory lifted by the company it keeps, on real files with the real model: a documentation-like vault
(headings, sections, links) and the starter vault, each ranked with `recall.company` off and on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from vault_cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.pipeline import Hit


def _recall(root: Path, embedder: Embedder, query: str, mode: str, company: float | None,
            echo: float | None = None) -> list[Hit]:
    """The hits for a query with `recall.company` (and `recall.echo`) set through their variables (None: the
    vault's own setting)."""
    env = {} if company is None else {"VAULT_CORTEX_RECALL_COMPANY": str(company)}
    env |= {} if echo is None else {"VAULT_CORTEX_RECALL_ECHO": str(echo)}
    with Cortex.open(root, env=env, embedder=embedder) as cx:
        cx.sync()
        return cx.recall(query, k=6, mode=mode, log_activity=False).hits


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.md"))}


def test_a_section_is_lifted_past_another_note_by_the_note_it_links_with(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("neighbours")
    expected = json.loads((root / "expected.json").read_text())
    before = _digest(root)
    # the echo held off in both: alone it lifts this section past the registry note too (by under 0.03)
    alone = [h.path for h in _recall(root, embedder, expected["query"], expected["mode"], company=0.0, echo=0.0)]
    hits = _recall(root, embedder, expected["query"], expected["mode"], company=None, echo=0.0)
    paths = [h.path for h in hits]
    assert alone.index(expected["lifted"]) > alone.index(expected["passes"]), "alone it ranks below"
    assert paths.index(expected["lifted"]) < paths.index(expected["passes"]), "in its company above"
    lifted = hits[paths.index(expected["lifted"])]
    assert f"lifted by its neighbour [[{expected['lifted_by']}]]" in lifted.reason
    assert lifted.heading.endswith("Rolling back a bad release")
    assert all("lifted" not in h.reason for h in _recall(root, embedder, expected["query"], expected["mode"], 0.0))
    assert _digest(root) == before, "recall never writes a note"


def test_the_starter_vault_lifts_the_handoff_by_the_question_it_links_with(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = _digest(root)
    query = "dashboard froze during a long read"
    alone = [h.path for h in _recall(root, embedder, query, "focus", company=0.0, echo=0.0)]
    hits = _recall(root, embedder, query, "focus", company=None, echo=0.0)  # the echo held off, as above
    paths = [h.path for h in hits]
    assert "HANDOFF.md" in alone and "HANDOFF.md" in paths
    assert paths.index("HANDOFF.md") < alone.index("HANDOFF.md")
    assert paths.index("HANDOFF.md") < paths.index("linguistic/Commit messages.md")
    assert "lifted by its neighbour [[Why does the WAL file grow during long reads]]" in \
        hits[paths.index("HANDOFF.md")].reason
    assert _digest(root) == before, "recall never writes a note"
