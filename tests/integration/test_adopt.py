"""Adopting a real Obsidian vault: `vault-cortex init PATH` on a folder of notes adds .cortex/ and writes no note;
what is machine-local stays out of git there as in the starter vault; `serve`'s refusal names `init`.

The vault is tests/fixtures/vaults/obsidian_sample (written for these tests in the layout of a typical public
Obsidian vault; obsidian_sample.README.md beside it): properties-heavy notes, Dataview blocks, `.base` embeds,
links to notes that do not exist, an attachment and an `.obsidian/` configuration.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from versioned import committed, git

from server.cli import main, prepare_vault
from vault_cortex.cortex import Cortex
from vault_cortex.errors import VaultNotFound
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

SAMPLE = "obsidian_sample"
MACHINE_LOCAL = [".cortex/index/index.db", ".cortex/index/serve.lock", ".cortex/token", ".cortex/hooks/s1.json",
                 ".cortex/sleep/plan-20261130T033000Z.json", ".cortex/sleep/journal.jsonl",
                 ".obsidian/plugins/vault-cortex/data.json"]
VERSIONED = [".cortex/config.toml", ".cortex/activity/2026-11.jsonl", ".cortex/sleep/state.json"]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in (".git", ".cortex")}


def test_init_adopts_an_obsidian_vault_writing_only_cortex(fixture_vault: Callable[[str], Path],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    vault = committed(fixture_vault(SAMPLE))
    before = files(vault)
    assert main(["init", str(vault)]) == 0
    out = capsys.readouterr().out
    assert f"adopted {vault} as a vault" in out and "no note was written" in out
    assert f"next: vault-cortex serve --vault {vault}" in out
    assert files(vault) == before  # every note, attachment and .obsidian/ file byte for byte
    assert git(vault, "status", "--porcelain", "-uall").splitlines() == [
        "?? .cortex/.gitattributes", "?? .cortex/.gitignore", "?? .cortex/activity/.gitkeep",
        "?? .cortex/config.toml", "?? .cortex/relations.jsonl"]
    assert main(["init", str(vault)]) == 1  # never twice
    assert "already holds a vault" in capsys.readouterr().err


def test_an_adopted_vault_is_indexed_linked_and_recalled(fixture_vault: Callable[[str], Path],
                                                         embedder: Embedder) -> None:
    vault = fixture_vault(SAMPLE)
    assert main(["init", str(vault)]) == 0
    notes = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md") if ".obsidian" not in p.parts)
    with Cortex.open(vault, embedder=embedder) as cx:
        report = cx.sync()
        assert report.notes == len(notes) == 19 and report.skipped == 0
        hits = cx.recall(RecallRequest(query="is resoling old leather boots worth it instead of buying new ones", k=3))
        assert hits.hits[0].path == "Clippings/Mend before you replace.md"
        links = {ln.target: ln.dst for ln in cx.index.db.links(src="References/Harbour Lights.md")}
        assert links["Odile Brask"] == "References/Odile Brask.md"  # author: "[[Odile Brask]]", in a property
        assert links["harbour-lights.jpg"] == "Attachments/harbour-lights.jpg"  # cover: the attachment
        doctor = cx.doctor()
    dangling = {ln.target for ln in doctor.dangling}
    assert {"Attention is a garden", "Vessia", "Tidal ecology"} <= dangling  # kept as dangling edges, as Obsidian does
    assert not doctor.problems


@pytest.mark.parametrize("how", ["starter", "adopted"])
def test_what_is_machine_local_stays_out_of_git(how: str, tmp_path: Path,
                                                fixture_vault: Callable[[str], Path]) -> None:
    """The starter vault's .gitignore and an adopted vault's .cortex/.gitignore ignore the same files, and both
    merge the activity log by union."""
    if how == "starter":
        vault = tmp_path / "vault"
        init_vault(vault)
    else:
        vault = fixture_vault(SAMPLE)
        assert main(["init", str(vault)]) == 0
    git(vault, "init", "-q")
    for rel in MACHINE_LOCAL + VERSIONED:
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        if not (vault / rel).exists():
            (vault / rel).write_text("{}\n", encoding="utf-8")
    ignored = subprocess.run(["git", "check-ignore", *MACHINE_LOCAL, *VERSIONED], cwd=vault, capture_output=True,
                             text=True).stdout.split()
    plugin = ".obsidian/plugins/vault-cortex/data.json"  # in an adopted vault, `install obsidian` ignores it
    assert ignored == [p for p in MACHINE_LOCAL if how == "starter" or p != plugin]
    assert git(vault, "check-attr", "merge", ".cortex/activity/2026-11.jsonl").strip().endswith("merge: union")


def test_init_refuses_a_folder_without_notes_but_takes_a_new_obsidian_vault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    (home / "Downloads").mkdir(parents=True)
    (home / "Downloads" / "setup.exe").write_bytes(b"MZ")
    assert main(["init", str(home)]) == 1
    assert "holds no markdown notes" in capsys.readouterr().err
    assert not (home / ".cortex").exists()
    fresh = tmp_path / "New Obsidian vault"  # what Obsidian makes for a new vault: its settings, no note yet
    (fresh / ".obsidian").mkdir(parents=True)
    (fresh / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    assert main(["init", str(fresh)]) == 0 and (fresh / ".cortex" / "config.toml").is_file()


def test_serve_refuses_a_folder_of_notes_naming_init(fixture_vault: Callable[[str], Path]) -> None:
    vault = fixture_vault(SAMPLE)
    with pytest.raises(VaultNotFound, match=f"adopt the folder first: `vault-cortex init {vault}`"):
        prepare_vault(vault)
    assert not (vault / ".cortex").exists()
