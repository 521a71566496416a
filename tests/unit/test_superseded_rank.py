"""The push order around a superseded memory: the newer note first, never the older one alone."""

from __future__ import annotations

from vault_cortex.recall.supersession import push_order, superseded_why, supersedes_why

OLD, NEW, OTHER = "long_term/MQTT.md", "long_term/HTTP.md", "long_term/Other.md"


def test_a_superseded_memory_passed_alone_goes_after_the_newer_candidate() -> None:
    assert push_order([OLD], {OLD: (NEW,)}, {OLD, NEW, OTHER}, 3) == [NEW, OLD]
    assert push_order([OLD, NEW], {OLD: (NEW,)}, {OLD, NEW}, 3) == [NEW, OLD]
    assert push_order([OTHER, OLD], {OLD: (NEW,)}, {OLD, NEW, OTHER}, 3) == [OTHER, NEW, OLD]


def test_the_newer_note_is_kept_when_the_push_is_full() -> None:
    assert push_order([OLD], {OLD: (NEW,)}, {OLD, NEW}, 1) == [NEW]


def test_a_newer_note_that_is_not_a_candidate_is_not_added() -> None:
    assert push_order([OLD], {OLD: (NEW,)}, {OLD}, 3) == [OLD]  # shown already, or not relevant


def test_the_words_name_the_notes_as_links() -> None:
    assert superseded_why([NEW]) == "superseded by [[HTTP]]"
    assert supersedes_why([OLD]) == "supersedes [[MQTT]]"
