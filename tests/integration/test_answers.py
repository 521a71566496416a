"""The answer after a question, on real files with the real model: a small vault of team chat exchanges (each
`follows::` the one before) and documentation notes, ranked with `recall.answer` at 0 as the control; recall never
writes a note. The company lift is held off in both runs: the answer links with its question, so that lift alone
raises it too."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
from recalled import digest, recall, write_vault

from vault_cortex import Cortex
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

NOTES = {
    "chat/Probe chat 1.md": "---\nspeaker: Tomas\n---\nTomas: The new firmware is on the bed-3 probe now. How do I "
    "reset the soil probe so it reads again?\n",
    "chat/Probe chat 2.md": "---\nspeaker: Ines\n---\nInes: Hold the side button for ten seconds until the LED blinks "
    "twice, then leave it in dry sand for a minute.\nfollows:: [[Probe chat 1]]\n",
    "chat/Probe chat 3.md": "---\nspeaker: Tomas\n---\nTomas: Done, bed 3 reads 31% again. Thanks!\n"
    "follows:: [[Probe chat 2]]\n",
    "docs/Soil probe firmware.md": "# Soil probe firmware\n\nSoil probe firmware updates ship monthly; after an "
    "update the probe restarts by itself and reads again\nwithin the hour.\n",
    "docs/Probe placement.md": "# Probe placement\n\nPlace each soil probe a hand's width from the stem, at root "
    "depth, away from the drip line.\n",
    "docs/Sensor FAQ.md": "# Sensor FAQ\n\n## Why does a probe read zero?\n\nA probe reads zero when it sits in "
    "air or its cable is loose. Can it be fixed without opening the case?\n\n## Fix\n\nPush the cable home until "
    "it clicks and press the probe back into moist soil.\n",
}








def test_the_exchange_after_a_question_rises_with_the_question_it_answers(tmp_path: Path, embedder: Embedder) -> None:
    root = write_vault(tmp_path / "vault", NOTES)
    before = digest(root)
    query = "How do I reset the soil probe?"
    alone = [h.path for h in recall(root, embedder, query, "focus", answer=0, company=0)]
    hits = recall(root, embedder, query, "focus", company=0)
    order = [h.path for h in hits]
    assert order[0] == alone[0] == "chat/Probe chat 1.md", "the question matches best"
    assert alone.index("docs/Sensor FAQ.md") < alone.index("chat/Probe chat 2.md"), "alone it says nothing of probes"
    assert order[1] == "chat/Probe chat 2.md", "as the answer to the best match, second"
    answer = hits[1]
    assert "answers the question of [[Probe chat 1]] (1.00)" in answer.reason
    assert answer.signals["answer"] > 0
    thanks = hits[order.index("chat/Probe chat 3.md")]
    assert "answers" not in thanks.reason, "it follows an answer, not a question"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def test_a_question_asking_what_may_be_inferred_gets_no_answer_lift(tmp_path: Path, embedder: Embedder) -> None:
    root = write_vault(tmp_path / "vault", NOTES)
    asked = {h.path: h for h in recall(root, embedder, "How do I reset the soil probe?", "focus", company=0)}
    inferred = recall(root, embedder, "Would Tomas likely reset the soil probe himself?", "focus", company=0)
    assert asked["chat/Probe chat 2.md"].signals.get("answer", 0) > 0, "asked plainly, the answer rises"
    assert "chat/Probe chat 1.md" in [h.path for h in inferred], "the question still matches"
    for hit in inferred:
        assert "answer" not in hit.signals and "answers the question" not in hit.reason, hit.path


def test_the_push_brings_the_answer_of_whom_the_prompt_names_not_the_question_asked_of_them(
        tmp_path: Path, embedder: Embedder) -> None:
    """Through the push gate: Tomas's question matches "how did Ines say to reset the soil probe" in most of its
    words, Ines's answer in few. The gate tells them apart (the question asks and is not by Ines; the answer is
    hers): it pushes her answer alone. The gate before it (without `asks`, `length` and `person_missed`) gave
    the answer 0.39 and pushed nothing."""
    root = write_vault(tmp_path / "vault", NOTES)
    before = digest(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        asked = cx.recall(RecallRequest(query="How did Ines say to reset the soil probe?", k=6), log_activity=False)
        pushed = cx.recall(RecallRequest(query="How did Ines say to reset the soil probe?", k=3, gate=True),
                           log_activity=False)
    p = {h.path: h for h in asked.hits}
    assert [h.path for h in pushed.hits] == ["chat/Probe chat 2.md"], [(h.path, h.push_probability) for h in
                                                                      pushed.hits]
    assert p["chat/Probe chat 1.md"].signals.get("person", 0) == 0 < p["chat/Probe chat 2.md"].signals["person"]
    assert digest(root) == before, "recall never writes a note"


RACE = {
    "chat/Race chat 1.md": "---\nspeaker: Ana\n---\nAna: Good luck on Sunday! Is everything ready for the race?\n",
    "chat/Race chat 2.md": "---\nspeaker: Mira\n---\nMira: I ran the Lisbon marathon on Sunday and crossed the finish "
    "line after four hours!\nfollows:: [[Race chat 1]]\n",
    "chat/Race chat 3.md": "---\nspeaker: Ana\n---\nAna: Four hours, amazing! What was it like at the end?\n"
    "follows:: [[Race chat 2]]\n",
    "chat/Race chat 4.md": "---\nspeaker: Mira\n---\nMira: Honestly I cried at the end. I felt so proud of myself, and "
    "grateful my kids were there cheering me on.\nfollows:: [[Race chat 3]]\n",
    "docs/Marathon training plan.md": "# Marathon training plan\n\nSixteen weeks: long runs on Sundays, tempo runs "
    "midweek, taper for the last two weeks before the race.\n",
}


def test_the_push_gate_reads_the_answer_told_two_exchanges_after_the_best_match(tmp_path: Path,
                                                                                 embedder: Embedder) -> None:
    """The turn telling the marathon matches the prompt best; how Mira felt is told two exchanges later, in few of
    its words. The gate's `thread` feature marks the exchanges up to four either side of the best match, and
    raises their probability by its weight's odds (against the gate with `thread` weighing 0)."""
    root = write_vault(tmp_path / "vault", RACE)
    query = "How did Mira feel after finishing the Lisbon marathon?"
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        every = msgspec.structs.replace(cx.push_gate(), threshold=0.0, floor=0.0, most=10)
        off = msgspec.structs.replace(every, weights={**every.weights, "thread": 0.0})
        hits = {h.path: h for h in cx.recall(RecallRequest(query=query, k=5, gate=True), push=every,
                                             log_activity=False).hits}
        control = {h.path: h for h in cx.recall(RecallRequest(query=query, k=5, gate=True), push=off,
                                                log_activity=False).hits}
    assert max(hits, key=lambda p: hits[p].score) == "chat/Race chat 2.md", "the best match tells the marathon"
    answer, before = hits["chat/Race chat 4.md"], control["chat/Race chat 4.md"]
    assert answer.push_probability is not None and before.push_probability is not None
    odds = (answer.push_probability / (1 - answer.push_probability)) / (
        before.push_probability / (1 - before.push_probability))
    assert abs(math.log(odds) - every.weights["thread"]) < 0.01, "its odds rise by the thread's weight"
    for path in ("chat/Race chat 2.md", "docs/Marathon training plan.md"):  # the best match itself; no exchange
        assert hits[path].push_probability == control[path].push_probability, path
