"""What reads log waits in `.cortex/pending-activity/` until a flush moves it into the versioned log: with two
processes appending during flushes, after a flush killed at any step, and at every sleep apply (issue 22)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.files.activity import OpenEvent, RecallEvent, append, encode, read_events
from vault_cortex.files.activity_files import ACTIVITY_DIR, PENDING_DIR, flush
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder

T0 = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)
WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from vault_cortex.files.activity import OpenEvent, append
root, name = Path(sys.argv[1]), sys.argv[2]
for i in range(400):
    append(root, OpenEvent(ts=datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC), client=name, path=f"{name}/{i}.md"))
"""


def versioned(root: Path) -> Counter[bytes]:
    return Counter(line for f in sorted((root / ACTIVITY_DIR).glob("*.jsonl")) for line in f.read_bytes().splitlines())


def test_two_processes_appending_while_flushes_run_lose_and_double_no_event(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name], env=env)
               for name in ("serve", "cli")]
    flushes = 0
    while any(w.poll() is None for w in writers):
        flush(tmp_path)
        flushes += 1
        time.sleep(0.005)
    assert [w.wait() for w in writers] == [0, 0]
    flush(tmp_path)
    lines = versioned(tmp_path)
    assert sum(lines.values()) == 800 and set(lines.values()) == {1}, "an event lost or written twice"
    assert sorted(p.name for p in (tmp_path / PENDING_DIR).iterdir()) == [".gitignore", ".lock"]
    assert flushes > 1


@pytest.mark.parametrize("killed_after", ["taking the file away", "noting where it goes", "appending"])
def test_a_flush_killed_at_any_step_is_finished_once(tmp_path: Path, killed_after: str) -> None:
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="old.md"))
    flush(tmp_path)
    events = [RecallEvent(ts=T0, client="cli", query=f"q{i}", mode="balanced", paths=(f"{i}.md",)) for i in range(5)]
    for e in events:
        append(tmp_path, e)
    pending = tmp_path / PENDING_DIR / "2026-11.jsonl"
    data = pending.read_bytes()
    target = tmp_path / ACTIVITY_DIR / "2026-11.jsonl"
    taken = pending.with_name("2026-11.jsonl.flush")
    pending.rename(taken)
    if killed_after != "taking the file away":
        taken.with_name(taken.name + ".at").write_text(json.dumps({"file": target.name,
                                                                   "at": target.stat().st_size}))
    if killed_after == "appending":
        with target.open("ab") as fh:
            fh.write(data)
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="after.md"))  # reads go on meanwhile
    assert flush(tmp_path) == [".cortex/activity/2026-11.jsonl"]
    assert versioned(tmp_path) == Counter(encode(e).rstrip(b"\n") for e in [
        OpenEvent(ts=T0, client="cli", path="old.md"), *events, OpenEvent(ts=T0, client="cli", path="after.md")])
    assert sorted(p.name for p in (tmp_path / PENDING_DIR).iterdir()) == [".gitignore", ".lock"]


def test_sleep_apply_flushes_what_reads_logged_and_commits_it(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                              capture_output=True, text=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "vault")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        cx.recall("why did the dashboard freeze?")
        cx.open_note("Commit messages")
        assert git("status", "--porcelain", "--untracked-files=all") == ""
        assert cx.pending_activity() == 2
        report = cx.sleep_apply(cx.sleep_plan("light"), commit=True)
        assert report.commit and cx.pending_activity() == 0
    committed = git("show", "--name-only", "--format=", "HEAD").split()
    assert any(p.startswith(".cortex/activity/") for p in committed), committed
    events, bad = read_events(root)
    assert bad == 0 and [type(e).__name__ for e in events if e.client == "api"][:2] == ["RecallEvent", "OpenEvent"]
    assert git("status", "--porcelain", "--untracked-files=all", "--", ".cortex/activity") == ""
