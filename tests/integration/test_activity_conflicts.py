"""An activity log with git conflict markers (a merge without the union driver, issue 21 F11): replay keeps its
readable lines, nothing appends to it any more (new lines go to a sibling file), and `doctor` names it with how
to resolve it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from vault_cortex import Cortex, EditOp
from vault_cortex.files.activity import OpenEvent, encode
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest


def test_a_conflicted_log_is_replayed_left_alone_and_named_by_doctor(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    now = datetime.now(UTC).replace(microsecond=0)
    month = root / ".cortex" / "activity" / f"{now:%Y-%m}.jsonl"

    def opened(path: str) -> bytes:
        return encode(OpenEvent(ts=now, client="cli", path=path))

    month.write_bytes(opened("HANDOFF.md") + b"<<<<<<< HEAD\n" + opened("soul/Build things that last.md")
                      + b"=======\n" + opened("linguistic/Commit messages.md") + b">>>>>>> laptop\n")
    conflicted = month.read_bytes()
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        access = {path: n for path, n, *_ in cx.db.snapshot()["access"]}
        assert {"HANDOFF.md", "soul/Build things that last.md", "linguistic/Commit messages.md"} <= set(access)

        note = cx.open_note("Enclosure sketches")  # a read: pending; then a write, logged with its edit
        cx.edit_note(note.path, EditOp(op="append", content="- Checked again."), etag=note.etag)
        cx.recall(RecallRequest(query="battery"))
        cx.flush_activity()
        assert month.read_bytes() == conflicted, "appended to a file holding conflict markers"
        sibling = month.with_name(f"{now:%Y-%m}.2.jsonl")
        assert [line.split(b'"event":"')[1][:4] for line in sibling.read_bytes().splitlines()] == [
            b"edit", b"open", b"reca"]
        cx.sync()
        after = {path: n for path, n, *_ in cx.db.snapshot()["access"]}
        assert after["artistic/Enclosure sketches.md"] >= 1 and all(after[p] >= n for p, n in access.items())
        assert [c.split(":")[0] for c in cx.doctor().activity_conflicts] == [
            month.relative_to(root).as_posix()]

    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    out = subprocess.run([sys.executable, "-m", "server.cli", "doctor", "--vault", str(root)], capture_output=True,
                         text=True, env=env, timeout=300).stdout
    assert f"activity log conflicts: 1\n  {month.relative_to(root).as_posix()}: git conflict markers" in out
    assert "deleting the marker lines" in out and "merge=union" in out

