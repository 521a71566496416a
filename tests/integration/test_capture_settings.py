"""`[capture]`: the user decides whether the SessionEnd and PreCompact hooks capture a session, what they keep of it
and where, through the real `vault-cortex hook` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/fixtures/transcripts/2026-10-05 collector refactor.jsonl"
SID = "9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
NAME = "2026-10-05 greenhouse 9a8b7c6d"
PROMPT = "The collector writes each MQTT message in its own transaction"  # the fixture's first prompt
ANSWER = "Writing every message in its own transaction forces a sync"  # its answer
TOOL = "*(tool: Read `/srv/greenhouse/collector.py` → 140 lines of output)*"  # one of its tool calls


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


def configure(vault: Path, table: str) -> None:
    config = vault / ".cortex/config.toml"
    text = config.read_text(encoding="utf-8")
    start = text.index("[capture]\n")
    config.write_text(text[:start] + "[capture]\n" + table, encoding="utf-8")


def hook(vault: Path, transcript: Path, event: str = "session-end") -> subprocess.CompletedProcess[str]:
    """The hook as Claude Code runs it: the real command, the input on stdin."""
    payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": "/home/me/greenhouse",
                          "hook_event_name": "SessionEnd", "reason": "exit"})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS": str(transcript.parent)}
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", event, "--vault", str(vault)],
                          input=payload, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    return done


def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "transcripts" / f"{SID}.jsonl"
    path.parent.mkdir(exist_ok=True)
    shutil.copy(FIXTURE, path)
    return path


def notes(vault: Path, folder: str = "raw") -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((vault / folder).glob(f"{NAME} *.md"))}


def test_by_default_prompts_answers_and_tool_lines_are_kept_in_raw(vault: Path, tmp_path: Path) -> None:
    hook(vault, transcript(tmp_path))
    first = notes(vault)[f"{NAME} 01.md"]
    assert PROMPT in first and ANSWER in first and TOOL in first and "answer_to:: [[#Prompt]]" in first


@pytest.mark.parametrize("event", ["session-end", "pre-compact"])
def test_captures_turned_off_write_nothing_and_read_no_transcript(vault: Path, tmp_path: Path, event: str) -> None:
    configure(vault, "enabled = false\n")
    before = sorted(p.relative_to(vault) for p in vault.rglob("*"))
    missing = tmp_path / "transcripts" / f"{SID}.jsonl"  # never there: reading it would be an error on stderr
    missing.parent.mkdir()
    done = hook(vault, missing, event)
    assert "session not captured ([capture] enabled = false)" in done.stderr
    assert "cannot read" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert sorted(p.relative_to(vault) for p in vault.rglob("*") if ".cortex/index" not in p.as_posix()) == [
        p for p in before if ".cortex/index" not in p.as_posix()]  # not a note, not an import log, no hook state


@pytest.mark.parametrize(("table", "kept", "gone"), [
    ("prompts = false\n", [ANSWER, TOOL], [PROMPT, "## Prompt", "answer_to::"]),
    ("answers = false\n", [PROMPT, TOOL], [ANSWER, "## Answer"]),
    ("tools = false\n", [PROMPT, ANSWER], ["*(tool:"]),
    ("prompts = false\nanswers = false\n", [TOOL], [PROMPT, ANSWER, "## Prompt", "## Answer"]),
])
def test_a_capture_writes_only_what_the_settings_keep(vault: Path, tmp_path: Path, table: str, kept: list[str],
                                                      gone: list[str]) -> None:
    configure(vault, table)
    hook(vault, transcript(tmp_path))
    written = notes(vault)
    assert written, "nothing captured"
    first = written[f"{NAME} 01.md"]
    for text in kept:
        assert text in first, text
    for text in gone:
        assert all(text not in note for note in written.values()), text
    assert "layer: raw\n" in first and f"session: {NAME}\n" in first


def test_keeping_nothing_writes_nothing(vault: Path, tmp_path: Path) -> None:
    configure(vault, "prompts = false\nanswers = false\ntools = false\n")
    done = hook(vault, transcript(tmp_path))
    assert "session not captured ([capture] keeps no prompts, answers or tools)" in done.stderr
    assert not notes(vault) and not (vault / ".cortex/imports").exists()


def test_a_git_ignored_capture_folder_is_captured_and_indexed(vault: Path, tmp_path: Path) -> None:
    """The docs' way to keep captures on this machine: the folder in .gitignore; capture and indexing go on."""
    configure(vault, 'folder = "sessions/claude/"\n')
    (vault / ".gitignore").write_text("sessions/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    hook(vault, transcript(tmp_path))
    captured = notes(vault, "sessions/claude")
    assert len(captured) == 4 and not notes(vault)  # into the folder, none into raw/
    assert "follows:: [[" + NAME + " 01]]" in captured[f"{NAME} 02.md"]
    status = subprocess.run(["git", "-C", str(vault), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert "sessions/" not in status and "raw/" in status  # ignored by git; the starter notes are not
    with Cortex.open(vault) as cx:
        cx.sync()
        indexed = set(cx.db.note_paths())
    assert {f"sessions/claude/{name}" for name in captured} <= indexed


@pytest.mark.parametrize(("folder", "why"), [
    ("/srv/sessions", "must be a folder inside the vault, relative to it"),
    ("../elsewhere", 'must stay inside the vault: no ".."'),
    ("sessions/../../x", 'must stay inside the vault: no ".."'),
    (".cortex/sessions", "is inside .cortex/, which holds vault-cortex's own files"),
    ("~/sessions", "must be a folder inside the vault, relative to it"),
    ("", "must name a folder inside the vault"),
])
def test_a_bad_capture_folder_is_refused_with_a_clear_message(vault: Path, tmp_path: Path, folder: str,
                                                              why: str) -> None:
    configure(vault, f"folder = {json.dumps(folder)}\n")
    done = hook(vault, transcript(tmp_path))  # a hook never blocks the agent: it exits 0 and says why on stderr
    assert f"ConfigError: capture.folder {folder!r} {why}" in done.stderr, done.stderr
    assert not notes(vault) and not list(tmp_path.glob("**/sessions"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    sync = subprocess.run([sys.executable, "-m", "server.cli", "sync", "--vault", str(vault)], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    assert sync.returncode == 1 and sync.stderr.count("\n") == 1 and why in sync.stderr, sync.stderr
    assert "Traceback" not in sync.stderr
