"""What a question asks for, on real files with the real model: a documentation-like vault of team notes
(people and author properties, a dated changelog, imported chat sessions) and the starter vault, each ranked
with the cue off (its share in the ranking model 0) as the control; recall never writes a note."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from recalled import digest, recall, write_vault

from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.scored import Hit


def _order(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def _passes(root: Path, embedder: Embedder, query: str, setting: str, risen: str, passed: str,
            **settings: bool) -> tuple[Hit, Hit]:
    """The hits of `risen` and `passed`, having checked that `passed` ranks above `risen` with the cue `setting` at
    0 (the control) and below it with the shipped model (both with `settings`)."""
    alone = _order(recall(root, embedder, query, **{setting: 0}, **settings))
    hits = recall(root, embedder, query, **settings)
    order = _order(hits)
    assert alone.index(passed) < alone.index(risen), f"with {setting} = 0, {passed} ranks first"
    assert order.index(risen) < order.index(passed)
    return hits[order.index(risen)], hits[order.index(passed)]


def test_a_question_naming_a_person_ranks_the_memory_about_them_above_one_that_mentions_them(
        fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    before = digest(root)
    query = "What did Ines propose for the index storage?"
    about, mentions = _passes(root, embedder, query, "person", "team/Storage review 2026-03-04.md",
                              "team/Index storage options.md")
    assert "by or about Ines Marlow, whom the query names" in about.reason
    assert "whom the query names" not in mentions.reason, "by Tomas, naming Ines"
    assert digest(root) == before, "recall never writes a note"


def test_a_when_question_ranks_the_dated_memory_first(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    query = "When did the gateway switch to write-ahead logging?"
    dated, reasons = _passes(root, embedder, query, "when", "team/Gateway changelog.md",
                             "team/Why write-ahead logging.md")
    assert "holds a time, as the query asks when" in dated.reason
    assert "holds a time" not in reasons.reason
    assert dated.signals["when"] > 0 and "when" not in reasons.signals, "the signal is named as the model's share"
    plain = recall(root, embedder, "Why does the gateway use write-ahead logging?")
    assert all("holds a time" not in h.reason for h in plain), "only a question asking when"


def test_a_memory_is_lifted_by_the_best_memory_of_its_session(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("cues")
    before = digest(root)
    query = "How do I fix the soil probe drift?"
    answer, other = _passes(root, embedder, query, "session", "sessions/Calibration chat 2.md",
                            "sessions/Clock chat 1.md")  # alone the answer says nothing of probes or drift
    assert "lifted by [[Calibration chat 1]] of the same session" in answer.reason
    assert "same session" not in other.reason, "alone in its session"
    assert digest(root) == before, "recall never writes a note"


def test_a_query_naming_a_time_ranks_the_memory_written_then_first(tmp_path: Path, embedder: Embedder) -> None:
    yesterday = date.today() - timedelta(days=1)
    root = write_vault(tmp_path / "vault", {
        "kitchen/Spelt loaf.md": "---\ncreated: 2023-09-14\n---\nBaked a spelt loaf: bread with a crisp crust and "
                                 "an open crumb.\n",
        "kitchen/Rye loaf.md": "---\ncreated: 2023-05-20\n---\nBaked a rye loaf: bread with a dark crust and a dense "
                               "crumb.\n",
        "kitchen/Focaccia.md": f"---\ncreated: {yesterday.isoformat()}\n---\nBaked focaccia: bread with rosemary and "
                               "sea salt, dimpled by hand.\n",
    })
    before = digest(root)
    # notes without conversation properties: the cues apply with `recall.conversation` switched on
    on = {"conversation": True}
    written, other = _passes(root, embedder, "Which bread did I bake in May 2023?", "dated", "kitchen/Rye loaf.md",
                             "kitchen/Spelt loaf.md", **on)
    assert "written in May 2023, as the query names" in written.reason
    assert "as the query names" not in other.reason
    written, _ = _passes(root, embedder, "Which bread did I bake in May?", "dated", "kitchen/Rye loaf.md",
                         "kitchen/Spelt loaf.md", **on)
    assert "written in May, as the query names" in written.reason, "May of any year"
    alone = {h.path: h.score for h in recall(root, embedder, "Which bread did I bake yesterday?", dated=0, **on)}
    lifted = {h.path: h for h in recall(root, embedder, "Which bread did I bake yesterday?", **on)}
    assert lifted["kitchen/Focaccia.md"].score > alone["kitchen/Focaccia.md"] + 0.1, "a time relative to today"
    assert "written yesterday, as the query names" in lifted["kitchen/Focaccia.md"].reason
    plain = recall(root, embedder, "Which bread did I bake?", **on)
    assert all("as the query names" not in h.reason for h in plain), "only a query naming a time"
    assert digest(root) == before, "recall never writes a note"


def test_the_conversation_cues_apply_by_default_only_where_notes_carry_conversation_properties(
        tmp_path: Path, embedder: Embedder) -> None:
    """`recall.conversation = "auto"`: the cues fitted on conversations (session, person, when, dated, answer) rank
    a query's candidates only when one of them carries a `session` or `speaker` property; true and false say so for
    every query."""
    notes = {
        "kitchen/Spelt loaf.md": "---\ncreated: 2023-09-14\n---\nBaked a spelt loaf: bread with a crisp crust and "
                                 "an open crumb.\n",
        "kitchen/Rye loaf.md": "---\ncreated: 2023-05-20\n---\nBaked a rye loaf: bread with a dark crust and a dense "
                               "crumb.\n",
    }
    query = "Which bread did I bake in May 2023?"
    plain = write_vault(tmp_path / "plain", notes)
    auto = recall(plain, embedder, query)
    assert all("as the query names" not in h.reason for h in auto), "no conversation here: no cue"
    assert _order(auto) == _order(recall(plain, embedder, query, dated=0)), "ranked as without the cue"
    assert any("written in May 2023, as the query names" in h.reason
               for h in recall(plain, embedder, query, conversation=True)), "switched on"
    talk = write_vault(tmp_path / "talk", {**notes, "kitchen/Chat.md": "---\nspeaker: Ines\nsession: 3\n---\n"
                                                                        "Ines: the rye needs a longer proof.\n"})
    assert any("written in May 2023, as the query names" in h.reason for h in recall(talk, embedder, query))
    assert all("as the query names" not in h.reason for h in recall(talk, embedder, query, conversation=False))


def test_the_starter_vault_names_the_dated_notes_a_when_question_favours(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = digest(root)
    query = "When did the dashboard freeze?"
    alone = _order(recall(root, embedder, query, when=0, conversation=True))
    hits = recall(root, embedder, query, conversation=True)  # the starter vault holds no conversation
    assert _order(hits)[0] == alone[0] == "short_term/2026-11-28 dashboard froze.md"
    assert "holds a time, as the query asks when" in hits[0].reason, "its title holds the date"
    assert _order(hits).index("HANDOFF.md") < _order(hits).index("scientific/SQLite WAL mode.md")
    assert alone.index("scientific/SQLite WAL mode.md") < alone.index("HANDOFF.md")
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def test_a_property_json_cannot_hold_does_not_stop_the_cues(tmp_path: Path, embedder: Embedder) -> None:
    """YAML's `.nan` and `.inf` are stored as NaN and Infinity, which SQLite's JSON functions refuse: reading the
    candidates' people and sessions must not fail recall (it did, "malformed JSON", once the cues read them)."""
    root = tmp_path / "vault"
    init_vault(root)
    (root / "short_term/Ines on the greenhouse.md").write_text(
        "---\nspeaker: Ines Marlow\nsession: 4\nweight: .nan\nlimit: .inf\n---\n"
        "Ines Marlow: the greenhouse vents stuck open last Tuesday.\n", encoding="utf-8")
    (root / "short_term/Ines again.md").write_text(
        "---\nspeaker: Ines Marlow\nsession: 4\nlimit: -.inf\n---\nInes Marlow: I closed the vents by hand.\n",
        encoding="utf-8")
    hits = recall(root, embedder, "When did Ines see the greenhouse vents stuck?")
    assert _order(hits)[0] == "short_term/Ines on the greenhouse.md"
    assert "by or about Ines Marlow, whom the query names" in hits[0].reason
