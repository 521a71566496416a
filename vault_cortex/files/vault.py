"""File IO on the vault: reading notes, atomic writes, and creating a vault from the template (its walk is
`walk`'s)."""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import logging
import os
import re
import shutil
import stat
import tempfile
import unicodedata
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import msgspec

from vault_cortex.errors import InvalidRequest, UnsafePath, VaultExists, VaultReadOnly, WriteConflict
from vault_cortex.limits import lone_surrogate

log = logging.getLogger(__name__)

ARCHIVE = "archive"
MAX_NAME_BYTES = 255  # a file or folder name, as most file systems allow


def _umask_at_import() -> int:
    """The process umask, read at import, before any thread (setting it to read it is not thread-safe)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask_at_import()


def umask() -> int:
    """The process umask now (Linux shows it in /proc without changing it), else as it was at import."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return _UMASK


class NoteDoc(msgspec.Struct, frozen=True, kw_only=True):
    """A note's full text and its ETag (the content hash), for read-modify-write with If-Match."""

    path: str
    content: str
    etag: str
    warnings: list[str] = msgspec.field(default_factory=list)  # what the caller should know (a dangling link)


def nfc(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def content_hash(data: bytes) -> str:
    """The hash that confirms a file changed (and that a write is refused on when it differs)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Existing:
    """The vault paths something is at on disk now, as a container: `rel in Existing(root)` (for `unique_path`,
    where listing a whole folder would cost more than asking for the few names it tries)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and (self.root / rel).exists()


def note_path(root: Path, rel: str) -> Path:
    """The file for a vault-relative note path, refusing anything that is not a note inside the vault."""
    if not rel or "\x00" in rel or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise UnsafePath(f"not a vault-relative path: {rel!r}")
    parts = rel.replace("\\", "/").split("/")
    if any(p in ("", ".", "..") for p in parts) or any(p.startswith(".") for p in parts):
        raise UnsafePath(f"path must be relative, without '..' or dot-folders: {rel!r}")
    if not rel.lower().endswith(".md"):
        raise UnsafePath(f"only .md notes can be read or written: {rel!r}")
    if lone_surrogate(rel) is not None:
        raise InvalidRequest(f"the path is not valid Unicode (it holds a lone surrogate): {rel!r}")
    if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in parts):
        raise InvalidRequest(f"a file or folder name is at most {MAX_NAME_BYTES} bytes: {rel[:60]!r}…")
    root_real = root.resolve()
    target = (root / "/".join(parts)).resolve()
    if not target.is_relative_to(root_real):
        raise UnsafePath(f"path resolves outside the vault: {rel!r}")
    if any(p.startswith(".") for p in target.relative_to(root_real).parts):
        raise UnsafePath(f"path resolves into a dot-folder (a symlink?): {rel!r}")
    literal = root / rel
    if "\\" in rel and os.sep == "/" and os.path.lexists(literal):  # a name that holds a backslash: its parts
        real = Path(os.path.realpath(literal))  # were checked as if it were a separator; now the file itself
        if real.is_relative_to(root_real) and not any(p.startswith(".") for p in real.relative_to(root_real).parts):
            return literal
    return root / "/".join(parts)


def on_disk(root: Path, rel: str) -> Path:
    """The file a vault path names, whatever the normalisation of the names on disk: `Café.md` finds a file
    written `Cafe\u0301.md` (as macOS and some sync tools write names), folder by folder, so reading, editing or
    moving it never misses it or makes a twin. Each name is tried as given, composed (NFC) and decomposed (NFD):
    a few stats, never a listing of the folder. The path as given when no such file exists (a new note);
    `note_path`'s checks first."""
    file = note_path(root, rel)
    if os.path.lexists(file):
        return file
    here = root
    for part in file.relative_to(root).parts:
        forms = dict.fromkeys([part, nfc(part), unicodedata.normalize("NFD", part)])
        step = next((here / f for f in forms if os.path.lexists(here / f)), None)
        if step is None:  # not on disk in any form: the note (or its folder) is new
            return file
        here = step
    real, root_real = Path(os.path.realpath(here)), root.resolve()
    if not real.is_relative_to(root_real) or any(p.startswith(".") for p in real.relative_to(root_real).parts):
        return file  # the same checks as note_path, for the name found on disk (a symlink?)
    return here


class NotRegular(OSError):
    """A path that exists but is no regular file: a folder, a FIFO, a device or a socket is never a note."""


def read_regular(path: Path) -> bytes:
    """A file's bytes, refusing anything but a regular file without blocking on it (a FIFO named `x.md` would
    hang the reader forever, a device would be read without end): NotRegular. FileNotFoundError if missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a FIFO opened for writing): no file to read
            raise NotRegular(f"{path.name} is a socket, not a note") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "folder" if stat.S_ISDIR(mode) else "FIFO" if stat.S_ISFIFO(mode) else "device or socket"
            raise NotRegular(f"{path.name} is a {kind}, not a note")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"  # an atomic write's temp file beside its note: `.<8 random>.tmp`
_TEMP = re.compile(r"^\.[a-z0-9_]{8}\.tmp$")  # as tempfile.mkstemp names it


def remove_stale_temps(folder: Path) -> list[str]:
    """Remove the temp files that atomic writes killed part way left in a folder (a hook's timeout); only under the
    vault's write lock, when no write of the vault is under way. Returns their names."""
    try:
        found = [e for e in os.scandir(folder) if _TEMP.match(e.name) and e.is_file(follow_symlinks=False)]
    except OSError:
        return []
    for entry in found:
        Path(entry.path).unlink(missing_ok=True)
    return [e.name for e in found]


def atomic_write(path: Path, data: bytes, expected_hash: str | None) -> None:
    """Write via a temp file in the same folder, fsync and rename; refuse if the file changed underneath.

    expected_hash is the content hash the caller read (None = the file must not exist yet). A symlink is
    written through: its target changes and the link stays. A new file gets the mode the umask allows.
    """
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        current: bytes | None = read_regular(path)
    except FileNotFoundError:
        current = None
    except NotRegular as exc:
        raise InvalidRequest(f"{exc}: it is never written over") from None
    if expected_hash is None and current is not None:
        raise WriteConflict(f"{path.name} already exists")
    if expected_hash is not None and (current is None or content_hash(current) != expected_hash):
        raise WriteConflict(f"{path.name} changed on disk since it was read; the write was refused")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if current is not None else 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


_RENAME_NOREPLACE = 1  # renameat2's flag on Linux
_RENAME_EXCL = 4  # renamex_np's flag on macOS
_AT_FDCWD = -100


@functools.lru_cache(maxsize=1)
def _rename_noreplace() -> Callable[[bytes, bytes], int] | None:
    """The C library's rename that refuses an existing destination (Linux renameat2, macOS renamex_np): 0 when
    done, else -1 with errno set; None when the C library has neither."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    linux = getattr(libc, "renameat2", None)
    if linux is not None:
        return lambda src, dest: int(linux(_AT_FDCWD, src, _AT_FDCWD, dest, _RENAME_NOREPLACE))
    mac = getattr(libc, "renamex_np", None)
    if mac is not None:
        return lambda src, dest: int(mac(src, dest, _RENAME_EXCL))
    return None


def rename_new(src: Path, dest: Path) -> None:
    """Move a file to a name that must not exist yet (FileExistsError), as one rename(2): the inode travels, so
    an editor that holds the note open, or opened it just before, saves into the moved note. A copy and an
    unlink left a window in which such a save went into the unlinked file.

    One atomic call where the file system can (renameat2 RENAME_NOREPLACE, renamex_np RENAME_EXCL); where it
    cannot (NFS, some FUSE mounts: EINVAL), a hard link (which refuses an existing name too) and an unlink of
    the old name, so the inode still travels; where links are refused too (exFAT, some sync mounts), a rename
    after checking the name is free: the caller holds the write lock, so only a writer outside vault-cortex
    could create it in between."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    rename = _rename_noreplace()
    if rename is not None:
        if rename(os.fsencode(src), os.fsencode(dest)) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(src), None, str(dest))
    try:
        os.link(src, dest, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EACCES):
            raise
        if os.path.lexists(dest):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dest)) from None
        os.rename(src, dest)
        return
    os.unlink(src)


def fsync_dir(folder: Path) -> None:
    """Make a folder's entries durable (a rename or an unlink in it survives a power cut)."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def template_dir() -> Path:
    """The starter vault shipped with the package."""
    return Path(str(resources.files("vault_cortex.template")))


def is_vault(path: Path) -> bool:
    return (path / ".cortex").is_dir()


def writable(folder: Path) -> bool:
    """Whether files can be created in `folder`: not on a read-only mount and writable by this user (a root
    process passes the permission check, never the read-only mount's)."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def require_writable(dest: Path) -> None:
    """Refuse, in one line, to make a vault in a folder that cannot be written (or under one, when it is missing)."""
    existing = next(p for p in (dest, *dest.absolute().parents) if p.exists())
    if not writable(existing):
        raise VaultReadOnly(f"{dest} cannot be written (a read-only folder or mount): a vault needs a folder "
                            "vault-cortex can write to")


def init_vault(dest: Path) -> None:
    """Copy the starter vault to dest; refuse if dest already holds anything."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        what = "a vault" if is_vault(dest) else "files"
        raise VaultExists(f"{dest} already holds {what}; init never overwrites (choose an empty folder)")
    require_writable(dest)
    src = template_dir()
    shutil.copytree(
        src,
        dest,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__init__.py", "__pycache__"),
    )
    log.info("created vault %s from the template", dest)
