"""Where a vault's index lives: `.cortex/index/` in the vault, or elsewhere when asked (`--index-dir`) or when
the vault is read-only (a backup snapshot, a read-only share), which is then searched without a byte written
to it: the index goes to the user's cache folder, one per vault."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec

from vault_cortex.files.vault import writable
from vault_cortex.index.upkeep import INDEX_DIR

INDEX_DIR_ENV = "VAULT_CORTEX_INDEX_DIR"


class IndexLocation(msgspec.Struct, frozen=True, kw_only=True):
    """The index folder for a vault, whether the vault may be written, and the line that says so (None when the
    index is in its usual place in a writable vault)."""

    path: Path
    read_only: bool
    notice: str | None


def user_cache(env: Mapping[str, str]) -> Path:
    """The user's cache folder: $XDG_CACHE_HOME, else the platform's (~/Library/Caches, %LOCALAPPDATA%, ~/.cache)."""
    if env.get("XDG_CACHE_HOME", "").strip():
        return Path(env["XDG_CACHE_HOME"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"])
    return Path.home() / ".cache"


def cached_index(root: Path, env: Mapping[str, str]) -> Path:
    """A read-only vault's index in the user cache: named after the vault's folder and a hash of its full path.
    The hooks name it without loading the library (`server/serve_lock.py`'s copy, which a test keeps the same)."""
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return user_cache(env) / "vault-cortex" / "indexes" / f"{root.name or 'vault'}-{digest}"


def index_location(root: Path, index_dir: Path | None, env: Mapping[str, str]) -> IndexLocation:
    """The index folder for the vault at `root` (resolved): `index_dir` (the `--index-dir` flag), else
    $VAULT_CORTEX_INDEX_DIR, else `.cortex/index` in a writable vault, else the user cache."""
    read_only = not writable(root) or not writable(root / ".cortex")
    chosen = index_dir or (Path(env[INDEX_DIR_ENV]) if env.get(INDEX_DIR_ENV, "").strip() else None)
    state = ("the vault is read-only: nothing is written to it (no activity log, no token file; writes are "
             "refused)") if read_only else ""
    if chosen is not None:
        path = chosen.expanduser().resolve()
        notice = f"the index is kept in {path}" + (f"; {state}" if read_only else "")
        return IndexLocation(path=path, read_only=read_only, notice=notice)
    if not read_only:
        return IndexLocation(path=root / INDEX_DIR, read_only=False, notice=None)
    path = cached_index(root, env)
    return IndexLocation(path=path, read_only=True, notice=f"{state}; its index is kept in {path}")
