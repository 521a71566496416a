"""files/paths.py: a note's name from its path, its top folder, a free name; and no inline copy elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vault_cortex
from vault_cortex.files.note import parse_note
from vault_cortex.files.paths import note_name, top_folder, unique_path

PACKAGE = Path(vault_cortex.__file__).parent
SERVER = PACKAGE.parent / "server"


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("scientific/SQLite WAL mode.md", "SQLite WAL mode"),
        ("HANDOFF.md", "HANDOFF"),
        ("a/b/Shouted.MD", "Shouted"),  # the vault takes .md in any case (files/vault.py)
        ("v1.2/notes.v2.md", "notes.v2"),
        ("projects/greenhouse", "greenhouse"),  # a link target without .md
        ("", ""),
    ],
)
def test_note_name(path: str, name: str) -> None:
    assert note_name(path) == name


def test_note_name_is_the_parsed_title() -> None:
    for path in ("soul/Values.md", "x/Upper.MD", "Plain.md"):
        assert note_name(path) == parse_note(path, "body").title


def test_top_folder_and_unique_path() -> None:
    assert top_folder("archive/short_term/x.md") == "archive" and top_folder("x.md") == ""
    assert unique_path("a/x.md", set()) == "a/x.md"
    assert unique_path("a/x.md", {"a/x.md", "a/x 2.md"}) == "a/x 3.md"


def test_a_note_name_is_taken_from_its_path_in_one_place() -> None:
    inline = re.compile(r"""rsplit\(["']/["'], 1\)\[-1\]\s*(?:\.removesuffix\(["']\.md["']\)|\[:-3\])""")
    found = [f"{p.relative_to(PACKAGE.parent)}:{n}"
             for root in (PACKAGE, SERVER) for p in sorted(root.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if inline.search(line)]
    assert not found, f"use files.paths.note_name instead of: {found}"
