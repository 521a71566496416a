"""Consolidation never makes memory more confidently wrong: a real vault, the real model, one sleep plan each.

A decision and its reversal, and a measurement and its correction, can be as similar as true duplicates
(at the default bar, 0.8, similarity proposes all of them); the plan must keep both and let the newer
supersede the older. Pages of one template are never merged, superseded or linked for their skeleton, while a
paraphrased duplicate merges. Identity is the owner's, and the first sleep never archives what the user wrote
as important.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vault_cortex.cortex import Cortex
from vault_cortex.files.adopt import adopt_vault
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.sleep.cycle import gather, plan_markdown

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def note(title: str, body: str, *, created: str, importance: float = 0.6, cortex: str = "short_term") -> str:
    return (f"---\ncortex: {cortex}\nimportance: {importance}\ncreated: {created}\n---\n# {title}\n\n{body}\n")


NOTES = {
    "long_term/Nodes send readings over MQTT.md": note(
        "Nodes send readings over MQTT",
        "Decision: the greenhouse sensor nodes send their temperature and humidity readings over MQTT to the "
        "collector on the Pi, every five minutes.",
        created="2026-10-02T10:00", cortex="long_term"),
    "long_term/Nodes POST readings over HTTP.md": note(
        "Nodes POST readings over HTTP",
        "Decision: the greenhouse sensor nodes no longer send their temperature and humidity readings over MQTT "
        "to the collector on the Pi; they POST them over HTTP, every five minutes.",
        created="2026-11-20T10:00", cortex="long_term"),
    "long_term/Battery of node 3.md": note(
        "Battery of node 3", "The battery pack of node 3 measured 3000 mAh on the bench.",
        created="2026-10-05T10:00", cortex="long_term"),
    "long_term/Battery of node 3 measured again.md": note(
        "Battery of node 3 measured again",
        "The battery pack of greenhouse sensor node 3 measured 1100 mAh on the bench, not the rated 3000. "
        "The first test was wrong.",
        created="2026-11-21T10:00", cortex="long_term"),
    "long_term/Greenhouse Pi SD card died.md": note(
        "Greenhouse Pi SD card died",
        "The SD card in the greenhouse Pi died after 18 months of constant writes. Boot it from an SSD.",
        created="2026-11-10T20:00", cortex="long_term"),
    "long_term/SD card of the greenhouse Pi died.md": note(
        "SD card of the greenhouse Pi died",
        "The SD card in the greenhouse Pi died after 18 months of constant writes. Boot it from an SSD; "
        "an alert on stale backups would have caught it.", created="2026-11-12T20:00", cortex="long_term"),
    "short_term/Tom from work.md": note(
        "Tom from work", "Tom from work believes a promise matters, and values keeping his word above all.",
        created="2026-11-24T09:00", importance=0.75),
    "short_term/Greenhouse heater schedule.md": note(
        "Greenhouse heater schedule", "The greenhouse heater runs from 22:00 to 06:00 when frost is forecast.",
        created="2026-11-05T09:00", importance=0.75),
    "short_term/Compost bin rota.md": note(
        "Compost bin rota", "The compost bins are turned on the first Saturday of each month.",
        created="2026-11-08T09:00", importance=0.75),
}


@pytest.fixture
def cx(tmp_path: Path, embedder: Embedder) -> Iterator[Cortex]:
    root = tmp_path / "vault"
    init_vault(root)
    # the default bar (0.8) proposes every pair here: agreement alone must decide
    for path, text in NOTES.items():
        (root / path).write_text(text, encoding="utf-8")
    with Cortex.open(root, embedder=embedder, clock=lambda: NOW) as c:
        c.sync()
        yield c


def test_a_reversal_and_a_correction_supersede_and_a_true_duplicate_merges(cx: Cortex) -> None:
    plan = cx.sleep_plan("full", save=False)
    merged = [sorted(m.sources) for m in plan.findings.merges]
    assert merged == [["long_term/Greenhouse Pi SD card died.md", "long_term/SD card of the greenhouse Pi died.md"]]
    (merge,) = plan.findings.merges
    assert merge.importance == 0.58 and "18 months" in merge.agree  # the higher member, decayed to now
    content = next(op.content for op in plan.ops if op.phase == "merge" and op.action == "create") or ""
    assert "created: 2026-11-10T20:00" in content and "importance: 0.58\n" in content
    sup = {(x.newer, x.older): x.differ for x in plan.findings.supersedes}
    assert set(sup) == {("long_term/Nodes POST readings over HTTP.md", "long_term/Nodes send readings over MQTT.md"),
                        ("long_term/Battery of node 3 measured again.md", "long_term/Battery of node 3.md")}
    battery = sup["long_term/Battery of node 3 measured again.md", "long_term/Battery of node 3.md"]
    assert "3000 mah ≠ 1100 mah" in battery
    ops = [op for op in plan.ops if op.phase == "supersede"]
    assert {(op.path, op.action, op.key, op.value) for op in ops} == {
        ("long_term/Nodes POST readings over HTTP.md", "add_relation", "supersedes", "Nodes send readings over MQTT"),
        ("long_term/Battery of node 3 measured again.md", "add_relation", "supersedes", "Battery of node 3")}
    touched = {op.path for op in plan.ops if op.phase in ("merge", "decay", "wire", "promote", "prune")}
    assert not touched & {p for pair in sup for p in pair if "MQTT" in p or "Battery" in p} - {
        op.path for op in plan.ops if op.phase in ("decay", "wire")}


def test_no_sleep_moves_a_note_into_an_identity_region(cx: Cortex) -> None:
    for mode in ("light", "full"):
        plan = cx.sleep_plan(mode, save=False)
        assert not [op for op in plan.ops if op.dest and op.dest.split("/")[0] in ("soul", "personality")]
        assert not [op for op in plan.ops if op.key == "cortex" and op.value in ("soul", "personality")]
        asks = [t for t in plan.findings.triage if t.decision == "ask"]
        assert [t.path for t in asks] == ["short_term/Tom from work.md"]
        dream = next(op.content for op in plan.ops if op.phase == "dream") or ""
        assert "## Questions for you" in dream and "Does [[Tom from work]] belong in" in dream


def test_the_first_sleep_never_archives_what_was_written_important(cx: Cortex) -> None:
    plan = cx.sleep_plan("full", save=False)
    archived = [op.path for op in plan.ops if op.dest and op.dest.startswith("archive/") and op.phase == "prune"]
    assert archived == []
    decided = {t.path: t.decision for t in plan.findings.triage}
    assert decided["short_term/Greenhouse heater schedule.md"] in ("promote", "stay")
    assert decided["short_term/Compost bin rota.md"] in ("promote", "stay")


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def adopted(src: Path, dest: Path, embedder: Embedder, bar: float | None = None) -> Cortex:
    """A copy of a fixture folder of notes adopted as a vault (`.cortex/` added), synced; with `bar`, the merge
    and related_to similarity bars lowered to it."""
    shutil.copytree(src, dest)
    adopt_vault(dest)
    if bar is not None:
        config = dest / ".cortex" / "config.toml"
        text = re.sub(r"(?m)^(merge_threshold|related_threshold) = .*$", rf"\1 = {bar}", config.read_text("utf-8"))
        config.write_text(text, encoding="utf-8")
    cx = Cortex.open(dest, embedder=embedder, clock=lambda: NOW)
    cx.sync()
    return cx


def test_template_pages_are_never_merged_superseded_or_wired(tmp_path: Path, embedder: Embedder) -> None:
    """Eight plugin pages and their authors' pages, each from one template: alike for their shared skeleton,
    with nothing distinctive in common. The bars are lowered so that similarity proposes every pair of pages
    (as a bigger template vault does at the default bars): no merge, supersession or related_to between them."""
    with adopted(FIXTURES / "vaults" / "template_lookalikes", tmp_path / "v", embedder, bar=0.5) as cx:
        _, vectors = gather(cx.index, cx.recaller, NOW)
        pages = sorted(vectors)
        close = [(a, b) for i, a in enumerate(pages) for b in pages[i + 1:] if float(vectors[a] @ vectors[b]) >= 0.5]
        assert len(close) >= 40  # the template alone makes them look alike
        for mode in ("full", "light"):
            plan = cx.sleep_plan(mode, save=False)
            assert plan.findings.merges == [] and plan.findings.supersedes == []
            assert [w for w in plan.findings.wires if w.rel == "related_to"] == []
            assert not [op for op in plan.ops if op.path.startswith("Plugins/")]


def test_a_paraphrased_duplicate_merges_with_the_points_it_agrees_on(tmp_path: Path, embedder: Embedder) -> None:
    """The same fact written twice in other words (note similarity ~0.85) merges at the default settings, and
    the plan says what the two agree on; a reversal's supersession says what differs."""
    router = ["long_term/Router admin password.md", "long_term/Where the router password is.md"]
    with adopted(FIXTURES / "consolidation" / "vault", tmp_path / "v", embedder) as cx:
        _, vectors = gather(cx.index, cx.recaller, NOW)
        assert 0.82 <= float(vectors[router[0]] @ vectors[router[1]]) <= 0.88
        plan = cx.sleep_plan("full", save=False)
        (merge,) = [m for m in plan.findings.merges if router[0] in m.sources]
        assert sorted(merge.sources) == router
        assert {"router", "password", "fridge"} <= set(merge.shared)
        create = next(op for op in plan.ops if op.phase == "merge" and op.path == merge.into)
        assert "router" in create.reason and "fridge" in create.reason
        sup = {(x.newer, x.older): x for x in plan.findings.supersedes}
        mqtt = sup["long_term/Nodes POST readings over HTTP.md", "long_term/Nodes send readings over MQTT.md"]
        assert '"no longer" 0× ≠ 1×' in mqtt.differ
        md = plan_markdown(plan)
        assert "router" in md and '"no longer" 0× ≠ 1×' in md
