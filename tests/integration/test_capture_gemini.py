"""A Gemini CLI chat log captured and imported into raw notes through the one capture path (capture.py): the
privacy gate, the substance filter and the resume point are the Claude Code transcript's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from vault_cortex.cli.main import build_parser, run
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.importers.capture import capture_transcript, session_name
from vault_cortex.importers.transcript import Imported

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gemini" / "session.jsonl"
NAME = "session-2026-01-02T03-04-0b5ec7a1.jsonl"  # as Gemini CLI names it: the session id's first 8
SESSION = "2026-01-02 project 0b5ec7a1"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


@pytest.fixture
def log(tmp_path: Path) -> Path:
    chats = tmp_path / "home" / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(FIXTURE, chats / NAME)
    return chats / NAME


def capture(vault: Path, log: Path) -> Imported:
    """What the SessionEnd hook does with the chat log its payload names."""
    with Cortex.open(vault) as cx, cx.vault.change("hook") as tx:
        return capture_transcript(tx, log, default_session=session_name(log, "project"))


def record(id_: str, kind: str, content: Any, at: str = "2026-01-02T03:09:00.000Z") -> str:
    return json.dumps({"id": id_, "timestamp": at, "type": kind, "content": content}, separators=(",", ":")) + "\n"


def notes(vault: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((vault / "raw").glob(f"{SESSION} *.md"))}


def test_a_gemini_session_is_captured_into_raw_notes(vault: Path, log: Path) -> None:
    """Named by its day, project and id; the prompt without the hooks' context, the answer, the failing command as
    one line; the tool's output and the hooks' context written nowhere."""
    done = capture(vault, log)
    assert (done.session, done.format) == (SESSION, "gemini")
    one, two = notes(vault).values()
    assert "## Prompt\n\nWhy does the collector fail?\n\n## Answer\nanswer_to:: [[#Prompt]]\n\n" in one
    assert "The collector's database was locked." in one
    assert "*(tool: run_shell_command `echo 'sqlite3.OperationalError: database is locked' >&2;…` → 1 line of " \
           "output)*" in one
    assert "Checked again: a long read held the lock." in two and f"follows:: [[{SESSION} 01]]" in two
    for noise in ("hook_context", "context &lt;a", "session_context", "Exit Code", "PGID"):
        assert noise not in one + two, noise


def test_a_grown_log_adds_only_its_new_part_and_a_torn_last_line_waits(vault: Path, log: Path) -> None:
    """Captured twice = once; the log grows by a turn (and a line still being written): the next capture reads
    from where the last exchange began, replaces that note, adds the new one and leaves the torn line for later."""
    capture(vault, log)
    before = notes(vault)
    again = capture(vault, log)
    assert (again.created, again.updated) == ([], []) and notes(vault) == before
    with log.open("a", encoding="utf-8") as fh:
        fh.write(record("record-8", "gemini", "Also: the nightly backup holds it."))
        fh.write(record("record-9", "user", [{"text": "<hook_context>memories</hook_context>\n\nHow do we fix it?"}]))
        fh.write(record("record-10", "gemini", "Give the backup its own read-only connection."))
        fh.write(record("record-11", "user", [{"text": "And the alerts?"}])[:30])  # torn
    grown = capture(vault, log)
    assert (len(grown.created), len(grown.updated)) == (1, 1)
    after = notes(vault)
    first, second, third = after
    assert after[first] == before[first]
    assert "Checked again: a long read held the lock.\n\nAlso: the nightly backup holds it." in after[second]
    assert "## Prompt\n\nHow do we fix it?\n" in after[third] and "And the alerts?" not in after[third]


def test_the_privacy_gate_applies(vault: Path, log: Path) -> None:
    """A `<private>` span and a secret in a Gemini prompt never reach the vault: the capture path is the shared one."""
    with log.open("a", encoding="utf-8") as fh:
        fh.write(record("record-8", "user", [{"text": "Deploy with <private>my home address</private> and key "
                                                       "AKIAIOSFODNN7EXAMPLE, please. Why does it fail?"}]))
        fh.write(record("record-9", "gemini", "The deploy key lacks the s3:PutObject permission."))
    done = capture(vault, log)
    assert done.counts.get("private spans left out") == 1 and done.counts.get("secrets redacted") == 1
    text = "".join(notes(vault).values())
    assert "my home address" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    assert "lacks the s3:PutObject permission" in text


def test_vault_cortex_import_reads_a_gemini_chat_log(vault: Path, log: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert run(build_parser(), ["import", "--vault", str(vault), str(log)]) == 0
    out = capsys.readouterr().out
    assert "(gemini)" in out and "notes: 2 created" in out
    assert len(list((vault / "raw").glob(f"{log.stem} *.md"))) == 2
