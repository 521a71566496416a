"""Where the vault's running `serve` listens: its serve lock, `serve.lock` in the index folder (machine-local,
git-ignored), holds "pid <pid> at <url>" while it serves. `serve` holds the lock (one server per vault); the hooks
and the installer read the URL from it to find the server whatever port it was started on. Standard library
only: the hook command reads it before deciding whether to load the library.
"""

from __future__ import annotations

import os
import re
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
    """Where a serve of this vault may have recorded itself: the index folder given (`--index-dir`, else
    $VAULT_CORTEX_INDEX_DIR), then the vault's own. A read-only vault's index in the user cache is not looked
    for (finding it takes the library, which a hook loads only when no server answers)."""
    given = index_dir or (Path(env[INDEX_DIR_ENV]).expanduser() if env.get(INDEX_DIR_ENV, "").strip() else None)
    return list(dict.fromkeys([*([lock_path(root, given)] if given else []), lock_path(root)]))


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
