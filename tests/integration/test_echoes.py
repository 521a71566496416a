"""Memories that echo each other, on real files with the real model: a small garden-notes vault (headings,
sections, no links between the notes) where a note that barely matches the question rises with the note that
answers it, by the rare words they share, and the starter vault; each ranked with `recall.echo` at 0 as the
control. A question asking for several things gives the session lift's share to the echo in a chat vault of
sessions, and changes nothing in the garden and starter vaults, whose notes have no session; each against
`recall.across_sessions` at 0. Recall never writes a note."""

from __future__ import annotations

from pathlib import Path

from recalled import digest, recall, write_vault

from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder

NOTES = {
    "garden/Greenhouse planting.md": "# Greenhouse planting\n\n## Tomatoes\n\nInes planted the tomatoes in the "
    "greenhouse this spring: Brandywine and Cherokee Purple, both heirloom\nvarieties, started from seed on heat "
    "mats and moved to the south bench.\n",
    "garden/Seed order.md": "# Seed order\n\nThe order from the heirloom catalogue arrived: Brandywine, Cherokee "
    "Purple and a packet of Genovese basil.\nStore the packets in the cool cupboard until sowing.\n",
    "ops/Greenhouse vents.md": "# Greenhouse vents\n\nThe greenhouse roof vents stick open when the controller "
    "loses power; the manual crank is behind the door.\n",
    "ops/Heating.md": "# Heating\n\nThe greenhouse heater is set to 8 degrees; the thermostat sits on the north "
    "wall.\n",
    "ops/Rainwater tank.md": "# Rainwater tank\n\nThe tank overflows in heavy rain; the overflow pipe runs to the "
    "pond.\n",
    "garden/Compost.md": "# Compost\n\nTurn the compost every two weeks; add dry leaves when it smells.\n",
}


def test_a_note_that_barely_matches_rises_with_the_note_it_echoes(tmp_path: Path, embedder: Embedder) -> None:
    root = write_vault(tmp_path / "garden", NOTES)
    before = digest(root)
    query = "What did Ines plant in the greenhouse?"
    alone = [h.path for h in recall(root, embedder, query, echo=0)]
    hits = recall(root, embedder, query)
    order = [h.path for h in hits]
    assert order[0] == alone[0] == "garden/Greenhouse planting.md"
    assert alone.index("ops/Greenhouse vents.md") < alone.index("garden/Seed order.md"), "alone it ranks below"
    assert order.index("garden/Seed order.md") < order.index("ops/Greenhouse vents.md"), "echoed, above"
    echoed = hits[order.index("garden/Seed order.md")]
    assert 'echoes [[Greenhouse planting]] ("brandywine", "cherokee", "heirloom"; 1.00)' in echoed.reason
    assert echoed.signals["echo"] > 0
    assert "echoes" not in hits[order.index("ops/Greenhouse vents.md")].reason, "it shares nothing rare"
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def test_the_starter_vault_keeps_its_best_answer_and_names_its_echoes(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    before = digest(root)
    query = "Why is the WAL growing?"
    alone = recall(root, embedder, query, echo=0)
    hits = recall(root, embedder, query)
    assert hits[0].path == alone[0].path == "curiosities/Why does the WAL file grow during long reads.md"
    assert any("echoes [[Why does the WAL file grow during long reads]]" in h.reason for h in hits[1:])
    assert all("echoes" not in h.reason for h in alone)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def _turn(session: int, n: int, speaker: str, text: str) -> str:
    """One exchange of an imported chat, as a note: its session, its speaker, the exchange it follows."""
    follows = f"follows:: [[S{session}-{n - 1}]]\n" if n > 1 else ""
    return f"---\nsession: {session}\nspeaker: {speaker}\n---\n{speaker}: {text}\n{follows}"


CHATS = {
    1: [("Tomas", "How was the weekend? Did you get out at all?"),
        ("Ines", "I played the clarinet with the town band on Sunday. All that evening practice paid off!"),
        ("Tomas", "The town band in the park! Who else was playing?"),
        ("Ines", "Mostly the same crowd as last summer, plus two new drummers."),
        ("Tomas", "Sounds fun, I should come next time.")],
    2: [("Ines", "Guess what, I bought a second-hand cello last month; an hour of evening practice every day."),
        ("Tomas", "A cello! Isn't it hard to learn as an adult?"),
        ("Ines", "Slowly getting there, my teacher is patient.")],
    3: [("Tomas", "I tried the new ramen place on Market Street."),
        ("Ines", "Was it any good? I love their miso broth."),
        ("Tomas", "Great broth, slow service.")],
}


def test_a_question_asking_for_several_things_looks_across_sessions(tmp_path: Path, embedder: Embedder) -> None:
    notes = {f"chat/S{s}-{i}.md": _turn(s, i, who, text) for s, turns in CHATS.items()
             for i, (who, text) in enumerate(turns, 1)}
    root = write_vault(tmp_path / "chat", notes)
    before = digest(root)
    query = "What instruments does Ines play?"
    alone = [h.path for h in recall(root, embedder, query, across_sessions=0)]
    hits = recall(root, embedder, query)
    order = [h.path for h in hits]
    assert order[0] == alone[0] == "chat/S1-2.md", "the clarinet"
    assert alone.index("chat/S1-4.md") < alone.index("chat/S2-1.md"), "the session lift: the clarinet's session"
    assert order.index("chat/S2-1.md") < order.index("chat/S1-4.md"), "the cello, told in another session"
    cello = hits[order.index("chat/S2-1.md")]
    assert 'echoes [[S1-2]] ("evening", "practice"' in cello.reason
    assert all("of the same session" not in h.reason and "session" not in h.signals for h in hits)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert digest(root) == before, "recall never writes a note"


def test_notes_without_sessions_rank_a_question_asking_for_several_things_as_any_other(
        tmp_path: Path, embedder: Embedder) -> None:
    garden = write_vault(tmp_path / "garden", NOTES)
    starter = tmp_path / "vault"
    init_vault(starter)
    for root, query in ((garden, "Which tomato varieties did Ines plant in the greenhouse?"),
                        (starter, "What problems has the greenhouse dashboard had?")):
        before = digest(root)
        hits = recall(root, embedder, query)
        assert hits == recall(root, embedder, query, across_sessions=0), "no session: nothing to look across"
        assert any("echo" in h.signals for h in hits)
        assert digest(root) == before, "recall never writes a note"
