"""The push gate's maths (recall/gate.py): features from ranked candidates, the logistic model, the why-line."""

from __future__ import annotations

import os
import subprocess
import sys

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.config import PushSettings
from vault_cortex.recall import gate
from vault_cortex.recall.gate import (
    Cue,
    choose,
    content_words,
    coverage,
    features,
    found,
    judge,
    logistic,
    names,
    places,
)
from vault_cortex.recall.model import GATE_FEATURES, load_model


def cue(score: float, text: str, cosine: float = 0.5) -> Cue:
    return Cue(score=score, relevance=score, dense=score, lexical=score, cosine=cosine, text=text, region=0.7,
               recency=1.0)


def test_features_are_the_configured_ones_in_rank_order() -> None:
    cues = [cue(0.9, "WAL checkpoint starvation froze the dashboard"), cue(0.5, "soil moisture"), cue(0.4, "x")]
    xs = features("why did the dashboard freeze during the WAL checkpoint", cues)
    assert [set(x) for x in xs] == [set(GATE_FEATURES)] * 3
    assert xs[0]["rank"] == 0.0 and xs[1]["rank"] > 0
    assert xs[0]["margin"] == pytest.approx(0.9 - 0.45)
    assert xs[0]["gap"] == 0.0 and xs[2]["gap"] == pytest.approx(0.5)
    assert xs[0]["coverage"] > xs[1]["coverage"] == 0.0


def test_coverage_counts_at_least_three_words() -> None:
    assert coverage(content_words("tell me more"), "Tell me more about it") == pytest.approx(1 / 3)
    assert coverage(content_words("sqlite checkpoint starvation"), "checkpoint starvation in SQLite") == 1.0
    assert coverage(set(), "anything") == 0.0


def test_names_known_to_the_vault() -> None:
    assert names("When did Caroline meet Melanie in Paris?") == {"caroli", "melani", "paris"}
    x = features("When did Caroline go hiking?", [cue(0.9, "Melanie: I went hiking")], seen=["Jon went out"])[0]
    assert x["names"] == 0.0  # a name the vault has never seen: likely another conversation
    assert features("when did she go hiking", [cue(0.9, "hiking")])[0]["names"] == 1.0


def test_the_probability_rises_with_a_good_match_and_says_why() -> None:
    push, model = PushSettings(), load_model().gate
    query = "what did we learn about WAL checkpoints and the dashboard freezing"
    good = judge(query, [cue(0.9, "WAL checkpoints: the dashboard froze because of checkpoint starvation", 0.7),
                         cue(0.3, "ESP32 deep sleep", 0.2)], model.weights, model.intercept)
    weak = judge(query, [cue(0.9, "Sourdough starter feeding schedule", 0.1)], model.weights, model.intercept)
    assert good[0].probability > push.threshold > weak[0].probability
    assert good[0].probability > good[1].probability
    assert "meaning 0.70" in good[0].why or "of the words" in good[0].why
    assert logistic({}, {}, 0.0) == 0.5


@given(st.lists(st.sampled_from([*"abcdeSQLite ÄäßÉé_-.,'0123", "running", "Runs", " the "]), max_size=40).map("".join),
       st.sets(st.sampled_from(["runnin", "runs", "sqlite", "abc", "äßé", "the", "éa", "ab"]), max_size=4))
def test_found_is_the_stems_among_the_content_words(text: str, stems: set[str]) -> None:
    assert found(stems, text) == stems & content_words(text)


def test_a_memory_holding_the_prompts_rare_words_and_names_scores_them() -> None:
    query = "When did Caroline repaint the greenhouse door?"
    cues = [cue(0.9, "Caroline: I repainted the greenhouse door on Sunday"),
            cue(0.6, "Melanie: the greenhouse needs a new door"), cue(0.5, "a greenhouse tour")]
    seen = ["greenhouse tomatoes", "the greenhouse again", "greenhouse heating"]
    xs = features(query, cues, seen)
    assert xs[0]["names_missed"] == 0.0 and xs[1]["names_missed"] == 1.0
    # "repaint" is held by one passage, "greenhouse" by all six: the rarer word weighs more
    assert xs[0]["rare_words"] > xs[1]["rare_words"] > xs[2]["rare_words"] > 0
    assert xs[0]["lead"] == xs[2]["lead"] == pytest.approx(0.3)
    assert features("when did she go", [cue(0.9, "went")])[0]["names_missed"] == 0.0  # no name to miss


def test_a_memory_that_asks_says_little_or_is_about_someone_else_is_marked() -> None:
    """The features that tell the question from its answer: a memory ending by asking (`asks`), a one-line reply
    (`length`), one not by or about the person the prompt names while another is (`person_missed`), and a time
    held for a "when" (`when`). A vault without people, or a prompt naming no one, has no person to miss."""
    question = Cue(score=0.9, relevance=0.9, dense=0.9, lexical=0.9, cosine=0.6, region=0.7, recency=1.0,
                   text="Probe chat 1\nTomas: How do I reset the soil probe so it reads again?")
    answer = Cue(score=0.7, relevance=0.7, dense=0.7, lexical=0.7, cosine=0.5, region=0.7, recency=1.0,
                 text="Probe chat 2\nInes: Hold the side button for ten seconds. " + "x" * 400, person=True,
                 when=True)
    xs = features("How did Ines reset the soil probe?", [question, answer])
    assert (xs[0]["asks"], xs[1]["asks"]) == (1.0, 0.0)
    assert xs[0]["length"] == pytest.approx(len(question.text) / gate.LENGTH) and xs[1]["length"] == 1.0
    assert (xs[0]["person_missed"], xs[1]["person_missed"]) == (1.0, 0.0)
    assert (xs[0]["when"], xs[1]["when"]) == (0.0, 1.0)
    nobody = features("How do I reset the soil probe?", [question, msgspec.structs.replace(answer, person=False)])
    assert [x["person_missed"] for x in nobody] == [0.0, 0.0]
    model = load_model().gate
    p_question, p_answer = (v.probability for v in judge("How did Ines reset the soil probe?", [question, answer],
                                                           model.weights, model.intercept))
    assert p_answer > p_question


def test_found_in_each_text_of_many_is_found_in_each_alone() -> None:
    texts = ["İstanbul sqlite", "", "SQLite checkpoints", "the checkpoint", "İİİ checkpoint sqlite"]
    stems = {"sqlite", "checkp", "the"}
    assert gate.found_in_each(stems, texts) == [found(stems, t) for t in texts] == [
        {"sqlite"}, set(), {"sqlite", "checkp"}, {"checkp"}, {"checkp", "sqlite"}]


def test_places_rank_the_candidates_by_one_feature() -> None:
    assert places([0.3, 0.5, 0.5, 0.1]) == [2, 0, 1, 3]
    assert places([]) == []


def test_a_push_is_the_likeliest_few_each_on_its_own_probability() -> None:
    assert choose([0.1, 0.5, 0.2, 0.15], threshold=0.4, floor=0.14, most=3) == [1, 2, 3]
    assert choose([0.1, 0.5, 0.2, 0.15], threshold=0.4, floor=0.14, most=2) == [1, 2]
    assert choose([0.9, 0.05, 0.1], threshold=0.4, floor=0.14, most=3) == [0]  # one when only one is likely
    assert choose([0.1, 0.3], threshold=0.4, floor=0.1, most=3) == []  # none reaches the threshold
    assert choose([], threshold=0.4, floor=0.1, most=3) == []


def test_the_features_do_not_hang_on_the_order_python_keeps_a_set_of_words_in() -> None:
    """A prompt's words are a set, and Python orders a set of strings by a hash seeded afresh in each process.
    The features must not move with it (by a last bit of a float sum either): the server and a hook process
    must push the same memories, and a threshold fitted on them must not move between runs."""
    script = """if True:
        import json
        from vault_cortex.recall.gate import Cue, features
        texts = ["Caroline repainted the greenhouse door blue on Sunday after the storm broke the hinges",
                 "Melanie said the greenhouse needs a new door and a heater before winter comes",
                 "a greenhouse tour with tomatoes, basil, peppers and a broken thermometer", "storm damage list"]
        cues = [Cue(score=1 - i / 10, relevance=0.5, dense=0.5, lexical=0.5, cosine=0.5, text=t, region=0.7,
                    recency=1.0) for i, t in enumerate(texts)]
        query = ("When did Caroline repaint the greenhouse door after the storm broke its hinges, and which "
                 "heater, thermometer, tomatoes, basil or peppers did Melanie want before winter?")
        print(json.dumps(features(query, cues, ["greenhouse heating in winter", "the storm again"])))"""
    outputs = {subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                              check=True, capture_output=True, text=True).stdout for seed in range(6)}
    assert len(outputs) == 1
