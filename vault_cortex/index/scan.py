"""The vault's files compared with the index's record of them: unchanged (by size and mtime, else by hash),
changed (with their bytes), gone; a file modified within the timestamp tick of the scan recorded racily clean."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from vault_cortex.files.note import is_binary
from vault_cortex.files.vault import content_hash
from vault_cortex.files.walk import Skipped, VaultFile, Walk
from vault_cortex.index.rows import FileState

BINARY_NOTE = "binary file named .md"
# A file modified this close to a scan may be rewritten within the same timestamp tick, keeping its size and
# mtime (FAT's 2 s is the coarsest common tick; SMB shares and ext4's jiffy clock are finer): it is recorded
# "racily clean" (git's term) and the next sync hashes it again. Files older than that are trusted by stat.
RACY_WINDOW_NS = 2_000_000_000
RACILY_CLEAN = -1  # the size recorded for such a file: it never matches a stat, so the next sync re-hashes


def file_state(f: VaultFile, digest: str, scanned_ns: int) -> FileState:
    """What the index records of a file it hashed during a scan that started at `scanned_ns` (wall clock):
    a file modified within RACY_WINDOW_NS of that is marked racily clean, to be hashed again next time."""
    racy = f.mtime_ns >= scanned_ns - RACY_WINDOW_NS
    return FileState(fs_path=f.fs_path, size=RACILY_CLEAN if racy else f.size, mtime_ns=f.mtime_ns, hash=digest)


class Scan(msgspec.Struct, frozen=True, kw_only=True):
    """What a sync's first stage found: the walk, the index's states of the files, and each file's verdict."""

    scanned_ns: int  # when the scan started (wall clock): a file modified close to it is racily clean
    walked: Walk
    states: dict[str, FileState]
    skipped: list[Skipped]
    unchanged: list[tuple[str, FileState]]
    todo: list[tuple[VaultFile, bytes, str]]  # changed: the file, its bytes, their hash
    gone: list[str]
    # A sync that does not finish leaves links unresolved (and new paths unknown to older links): its marker,
    # found here, makes the next full sync resolve every link.
    pending_before: bool


def compare(root: Path, walked: Walk, states: dict[str, FileState], covers: Callable[[str], bool], *,
            scanned_ns: int, contents: bool, rederive: bool, pending_before: bool) -> Scan:
    """Which of the walked notes `covers` admits are unchanged (size/mtime, else hash), changed (with their bytes)
    or gone, against the index's `states`. A note recorded racily clean has no size to match: it is hashed again.
    `contents`: hash every file; `rederive`: every note is changed."""
    skipped = [s for s in walked.skipped if covers(s.path)]
    unchanged: list[tuple[str, FileState]] = []
    todo: list[tuple[VaultFile, bytes, str]] = []
    for f in walked.notes:
        if not covers(f.path):
            continue
        old = states.get(f.path)
        if (not contents and not rederive and old and old.size == f.size and old.mtime_ns == f.mtime_ns
                and old.fs_path == f.fs_path):
            unchanged.append((f.path, old))
            continue
        try:
            data = (root / f.fs_path).read_bytes()
        except OSError as exc:
            skipped.append(Skipped(path=f.path, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if is_binary(data):
            skipped.append(Skipped(path=f.path, reason=BINARY_NOTE))
            continue
        digest = content_hash(data)
        if old and old.hash == digest and not rederive:
            unchanged.append((f.path, file_state(f, digest, scanned_ns)))
            continue
        todo.append((f, data, digest))
    kept = {p for p, _ in unchanged} | {f.path for f, _, _ in todo}
    gone = sorted(p for p in states if covers(p) and p not in kept)
    return Scan(scanned_ns=scanned_ns, walked=walked, states=states, skipped=skipped, unchanged=unchanged,
                todo=todo, gone=gone, pending_before=pending_before)
