"""A hook session's memory of itself (`.cortex/hooks/<session>.json`): the memories already injected into it and
the raw notes captured from it. Standard library only: a hook process loads it before it knows it needs the vault."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path

STATE_DIR = ".cortex/hooks"
STATE_TTL_SECONDS = 7 * 86400
SWEEP_EVERY_SECONDS = 3600  # old session files are looked for at most this often (a glob of every file costs)


def _state_dir(root: Path) -> Path:
    """`.cortex/hooks/`, or for a read-only vault a folder beside its index (nothing is written to the vault)."""
    from vault_cortex.index.location import index_location

    where = index_location(root.resolve(), None, os.environ)
    return where.path / "hooks" if where.read_only else root / STATE_DIR


class SessionState:
    """One agent session's memory of itself, in `.cortex/hooks/<session>.json`: the memory paths already injected
    into it, and the raw notes captured from it (never pushed back to it, even after a compaction)."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.dir = _state_dir(root)
        name = session_id if re.fullmatch(r"[A-Za-z0-9_-]{1,128}", session_id) else (
            hashlib.sha256(session_id.encode()).hexdigest()[:32])
        self.path = self.dir / f"{name}.json"
        self.enabled = bool(session_id)
        self.paths: set[str] = set()
        self.captured: set[str] = set()
        if self.enabled:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self.paths = {p for p in data.get("injected", []) if isinstance(p, str)}
                self.captured = {p for p in data.get("captured", []) if isinstance(p, str)}
            except (OSError, ValueError, AttributeError):
                pass

    def __contains__(self, path: object) -> bool:
        return path in self.paths or path in self.captured

    def reset(self) -> None:
        """A new, cleared or compacted conversation: nothing was injected into it yet (its captures stay its own)."""
        self.paths = set()
        if self.enabled and self.captured:
            self._save()
        elif self.enabled:
            self.path.unlink(missing_ok=True)

    def add(self, paths: Iterable[str]) -> None:
        new = set(paths) - self.paths
        if self.enabled and new:
            self.paths |= new
            self._save()

    def captured_too(self, paths: Iterable[str]) -> None:
        """Raw notes captured from this session."""
        new = set(paths) - self.captured
        if self.enabled and new:
            self.captured |= new
            self._save()

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        ignore = self.dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# per-session hook state: never versioned\n*\n", encoding="utf-8")
        tmp = self.path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # the server's threads too
        tmp.write_text(json.dumps({"injected": sorted(self.paths), "captured": sorted(self.captured),
                                   "updated": time.time()}), encoding="utf-8")
        os.replace(tmp, self.path)
        self._forget_old()

    def _forget_old(self) -> None:
        """Remove the files of sessions not updated for STATE_TTL_SECONDS, at most once in SWEEP_EVERY_SECONDS (the
        time of the last sweep is the mtime of `.swept`)."""
        now = time.time()
        stamp = self.dir / ".swept"
        try:
            if stamp.stat().st_mtime > now - SWEEP_EVERY_SECONDS:
                return
        except OSError:
            pass
        stamp.touch()
        cutoff = now - STATE_TTL_SECONDS
        for old in self.dir.glob("*.json"):
            try:
                if old.stat().st_mtime < cutoff:
                    old.unlink()
            except OSError:
                pass
