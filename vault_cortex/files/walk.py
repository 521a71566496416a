"""The vault's file walk: every note and attachment under the root (dot-folders, the `index.exclude` globs and
unsafe symlinks left out, each skipped file with its reason), or just a few named notes looked at without walking."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import msgspec

from vault_cortex.config import IndexSettings
from vault_cortex.errors import InvalidRequest, UnsafePath
from vault_cortex.files.vault import nfc, on_disk


class VaultFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file found by the walk: its vault path (NFC, '/'), its name on disk, size and mtime."""

    path: str
    fs_path: str
    size: int
    mtime_ns: int


class Skipped(msgspec.Struct, frozen=True, kw_only=True):
    """A file the index leaves out, and why."""

    path: str
    reason: str


class Walk(msgspec.Struct, frozen=True, kw_only=True):
    notes: tuple[VaultFile, ...]
    attachments: tuple[str, ...]  # every other file's vault path, for link resolution
    skipped: tuple[Skipped, ...]


def _excluded(rel: str, patterns: list[str]) -> bool:
    """Whether a vault path (or the folder it names) matches one of the `index.exclude` globs."""
    rx = _exclusion(tuple(patterns))
    return rx is not None and (rx.match(rel) is not None or rx.match(rel + "/") is not None)


@functools.lru_cache(maxsize=16)
def _exclusion(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The globs as one compiled pattern (fnmatch's own translation): the walk tests every path once."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)) if patterns else None


def walk(root: Path, settings: IndexSettings) -> Walk:
    """Every note and attachment under root, skipping dot-folders, excluded globs and unsafe symlinks."""
    root_real = root.resolve()
    notes: dict[str, VaultFile] = {}
    attachments: list[str] = []
    skipped: list[Skipped] = []
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    seen_dirs = {str(root_real)}
    for rel_fs, st, problem in _scan(root, root_real, "", seen_dirs, settings):
        rel = nfc(rel_fs)
        if problem:
            skipped.append(Skipped(path=rel, reason=problem))
            continue
        if not rel.lower().endswith(".md"):
            attachments.append(rel)
            continue
        if st.st_size > max_bytes:
            skipped.append(
                Skipped(path=rel, reason=f"too large: {st.st_size / 1e6:.1f} MB > index.max_file_mb")
            )
            continue
        if rel in notes:
            skipped.append(Skipped(path=rel, reason="another file has the same name once NFC-normalised"))
            continue
        notes[rel] = VaultFile(path=rel, fs_path=rel_fs, size=st.st_size, mtime_ns=st.st_mtime_ns)
    return Walk(
        notes=tuple(sorted(notes.values(), key=lambda f: f.path)),
        attachments=tuple(sorted(attachments)),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
    )


def stat_notes(root: Path, settings: IndexSettings, paths: Iterable[str],
               fs_paths: Mapping[str, str] | None = None) -> Walk | None:
    """What `walk` would say about just these vault paths, without walking: a path that is not a note now
    (gone, excluded, in a dot-folder) is left out. None when a path needs the walk's care (a symlink on the
    way, a name that is not NFC): the caller walks instead. `fs_paths` are the names the index saw on disk."""
    root_real = root.resolve()
    notes: list[VaultFile] = []
    skipped: list[Skipped] = []
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    for rel in sorted(set(paths)):
        rel_fs = (fs_paths or {}).get(rel, rel)
        if rel_fs != rel or nfc(rel) != rel or not rel.lower().endswith(".md"):
            return None
        parts = rel.split("/")
        if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            continue
        if any(_excluded("/".join(parts[:i]), settings.exclude) for i in range(1, len(parts) + 1)):
            continue
        file = root / rel
        try:
            st = file.lstat()
        except FileNotFoundError:
            if file.parent.exists() and os.path.realpath(file.parent) != str(root_real / os.path.dirname(rel)):
                return None
            if not rel.isascii() and _other_form_exists(root, rel):
                return None  # saved under a name in another normalisation (`Cafe\u0301.md`): the walk finds it
            continue
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or os.path.realpath(file) != str(root_real / rel):
            return None  # a symlink (or one on the way): the walk knows the rules
        if st.st_size > max_bytes:
            skipped.append(Skipped(path=rel, reason=f"too large: {st.st_size / 1e6:.1f} MB > index.max_file_mb"))
            continue
        notes.append(VaultFile(path=rel, fs_path=rel, size=st.st_size, mtime_ns=st.st_mtime_ns))
    return Walk(notes=tuple(notes), attachments=(), skipped=tuple(skipped))


def _scan(
    root: Path, root_real: Path, prefix: str, seen: set[str], settings: IndexSettings
) -> Iterator[tuple[str, os.stat_result, str]]:
    try:
        entries = sorted(os.scandir(root / prefix if prefix else root), key=lambda e: e.name)
    except OSError as exc:
        yield prefix or ".", os.stat_result((0,) * 10), f"cannot list folder: {exc.strerror}"
        return
    for entry in entries:
        rel = f"{prefix}{entry.name}"
        if entry.name.startswith("."):
            continue
        if _excluded(nfc(rel), settings.exclude):
            continue
        try:
            st = entry.stat(follow_symlinks=True)
        except OSError as exc:
            reason = "symlink loop" if exc.errno == 40 else f"cannot read: {exc.strerror or exc}"
            if entry.is_symlink() and not os.path.exists(entry.path):
                reason = "broken symlink" if exc.errno != 40 else "symlink loop"
            yield rel, os.stat_result((0,) * 10), reason
            continue
        if entry.is_symlink():
            real = Path(os.path.realpath(entry.path))
            if not real.is_relative_to(root_real):
                yield rel, st, "symlink points outside the vault"
                continue
            if any(p.startswith(".") for p in real.relative_to(root_real).parts):
                yield rel, st, "symlink points into a dot-folder"
                continue
        if stat.S_ISDIR(st.st_mode):
            real_dir = os.path.realpath(entry.path)
            if real_dir in seen:
                yield rel, st, "symlink loop (folder already visited)"
                continue
            seen.add(real_dir)
            yield from _scan(root, root_real, rel + "/", seen, settings)
        elif stat.S_ISREG(st.st_mode):
            yield rel, st, ""


def _other_form_exists(root: Path, rel: str) -> bool:
    """Whether a file exists for a vault path only under a name in another Unicode normalisation."""
    try:
        return os.path.lexists(on_disk(root, rel))
    except (UnsafePath, InvalidRequest):
        return False
