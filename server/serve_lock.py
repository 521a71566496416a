"""Where the vault's running `serve` listens: its serve lock, `serve.lock` in the index folder (machine-local,
git-ignored), holds "pid <pid> at <url>" while it serves. `serve` holds the lock (one server per vault); the hooks
and the installer read the URL from it to find the server whatever port it was started on. Standard library
only: the hook command reads it before deciding whether to load the library.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "serve.lock"
DEFAULT_INDEX_DIR = ".cortex/index"  # the library's INDEX_DIR (not imported: it would load the library)
INDEX_DIR_ENV = "VAULT_CORTEX_INDEX_DIR"  # vault_cortex.index.location's, for the same reason
_RECORD = re.compile(r"^pid (\d+) at (\S+)\s*$")


def lock_path(root: Path, index_dir: Path | None = None) -> Path:
    """The serve lock of a vault (in its index folder)."""
    return (index_dir or root / DEFAULT_INDEX_DIR) / LOCK_NAME


def lock_paths(root: Path, index_dir: Path | None, env: Mapping[str, str]) -> list[Path]:
    """Where a serve of this vault may have recorded itself: in each of its possible index folders."""
    return [folder / LOCK_NAME for folder in index_dirs(root, index_dir, env)]


def index_dirs(root: Path, index_dir: Path | None, env: Mapping[str, str]) -> list[Path]:
    """The folders a vault's index may be kept in, the likeliest first: the one given (`--index-dir`, else
    $VAULT_CORTEX_INDEX_DIR), the vault's own, then a read-only vault's in the user cache."""
    given = index_dir or (Path(env[INDEX_DIR_ENV]).expanduser() if env.get(INDEX_DIR_ENV, "").strip() else None)
    try:
        cached = [cached_index(root, env)]
    except (OSError, RuntimeError):  # no home folder to find the cache in (or the path does not resolve)
        cached = []
    return list(dict.fromkeys([*([given] if given else []), root / DEFAULT_INDEX_DIR, *cached]))


def cached_index(root: Path, env: Mapping[str, str]) -> Path:
    """A read-only vault's index folder in the user cache: the library's `index.location.cached_index` (not
    imported: it would load the library), named after the vault's folder and a hash of its full path."""
    root = root.resolve()
    if env.get("XDG_CACHE_HOME", "").strip():
        cache = Path(env["XDG_CACHE_HOME"]).expanduser()
    elif sys.platform == "darwin":
        cache = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32" and env.get("LOCALAPPDATA"):
        cache = Path(env["LOCALAPPDATA"])
    else:
        cache = Path.home() / ".cache"
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return cache / "vault-cortex" / "indexes" / f"{root.name or 'vault'}-{digest}"


@contextmanager
def sole_server(index_dir: Path, url: str) -> Iterator[str | None]:
    """Hold the vault's serve lock while serving (released when the process ends, however it ends); yields None,
    or when another serve holds it, what it wrote there: its pid and URL."""
    import fcntl

    path = index_dir / LOCK_NAME
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            yield fh.read().strip() or f"a process that holds .cortex/index/{LOCK_NAME}"
            return
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} at {url}\n")
        fh.flush()
        try:
            yield None
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def recorded_url(root: Path, index_dir: Path | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The URL the vault's running `serve` recorded (a wildcard address read as loopback); None when no serve
    recorded one or its process is gone."""
    for path in lock_paths(root, index_dir, os.environ if env is None else env):
        record = read_record(path)
        if record is not None and alive(record[0]):
            return record[1]
    return None


def read_record(path: Path) -> tuple[int, str] | None:
    """The pid and URL a serve wrote in its lock file, a wildcard address read as loopback; None when the file is
    missing or holds no record (whether that process still runs is the caller's question)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = _RECORD.match(text.strip())
    if match is None:
        return None
    url = match.group(2).rstrip("/")
    for wildcard in ("//0.0.0.0:", "//[::]:"):
        url = url.replace(wildcard, "//127.0.0.1:")
    return int(match.group(1)), url


def held(path: Path) -> bool:
    """Whether a serve holds this lock file now: the OS lock it takes, released however that process ended."""
    import fcntl

    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - held across the lock test below
    except OSError:
        return False
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def alive(pid: int) -> bool:
    """Whether a process of this pid runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True
