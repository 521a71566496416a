"""The agreement check: two notes merge only when numbers, dates, negation words and names all match."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.sleep.agree import agreement, complete_groups, dates, names, numbers, turns

MQTT = "Decision: the nodes send their readings over MQTT to the broker on the Pi."
HTTP = "Decision: the nodes no longer send their readings over MQTT; they POST them over HTTP to the collector."
RATED = "The battery pack of node 3 measured 3000 mAh on the first test."
REAL = "The battery pack of node 3 holds 1100 mAh, not the rated 3000. The first test was wrong."


def test_a_reversal_disagrees_and_names_the_words() -> None:
    v = agreement(MQTT, HTTP)
    assert not v.agree
    assert '"no longer" 0× ≠ 1×' in v.differ
    assert any("HTTP (second only)" in x for x in v.differ)


def test_a_correction_disagrees_on_the_number_and_the_words() -> None:
    v = agreement(RATED, REAL)
    assert not v.agree
    assert "3000 mah ≠ 1100 mah" in v.differ and '"was wrong" 0× ≠ 1×' in v.differ


def test_the_same_facts_in_other_words_agree_with_the_points() -> None:
    a = "The SD card in the greenhouse Pi died on 26 November after 18 months. Boot from an SSD instead."
    b = ("After 18 months the SD card in the greenhouse Pi died (2026-11-26 is wrong? no: Nov 26). "
         "Boot from an SSD instead.")
    assert not agreement(a, b).agree  # "wrong" and "no" appear in b only
    c = "Boot from an SSD instead: the SD card in the greenhouse Pi died on November 26 after 18 months."
    v = agreement(a, c)
    assert v.agree and v.differ == []
    assert {"18 months", "11-26", '"instead"', "Pi", "SSD", "SD"} <= set(v.same)


def test_different_people_of_one_template_disagree() -> None:
    a = "Met Tom at the climbing gym; Tom works at Siemens and likes bouldering."
    b = "Met Tom at the climbing gym; Tom works at Bosch and likes bouldering."
    assert agreement(a, b).differ == ["names: Siemens (first only), Bosch (second only)"]


def test_a_name_that_starts_a_sentence_in_one_note_is_the_name_written_inside_the_other() -> None:
    a = "Grandma's birthday is on 3 June. She likes yellow roses."
    b = "Remember yellow roses for Grandma: her birthday falls on June 3rd."
    v = agreement(a, b)
    assert v.agree and {"Grandma", "June", "06-03"} <= set(v.same)
    assert not agreement("Tom said yes.", "Anna said yes to Bosch.").agree  # a first word alone stays unknown


def test_the_extractors() -> None:
    assert numbers("48 mA, peaks of 310 mA, 3.9 s awake, node 2") == {"ma": {48.0, 310.0}, "s": {3.9}, "": {2.0}}
    assert numbers("on 2026-11-26 and 3 March") == {}
    assert dates("on 2026-11-26, 3 March 2025 and Dec 1") == {"2026-11-26", "2025-03-03", "12-01"}
    assert turns("It doesn't work. It is not done, no longer, NOT.") == {"n't": 1, "not": 2, "no longer": 1}
    # a word that only ever starts a sentence is not told from an ordinary one
    assert names("Anna met Tom at the Pi meetup. Tom said SSD.\n- Bosch called") == {"Tom", "Pi", "SSD"}


def test_complete_linkage_never_chains() -> None:
    # 0–1 and 1–2 are close, 0–2 is not: 0 and 2 are never merged through 1
    assert complete_groups(3, [(0.95, 0, 1), (0.93, 1, 2)]) == [[0, 1]]
    assert complete_groups(4, [(0.95, 0, 1), (0.93, 1, 2), (0.94, 0, 2), (0.99, 3, 3)]) == [[0, 1, 2]]


WORDS = st.lists(st.sampled_from(["the", "pump", "runs", "every", "morning", "valve", "sensor", "reads", "and",
                                  "water", "level", "in", "tank"]), min_size=3, max_size=20).map(" ".join)
PHRASES = st.sampled_from(["no longer", "not", "never", "instead", "switched", "was wrong", "corrected",
                           "doesn't", "stopped"])


@given(WORDS, PHRASES, st.integers(0, 3))
def test_appending_a_reversal_never_agrees(text: str, phrase: str, where: int) -> None:
    words = text.split()
    cut = min(where, len(words))
    turned = " ".join([*words[:cut], phrase, *words[cut:]])
    assert not agreement(text, turned).agree
    assert not agreement(turned, text).agree


@given(WORDS, st.integers(0, 100000), st.integers(0, 100000), st.sampled_from(["mAh", "mA", "V", "%", "days", ""]))
def test_changing_a_number_never_agrees(text: str, x: int, y: int, unit: str) -> None:
    if x == y:
        y = x + 1
    a, b = f"{text} {x} {unit}".strip(), f"{text} {y} {unit}".strip()
    assert not agreement(a, b).agree
    assert agreement(a, a).agree
