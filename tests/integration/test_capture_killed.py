"""A capture killed part way (a hook timeout) is finished by the next one: the real `vault-cortex hook session-end`,
killed with SIGKILL at seeded points while the transcript grows, each kill followed by a full capture, ends with
exactly the notes one clean capture writes — none missing, none duplicated, none cut short."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from vault_cortex.files.vault import init_vault

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/fixtures/transcripts/2026-10-05 collector refactor.jsonl"
SID = "5e2b7a10-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
SEED = 20261206
KILLS = 20  # captures killed, each followed by a full one
MAX_CALL = 4  # the kill lands at one of a capture's first this many fsync/rename calls (3 a note, 1 the import log)

# The seam: the real command, killed by SIGKILL at its k-th fsync or rename, before it runs (between a note's temp
# file and its rename, between two notes, between the notes and the import log), or at its end when it makes fewer.
# Before dying it appends to the file named by its second argument whether it died part way.
KILLED = """\
import atexit, os, signal, sys

k, said, calls = int(sys.argv[1]), sys.argv[2], [0]

def die(part_way):
    with open(said, "a") as fh:
        fh.write(f"{'part way' if part_way else 'at the end'}\\n")
    os.kill(os.getpid(), signal.SIGKILL)

def counted(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == k:
            die(True)
        return real(*args, **kwargs)
    return call

os.fsync, os.replace, os.rename = counted(os.fsync), counted(os.replace), counted(os.rename)
atexit.register(die, False)
from server.cli import main

sys.exit(main(sys.argv[3:]))
"""


def capture(vault: Path, transcript: Path, wrapper: Path | None = None, k: int = 0) -> int:
    """One SessionEnd capture by the real command (through the killing wrapper when given, which notes how it died
    in `died` beside it); its exit code."""
    payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": "/home/me/greenhouse",
                          "hook_event_name": "SessionEnd", "reason": "exit"})
    args = ["hook", "session-end", "--vault", str(vault)]
    cmd = [sys.executable, "-m", "server.cli", *args]
    if wrapper:
        cmd = [sys.executable, str(wrapper), str(k), str(wrapper.with_name("died")), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's code, for the wrapper too
    done = subprocess.run(cmd, input=payload, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == (-signal.SIGKILL if wrapper else 0), done.stderr
    assert "Traceback" not in done.stderr and "Conflict" not in done.stderr, done.stderr
    return done.returncode


def notes(vault: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((vault / "raw").iterdir()) if p.suffix == ".md"}


@pytest.mark.slow
def test_a_capture_killed_at_any_point_is_finished_by_the_next_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS", str(tmp_path))
    full = FIXTURE.read_bytes()
    clean, vault = tmp_path / "clean", tmp_path / "vault"
    for root in (clean, vault):
        init_vault(root)
        shutil.rmtree(root / "raw", ignore_errors=True)
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_bytes(full)
    assert capture(clean, transcript) == 0
    expected = notes(clean)
    assert len(expected) == 4

    wrapper = tmp_path / "killed.py"
    wrapper.write_text(KILLED, encoding="utf-8")
    rng = random.Random(SEED)
    ends = [i + 1 for i, byte in enumerate(full) if byte == ord("\n")]
    whole = 0  # the transcript's whole lines

    def grow(lines: int) -> None:
        """The session goes on: `lines` more whole lines, then part of the next (a line still being written)."""
        nonlocal whole
        whole = min(whole + lines, len(ends) - 1)
        start = ends[whole - 1] if whole else 0
        transcript.write_bytes(full[: start + rng.randint(0, ends[whole] - start - 1)])

    for _ in range(KILLS):
        lines = rng.randint(0, 1)
        grow(lines)  # with no new line the capture only saves its import log: its one call
        assert capture(vault, transcript, wrapper, rng.randint(1, MAX_CALL) if lines else 1) == -signal.SIGKILL
        grow(rng.randint(0, 1))
        assert capture(vault, transcript) == 0
    died = (tmp_path / "died").read_text(encoding="utf-8").splitlines()
    assert len(died) == KILLS and died.count("part way") >= KILLS * 3 // 4, died
    transcript.write_bytes(full)
    capture(vault, transcript)
    got = notes(vault)
    assert sorted(got) == sorted(expected), "a different set of notes than one clean capture writes"
    for name, text in expected.items():
        assert got[name] == text, f"{name} differs from the clean capture's (cut short, or another exchange)"
    for folder in ("raw", ".cortex/imports"):  # no temp file left by a killed write, no journal left over
        assert sorted(p.name for p in (vault / folder).iterdir()) == sorted(p.name for p in (clean / folder).iterdir())
