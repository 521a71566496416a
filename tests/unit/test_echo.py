"""Memories that echo each other, on pure inputs (`vault_cortex/recall/echo.py`): which words tie two memories
together, which pairs may echo, and how strong an echo is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.index.fts import STOPWORDS, WORD
from vault_cortex.recall.echo import FLOOR, MIN_LENGTH, PLAIN, POOL, Echo, echoes, telling_words

QUERY = "What pottery has Melanie made with her kids?"
FILLER = [(f"chat/D9-{i}.md", "9", 0.3, f"Melanie: the weather was {w} today, we stayed in.")
          for i, w in enumerate(["grey", "mild", "windy", "bright"])]


def test_telling_words_leave_out_the_query_stopwords_plain_and_short_words() -> None:
    words = telling_words("Melanie: Thanks! The kids loved the clay bowls, we glazed them in the kiln.", QUERY)
    assert words == {"loved", "clay", "bowls", "glazed", "kiln"}, "not the query's kids or Melanie, nor thanks"



@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from([*"abcdkéü_ 1\n-.'ÄßİK", "\u0301", "\u00b2"]), max_size=80))
def test_telling_words_are_the_long_words_of_the_text_as_the_query_splits_words(text: str) -> None:
    """The words are found in one pass (runs of MIN_LENGTH or more word characters): the same as splitting the
    text into words as the query is split and keeping the long ones, for any text (accents, digits, `_`)."""
    split = {w for w in WORD.findall(text.lower()) if len(w) >= MIN_LENGTH and w not in STOPWORDS | PLAIN}
    assert telling_words(text, "") == split


def test_two_memories_of_different_sessions_sharing_rare_words_echo_each_other() -> None:
    members = [("chat/D5-6.md", "5", 0.9, "Melanie: we made clay bowls and glazed them in the kiln."),
               ("chat/D8-4.md", "8", 0.4, "Melanie: the kids' clay bowls came out of the kiln glazed blue!"),
               *FILLER]
    found = echoes(members, QUERY)
    weak = found["chat/D8-4.md"]
    assert weak.path == "chat/D5-6.md" and weak.relevance == 0.9
    assert set(weak.words) <= {"clay", "bowls", "glazed", "kiln"} and len(weak.words) == 3
    assert 0 < weak.strength <= 0.9, "never more than the echoing memory's relevance"
    assert found["chat/D5-6.md"].path == "chat/D8-4.md", "each echoes the other"
    assert weak.phrase().startswith("echoes [[D5-6]] (") and weak.phrase().endswith("; 0.90)")
    assert all(path.startswith("chat/D5") or path.startswith("chat/D8") for path in found), "the filler shares nothing"


def test_memories_of_one_session_or_matching_nothing_are_not_raised_by_an_echo() -> None:
    same = [("chat/D5-6.md", "5", 0.9, "clay bowls glazed kiln"), ("chat/D5-8.md", "5", 0.4, "clay bowls glazed kiln")]
    assert echoes([*same, *FILLER], QUERY) == {}, "the session lift judges a session's own memories"
    unmatched = [("a.md", "a.md", 0.9, "clay bowls glazed kiln"), ("b.md", "b.md", FLOOR / 2, "clay bowls glazed kiln")]
    assert "b.md" not in echoes([*unmatched, *FILLER], QUERY)


def test_a_word_every_candidate_holds_ties_nothing_together() -> None:
    members = [(f"n{i}.md", f"n{i}.md", 0.5, "the greenhouse needs watering") for i in range(5)]
    assert echoes(members, QUERY) == {}, "log(pool / pool) = 0"


def test_only_the_best_scored_pool_may_echo() -> None:
    members = [(f"n{i}.md", f"n{i}.md", 0.5, "") for i in range(POOL)]
    members.append(("late.md", "late.md", 0.9, "clay bowls glazed kiln"))
    members.insert(0, ("first.md", "first.md", 0.9, "clay bowls glazed kiln"))
    assert echoes(members, QUERY) == {}, "the one it would echo is past the pool"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 1),
                          st.lists(st.sampled_from(["clay", "kiln", "bowls", "camping", "violin", "canyon"]),
                                   max_size=4)), max_size=12))
def test_an_echo_is_between_two_groups_and_never_stronger_than_its_source(rows) -> None:  # type: ignore[no-untyped-def]
    members = [(f"n{i}.md", group, rel, " ".join(words)) for i, (group, rel, words) in enumerate(rows)]
    found = echoes(members, QUERY)
    by_path = {path: (group, rel) for path, group, rel, _ in members}
    for path, e in found.items():
        assert isinstance(e, Echo)
        assert by_path[path][0] != by_path[e.path][0]
        assert by_path[path][1] >= FLOOR
        assert 0 < e.strength <= e.relevance <= 1


def test_two_linked_notes_never_echo_each_other() -> None:
    pair = [("a.md", "a.md", 0.9, "clay bowls glazed kiln"), ("b.md", "b.md", 0.4, "clay bowls glazed kiln")]
    assert set(echoes([*pair, *FILLER], QUERY)) == {"a.md", "b.md"}
    assert echoes([*pair, *FILLER], QUERY, {"b.md": {"a.md"}}) == {}, "the company lift judges linked notes"
