"""The answer after a question, on pure inputs (`vault_cortex/recall/answer.py`)."""

from __future__ import annotations

from vault_cortex.recall.answer import TAIL, Answer, answered, asks


def test_a_text_asks_when_a_question_mark_is_near_its_end() -> None:
    assert asks("How long have you been painting? It looks great!")
    assert asks("Where did you go?\n\nfollows:: [[D3-4]]\n")
    assert not asks("Seven years now, and I've found my muses: painting and pottery.")
    assert not asks("Why? " + "Because the WAL grows while a reader holds it open. " * (TAIL // 40))


def test_a_candidate_answers_the_note_it_follows_when_that_note_asks() -> None:
    candidates = {"chat/D16-6.md": (0.98, "How long have you been painting?"), "chat/D16-5.md": (0.5, "Nice work.")}
    found = answered("chat/D16-6.md", candidates)
    assert found == Answer(relevance=0.98, path="chat/D16-6.md")
    assert found.phrase() == "answers the question of [[D16-6]] (0.98)"
    assert answered("chat/D16-5.md", candidates) is None, "it follows a statement"
    assert answered("chat/D9-1.md", candidates) is None, "what it follows is not a candidate"
    assert answered("", candidates) is None


def test_a_section_answers_the_section_before_it_when_that_one_asks() -> None:
    found = answered("", {}, [("FAQ > Why does a probe read zero?", 0.7, "Can it be fixed without opening it?")])
    assert found == Answer(relevance=0.7, heading="FAQ > Why does a probe read zero?")
    assert found.phrase() == 'answers the question in the section before it "FAQ > Why does a probe read zero?" (0.70)'
    assert answered("", {}, [("Notes", 0.7, "The cable was loose.")]) is None
    assert answered("", {}, [("Notes", 0.0, "Why?")]) is None, "a question matching nothing"
