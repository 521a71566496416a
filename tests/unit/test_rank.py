"""Pure ranking maths: fusion, signals in [0, 1], decay, co-activation, weighting and reasons."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.config import DEFAULT_MODES, SIGNALS
from vault_cortex.recall.rank import (
    DAY,
    NoteFacts,
    RegionFacts,
    best_per_note,
    co_strength,
    coactivation,
    effective_importance,
    fuse,
    halved,
    reason,
    recency,
    weighted,
)

NOW = 1_800_000_000.0
PLAIN = RegionFacts(weight=0.5, half_life_days=30, warm=False)
IDENTITY = RegionFacts(weight=1.0, half_life_days=0, warm=True)


def facts(**kw: object) -> NoteFacts:
    base: dict[str, object] = {"path": "a.md", "region": "long_term", "importance": 0.8, "created": None,
                               "mtime": NOW}
    base.update(kw)
    return NoteFacts(**base)  # type: ignore[arg-type]


def test_fuse_weights_and_union() -> None:
    fused = fuse({1: 0.9, 2: 0.8, 4: 0.1}, {2: 10.0, 3: 5.0}, 0.5, 0.5)
    by_id = {f.chunk_id: f for f in fused}
    assert set(by_id) == {1, 2, 3, 4}
    assert by_id[2].lexical == 1.0 and by_id[3].lexical == 0.5 and by_id[3].dense == 0.0
    assert fused[0].chunk_id == 2  # good at both beats good at one
    assert all(0 <= f.relevance <= 1 for f in fused)
    lexical_only = fuse({1: 0.9}, {3: 5.0}, 0.0, 1.0)
    assert lexical_only[0].chunk_id == 3


@given(st.dictionaries(st.integers(0, 50), st.floats(-1, 1)), st.dictionaries(st.integers(0, 50), st.floats(0, 30)),
       st.floats(0, 1), st.floats(0.01, 1))
def test_fused_relevance_is_always_in_range(dense: dict[int, float], lexical: dict[int, float], wd: float,
                                            wl: float) -> None:
    for f in fuse(dense, lexical, wd, wl):
        assert 0.0 <= f.relevance <= 1.0 and 0.0 <= f.dense <= 1.0 and 0.0 <= f.lexical <= 1.0


def test_best_per_note_keeps_the_first_chunk_of_each_note() -> None:
    fused = fuse({1: 0.9, 2: 0.8, 3: 0.1}, {}, 1, 0)
    best = best_per_note(fused, {1: 10, 2: 10, 3: 11})
    assert [f.chunk_id for f in best] == [1, 3]


def test_importance_halves_every_half_life_and_identity_is_exempt() -> None:
    old = facts(mtime=NOW - 30 * DAY)
    assert abs(effective_importance(old, PLAIN, NOW) - 0.4) < 1e-9
    assert effective_importance(old, IDENTITY, NOW) == 0.8
    assert effective_importance(facts(importance=None), PLAIN, NOW) == 0.5
    recently_used = facts(mtime=NOW - 300 * DAY, last_access=NOW - DAY)
    assert effective_importance(recently_used, PLAIN, NOW) > 0.75


def test_recency_is_one_today_and_halves_each_month() -> None:
    assert recency(facts(), NOW) == 1.0
    assert abs(recency(facts(mtime=NOW - 30 * DAY), NOW) - 0.5) < 1e-9
    assert recency(facts(mtime=NOW - 3000 * DAY), NOW) < 1e-6


def test_coactivation_counts_pairs_with_the_top_results() -> None:
    pairs = {("a.md", "b.md"): 6, ("a.md", "c.md"): 3}
    assert coactivation("a.md", ["b.md", "c.md"], pairs) == 9 / 12
    assert coactivation("a.md", ["a.md"], pairs) == 0.0
    assert coactivation("z.md", ["b.md"], pairs) == 0.0


def test_weighted_is_a_normalised_sum_and_modes_cover_every_signal() -> None:
    signals = dict.fromkeys(SIGNALS, 1.0)
    for weights in DEFAULT_MODES.values():
        assert set(weights) == set(SIGNALS)
        assert abs(weighted(signals, weights) - 1.0) < 1e-9
    assert weighted({"relevance": 0.5, "graph": 1.0}, {"relevance": 1.0, "graph": 1.0}) == 0.75


def test_reason_names_the_strongest_contributions() -> None:
    text = reason({"relevance": 0.9, "graph": 0.8, "recency": 0.01}, DEFAULT_MODES["balanced"], dense=0.9,
                  lexical=0.8)
    assert text.startswith("matches the query by words and meaning (0.90)")
    assert "linked to the top results (0.80)" in text and "recent" not in text
    assert reason({}, DEFAULT_MODES["balanced"], dense=0, lexical=0) == "weak match"


def test_co_strength_needs_distinct_queries_and_fades() -> None:
    now = 100 * 86400.0
    assert co_strength(1, now, now) == 0.0 and co_strength(2, now, now) == 0.0
    assert co_strength(3, now, now) == 1.0 and co_strength(5, now, now) == 3.0
    assert co_strength(5, now - 30 * 86400.0, now) == 1.5  # halved after 30 days without a joint recall


def test_co_strength_with_a_zero_half_life_never_fades() -> None:
    """0 means "never decays", as for a region's half-life (the other copies of the decay said so; this one
    divided by zero)."""
    now = 100 * 86400.0
    assert co_strength(5, now - 365 * 86400.0, now, half_life_days=0) == 3.0


@given(st.floats(-1e6, 1e6), st.floats(0.0, 1e4))
def test_halved_is_one_without_time_or_half_life_and_halves_each_half_life(elapsed: float, half_life: float) -> None:
    assert halved(elapsed, 0.0) == 1.0 and halved(min(elapsed, 0.0), half_life) == 1.0
    assert 0.0 <= halved(elapsed, half_life) <= 1.0
    assert halved(60.0, 30.0) == 0.25 and halved(-5.0, 30.0) == 1.0
