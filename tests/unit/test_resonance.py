"""Resonance and habit weights, pure parts: decay toward a baseline, touches, the claimed-vs-actual report."""

from __future__ import annotations

import difflib
from datetime import UTC, datetime, timedelta

import pytest

from vault_cortex.identity.curiosity import close, is_open, new_question, question_of
from vault_cortex.identity.resonance import (
    ConceptInfo,
    as_weight,
    decay_step,
    name_pattern,
    raised,
    report_rows,
    toward_baseline,
)

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_decay_halves_the_distance_to_the_baseline_every_half_life() -> None:
    assert toward_baseline(0.9, 0.5, 30, 30) == pytest.approx(0.7)
    assert toward_baseline(0.9, 0.5, 60, 30) == pytest.approx(0.6)
    assert toward_baseline(0.1, 0.5, 30, 30) == pytest.approx(0.3), "a weight below its baseline rises to it"
    assert toward_baseline(0.9, 0.5, 0, 30) == 0.9
    assert toward_baseline(0.9, 0.5, 30, 0) == 0.9, "half-life 0 means no decay"
    assert toward_baseline(0.9, 0.5, 10_000, 30) == pytest.approx(0.5)
    # applying decay in two steps gives what one step over the whole time gives
    assert toward_baseline(toward_baseline(0.9, 0.5, 12, 30), 0.5, 18, 30) == pytest.approx(0.7)


def test_raised_steps_and_caps_at_one() -> None:
    assert raised(0.8, 0.1) == 0.9
    assert raised(0.95, 0.1) == 1.0
    assert raised(1.0, 0.1) == 1.0
    assert raised(0.7, 0.1) == 0.8, "rounded, so the file gets 0.8 and not 0.7999999999999999"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.7, 0.7), (1, 1.0), ("0.4", 0.4), (1.7, 1.0), (-2, 0.0), (True, 0.5), (None, 0.5), ("high", 0.5),
     (float("nan"), 0.5), ([0.3], 0.5)],
)
def test_as_weight(value: object, expected: float) -> None:
    assert as_weight(value, 0.5) == expected


def test_decay_step_counts_from_the_last_use() -> None:
    fm = {"weight": 0.9, "baseline": 0.5}
    step = decay_step("resonance/Rain.md", fm, NOW - timedelta(days=30), NOW, 30)
    assert (step.before, step.after, step.baseline, step.name) == (0.9, 0.7, 0.5, "Rain")
    assert "30.0 days since last use" in step.reason and not step.written
    assert decay_step("r.md", fm, NOW + timedelta(days=1), NOW, 30).after == 0.9, "a future mtime decays nothing"
    assert decay_step("r.md", {"baseline": 0.3}, NOW - timedelta(days=90), NOW, 30).after == 0.3, \
        "a missing weight starts at the baseline"


def test_name_pattern_matches_whole_words_only() -> None:
    pattern = name_pattern(["craft", "care in making", "ab"])
    assert pattern is not None
    assert pattern.search("The CRAFT of it") and pattern.search("with care in making.")
    assert not pattern.search("an aircraft hangar") and not pattern.search("crafts")
    assert not pattern.search("ab"), "names of two letters or fewer are ignored"
    assert name_pattern(["ab"]) is None


def _concept(path: str, baseline: float) -> ConceptInfo:
    name = path.rsplit("/", 1)[-1].removesuffix(".md")
    return ConceptInfo(path=path, name=name, names=(name.lower(),), category="theme", weight=baseline,
                       baseline=baseline)


def test_report_rows_compare_claimed_with_actual_use() -> None:
    rain, craft, tea = _concept("r/Rain.md", 0.9), _concept("r/Craft.md", 0.2), _concept("r/Tea.md", 0.5)
    rows = report_rows([rain, craft, tea], {"r/Craft.md": 3, "r/Tea.md": 1},
                       {"r/Craft.md": ["a.md", "b.md"], "r/Tea.md": ["c.md"]})
    by = {r.name: r for r in rows}
    assert by["Craft"].actual == 1.0 and by["Craft"].verdict == "lived more than claimed"
    assert by["Craft"].touches == 3 and by["Craft"].mentions == 2 and by["Craft"].mentioned_in == ["a.md", "b.md"]
    assert by["Rain"].actual == 0.0 and by["Rain"].gap == -0.9 and by["Rain"].verdict == "claimed more than lived"
    assert by["Tea"].actual == 0.4 and by["Tea"].verdict == "lived as claimed"
    assert [r.name for r in rows] == ["Rain", "Tea", "Craft"], "the most over-claimed first"
    quiet = report_rows([rain], {}, {})
    assert quiet[0].actual == 0.0 and quiet[0].verdict == "no use of any concept in the window"


def test_a_new_question_follows_the_template_and_closing_it_changes_two_lines() -> None:
    text = new_question("Does the probe drift in the cold?", "Seen twice in December.", "2026-11-30T09:15")
    assert text.startswith("---\nstatus: open\nanswered_by:\ncreated: 2026-11-30T09:15\ntags: [question]\n")
    assert "# Does the probe drift in the cold?\n\nSeen twice in December.\n" in text
    assert question_of("curiosities/Does the probe drift in the cold.md",
                       {"aliases": ["Does the probe drift in the cold?"]}) == "Does the probe drift in the cold?"
    assert question_of("curiosities/Plain.md", {}) == "Plain"
    closed = close(text, "Probe drift measured")
    diff = [d for d in difflib.ndiff(text.splitlines(), closed.splitlines()) if d[:1] in "+-"]
    assert diff == ["- status: open", "- answered_by:", "+ status: explored",
                    '+ answered_by: "[[Probe drift measured]]"']
    assert is_open({"status": "open"}) and is_open({}) and is_open({"status": "Open"})
    assert not is_open({"status": "explored"}) and not is_open({"status": "answered"})
