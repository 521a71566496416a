"""What a capture keeps: never an exchange that asks, decides, fixes or states a fact; never pure echo."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.importers.substance import FILLER, has_substance

ACKS = ["ok", "Noted.", "thanks!", "Done.", "Sure, done.", "yes please", "go ahead", "continue", "Got it.",
        "Done: I looked at the tool output.", "Will do.", "Sounds good", "lgtm", "You're welcome!"]
_FILLER = sorted(FILLER)
_OUTPUT = "119 passed in 3.21s\nwrote /srv/greenhouse/collector.py\nPRAGMA journal_mode=wal"
_FACTS = ["flush_interval_s", "3.55", "/etc/greenhouse/alerts.toml", "busy_timeout", "ESP32-C3", "8081", "SQLITE_BUSY"]


def _chatter(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


def test_acknowledgements_and_echo_are_left_out() -> None:
    for prompt in ACKS:
        for answer in ACKS:
            assert not has_substance(prompt, answer), (prompt, answer)
    assert not has_substance("run the tests", "119 passed in 3.21s.", _OUTPUT)  # the tool output read back


def test_a_short_fact_or_instruction_is_kept() -> None:
    assert has_substance("ok", "The Pi runs Debian.")
    assert has_substance("thanks", "Backups run at 03:00.")
    assert has_substance("fix the failing test", "Done.")


@given(words=st.lists(st.sampled_from(_FILLER), max_size=8), answer=st.sampled_from(ACKS),
       at=st.integers(min_value=0, max_value=8))
def test_a_question_is_always_kept(words: list[str], answer: str, at: int) -> None:
    prompt = " ".join(words[:at]) + " ?" + " ".join(words[at:])
    assert has_substance(prompt, answer)


@given(prompt=st.sampled_from(ACKS), words=st.lists(st.sampled_from(_FILLER), max_size=8),
       fact=st.sampled_from(_FACTS), at=st.integers(min_value=0, max_value=8))
def test_an_answer_naming_something_the_tools_did_not_print_is_kept(prompt: str, words: list[str], fact: str,
                                                                  at: int) -> None:
    answer = _chatter([*words[:at], fact, *words[at:]])
    assert has_substance(prompt, answer, _OUTPUT)


@given(words=st.lists(st.sampled_from(_FILLER), max_size=6), answer=st.sampled_from(ACKS),
       rule=st.sampled_from(["never push to main", "always run ruff first", "don't touch the firmware",
                             "from now on call me Sam", "I prefer tabs", "use uv instead"]))
def test_a_decision_or_preference_is_kept_even_when_answered_by_an_acknowledgement(
        words: list[str], answer: str, rule: str) -> None:
    assert has_substance(_chatter([*words, rule]), answer)


def test_the_issues_example_look_it_up_then_noted_is_left_out() -> None:
    """Issue 42's example of a trivial exchange: a bare command answered by an acknowledgement."""
    assert not has_substance("Look it up.", "Noted.")
    assert has_substance("Look it up.", "Noted: the probe reads 2870 dry.")  # a figure of its own is kept
