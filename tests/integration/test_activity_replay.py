"""The activity log replayed incrementally (issue 13): appends read only the new tail, a union merge applies
only the unseen lines, reads logged to the pending files and flushed into the versioned ones (issue 22) count
once, even through a flush interrupted at any point, and every way ends with the numbers a full replay and a
rebuild give."""

from __future__ import annotations

import json
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.files.activity import ACTIVITY_DIR, Event, OpenEvent, RecallEvent, TouchEvent, encode
from vault_cortex.files.activity_files import PENDING_DIR, flush
from vault_cortex.index.db import IndexDB
from vault_cortex.index.replay import replay_activity

T0 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)
PATHS = [f"n{i}.md" for i in range(6)]


def event(rnd: random.Random, month: int) -> Event:
    ts = T0.replace(month=month) + timedelta(seconds=rnd.randrange(10_000))
    kind = rnd.randrange(3)
    if kind == 0:
        return RecallEvent(ts=ts, client="t", query=rnd.choice(["a", "b", "c"]), mode="balanced",
                           paths=tuple(rnd.sample(PATHS, 4)))
    if kind == 1:
        return OpenEvent(ts=ts, client="t", path=rnd.choice(PATHS))
    return TouchEvent(ts=ts, client="t", concept=rnd.choice(["rain", "sea"]))


def numbers(db: IndexDB) -> dict[str, Any]:
    snap = db.snapshot()
    return {k: snap[k] for k in ("access", "co_retrieval", "co_queries", "touches")}


def full_replay(root: Path, tmp: Path) -> dict[str, Any]:
    """A new index replaying the whole log (a rebuild)."""
    db = IndexDB(tmp / f"rebuild-{random.random()}" / "index.db")
    with db.write():
        replay_activity(root, db)
    out = numbers(db)
    db.close()
    return out


def lines_of(rnd: random.Random, n: int, month: int) -> list[bytes]:
    return [encode(event(rnd, month)) for _ in range(n)]


def interrupted_flush(root: Path, rnd: random.Random) -> None:
    """The state a flush killed at a random step leaves: taken away, where-to written, appended, not cleaned up."""
    pending = sorted((root / PENDING_DIR).glob("*.jsonl"))
    if not pending:
        return
    f = rnd.choice(pending)
    taken = f.with_name(f.name + ".flush")
    f.rename(taken)
    step = rnd.randrange(3)
    if step == 0:
        return  # killed right after taking the file away
    target = root / ACTIVITY_DIR / f.name
    at = target.stat().st_size if target.exists() else 0
    taken.with_name(taken.name + ".at").write_text(json.dumps({"file": f.name, "at": at}))
    if step == 2:  # killed after appending, before removing what it moved
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("ab") as fh:
            fh.write(taken.read_bytes())


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False),
       st.lists(st.sampled_from(["append", "merge", "new", "drop", "torn", "read", "flush", "killed flush"]),
                min_size=1, max_size=10))
def test_incremental_replay_equals_full_replay_and_rebuild(tmp_path_factory: Any, rnd: random.Random,
                                                           ops: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("replay")
    root = tmp / "vault"
    folder = root / ACTIVITY_DIR
    folder.mkdir(parents=True)
    (folder / "2026-11.jsonl").write_bytes(b"".join(lines_of(rnd, 5, 11)))
    db = IndexDB(tmp / "index" / "index.db")
    with db.write():
        replay_activity(root, db)
    for op in ops:
        files = sorted(folder.glob("*.jsonl"))
        f = rnd.choice(files)
        if op == "append":
            with f.open("ab") as fh:
                fh.write(b"".join(lines_of(rnd, rnd.randrange(1, 4), int(f.stem[-2:]))))
        elif op == "merge":  # git's union merge: the other clone's lines land in the middle, in a new file
            lines = f.read_bytes().splitlines(keepends=True)
            for line in lines_of(rnd, rnd.randrange(1, 4), int(f.stem[-2:])):
                lines.insert(rnd.randrange(len(lines) + 1), line)
            f.unlink()
            f.write_bytes(b"".join(lines))
        elif op == "new":
            with (folder / "2026-12.jsonl").open("ab") as fh:
                fh.write(b"".join(lines_of(rnd, 2, 12)))
        elif op == "drop":  # lines taken out (a revert): the numbers must come down again
            lines = f.read_bytes().splitlines(keepends=True)
            if lines:
                del lines[rnd.randrange(len(lines))]
            f.write_bytes(b"".join(lines))
        elif op == "read":  # what a read logs goes to the machine-local pending file of its month
            month = rnd.choice([11, 12])
            (root / PENDING_DIR).mkdir(exist_ok=True)
            with (root / PENDING_DIR / f"2026-{month}.jsonl").open("ab") as fh:
                fh.write(b"".join(lines_of(rnd, rnd.randrange(1, 4), month)))
        elif op == "flush":
            flush(root)
        elif op == "killed flush":
            interrupted_flush(root, rnd)
        else:  # a line being written: not read until it is whole
            with f.open("ab") as fh:
                fh.write(encode(event(rnd, int(f.stem[-2:])))[:-5])
        with db.write():
            replay_activity(root, db)
        oracle = tmp / f"oracle-{random.random()}"  # every line once: a copy whose flush is finished apart
        shutil.copytree(root / ".cortex", oracle / ".cortex")
        flush(oracle)
        assert numbers(db) == full_replay(root, tmp) == full_replay(oracle, tmp)
    db.close()


def test_an_append_reads_the_tail_not_the_whole_log(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    folder = root / ACTIVITY_DIR
    folder.mkdir(parents=True)
    rnd = random.Random(3)
    log = folder / "2026-11.jsonl"
    log.write_bytes(b"".join(lines_of(rnd, 2000, 11)))
    db = IndexDB(tmp_path / "index.db")
    with db.write():
        replay_activity(root, db)
    before = numbers(db)
    # Rewrite bytes in the middle, in place (same inode, same size, outside the checked windows): an append
    # after it is read from where the last replay stopped, so the middle is never read again.
    data = bytearray(log.read_bytes())
    middle = data.index(b'"n', len(data) // 2)
    data[middle + 2: middle + 3] = b"9"
    with log.open("r+b") as fh:
        fh.write(bytes(data))
    with log.open("ab") as fh:
        fh.write(encode(OpenEvent(ts=T0, client="t", path="tail.md")))
    with db.write():
        replay_activity(root, db)
    after = numbers(db)
    assert ("tail.md", 1, T0.timestamp()) in after["access"]
    assert {p for p, *_ in after["access"]} - {p for p, *_ in before["access"]} == {"tail.md"}
    db.close()


def test_a_union_merge_applies_only_the_unseen_lines(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    folder = root / ACTIVITY_DIR
    folder.mkdir(parents=True)
    rnd = random.Random(5)
    log = folder / "2026-11.jsonl"
    lines = lines_of(rnd, 500, 11)
    log.write_bytes(b"".join(lines))
    db = IndexDB(tmp_path / "index.db")
    with db.write():
        replay_activity(root, db)
        # a marker only a replay from the start would wipe out
        db.conn.execute("INSERT INTO touches(concept, count, last_ts) VALUES ('marker', 1, 0)")
    merged = [*lines[:200], encode(OpenEvent(ts=T0, client="other clone", path="merged.md")), *lines[200:]]
    log.unlink()
    log.write_bytes(b"".join(merged))
    with db.write():
        replay_activity(root, db)
    got = numbers(db)
    assert ("marker", 1, 0.0) in got["touches"]  # not replayed from the start
    got["touches"] = [t for t in got["touches"] if t[0] != "marker"]
    assert got == full_replay(root, tmp_path)
    assert ("merged.md", 1, T0.timestamp()) in got["access"]
    db.close()
