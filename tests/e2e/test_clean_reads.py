"""A vault that is only read keeps a clean `git status` (issue 22): what recall, read and context log waits in the
machine-local pending log, ranking uses it at once, and a flush puts it in the versioned log exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from harness import LiveServer, over_http
from litestar import Litestar
from litestar.testing import TestClient
from mcp.client import Client

from vault_cortex.cortex import Cortex
from vault_cortex.files.activity_files import ACTIVITY_DIR, PENDING_DIR
from vault_cortex.index.db import IndexDB
from vault_cortex.index.replay import replay_activity


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def cli(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    done = subprocess.run([sys.executable, "-m", "server.cli", *args, "--vault", str(root)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def figures(db: IndexDB) -> dict[str, Any]:
    """Everything the index derives from the activity log."""
    snap = db.snapshot()
    return {k: snap[k] for k in ("access", "co_retrieval", "co_queries", "touches")}


def rebuilt(root: Path, tmp: Path) -> dict[str, Any]:
    """The figures a new index gets from the files (a rebuild after deleting .cortex/index/)."""
    db = IndexDB(tmp / "index.db")
    with db.write():
        replay_activity(root, db)
    out = figures(db)
    db.close()
    return out


def lines(folder: Path) -> Counter[bytes]:
    return Counter(line for f in sorted(folder.glob("*.jsonl")) for line in f.read_bytes().splitlines())


def test_reads_on_every_surface_leave_git_status_clean_and_a_flush_logs_them_once(
        vault: Path, cx: Cortex, client: TestClient[Litestar], live: LiveServer, tmp_path: Path) -> None:
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "my notes")
    cx.sync()
    before = lines(vault / ACTIVITY_DIR)

    cli(vault, "recall", "why did the dashboard freeze?")
    cli(vault, "read", "Commit messages")
    cli(vault, "context", "--task", "plan the next battery test")
    assert client.get("/v1/recall", params={"q": "node battery ran flat"}).status_code == 200
    assert client.get("/v1/notes", params={"name": "SQLite WAL mode"}).status_code == 200
    assert client.post("/v1/context", json={"task": "fix the collector"}).status_code == 200

    async def body(mcp: Client) -> None:
        for tool, args in (("recall", {"query": "WAL checkpoint starvation"}), ("note", {"note": "HANDOFF"}),
                           ("context", {"task": "write the handoff"})):
            assert not (await mcp.call_tool(tool, args)).is_error

    over_http(live, body)
    assert git(vault, "status", "--porcelain", "--untracked-files=all", "--ignored=no") == ""
    assert lines(vault / ACTIVITY_DIR) == before
    pending = lines(vault / PENDING_DIR)
    assert sum(pending.values()) >= 9 and cx.pending_activity() == sum(pending.values())

    cx.sync()  # ranking has what the reads taught it before any flush
    learned = figures(cx.db)
    assert learned == rebuilt(vault, tmp_path / "before")
    assert {"linguistic/Commit messages.md", "scientific/SQLite WAL mode.md", "HANDOFF.md"} <= {
        path for path, *_ in learned["access"]}  # the opens of the three surfaces

    out = cli(vault, "activity", "flush")
    assert out.startswith(f"flushed {sum(pending.values())} events into .cortex/activity/"), out
    assert lines(vault / ACTIVITY_DIR) == before + pending  # each event in the versioned log exactly once
    assert not lines(vault / PENDING_DIR)
    assert cli(vault, "activity", "flush").strip() == "nothing to flush"
    cx.sync()
    assert figures(cx.db) == learned == rebuilt(vault, tmp_path / "after")
    changed = [line[3:] for line in git(vault, "status", "--porcelain", "--untracked-files=all").splitlines()]
    assert changed and all(path.startswith(".cortex/activity/") for path in changed), changed
