"""Activity log on disk: month files, reads kept pending until flushed, concurrent appends, and a git union merge of
two clones."""

from __future__ import annotations

import shutil
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from vault_cortex.files.activity import (
    ACTIVITY_DIR,
    Event,
    FeedbackEvent,
    OpenEvent,
    RecallEvent,
    TouchEvent,
    append,
    read_events,
    replay,
)
from vault_cortex.files.activity_files import PENDING_DIR, flush

T0 = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def test_events_go_to_their_month_file_and_read_back_in_order(tmp_path: Path) -> None:
    events: list[Event] = [
        OpenEvent(ts=datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC), client="cli", path="b.md"),
        OpenEvent(ts=datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC), client="cli", path="a.md"),
        TouchEvent(ts=datetime(2026, 11, 1, tzinfo=UTC), client="mcp", concept="rain"),
    ]
    for event in events:
        append(tmp_path, event)
    assert sorted(p.name for p in (tmp_path / ACTIVITY_DIR).iterdir()) == ["2026-11.jsonl"]  # the touch
    assert sorted(p.name for p in (tmp_path / PENDING_DIR).glob("*.jsonl")) == ["2026-11.jsonl", "2026-12.jsonl"]
    read, bad = read_events(tmp_path)
    assert read == [events[2], events[1], events[0]]  # month, then versioned before pending, then line order
    assert bad == 0
    assert flush(tmp_path) == [".cortex/activity/2026-11.jsonl", ".cortex/activity/2026-12.jsonl"]
    assert sorted(p.name for p in (tmp_path / ACTIVITY_DIR).iterdir()) == ["2026-11.jsonl", "2026-12.jsonl"]
    assert read_events(tmp_path) == ([events[2], events[1], events[0]], 0)


def test_missing_folder_is_an_empty_log(tmp_path: Path) -> None:
    assert read_events(tmp_path) == ([], 0)


def test_a_damaged_line_costs_only_itself(tmp_path: Path) -> None:
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="a.md"))
    with (tmp_path / PENDING_DIR / "2026-11.jsonl").open("ab") as f:
        f.write(b'{"event":"open","ts":"2026-\n')  # a torn write, then newline from a later writer
    append(tmp_path, OpenEvent(ts=T0, client="cli", path="b.md"))
    events, bad = read_events(tmp_path)
    assert [e.path for e in events if isinstance(e, OpenEvent)] == ["a.md", "b.md"]
    assert bad == 1


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    def writer(n: int) -> None:
        for i in range(200):
            paths = tuple(f"w{n}/note {i} {'x' * (i % 50)}.md" for _ in range(3))
            append(tmp_path, RecallEvent(ts=T0, client=f"t{n}", query="q" * i, mode="balanced", paths=paths))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / PENDING_DIR / "2026-11.jsonl").read_bytes().splitlines()
    assert len(lines) == 800
    events, bad = read_events(tmp_path)
    assert (len(events), bad) == (800, 0)
    assert sorted({e.client for e in events}) == ["t0", "t1", "t2", "t3"]


def _batch(client: str, start: int, paths: list[str]) -> list[Event]:
    out: list[Event] = []
    for i in range(12):
        ts = T0 + timedelta(seconds=start + i)
        out.append(RecallEvent(ts=ts, client=client, query=f"q{i}", mode="balanced",
                               paths=tuple(paths[(i + k) % len(paths)] for k in range(6))))
        out.append(OpenEvent(ts=ts, client=client, path=paths[i % len(paths)]))
    out.append(FeedbackEvent(ts=T0, client=client, path=paths[0], useful=True))
    out.append(TouchEvent(ts=T0, client=client, concept="rain"))
    return out


@needs_git
def test_two_clones_merge_with_union_and_replay_to_the_sum(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git(origin, "config", "user.name", "Test")
    git(origin, "config", "user.email", "test@example.com")
    (origin / ".gitattributes").write_text(".cortex/activity/*.jsonl merge=union\n")
    base = _batch("cli", 0, ["a.md", "b.md", "c.md"])
    for event in base:
        append(origin, event)
    flush(origin)  # what reads logged reaches the versioned log when the user chooses
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "base")

    clones = []
    for name in ("left", "right"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(origin), name)
        git(clone, "config", "user.name", name)
        git(clone, "config", "user.email", f"{name}@example.com")
        clones.append(clone)
    left = _batch("plugin", 100, ["a.md", "d.md", "e.md", "b.md"])
    right = _batch("mcp", 100, ["b.md", "c.md", "f.md"])  # same seconds, same month file
    for clone, events in zip(clones, (left, right), strict=True):
        for event in events:
            append(clone, event)
        flush(clone)
        git(clone, "commit", "-q", "-am", f"activity from {clone.name}")

    git(clones[0], "pull", "-q", "--no-rebase", "--no-edit", str(clones[1]), "main")
    assert git(clones[0], "status", "--porcelain") == ""
    assert "<<<<<<<" not in (clones[0] / ACTIVITY_DIR / "2026-11.jsonl").read_text()

    merged, bad = read_events(clones[0])
    assert bad == 0
    assert len(merged) == len(base) + len(left) + len(right)
    assert replay(merged) == replay(base + left + right)
    assert replay(merged) == replay(right + base + left)
