"""In an adopted vault the notes stay the user's: a sleep's wiring and supersessions go to `.cortex/relations.jsonl`.

A real Obsidian vault (tests/fixtures/vaults/obsidian_sample, adopted with `init`) in git, plus a decision and its
reversal written by hand; the real model, index and sleep. The plan's edges are operations on the sidecar, not on
any note; applying it leaves every hand-written note's bytes as they were for wiring, commits the sidecar, and the
graph and recall read its edges as they read frontmatter relations — incrementally when the file changes, and
again from the file when the index is rebuilt. A rollback restores the sidecar.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from versioned import committed, git

from server.cli import main
from server.watch import Watcher
from vault_cortex.cortex import Cortex
from vault_cortex.files.relations import KIND, RELATIONS_PATH, line, parse
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
OLD = "Notes/Nodes send readings over MQTT.md"
NEW = "Notes/Nodes POST readings over HTTP.md"
NOTES = {
    OLD: "---\ncreated: 2026-10-02T10:00\n---\n# Nodes send readings over MQTT\n\nDecision: the greenhouse sensor "
         "nodes send their temperature and humidity readings over MQTT to the collector on the Pi, every five "
         "minutes.\n",
    NEW: "---\ncreated: 2026-11-20T10:00\n---\n# Nodes POST readings over HTTP\n\nDecision: the greenhouse sensor "
         "nodes no longer send their temperature and humidity readings over MQTT to the collector on the Pi; they "
         "POST them over HTTP, every five minutes.\n",
}
# two notes of two regions (never merged) that share what is distinctive in them: a related_to wire
NOTES |= {
    "Notes/PPK2 deep sleep measurement.md": "---\ncortex: scientific\ncreated: 2026-11-10T10:00\n---\n# PPK2 deep "
    "sleep measurement\n\nThe Nordic PPK2 measured the ESP32-C3 node's deep sleep current at 11 microamps, with "
    "wake spikes of 80 milliamps lasting 600 ms on every sensor read.\n",
    "Notes/Node battery budget.md": "---\ncortex: long_term\ncreated: 2026-11-12T10:00\n---\n# Node battery "
    "budget\n\nThe ESP32-C3 node's battery budget rests on the PPK2 measurement: 11 microamps in deep sleep and "
    "80 milliamp wake spikes of 600 ms on every sensor read.\n",
}
QUERY = "Do the greenhouse nodes send their readings over MQTT to the collector?"


async def until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait for `predicate`; the deadline only fails a watcher that never gets there."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


def notes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")
            if p.relative_to(root).parts[0] not in (".git", ".cortex", ".obsidian")}


@pytest.fixture
def vault(fixture_vault: Callable[[str], Path]) -> Path:
    root = fixture_vault("obsidian_sample")
    for path, text in NOTES.items():
        (root / path).write_text(text, encoding="utf-8")
    assert main(["init", str(root)]) == 0
    return committed(root)


@pytest.fixture
def cx(vault: Path, embedder: Embedder) -> Iterator[Cortex]:
    with Cortex.open(vault, embedder=embedder, clock=lambda: NOW) as c:
        c.sync()
        yield c


def test_an_adopted_vault_is_given_an_empty_sidecar_merged_by_union(vault: Path) -> None:
    assert (vault / RELATIONS_PATH).read_bytes() == b""
    assert "relations.jsonl merge=union" in (vault / ".cortex" / ".gitattributes").read_text(encoding="utf-8")


def test_a_sleep_in_an_adopted_vault_writes_its_edges_to_the_sidecar_and_no_note(cx: Cortex, vault: Path) -> None:
    before = notes(vault)
    plan = cx.sleep_plan("full")
    edges = [op for op in plan.ops if op.phase in ("wire", "supersede")]
    assert {op.key for op in edges} >= {"related_to", "supersedes"}, [(op.phase, op.path, op.key) for op in edges]
    assert {(op.action, op.path) for op in edges} == {("add_edge", RELATIONS_PATH)}
    report = cx.sleep_apply(plan, commit=True)
    assert not report.skipped and report.commit
    edited = {op.path for op in plan.ops if op.path.endswith(".md") and op.phase in ("decay", "promote")}
    after = notes(vault)
    assert {p for p in before if after.get(p) != before[p]} <= edited  # no note's bytes changed for wiring
    held = parse((vault / RELATIONS_PATH).read_bytes())
    assert (NEW, "supersedes", "Nodes send readings over MQTT") in held
    related = [(s, d) for s, r, d in held if r == "related_to"]
    assert related
    assert RELATIONS_PATH in git(vault, "show", "--name-only", "--format=", "HEAD").split()

    # the graph and recall read the sidecar's edges as the notes' own relations
    rows = {(ln.rel, ln.dst) for ln in cx.index.db.links(src=NEW) if ln.kind == KIND}
    assert ("supersedes", OLD) in rows
    assert OLD in cx.graph().neighbours(NEW)
    src, dst = related[0]
    assert any(n.removesuffix(".md").endswith(dst) for n in cx.graph().neighbours(src))
    hits = cx.recall(RecallRequest(query=QUERY, k=5), log_activity=False).hits
    assert hits[0].path == NEW
    assert "superseded by [[Nodes POST readings over HTTP]]" in next(h for h in hits if h.path == OLD).reason

    # a rollback restores the sidecar, and the graph follows
    cx.sleep_rollback()
    assert (vault / RELATIONS_PATH).read_bytes() == b""
    assert not [ln for ln in cx.index.db.links() if ln.kind == KIND]
    assert OLD not in cx.graph().neighbours(NEW)
    assert notes(vault) == before


def test_the_sidecar_is_read_incrementally_and_again_by_a_rebuilt_index(vault: Path, embedder: Embedder) -> None:
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        assert OLD not in cx.graph().neighbours(NEW)
        rebuilds = cx.recaller.live.rebuilds
        with (vault / RELATIONS_PATH).open("a", encoding="utf-8") as f:  # as a git pull would bring it
            f.write(line(NEW, "supersedes", "Nodes send readings over MQTT"))
        cx.sync()
        assert OLD in cx.graph().neighbours(NEW)
        assert cx.recaller.live.rebuilds == rebuilds  # updated in place: only the note whose edges changed
        hits = cx.recall(RecallRequest(query=QUERY, k=5), log_activity=False).hits
        assert hits[0].path == NEW
        (vault / NEW).write_text(NOTES[NEW] + "\nMeasured again in December.\n", encoding="utf-8")
        cx.sync()  # the note indexed again keeps its sidecar edges
        assert ("supersedes", OLD) in {(ln.rel, ln.dst) for ln in cx.index.db.links(src=NEW) if ln.kind == KIND}
    shutil.rmtree(vault / ".cortex" / "index")
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        assert ("supersedes", OLD) in {(ln.rel, ln.dst) for ln in cx.index.db.links(src=NEW) if ln.kind == KIND}
        assert OLD in cx.graph().neighbours(NEW)


def test_serve_follows_the_sidecar_when_git_brings_edges(vault: Path, embedder: Embedder) -> None:
    """The watcher syncs a changed sidecar (a `git pull`, a sleep on another machine) as a targeted sync of no
    note: the index folds the new edges and the graph follows, no vault walk."""
    with Cortex.open(vault, embedder=embedder) as cx:
        watcher = Watcher(cx, debounce_ms=100)

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watcher.run)
                await until(lambda: watcher.status().syncs >= 1 and not watcher.status().pending)
                full = watcher.full
                tmp = vault / ".cortex" / "relations.jsonl.tmp"
                tmp.write_text(line(NEW, "supersedes", "Nodes send readings over MQTT"), encoding="utf-8")
                os.replace(tmp, vault / RELATIONS_PATH)  # as git writes a file it checks out
                await until(lambda: OLD in cx.graph().neighbours(NEW))
                assert watcher.full == full
                tg.cancel_scope.cancel()

        anyio.run(main)


def test_the_sidecar_follows_a_note_moved_through_vault_cortex(vault: Path, embedder: Embedder) -> None:
    (vault / RELATIONS_PATH).write_text(line(NEW, "supersedes", "Nodes send readings over MQTT"), encoding="utf-8")
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        cx.move_note(OLD, "Decisions/MQTT decision.md")
        cx.move_note(NEW, "Decisions/HTTP decision.md")
        assert parse((vault / RELATIONS_PATH).read_bytes()) == {
            ("Decisions/HTTP decision.md", "supersedes", "MQTT decision")}
        assert "Decisions/MQTT decision.md" in cx.graph().neighbours("Decisions/HTTP decision.md")
        assert notes(vault).keys() >= {"Decisions/MQTT decision.md", "Decisions/HTTP decision.md"}
