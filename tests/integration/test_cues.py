"""What a question asks for, on real files with the real model: a documentation-like vault of team notes
(people and author properties, a dated changelog, imported chat sessions) and the starter vault, each ranked
with the cue off (its setting 0) as the control; recall never writes a note."""

from __future__ import annotations

import hashlib
from pathlib import Path

from vault_cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.pipeline import Hit


def _recall(root: Path, embedder: Embedder, query: str, **off: float) -> list[Hit]:
    """The hits for a query, with some recall settings set through their variables."""
    env = {f"VAULT_CORTEX_RECALL_{k.upper()}": str(v) for k, v in off.items()}
    with Cortex.open(root, env=env, embedder=embedder) as cx:
        cx.sync()
        return cx.recall(query, k=6, log_activity=False).hits


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.md"))}


def _order(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def test_a_question_naming_a_person_ranks_the_memory_about_them_above_one_that_mentions_them(
        fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    before = _digest(root)
    query = "What did Ines propose for the index storage?"
    about, mentions = "team/Storage review 2026-03-04.md", "team/Index storage options.md"
    alone = _order(_recall(root, embedder, query, person=0))
    hits = _recall(root, embedder, query)
    assert alone.index(mentions) < alone.index(about), "by words alone the note mentioning Ines ranks first"
    assert _order(hits).index(about) < _order(hits).index(mentions)
    assert "by or about Ines Marlow, whom the query names" in hits[_order(hits).index(about)].reason
    assert "whom the query names" not in hits[_order(hits).index(mentions)].reason, "by Tomas, naming Ines"
    assert _digest(root) == before, "recall never writes a note"


def test_a_when_question_ranks_the_dated_memory_first(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    query = "When did the gateway switch to write-ahead logging?"
    dated, reasons = "team/Gateway changelog.md", "team/Why write-ahead logging.md"
    alone = _order(_recall(root, embedder, query, when=0))
    hits = _recall(root, embedder, query)
    assert alone.index(reasons) < alone.index(dated)
    assert _order(hits)[0] == dated
    assert "holds a time, as the query asks when" in hits[0].reason
    assert "holds a time" not in hits[_order(hits).index(reasons)].reason
    plain = _recall(root, embedder, "Why does the gateway use write-ahead logging?")
    assert all("holds a time" not in h.reason for h in plain), "only a question asking when"


def test_a_memory_is_lifted_by_the_best_memory_of_its_session(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    before = _digest(root)
    query = "How do I fix the soil probe drift?"
    answer, other = "sessions/Calibration chat 2.md", "sessions/Clock chat 1.md"
    alone = _order(_recall(root, embedder, query, session=0))
    hits = _recall(root, embedder, query)
    assert alone.index(other) < alone.index(answer), "alone the answer says nothing of probes or drift"
    assert _order(hits).index(answer) < _order(hits).index(other)
    assert "lifted by [[Calibration chat 1]] of the same session" in hits[_order(hits).index(answer)].reason
    assert "same session" not in hits[_order(hits).index(other)].reason, "alone in its session"
    assert _digest(root) == before, "recall never writes a note"


def test_the_starter_vault_names_the_dated_notes_a_when_question_favours(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = _digest(root)
    query = "When did the dashboard freeze?"
    alone = _order(_recall(root, embedder, query, when=0))
    hits = _recall(root, embedder, query)
    assert _order(hits)[0] == alone[0] == "short_term/2026-11-28 dashboard froze.md"
    assert "holds a time, as the query asks when" in hits[0].reason, "its title holds the date"
    assert _order(hits).index("HANDOFF.md") < _order(hits).index("scientific/SQLite WAL mode.md")
    assert alone.index("scientific/SQLite WAL mode.md") < alone.index("HANDOFF.md")
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert _digest(root) == before, "recall never writes a note"
