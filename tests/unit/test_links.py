"""Link text parsing and Obsidian's resolution rules (pure, no disk except the NFD file-name check)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.files.links import Dangling, Resolved, Resolver, parse_destination, parse_linktext, unwrap, wikilink

NFC_CAFE = unicodedata.normalize("NFC", "Café")
NFD_CAFE = unicodedata.normalize("NFD", "Café")


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        ("Note", ("Note", "", None)),
        ("Note|shown", ("Note", "", "shown")),
        ("Note#Heading", ("Note", "Heading", None)),
        ("Note#H1#H2|text", ("Note", "H1#H2", "text")),
        ("#Heading", ("", "Heading", None)),
        ("Note#^block-1", ("Note", "^block-1", None)),
        ("Note\\|alias", ("Note", "", "alias")),
        ("img.png|100x145", ("img.png", "", "100x145")),
        ("doc.pdf#page=3", ("doc.pdf", "page=3", None)),
        ("  Spaced  |  text  ", ("Spaced", "", "text")),
        ("Note|", ("Note", "", None)),
        ("https://x.org/a#b", ("https://x.org/a", "b", None)),
        ("Sq]uare", ("Sq]uare", "", None)),
    ],
)
def test_parse_linktext(inner: str, expected: tuple[str, str, str | None]) -> None:
    assert parse_linktext(inner) == expected


@pytest.mark.parametrize(
    ("dest", "expected"),
    [
        ("Note%20name.md", ("Note name.md", "")),
        ("Note%20name", ("Note name", "")),
        ("Note.md#Some%20heading", ("Note.md", "Some heading")),
        ("<Note name.md>", ("Note name.md", "")),
        ("#Heading", ("", "Heading")),
        ("Folder/a%2Bb.md", ("Folder/a+b.md", "")),
        ("a\\(b\\).md", ("a(b).md", "")),
        ("https://example.com/x#y", None),
        ("mailto:a@example.com", None),
        ("obsidian://open?vault=x", None),
        ("//host/path", None),
        ("", None),
        ("#", None),
    ],
)
def test_parse_destination(dest: str, expected: tuple[str, str] | None) -> None:
    assert parse_destination(dest) == expected


VAULT = [
    "Note.md",
    "zzzz/Note.md",
    "a/b/Note.md",
    "a/c/Sib.md",
    "x/y/Topic.md",
    "long-folder/Topic.md",
    "aa/Tie.md",
    "bb/Tie.md",
    "Plugins/Graph view.md",
    "assets/diagram.png",
    "Sub Folder/My Note.md",
    "v1.2.md",
    NFD_CAFE + ".md",
]


def path_of(target: str, source: str = "Hub.md", paths: list[str] | None = None) -> str | None:
    found = Resolver(VAULT if paths is None else paths).resolve(target, source)
    return None if isinstance(found, Dangling) else found.path


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        ("Note", "Hub.md", "Note.md"),
        ("Note", "zzzz/src.md", "Note.md"),  # an exact vault path beats the linking note's folder
        ("Note.md", "Hub.md", "Note.md"),
        ("Note.MD", "Hub.md", "Note.md"),
        ("b/Note", "Hub.md", "a/b/Note.md"),  # folders match by suffix
        ("a/b/Note", "Hub.md", "a/b/Note.md"),
        ("/zzzz/Note", "Hub.md", "zzzz/Note.md"),
        ("/Sib", "Hub.md", None),  # a leading '/' means the vault root, exactly
        ("z/Note", "Hub.md", None),  # suffixes match whole folder names only
        ("./Note", "a/b/rel.md", "a/b/Note.md"),
        ("../c/Sib", "a/b/rel.md", "a/c/Sib.md"),
        ("../../Note", "a/b/rel.md", "Note.md"),
        ("../../../Note", "a/b/rel.md", None),  # outside the vault
        ("../Note", "Hub.md", None),
        ("./Missing", "a/b/rel.md", None),
        ("Topic", "Hub.md", "x/y/Topic.md"),  # shortest path string, not fewest folders
        ("Topic", "long-folder/src.md", "long-folder/Topic.md"),  # own folder beats shorter
        ("Topic", "long-folder/deeper/src.md", "x/y/Topic.md"),  # an ancestor folder counts for nothing
        ("Graph View", "Hub.md", "Plugins/Graph view.md"),
        ("graph VIEW.md", "Hub.md", "Plugins/Graph view.md"),
        (NFC_CAFE, "Hub.md", NFC_CAFE + ".md"),  # NFD file, NFC link; the result is NFC
        (NFD_CAFE, "Hub.md", NFC_CAFE + ".md"),
        ("diagram.png", "Hub.md", "assets/diagram.png"),
        ("DIAGRAM.PNG", "Hub.md", "assets/diagram.png"),
        ("diagram", "Hub.md", None),  # non-markdown targets need their extension
        ("v1.2", "Hub.md", "v1.2.md"),
        ("My Note.md", "Hub.md", "Sub Folder/My Note.md"),
        ("  Note  ", "Hub.md", "Note.md"),
        ("Nowhere", "Hub.md", None),
        ("https://example.com", "Hub.md", None),
        ("My alias", "Hub.md", None),
    ],
)
def test_resolution_rules(target: str, source: str, expected: str | None) -> None:
    assert path_of(target, source) == expected


def test_same_note_link_resolves_to_the_source_itself() -> None:
    resolver = Resolver(VAULT)
    assert resolver.resolve("", "a/b/rel.md") == Resolved(path="a/b/rel.md")
    assert resolver.resolve("   ", NFD_CAFE + ".md") == Resolved(path=NFC_CAFE + ".md")


def test_tie_is_broken_alphabetically_and_reported() -> None:
    assert Resolver(VAULT).resolve("Tie", "Hub.md") == Resolved(path="aa/Tie.md", ambiguous=("bb/Tie.md",))
    assert Resolver(VAULT).resolve("Tie", "bb/x.md") == Resolved(path="bb/Tie.md")


def test_a_case_exact_name_wins_a_case_collision() -> None:
    resolver = Resolver(["Note.md", "note.md"])
    assert resolver.resolve("note", "x.md") == Resolved(path="note.md", ambiguous=("Note.md",))
    assert resolver.resolve("Note", "x.md") == Resolved(path="Note.md", ambiguous=("note.md",))


def test_dangling_keeps_the_raw_target() -> None:
    assert Resolver(VAULT).resolve(" Nowhere ", "Hub.md") == Dangling(raw=" Nowhere ")


def test_memo_does_not_leak_between_folders() -> None:
    resolver = Resolver(VAULT)
    assert resolver.resolve("Topic", "long-folder/src.md") == Resolved(path="long-folder/Topic.md")
    assert resolver.resolve("Topic", "Hub.md") == Resolved(path="x/y/Topic.md")
    assert resolver.resolve("Topic", "long-folder/other.md") == Resolved(path="long-folder/Topic.md")


def test_a_markdown_note_is_preferred_over_an_extensionless_file() -> None:
    assert path_of("README", paths=["README", "docs/README.md"]) == "docs/README.md"
    assert path_of("README", paths=["README"]) == "README"


def test_nfd_file_name_written_to_disk_resolves(tmp_path: Path) -> None:
    (tmp_path / (NFD_CAFE + ".md")).write_text("x", encoding="utf-8")
    names = os.listdir(tmp_path)
    assert names == [NFD_CAFE + ".md"]  # the bytes on disk really are NFD
    assert Resolver(names).resolve(NFC_CAFE, "Hub.md") == Resolved(path=NFC_CAFE + ".md")


def test_resolving_twenty_thousand_links_uses_the_indexes() -> None:
    paths = [f"folder{i % 50}/Note {i}.md" for i in range(5000)]
    resolver = Resolver(paths)
    results = [resolver.resolve(f"Note {i % 6000}", f"folder{i % 7}/src.md") for i in range(20_000)]
    assert sum(isinstance(r, Resolved) for r in results) == sum(i % 6000 < 5000 for i in range(20_000))


@given(st.text(), st.text())
def test_resolve_never_raises(target: str, source: str) -> None:
    assert isinstance(Resolver(VAULT).resolve(target, source), Resolved | Dangling)


def test_wikilink_and_unwrap_read_one_link_with_its_brackets_in_pairs() -> None:
    assert wikilink(" [[Folder/Note#Heading|shown]] ") == ("Folder/Note", "Heading", "shown")
    assert wikilink("Folder/Note") is None and wikilink("[[a]] and [[b]]") is None and wikilink("[[Note") is None
    assert unwrap(" [[Note|shown]] ") == "Note|shown" and unwrap(" Note ") == "Note"
    assert unwrap("[[Note") == "[[Note" and unwrap("Note]]") == "Note]]"
