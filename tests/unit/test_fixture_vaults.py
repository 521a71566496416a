"""Each fixture vault parsed and resolved end to end, compared with its hand-written expected.json."""

from __future__ import annotations

import json
import os
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import msgspec
import pytest

from vault_cortex.files.links import Dangling, Resolver
from vault_cortex.files.note import Note, decode, is_binary, parse_note

VAULTS = Path(__file__).resolve().parents[1] / "fixtures" / "vaults"
# Parser vaults are the ones whose expected.json lists edges; other vaults serve other tests.
CASES = sorted(
    p.name
    for p in VAULTS.iterdir()
    if (p / "expected.json").is_file() and "edges" in json.loads((p / "expected.json").read_text("utf-8"))
)
PER_NOTE = ("tags", "aliases", "headings", "block_ids", "links")  # every expected.json lists all but links


class Parsed:
    """A fixture vault copied to tmp_path, every note parsed and every link resolved."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.expected: dict[str, Any] = json.loads((root / "expected.json").read_text("utf-8"))
        self.files: list[str] = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = Path(folder).relative_to(root).as_posix()
            for name in names:
                if not name.startswith(".") and not (rel == "." and name == "expected.json"):
                    self.files.append(name if rel == "." else f"{rel}/{name}")
        self.notes: dict[str, Note] = {}
        self.skipped: list[str] = []
        for path in sorted(self.files):
            if not path.endswith(".md"):
                continue
            data = (root / path).read_bytes()
            if is_binary(data):
                self.skipped.append(path)
                continue
            text, problems = decode(data)
            note = parse_note(path, text)
            self.notes[note.path] = msgspec.structs.replace(note, problems=problems + note.problems)
        self.resolver = Resolver(self.files)


@pytest.fixture(scope="module", params=CASES)
def vault(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Parsed:
    root = tmp_path_factory.mktemp(request.param) / request.param
    shutil.copytree(VAULTS / request.param, root)
    return Parsed(root)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def test_every_family_has_a_fixture_vault() -> None:
    assert {"links", "resolution", "properties", "blocks_headings"} <= set(CASES)


def test_edges(vault: Parsed) -> None:
    actual = []
    for note in vault.notes.values():
        for link in note.links:
            found = vault.resolver.resolve(link.target, note.path)
            actual.append([note.path, link.target, None if isinstance(found, Dangling) else found.path, link.rel])
    expected = [[_nfc(s), t, None if r is None else _nfc(r), rel] for s, t, r, rel in vault.expected["edges"]]
    assert sorted(actual, key=json.dumps) == sorted(expected, key=json.dumps)


def test_ambiguous_ties_are_reported(vault: Parsed) -> None:
    for source, target, others in vault.expected.get("ambiguous", []):
        found = vault.resolver.resolve(target, source)
        assert not isinstance(found, Dangling)
        assert list(found.ambiguous) == others


@pytest.mark.parametrize("family", PER_NOTE)
def test_per_note_values(vault: Parsed, family: str) -> None:
    if family == "links" and family not in vault.expected:
        return  # the resolution vault checks its links through `edges` only
    want = {_nfc(path): value for path, value in vault.expected[family].items()}
    assert set(want) <= set(vault.notes), "expected.json names a note that was not parsed"
    for path, note in vault.notes.items():
        got: list[Any] = list(getattr(note, family))
        if family == "headings":
            got = [[h.level, h.text, h.line] for h in note.headings]
        elif family == "links":
            got = [[x.target, x.subpath, x.display, x.kind, x.rel, x.line] for x in note.links]
        assert got == want.get(path, []), f"{family} of {path}"


def test_frontmatter_fields_and_body_lines(vault: Parsed) -> None:
    for path, subset in vault.expected.get("frontmatter", {}).items():
        fm = vault.notes[path].frontmatter
        assert {k: fm.get(k, "<missing>") for k in subset} == subset, path
        if not subset:
            assert fm == {}, path
    for path, subset in vault.expected.get("fields", {}).items():
        note = vault.notes[path]
        assert {k: getattr(note, k) for k in subset} == subset, path
    for path, line in vault.expected.get("body_line", {}).items():
        assert vault.notes[path].body_line == line, path


def test_problems(vault: Parsed) -> None:
    want = vault.expected.get("problems", {})
    for path, note in vault.notes.items():
        expected = want.get(path, [])
        assert len(note.problems) == len(expected), f"{path}: {note.problems}"
        for fragment, problem in zip(expected, sorted(note.problems, key=lambda p: _rank(p, expected)), strict=True):
            assert fragment in problem, f"{path}: {note.problems}"


def _rank(problem: str, expected: list[str]) -> int:
    return next((i for i, fragment in enumerate(expected) if fragment in problem), len(expected))


def test_binary_files_are_skipped(vault: Parsed) -> None:
    assert vault.skipped == vault.expected.get("skipped", [])


def test_fixture_bytes_survived_the_checkout(vault: Parsed) -> None:
    for path, hex_bytes in vault.expected.get("raw_bytes", {}).items():
        assert bytes.fromhex(hex_bytes) in (vault.root / path).read_bytes(), f"{path} lost its raw bytes"


def test_nfd_file_names_are_really_nfd_on_disk(vault: Parsed) -> None:
    for name in vault.expected.get("nfd_files", []):
        on_disk = [f for f in os.listdir(vault.root) if _nfc(f) == name]
        assert on_disk and on_disk[0] == unicodedata.normalize("NFD", name), "the checkout lost the NFD name"
