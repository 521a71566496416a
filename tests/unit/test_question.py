"""What a question asks for, on pure inputs: the people it names, whether it asks when, the time expressions a
memory holds (`vault_cortex/recall/question.py`), which cues a candidate meets and how they raise its score
(`scoring.cues_met`, `signals.Cued`); the same-session lift (`company.sessions`)."""

from __future__ import annotations

from datetime import date

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.recall.company import Lift, sessions
from vault_cortex.recall.model import Cues
from vault_cortex.recall.question import (
    Asked,
    Match,
    asked,
    holds_time,
    match,
    people_in,
    periods_named,
    person_name,
)
from vault_cortex.recall.scoring import cues_met
from vault_cortex.recall.signals import Cued

SHARES = Cues(company=0.1, session=0.2, person=0.3, when=0.2, dated=0.0, answer=0.1)


def test_people_come_from_names_links_and_lists() -> None:
    assert person_name(" [[Ines Marlow|Ines]] ") == "Ines Marlow"
    assert person_name("Caroline") == "Caroline"
    assert people_in(["Caroline", None, ["[[Ines Marlow]]", "Caroline", 3]]) == ("Caroline", "Ines Marlow")


def test_a_person_is_named_by_whole_name_or_first_name_as_whole_words() -> None:
    people = ["Ines Marlow", "Caroline", "Odile Brask"]
    assert asked("What did ines suggest to read?", people).people == {"ines marlow"}
    assert asked("What does Caroline's necklace mean?", people).people == {"caroline"}
    assert asked("Did Carol call?", people).people == frozenset(), "part of a name is not the name"
    assert asked("What do Caroline and Odile Brask share?", people).people == {"caroline", "odile brask"}


def test_when_questions_and_time_expressions() -> None:
    assert asked("When did Melanie go camping?", []).when
    assert asked("what year did we move to WAL mode", []).when
    assert not asked("What does Melanie do to destress?", []).when
    for text in ("I went there yesterday", "last week was busy", "two days ago", "on 8 May, 2023",
                 "released 2026-11-28", "every Friday", "in 2022"):
        assert holds_time(text), text
    for text in ("You may find it useful", "I love painting", "Pottery is like therapy"):
        assert not holds_time(text), text


def test_questions_asking_what_may_be_inferred() -> None:
    for q in ("Would Caroline likely have Dr. Seuss books on her bookshelf?", "Would Melanie go on another roadtrip?",
              "What personality traits might Melanie say Caroline has?", "Which fields is she likely to pursue?",
              "Could the outage probably have been caught earlier?"):
        assert asked(q, []).infers, q
    for q in ("How do I reset the soil probe?", "How would I reset the soil probe?", "Could you remind me of the "
              "deploy steps?", "What did Caroline research?", "What could Evan gift Sam?"):
        assert not asked(q, []).infers, q


def test_a_candidate_meets_the_cues_the_query_asks() -> None:
    asked = Asked(people=frozenset({"caroline"}), when=True)
    assert match(asked, ("Caroline",), "I went yesterday") == Match(person="Caroline", when=True)
    assert match(asked, ("Melanie",), "Caroline, how are you?") == Match(person="", when=False)
    assert cues_met(SHARES, Match(person="Caroline", when=True)).met() == {"person": 0.3, "when": 0.2}
    off = msgspec.structs.replace(SHARES, person=0.0, when=0.0)
    assert cues_met(off, Match(person="Caroline", when=True)) == Cued(), "a share of 0 turns its cue off"


@settings(deadline=None)  # pure and fast; a loaded CI machine must not fail it on time
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_a_raised_score_stays_in_0_1_and_never_falls(score: float, a: float, b: float) -> None:
    up = Cued(person=a, when=b).raised(score)
    assert score - 1e-12 <= up <= 1.0


def test_a_weak_match_gains_more_than_a_strong_one() -> None:
    assert Cued(person=0.3).raised(0.4) - 0.4 > Cued(person=0.3).raised(0.8) - 0.8


def test_each_candidate_is_lifted_by_the_best_other_candidate_of_its_session() -> None:
    found = sessions([("a.md", "1", 0.9), ("b.md", "1", 0.5), ("c.md", "1", 0.7), ("d.md", "2", 0.8),
                      ("e.md", "", 0.9)])
    assert found["a.md"] == Lift(relevance=0.7, path="c.md", session="1")
    assert found["b.md"] == Lift(relevance=0.9, path="a.md", session="1")
    assert "d.md" not in found, "alone in its session"
    assert "e.md" not in found, "in no session"
    assert "of the same session (0.70)" in found["a.md"].phrase()


@settings(deadline=None)
@given(st.dictionaries(st.text("abcdef", min_size=1, max_size=3),
                       st.tuples(st.sampled_from(["", "s1", "s2"]), st.floats(0, 1)), max_size=12))
def test_the_session_lift_is_the_best_other_member_of_the_session(found: dict[str, tuple[str, float]]) -> None:
    members = [(path, session, rel) for path, (session, rel) in found.items()]
    lifts = sessions(members)
    for path, session, _ in members:
        others = sorted(((-r, p) for p, s, r in members if s == session and p != path and r > 0))
        if not session or not others:
            assert path not in lifts
        else:
            assert (lifts[path].path, lifts[path].relevance) == (others[0][1], -others[0][0])


def _spans(query: str, today: date | None = None) -> list[tuple[str, date | None, date | None, int]]:
    return [(p.label, p.first, p.last, p.month) for p in periods_named(query, today)]


def test_the_times_a_query_names_are_days_months_years_and_a_few_relative_ones() -> None:
    assert _spans("What news did Evan share on 9th December 2023?") == [
        ("on 9th December 2023", date(2023, 12, 9), date(2023, 12, 9), 0)]
    assert _spans("What was Sam doing on December 4, 2023?") == [
        ("on December 4, 2023", date(2023, 12, 4), date(2023, 12, 4), 0)]
    assert _spans("notes from 2026-03-18 about the gateway")[0][1:3] == (date(2026, 3, 18), date(2026, 3, 18))
    assert _spans("Which classes did Evan join in mid-August 2023?") == [
        ("in August 2023", date(2023, 8, 1), date(2023, 8, 31), 0)], "a day's month and year are not named again"
    assert _spans("When did Melanie go camping in July?") == [("in July", None, None, 7)], "July of any year"
    assert _spans("How many times did she go to the beach in 2023?") == [
        ("in 2023", date(2023, 1, 1), date(2023, 12, 31), 0)]
    assert _spans("31 February 2023") == [("in February 2023", date(2023, 2, 1), date(2023, 2, 28), 0)]
    today = date(2026, 12, 3)  # a Thursday
    assert _spans("What did we decide yesterday?", today) == [("yesterday", date(2026, 12, 2), date(2026, 12, 2), 0)]
    assert _spans("the bug from last week", today) == [("last week", date(2026, 11, 23), date(2026, 11, 29), 0)]
    assert _spans("what changed this month and last year", today) == [
        ("this month", date(2026, 12, 1), today, 0), ("last year", date(2025, 1, 1), date(2025, 12, 31), 0)]
    assert _spans("What did we decide yesterday?") == [], "relative times only with today given"


def test_words_that_look_like_times_name_none() -> None:
    for query in ("May I ask how the probe works?", "Should I use port 2023 or 8080?", "since July it fails",
                  "what may happen in may", "Refactor the 2023-style config loader", "version 1.2023"):
        assert periods_named(query, date(2026, 12, 3)) == (), query


def test_a_memory_written_in_the_named_time_meets_the_dated_cue() -> None:
    question = asked("What did Gina find for her store on 1 February, 2023?", [], today=date(2026, 12, 3))
    met = match(question, [], "She found the perfect spot", date(2023, 2, 1))
    assert met.period == "on 1 February, 2023"
    assert cues_met(msgspec.structs.replace(SHARES, dated=0.3), met).met() == {"dated": 0.3}
    assert cues_met(SHARES, met).met() == {}, "0 turns it off"
    assert match(question, [], "She found the perfect spot", date(2023, 2, 2)).period == "", "another day"
    assert match(question, [], "She found the perfect spot", None).period == "", "a memory with no created day"
    any_year = asked("What did I plant in May?", [])
    assert match(any_year, [], "tomatoes", date(2019, 5, 30)).period == "in May"
    assert match(any_year, [], "tomatoes", date(2019, 6, 1)).period == ""


_TIME_PARTS = st.sampled_from(["in", "on", "of", "mid-", "May", "July", "December", "31", "0", "9th", "2023",
                               "1899", "2023-02-30", "2024-02-29", ",", "yesterday", "last week", "this month",
                               "last year", "May I", "since", "I", "the"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_TIME_PARTS | st.text(max_size=8), max_size=12),
       today=st.dates(min_value=date(1970, 1, 1), max_value=date(2200, 12, 31)))
def test_any_query_names_times_that_are_real_spans_and_never_fails(parts: list[str], today: date) -> None:
    for period in periods_named(" ".join(parts), today):
        assert period.label
        if period.month:
            assert 1 <= period.month <= 12 and period.first is None
        else:
            assert period.first is not None and period.last is not None and period.first <= period.last
            assert period.holds(period.first) and period.holds(period.last)
