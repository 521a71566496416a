"""The one model-facing text form, pure (recall/brief.py): the passage that bears, a reason in words, one item."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.recall import brief

INCIDENT = ("# Collector crash\n\nThe collector crashed with `database is locked` whenever the dashboard ran its "
            "weekly report at night.\nThe fix: open the database with `PRAGMA busy_timeout=5000` so a writer waits "
            "for the reader. Since then no crash. Unrelated: the enclosure was repainted green in spring and the "
            "old paint flaked off the lid.")


def test_the_passage_is_the_matching_sentence_then_the_fix_after_it() -> None:
    text = brief.passage(INCIDENT, "Error: database is locked (sqlite3.OperationalError)", 200)
    assert text.startswith("… The collector crashed with `database is locked`"), text
    assert "busy_timeout=5000" in text and len(text) <= 200
    assert text.endswith("…") and "repainted" not in text  # the text goes on, cut at a sentence


def test_the_passage_starts_at_the_best_sentence_not_the_first() -> None:
    text = brief.passage(INCIDENT, "enclosure paint flaked", 120)
    assert "repainted green" in text and "collector crashed" not in text and len(text) <= 120


def test_no_matching_word_gives_the_start_and_a_short_text_comes_whole() -> None:
    assert brief.passage(INCIDENT, "qwzx flibber", 60).startswith("# Collector crash")
    assert brief.passage("One line. Two lines.", "two", 100) == "One line. Two lines."  # room left: before it too
    assert brief.passage("", "anything", 100) == ""


def test_one_long_sentence_is_cut_at_a_word_with_an_ellipsis() -> None:
    text = brief.passage("word " * 100, "word", 50)
    assert len(text) <= 50 and text.endswith("…") and not text.endswith(" …")


def test_the_reason_in_words_has_no_figures_but_keeps_links() -> None:
    why = brief.in_words("supersedes [[Nodes send readings over MQTT]]; meaning 0.45",
                         "matches the query by meaning (0.26); recent (1.00); important (0.90)")
    assert why == "supersedes [[Nodes send readings over MQTT]]; matches the query by meaning"
    assert brief.in_words("lifted by its neighbour [[2026-11-29 node 3 battery ran flat]] (1.00)") == (
        "lifted by its neighbour [[2026-11-29 node 3 battery ran flat]]")
    assert brief.in_words("80% of the words", None) == ""


def test_one_item_is_the_path_the_reason_and_the_passage() -> None:
    assert brief.item("notes/a.md", "recent", "Text.") == "## notes/a.md — recent\nText."
    assert brief.item("notes/a.md", "", "") == "## notes/a.md"
    assert brief.named(["notes/a.md", "b.md"]) == "[[notes/a]], [[b]]"


WORDS = st.lists(st.sampled_from(["lock", "locked", "database", "fix", "busy_timeout=5000", "the", "a", "3.7", "V.",
                                  "node!", "why?", "(0.26)", "\n", "- item", "# Heading", "  ", "é", "…"]),
                 max_size=60).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=WORDS, query=WORDS, limit=st.integers(min_value=8, max_value=400))
def test_a_passage_is_within_its_limit_and_says_only_what_the_note_says(text: str, query: str, limit: int) -> None:
    """Whatever the note and the query: the passage fits its limit, and every word of it is the note's (an
    ellipsis marks where it was cut)."""
    said = brief.passage(text, query, limit)
    assert len(said) <= limit, (said, limit)
    note_words = set(text.split())
    for word in said.replace(brief.ELLIPSIS, " ").split():
        assert word in note_words or any(w.startswith(word) for w in note_words), (word, said, text)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(["matches the query by meaning (0.26)", "recent (1.00)", "meaning 0.45",
                                       "supersedes [[2026-11-02 old decision]]", "linked to the top results",
                                       "lifted by its neighbour (0.79)", "", " "]), max_size=6).map("; ".join))
def test_a_reason_in_words_states_no_figure(parts: str) -> None:
    words = brief.in_words(parts)
    assert not re.search(r"\d", re.sub(r"\[\[[^\]]*\]\]", "", words)), words
    assert len(words.split("; ")) <= brief.WHY_PARTS
