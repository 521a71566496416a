"""Rewriting links when a note moves (files/relink.py), as Obsidian's "update internal links" does."""

from __future__ import annotations

from vault_cortex.files.links import Resolver
from vault_cortex.files.relink import link_text, relink

FILES = {"Index.md", "b/Note.md", "c/Other.md", "c/Note 2.md", "img.png", "x/Deep.md"}


def _move(text: str, src: str, old: str, new: str, files: set[str] = FILES) -> tuple[str, list[int]]:
    before, after = Resolver(files | {old}), Resolver((files - {old}) | {new})
    moved = {old: new}
    out, changes = relink(text, src, moved.get(src, src), before, after, moved)
    return out, [c.line for c in changes]


def test_links_to_the_moved_note_keep_their_heading_display_and_style() -> None:
    text = ("---\nrelations:\n  supports: [\"[[Note]]\"]\n---\n"
            "See [[Note#H1#H2|shown]], ![[b/Note]], [[ Note ]], [[Note.md]] and [md](b/Note.md#h).\n"
            "A [table](<b/Note.md>) cell [[Note\\|alias]].\n"
            "Not links: `[[Note]]` stays, [[Other]] stays.\n")
    out, lines = _move(text, "Index.md", "b/Note.md", "d/New name.md")
    assert out == ("---\nrelations:\n  supports: [\"[[New name]]\"]\n---\n"
                   "See [[New name#H1#H2|shown]], ![[New name]], [[ New name ]], [[New name.md]] and "
                   "[md](New%20name.md#h).\n"
                   "A [table](<New name.md>) cell [[New name\\|alias]].\n"
                   "Not links: `[[Note]]` stays, [[Other]] stays.\n")
    assert lines == [3, 5, 6]


def test_a_link_that_still_resolves_is_left_byte_for_byte() -> None:
    text = "[[Note]] and [[b/Note]]\r\n"
    out, lines = _move(text, "Index.md", "b/Note.md", "e/Note.md")  # same name, still unique: [[Note]] holds
    assert out == "[[Note]] and [[Note]]\r\n" and lines == [1]


def test_a_name_that_becomes_ambiguous_gets_the_full_path() -> None:
    files = FILES | {"Note.md"}
    text = "[[b/Note]]\n"
    out, _ = _move(text, "Index.md", "b/Note.md", "z/zz/Note.md", files)
    assert out == "[[z/zz/Note]]\n"
    assert link_text("z/zz/Note.md", "Index.md", Resolver(files | {"z/zz/Note.md"})) == "z/zz/Note"


def test_a_moved_note_that_captures_another_notes_link_is_relinked_there() -> None:
    # [[Deep]] meant x/Deep.md; a note moved to the root as Deep.md would now win by exact path
    out, lines = _move("[[Deep]]\n", "Index.md", "c/Other.md", "Deep.md")
    assert out == "[[x/Deep]]\n" and lines == [1]


def test_relative_links_of_the_moved_note_follow_it() -> None:
    out, lines = _move("[[../x/Deep]] and [[Index]]\n", "c/Other.md", "c/Other.md", "q/r/Other.md")
    assert out == "[[Deep]] and [[Index]]\n" and lines == [1]
