"""Where activity lines are kept: the versioned month files, the machine-local pending files, and the flush
that moves one into the other.

- `.cortex/activity/YYYY-MM.jsonl` is versioned and merged by git's union driver. Writes (edits, touches,
  reinforcements) append here: they change a note anyway, so the tree is dirty already.
- `.cortex/pending-activity/YYYY-MM.jsonl` is machine-local (a `.gitignore` inside ignores the folder, itself
  included). Reads (recall, open) append here, so a vault that is only read keeps a clean `git status`. The
  index replays both; `flush` moves the pending lines into the versioned files when the user chooses (sleep
  apply, `vault-cortex activity flush`).
- A versioned file holding git conflict markers (a merge without the union driver) is left for the user to
  resolve: new lines go to a sibling, `YYYY-MM.2.jsonl`, and `doctor` names the conflicted one.

Replay groups the files by month (`month_key`): a flush moves lines between files of one month, so the lines
of a month, counted over its files, stay the same.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ACTIVITY_DIR = ".cortex/activity"
PENDING_DIR = ".cortex/pending-activity"
FLUSHING = ".flush"  # a pending file being moved: `YYYY-MM.jsonl.flush`, and where it goes, `… .flush.at`
_IGNORE = "# Activity not yet in the versioned log (.cortex/activity/): machine-local, never committed.\n*\n"
_MARKER = re.compile(rb"^(?:<{7}|={7}|>{7})(?: |$)", re.M)
_checked: dict[Path, tuple[int, int, int, bool]] = {}  # path -> (inode, size, mtime_ns, conflicted)


def month_key(path: Path) -> str:
    """The month a log file holds (`2026-12.jsonl` for `2026-12.jsonl`, `2026-12.2.jsonl`, a pending file and
    one being flushed): replay counts a month's lines over all its files."""
    return path.name.split(".", 1)[0] + ".jsonl"


def file_key(root: Path, path: Path) -> str:
    """A log file's name relative to `.cortex/`: `activity/2026-12.jsonl`, `pending-activity/2026-12.jsonl`."""
    return path.relative_to(root / ".cortex").as_posix()


def log_files(root: Path) -> list[Path]:
    """Every file that holds activity lines: versioned, pending and being flushed, by month."""
    found = []
    for folder, patterns in ((root / ACTIVITY_DIR, ("*.jsonl",)),
                             (root / PENDING_DIR, ("*.jsonl", f"*.jsonl{FLUSHING}"))):
        if folder.is_dir():
            found += [f for pattern in patterns for f in folder.glob(pattern) if f.is_file()]
    return sorted(found, key=lambda f: (month_key(f), f.parent.name, f.name))


def has_conflict_markers(path: Path) -> bool:
    """Whether a versioned file holds git conflict markers; remembered while the file stays as it was."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    seen = _checked.get(path)
    if seen and seen[:3] == (st.st_ino, st.st_size, st.st_mtime_ns):
        return seen[3]
    found = bool(_MARKER.search(path.read_bytes()))
    _checked[path] = (st.st_ino, st.st_size, st.st_mtime_ns, found)
    return found


def conflicted(root: Path) -> list[str]:
    """The versioned files holding git conflict markers, as paths relative to the vault."""
    folder = root / ACTIVITY_DIR
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    return [f.relative_to(root).as_posix() for f in files if has_conflict_markers(f)]


def versioned_file(root: Path, month: str) -> Path:
    """The versioned file new lines of `month` (`YYYY-MM`) go to: the month's file, or its first sibling
    without conflict markers."""
    folder = root / ACTIVITY_DIR
    n = 1
    while True:
        path = folder / (f"{month}.jsonl" if n == 1 else f"{month}.{n}.jsonl")
        if not has_conflict_markers(path):
            return path
        n += 1


def pending_file(root: Path, month: str) -> Path:
    return root / PENDING_DIR / f"{month}.jsonl"


def _remember(path: Path, conflicted: bool) -> None:
    st = path.stat()
    _checked[path] = (st.st_ino, st.st_size, st.st_mtime_ns, conflicted)


def _write_all(path: Path, data: bytes) -> None:
    """One O_APPEND write of whole lines, so concurrent writers never interleave them; a line a crash cut short
    stays alone on its line instead of swallowing the first one written after it. The file is locked while its
    last byte is checked: a reader sees another process's write land page by page, and a line half landed is
    not a torn one (reading it as torn added a blank line)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by close, or by the kernel when a writer dies
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = os.write(fd, data)
    finally:
        os.close(fd)
    if written != len(data):
        raise OSError(f"short write to {path}: {written} of {len(data)} bytes")


@contextmanager
def _pending_lock(root: Path, kind: int) -> Iterator[None]:
    """Appenders hold it shared, a flush exclusively (appends wait for a flush, which takes milliseconds)."""
    folder = root / PENDING_DIR
    if not (folder / ".gitignore").exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".gitignore").write_text(_IGNORE, encoding="utf-8")
    with open(folder / ".lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), kind)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def append_line(root: Path, month: str, data: bytes, *, pending: bool) -> None:
    """Append one encoded line to the month's pending file (a read) or versioned file (a write)."""
    if pending:
        with _pending_lock(root, fcntl.LOCK_SH):
            _write_all(pending_file(root, month), data)
        return
    path = versioned_file(root, month)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_all(path, data)
    _remember(path, False)  # our own line added no marker: no need to read the file again


def pending_lines(root: Path) -> int:
    """How many lines wait in the pending files."""
    return sum(f.read_bytes().count(b"\n") for f in log_files(root) if f.parent.name != "activity")


def flush(root: Path) -> list[str]:
    """Move every pending line into the versioned file of its month, exactly once, and return the versioned
    files written (vault-relative). One flush at a time, whichever process and index folder it runs from (the
    pending lock is held throughout: two flushes moving one file wrote its lines twice); a flush interrupted at
    any point is finished by the next one (or by the next replay)."""
    folder = root / PENDING_DIR
    if not folder.is_dir():
        return []
    with _pending_lock(root, fcntl.LOCK_EX):  # and no append is half done in a file taken away here
        written = {_move(root, f) for f in sorted(folder.glob(f"*.jsonl{FLUSHING}"))}  # an interrupted one first
        _drop_orphan_notes(folder)
        for f in sorted(folder.glob("*.jsonl")):
            f.rename(f.with_name(f.name + FLUSHING))
        written |= {_move(root, f) for f in sorted(folder.glob(f"*.jsonl{FLUSHING}"))}
    return sorted(written - {""})


def finish_flush(root: Path) -> None:
    """Finish a flush that was interrupted, so its lines are never counted twice (in both places)."""
    folder = root / PENDING_DIR
    if folder.is_dir() and any(folder.glob(f"*.jsonl{FLUSHING}")):
        with _pending_lock(root, fcntl.LOCK_EX):
            for f in sorted(folder.glob(f"*.jsonl{FLUSHING}")):
                _move(root, f)
            _drop_orphan_notes(folder)


def _drop_orphan_notes(folder: Path) -> None:
    """Remove each note of where a file went (`… .flush.at`) whose file is gone: its move finished (the file is
    removed first) and the flush died before removing the note. Left, the next flush of that month took it for
    its own and dropped any of its lines found after the noted offset: a read logged again in the same second."""
    for note in folder.glob(f"*.jsonl{FLUSHING}.at"):
        if not note.with_name(note.name.removesuffix(".at")).exists():
            note.unlink(missing_ok=True)


def _move(root: Path, f: Path) -> str:
    """Append one taken-away pending file to its versioned file, once: where it goes and at which offset is
    written down first, so a second attempt sees whether the first one got there."""
    whole = f.read_bytes()
    whole = whole[:whole.rfind(b"\n") + 1]  # a line torn by a crash was never whole: never replayed, not moved
    data = whole
    at_file = f.with_name(f.name + ".at")
    target: Path | None = None
    if at_file.exists():
        try:
            where = json.loads(at_file.read_text(encoding="utf-8"))
            target = root / ACTIVITY_DIR / str(where["file"])
            if data and target.exists() and data in target.read_bytes()[int(where["at"]):]:
                data = b""  # it got there before the interruption
        except (ValueError, KeyError, TypeError, OSError):
            target = None
    if data:
        if target is None:
            target = versioned_file(root, f.name.split(".", 1)[0])
            target.parent.mkdir(parents=True, exist_ok=True)
            at = target.stat().st_size if target.exists() else 0
            tmp = at_file.with_name(at_file.name + ".tmp")
            tmp.write_text(json.dumps({"file": target.name, "at": at}), encoding="utf-8")
            os.replace(tmp, at_file)
        _write_all(target, data)
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _remember(target, False)
    f.unlink()
    at_file.unlink(missing_ok=True)
    return target.relative_to(root).as_posix() if target is not None and whole else ""


KEY_FILE = "query.key"  # beside the index, never versioned: the key of the hooks' query fingerprints


def fingerprint_key(index_dir: Path) -> bytes:
    """The vault's secret key for query fingerprints (`privacy.fingerprint`), in its index folder; made on first
    use (mode 0600). A lost key only makes later fingerprints differ from earlier ones."""
    path = index_dir / KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    index_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{KEY_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_bytes(32))
    try:
        os.link(tmp, path)  # the first writer's key wins; another process's is read back
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()
