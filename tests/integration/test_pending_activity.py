"""What reads log waits in `.cortex/pending-activity/` until a flush moves it into the versioned log: with two
processes appending during flushes, after a flush killed at any step, and at every sleep apply (issue 22)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.files.activity import OpenEvent, RecallEvent, TouchEvent, append, encode, read_events
from vault_cortex.files.activity_files import ACTIVITY_DIR, PENDING_DIR, flush
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

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
    assert b"" not in lines, "a blank line: an append read a line another one was still writing as torn"
    assert sum(lines.values()) == 800 and set(lines.values()) == {1}, "an event lost or written twice"
    assert sorted(p.name for p in (tmp_path / PENDING_DIR).iterdir()) == [".gitignore", ".lock"]
    assert flushes > 1


@pytest.mark.parametrize("pending", [True, False], ids=["pending", "versioned"])
def test_an_append_waits_for_a_line_another_process_is_still_writing(tmp_path: Path, pending: bool) -> None:
    """Seen in CI: the kernel lets a reader see another process's append land page by page, so an append that
    checked the file's last byte then took a half-written line for a torn one and wrote a blank line. Here the
    other writer stops half way through its line, holding the file as every append does."""
    first, second = (OpenEvent(ts=T0, client=c, path=f"{c}.md") if pending else
                     TouchEvent(ts=T0, client=c, concept=c) for c in ("serve", "cli"))
    path = (tmp_path / PENDING_DIR if pending else tmp_path / ACTIVITY_DIR) / "2026-11.jsonl"
    append(tmp_path, first)
    line = encode(first)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line[:20])
        other = threading.Thread(target=append, args=(tmp_path, second))
        other.start()
        other.join(0.3)  # on main it did not wait: it wrote "\n" and its line into the middle of this one
        os.write(fd, line[20:])
    finally:
        os.close(fd)
    other.join()
    assert path.read_bytes() == line + line + encode(second)


def test_two_flushes_at_once_move_each_line_once(tmp_path: Path) -> None:
    """The vault's write lock kept flushes apart only among processes sharing an index folder (`--index-dir`,
    $VAULT_CORTEX_INDEX_DIR): a second flush that met a file the first had noted but not yet appended appended it
    too. Here the first flush is stopped at that point, holding the pending folder as a flush does."""
    events = [OpenEvent(ts=T0, client="cli", path=f"{i}.md") for i in range(3)]
    for e in events:
        append(tmp_path, e)
    pending = tmp_path / PENDING_DIR / "2026-11.jsonl"
    target = tmp_path / ACTIVITY_DIR / "2026-11.jsonl"
    target.parent.mkdir(parents=True)
    taken = pending.with_name(pending.name + ".flush")
    fd = os.open(tmp_path / PENDING_DIR / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        pending.rename(taken)
        taken.with_name(taken.name + ".at").write_text(json.dumps({"file": target.name, "at": 0}))
        data = taken.read_bytes()
        second = threading.Thread(target=flush, args=(tmp_path,))
        second.start()
        second.join(0.3)  # on main it did not wait: it appended the lines, then the first flush did
        with target.open("ab") as fh:
            fh.write(data)
        taken.with_name(taken.name + ".at").unlink(missing_ok=True)
        taken.unlink(missing_ok=True)
    finally:
        os.close(fd)
    second.join()
    assert versioned(tmp_path) == Counter(encode(e).rstrip(b"\n") for e in events)


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
        cx.recall(RecallRequest(query="why did the dashboard freeze?"))
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


def test_a_line_a_crash_cut_short_never_swallows_the_next_one(tmp_path: Path) -> None:
    """Found by the replay property test: a flush appended right after a torn line and lost its first event."""
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="a.md"))
    flush(tmp_path)
    with (tmp_path / ACTIVITY_DIR / "2026-11.jsonl").open("ab") as fh:
        fh.write(encode(OpenEvent(ts=T0, client="cli", path="torn.md"))[:-5])  # a crash mid-write
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="b.md"))
    flush(tmp_path)
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="c.md"))
    with (tmp_path / PENDING_DIR / "2026-11.jsonl").open("ab") as fh:
        fh.write(b'{"event":"open"')
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="d.md"))
    flush(tmp_path)
    events, bad = read_events(tmp_path)
    assert [e.path for e in events if isinstance(e, OpenEvent)] == ["a.md", "b.md", "c.md", "d.md"] and bad == 2


def test_a_flush_killed_between_its_last_two_removals_never_drops_a_read_logged_again(tmp_path: Path) -> None:
    """A flush removes the pending file it moved, then its note of where it went (`… .flush.at`). Killed between
    the two, it left the note behind; the next flush took it for its own, found the same line (a read of the same
    note in the same second) after the noted offset, and dropped the new read as already moved."""
    read = OpenEvent(ts=T0, client="cli", path="same.md")
    append(tmp_path, read)
    target = tmp_path / ACTIVITY_DIR / "2026-11.jsonl"
    marker = tmp_path / PENDING_DIR / "2026-11.jsonl.flush.at"
    assert flush(tmp_path) == [".cortex/activity/2026-11.jsonl"]
    marker.write_text(json.dumps({"file": target.name, "at": 0}))  # what the killed flush left: its file is gone
    append(tmp_path, read)  # the same read again, in the same second: the same bytes
    assert flush(tmp_path) == [".cortex/activity/2026-11.jsonl"]
    assert versioned(tmp_path) == Counter({encode(read).rstrip(b"\n"): 2}), "the second read was dropped"
    assert sorted(p.name for p in (tmp_path / PENDING_DIR).iterdir()) == [".gitignore", ".lock"]
