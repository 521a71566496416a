"""Filters on recall and context, applied inside the candidate search (real SQLite, real usearch)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from fakes import FakeEmbedder

from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.request import RecallRequest


def _vault(root: Path, n: int, rare_every: int) -> Path:
    """n notes that all match the query; every `rare_every`-th is tagged #rare/deep, in region scientific,
    in folder projects/, of project kite, created 2026-11-20 (the rest: 2026-01-05, short_term)."""
    (root / ".cortex").mkdir(parents=True)
    for i in range(n):
        rare = i % rare_every == 0
        folder = "projects" if rare else "short_term"
        props = (f"cortex: scientific\nproject: kite\ncreated: 2026-11-20T10:{i % 60:02d}\ntags: [rare/deep]\n"
                 if rare else "created: 2026-01-05\ntags: [common]\n")
        words = "battery voltage drop" + (" battery battery" if not rare else "")  # the common ones rank higher
        (root / folder).mkdir(exist_ok=True)
        (root / folder / f"note {i:04d}.md").write_text(f"---\n{props}---\nA note about the {words} {i}.\n")
    return root


@pytest.fixture(scope="module")
def cx(tmp_path_factory: pytest.TempPathFactory) -> Cortex:
    root = _vault(tmp_path_factory.mktemp("filters") / "vault", 1000, 50)  # 20 rare notes: 2%
    cortex = Cortex.open(root, embedder=FakeEmbedder(), clock=lambda: datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    cortex.sync()
    return cortex


@pytest.mark.parametrize("filters", [
    Filters(tags=["rare"]), Filters(tags=["#Rare/Deep"]), Filters(regions=["scientific"]), Filters(project="Kite"),
    Filters(path_prefix="projects/"), Filters(created_after="2026-11-01"), Filters(created_after="14d"),
    Filters(created_after="2026-11-20", created_before="2026-11-21", tags=["rare"]),
])
def test_a_filter_keeping_2_percent_still_returns_k_hits(cx: Cortex, filters: Filters) -> None:
    unfiltered = cx.recall(RecallRequest(query="battery voltage drop", k=10), log_activity=False)
    assert not any(h.path.startswith("projects/") for h in unfiltered.hits)  # the rare notes rank low
    result = cx.recall(RecallRequest(query="battery voltage drop", k=10, **msgspec.structs.asdict(filters)),
                       log_activity=False)
    assert len(result.hits) == 10
    assert all(h.path.startswith("projects/") for h in result.hits)


def test_the_regions_are_applied_inside_the_search_too(cx: Cortex) -> None:
    result = cx.recall(RecallRequest(query="battery voltage drop", k=10, regions=["scientific"]), log_activity=False)
    assert len(result.hits) == 10 and {h.region for h in result.hits} == {"scientific"}


def test_filters_that_keep_fewer_than_k_return_what_there_is(cx: Cortex) -> None:
    assert len(cx.recall(RecallRequest(query="battery", k=10, path_prefix="projects/note 000"),
                         log_activity=False).hits) == 1
    assert cx.recall(RecallRequest(query="battery", k=10, tags=["nothing-has-this"]), log_activity=False).hits == []
    assert cx.recall(RecallRequest(query="battery", k=10, regions=["soul"], path_prefix="scientific/"),
                     log_activity=False).hits == []


def test_modified_after_uses_the_files_time(tmp_path: Path) -> None:
    root = _vault(tmp_path / "vault", 30, 10)
    old = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    for f in root.rglob("*.md"):
        os.utime(f, (old, old))
    with Cortex.open(root, embedder=FakeEmbedder(), clock=lambda: datetime(2026, 11, 30, 12, 0, tzinfo=UTC)) as cx:
        cx.sync()
        path = root / "short_term" / "note 0001.md"
        path.write_text(path.read_text() + "Changed later.\n")
        os.utime(path, (datetime(2026, 11, 29, tzinfo=UTC).timestamp(),) * 2)
        cx.sync()
        hits = cx.recall(RecallRequest(query="battery", k=10, modified_after="7d"), log_activity=False).hits
        assert [h.path for h in hits] == ["short_term/note 0001.md"]
        assert len(cx.recall(RecallRequest(query="battery", k=10, modified_after="2025-12-31"),
                             log_activity=False).hits) == 10


def test_context_recall_is_narrowed_by_the_filters(cx: Cortex) -> None:
    ctx = cx.context(task="battery voltage drop", filters=Filters(tags=["rare"]), budget_tokens=400)
    recalled = [i.path for i in ctx.context.items if not i.section]
    assert recalled and all(p.startswith("projects/") for p in recalled)


@pytest.mark.parametrize(("filters", "message"), [
    (Filters(created_after="last tuesday"), "created_after must be an ISO date"),
    (Filters(regions=["nowhere"]), "unknown region"),
    (Filters(tags=["two words"]), "not a tag"),
])
def test_bad_filters_are_clear_errors(cx: Cortex, filters: Filters, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        cx.recall(RecallRequest(query="battery", **msgspec.structs.asdict(filters)), log_activity=False)


def test_a_loose_filter_searches_the_ann_index_first_and_still_returns_k(cx: Cortex) -> None:
    result = cx.recall(RecallRequest(query="battery voltage drop", k=10, tags=["common"]), log_activity=False)
    assert len(result.hits) == 10 and not any(h.path.startswith("projects/") for h in result.hits)
    unfiltered = cx.recall(RecallRequest(query="battery voltage drop", k=10), log_activity=False).hits
    # the same answer; among notes tied with the last one (same text but their number), the filter's wider
    # search may find a different one than the unfiltered search's narrower one
    assert [h.score for h in result.hits] == [h.score for h in unfiltered]
    last = unfiltered[-1].score
    assert [h.path for h in result.hits if h.score > last] == [h.path for h in unfiltered if h.score > last]


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Cortex:
    """600 captures (`layer: raw`) that match the query best, and 10 curated notes that match it less."""
    root = tmp_path_factory.mktemp("captures") / "vault"
    (root / ".cortex").mkdir(parents=True)
    (root / "raw").mkdir()
    (root / "short_term").mkdir()
    for i in range(600):
        (root / "raw" / f"session {i:04d}.md").write_text(
            f"---\nlayer: raw\nsession: s{i // 6}\n---\n## Prompt\n\nbattery voltage drop battery battery {i}?\n")
    for i in range(10):
        (root / "short_term" / f"note {i:02d}.md").write_text(f"A note about the battery voltage drop {i}.\n")
    cortex = Cortex.open(root, embedder=FakeEmbedder())
    cortex.sync()
    return cortex


def test_captures_crowding_the_candidates_still_leave_k_curated_hits(crowded: Cortex) -> None:
    plain = crowded.recall(RecallRequest(query="battery voltage drop", k=10), log_activity=False).hits
    assert len(plain) == 10 and all(h.path.startswith("short_term/") for h in plain), [h.path for h in plain]
    only = crowded.recall(RecallRequest(query="battery voltage drop", k=10, captures="only"), log_activity=False).hits
    assert len(only) == 10 and all(h.path.startswith("raw/") for h in only)
    both = crowded.recall(RecallRequest(query="battery voltage drop", k=10, captures="include"),
                          log_activity=False).hits
    assert any(h.path.startswith("raw/") for h in both)
    tagged = crowded.recall(RecallRequest(query="battery voltage drop", k=5, path_prefix="short_term/note 0"),
                            log_activity=False).hits  # another filter: captures left out of its notes too
    assert len(tagged) == 5 and all(h.path.startswith("short_term/") for h in tagged)
    with pytest.raises(InvalidRequest, match="captures must be one of exclude, include, only, not 'some'"):
        Filters.build(captures="some")
