"""The activity log folded into the index incrementally: appended lines, and after a git union merge or a flush
only the lines this index has not seen, never the whole log again unless lines were taken out.

Per file (versioned, pending, being flushed) the index keeps where it stopped reading (offset, inode, digests of
the first and last 4 KiB before that offset), and per month a count of every line digest it applied. When every
file of a month only grew, the appended lines are read from the offsets on, after checking those two windows;
any other change (a merge rewrote a file, a flush moved pending lines into the versioned file) compares the
month's line digests with the seen ones and applies the surplus, so lines moved between a month's files count
once. Lines removed, or a month gone, replay the log from the start. Replay is a commutative fold, so each way
gives the same numbers as a full replay.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

from vault_cortex.files.activity import Event, decode_lines, replay
from vault_cortex.files.activity_files import file_key, finish_flush, log_files, month_key
from vault_cortex.index.db import IndexDB

log = logging.getLogger(__name__)

WINDOW = 4096  # bytes checked at the start of a file and before the last offset read


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


def _mark(data: bytes, end: int, ino: int) -> dict[str, Any]:
    """What is remembered of a file read up to `end`: enough to tell an append from a rewrite."""
    return {"end": end, "ino": ino, "head": _digest(data[:min(WINDOW, end)]),
            "tail": _digest(data[max(0, end - WINDOW):end])}


def activity_signature(root: Path) -> str:
    """Names, sizes and mtimes of the activity log's files (versioned and pending): a change means the log must
    be replayed."""
    parts = []
    for f in log_files(root):
        st = f.stat()
        parts.append(f"{file_key(root, f)}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def replay_activity(root: Path, db: IndexDB) -> None:
    """Fold the activity log into the index, reading and applying only what it has not seen. Call inside a
    write transaction (under the vault's write lock, which a flush holds too)."""
    try:
        finish_flush(root)  # an interrupted flush's lines are in two places: finish it before counting
    except OSError as exc:
        log.warning("could not finish an interrupted activity flush: %s", exc)
    files = log_files(root)
    state: dict[str, Any] = json.loads(db.get_meta("activity_state") or "{}")
    months: dict[str, list[Path]] = {}
    for f in files:
        months.setdefault(month_key(f), []).append(f)
    if (any(not isinstance(v, dict) or "/" not in k for k, v in state.items())
            or {month_key(Path(k)) for k in state} - set(months)):
        _full(root, files, db)  # an older index's state, or a month gone: its lines must come out of the numbers
        return
    new_state: dict[str, Any] = {}
    fresh: list[bytes] = []
    for month, group in months.items():
        keys = [file_key(root, f) for f in group]
        gone = any(month_key(Path(k)) == month and k not in keys for k in state)
        got = None if gone else _appended_all(group, keys, state)
        if got is not None:
            lines, marks = got
        else:
            lines, marks = [], {}
            for f, key in zip(group, keys, strict=True):
                data = f.read_bytes()
                end = data.rfind(b"\n") + 1  # whole lines only; a line being written is read next time
                lines += _lines(data[:end])
                marks[key] = _mark(data, end, os.stat(f).st_ino)
            have = db.seen_lines(month)
            counts = Counter(_digest(line) for line in lines)
            if any(counts[d] < n for d, n in have.items()):
                _full(root, files, db)  # lines were removed: numbers cannot be taken back, replay all
                return
            lines = _surplus(lines, have)  # only lines beyond those already seen, wherever they now are
        new_state.update(marks)
        db.add_seen_lines(month, Counter(_digest(line) for line in lines))
        fresh += lines
    events, bad = decode_lines(b"\n".join(fresh))
    if events:
        db.add_activity(replay(events))
    db.set_meta("activity_state", json.dumps(new_state, sort_keys=True))
    if bad:
        log.warning("the activity log has %d malformed lines (skipped)", bad)


def _appended_all(group: list[Path], keys: list[str],
                  state: dict[str, Any]) -> tuple[list[bytes], dict[str, Any]] | None:
    """The lines appended to every file of a month, or None when one is new or changed other than by
    appending."""
    lines: list[bytes] = []
    marks: dict[str, Any] = {}
    for f, key in zip(group, keys, strict=True):
        seen = state.get(key)
        got = _appended(f, seen) if seen else None
        if got is None:
            return None
        lines += got[0]
        marks[key] = got[1]
    return lines, marks


def _appended(f: Path, seen: dict[str, Any]) -> tuple[list[bytes], dict[str, Any]] | None:
    """The whole lines appended since `seen`, or None when the file changed other than by appending."""
    st = os.stat(f)
    end0 = int(seen["end"])
    if st.st_ino != seen["ino"] or st.st_size < end0:
        return None
    with open(f, "rb") as fh:
        head = fh.read(min(WINDOW, end0))
        fh.seek(max(0, end0 - WINDOW))
        before = fh.read(end0 - max(0, end0 - WINDOW))
        if _digest(head) != seen["head"] or _digest(before) != seen["tail"]:
            return None
        rest = fh.read(st.st_size - end0)
    end = end0 + rest.rfind(b"\n") + 1
    window = (before + rest[: end - end0])[-WINDOW:]
    first = (head + rest[: end - end0])[:WINDOW]  # head is all of the file up to end0 when end0 < WINDOW
    mark = {"end": end, "ino": st.st_ino, "head": _digest(first), "tail": _digest(window)}
    return _lines(rest[: end - end0]), mark


def _surplus(lines: list[bytes], have: dict[str, int]) -> list[bytes]:
    """The lines beyond the counts already applied (a line written twice counts twice)."""
    left = dict(have)
    out = []
    for line in lines:
        d = _digest(line)
        if left.get(d, 0) > 0:
            left[d] -= 1
        else:
            out.append(line)
    return out


def _full(root: Path, files: list[Path], db: IndexDB) -> None:
    """Replay the whole log from the start, replacing the numbers and the seen lines."""
    db.clear_seen_lines()
    events: list[Event] = []
    bad = 0
    state = {}
    for f in files:
        data = f.read_bytes()
        end = data.rfind(b"\n") + 1
        lines = _lines(data[:end])
        got, n = decode_lines(data[:end])
        events += got
        bad += n
        db.add_seen_lines(month_key(f), Counter(_digest(line) for line in lines))
        state[file_key(root, f)] = _mark(data, end, os.stat(f).st_ino)
    db.set_activity(replay(events))
    db.set_meta("activity_state", json.dumps(state, sort_keys=True))
    if bad:
        log.warning("the activity log has %d malformed lines (skipped)", bad)
