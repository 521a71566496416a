"""Bad input never stops a sync, shows in doctor with its reason, and indexing never writes a note."""

from __future__ import annotations

import hashlib
import os
import unicodedata
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.recall.request import RecallRequest


def snapshot(root: Path) -> dict[str, str]:
    """Every file outside .cortex/ with the sha256 of its bytes (symlinks by their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d != ".cortex"]
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def bad_vault(tmp_path: Path) -> Path:
    root = tmp_path / "bad"
    (root / ".cortex").mkdir(parents=True)
    (root / "notes").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside the vault: must never be indexed\n")
    files: dict[str, bytes] = {
        "notes/malformed.md": b"---\ntitle: [unclosed\ntags: a: b: c\n---\nThe body survives broken YAML.\n",
        "notes/bom.md": b"\xef\xbb\xbf---\ncortex: scientific\n---\nA byte order mark must not hide this.\n",
        "notes/crlf.md": b"---\r\ntags: [windows]\r\n---\r\n# Heading\r\nLines end in CRLF here.\r\n",
        "notes/latin1.md": "Caf\xe9 cr\xe8me, written in Latin-1.\n".encode("latin-1"),
        "notes/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "notes/empty.md": b"",
        "notes/with space and #hash.md": b"A file name with spaces and a hash sign.\n",
        unicodedata.normalize("NFD", "notes/Café décor.md"): b"Accents written in NFD.\n",
        "notes/ok.md": b"A perfectly ordinary note about sourdough starters.\n",
    }
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    with open(root / "notes/huge.md", "wb") as fh:  # 50 MB
        line = b"This line repeats to make a fifty megabyte note. " * 20 + b"\n"
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            fh.write(line)
    os.symlink(root / "notes", root / "notes" / "loop")  # a folder symlink back to its parent
    os.symlink(outside, root / "escape")  # a folder outside the vault
    os.symlink(outside / "secret.md", root / "notes" / "secret-link.md")  # a file outside the vault
    return root


def test_bad_input_suite(bad_vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(bad_vault)
    with Cortex.open(bad_vault, embedder=embedder) as cx:
        report = cx.sync()
        indexed = set(cx.db.note_paths())
        doctor = cx.doctor()
        again = cx.sync()
    assert snapshot(bad_vault) == before, "indexing must never write a note"

    assert {
        "notes/malformed.md", "notes/bom.md", "notes/crlf.md", "notes/latin1.md", "notes/empty.md",
        "notes/with space and #hash.md", "notes/Café décor.md", "notes/ok.md",
    } <= indexed
    assert not any("secret" in p or p.startswith("escape") for p in indexed)
    assert not any(p.startswith("notes/loop/") for p in indexed)

    skipped = {s.path: s.reason for s in doctor.skipped}
    assert skipped["notes/binary.md"] == "binary file named .md"
    assert skipped["notes/huge.md"].startswith("too large")
    assert "symlink" in skipped["escape"] and "outside" in skipped["escape"]
    assert "outside" in skipped["notes/secret-link.md"]
    assert "loop" in skipped["notes/loop"]
    problems = dict(doctor.problems)
    assert "YAML" in problems["notes/malformed.md"]
    assert "UTF-8" in problems["notes/latin1.md"]
    assert report.skipped == len(skipped)
    assert (again.added, again.updated, again.deleted) == (0, 0, 0)


def test_bom_crlf_and_nfd_notes_are_parsed_right(bad_vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(bad_vault, embedder=embedder) as cx:
        cx.sync()
        bom = cx.recall(RecallRequest(query="byte order mark", k=1)).hits[0]
        assert (bom.path, bom.region) == ("notes/bom.md", "scientific")
        assert cx.recall(RecallRequest(query="CRLF line endings", k=1)).hits[0].heading == "Heading"
        assert cx.recall(RecallRequest(query="accents NFD", k=1)).hits[0].path == "notes/Café décor.md"
        assert cx.recall(RecallRequest(query="sourdough", k=1)).hits[0].path == "notes/ok.md"
