"""Where the vault's running `serve` listens: its serve lock, `serve.lock` in the index folder (machine-local,
git-ignored), holds "pid <pid> at <url>" while it serves. `serve` holds the lock (one server per vault); the hooks
and the installer read the URL from it to find the server whatever port it was started on. Standard library
only: the hook command reads it before deciding whether to load the library.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "serve.lock"
DEFAULT_INDEX_DIR = ".cortex/index"  # the library's INDEX_DIR (not imported: it would load the library)
_RECORD = re.compile(r"^pid (\d+) at (\S+)\s*$")


def lock_path(root: Path, index_dir: Path | None = None) -> Path:
    """The serve lock of a vault (in its index folder)."""
    return (index_dir or root / DEFAULT_INDEX_DIR) / LOCK_NAME


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


def recorded_url(root: Path, index_dir: Path | None = None) -> str | None:
    """The URL the vault's running `serve` recorded (a wildcard address read as loopback); None when no serve
    recorded one or its process is gone."""
    try:
        text = lock_path(root, index_dir).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = _RECORD.match(text.strip())
    if match is None or not _alive(int(match.group(1))):
        return None
    url = match.group(2).rstrip("/")
    for wildcard in ("//0.0.0.0:", "//[::]:"):
        url = url.replace(wildcard, "//127.0.0.1:")
    return url


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True
