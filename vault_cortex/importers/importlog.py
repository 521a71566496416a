"""What the importers wrote, so that importing again adds nothing and never overwrites a note someone edited.

One record per origin (a transcript's path, or the name of an import kind) in `.cortex/imports/`, never
versioned: each note path the origin wrote, with the hash of the bytes written, plus where a transcript's
last exchange began so a grown transcript is read from there. Writing a note gives one of four outcomes:
`created` (it was missing), `unchanged` (identical), `updated` (it differed, and its bytes are still exactly
what this origin last wrote: replaced atomically), `kept` (it differed and someone or something else wrote
it: left alone and reported).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Literal

from vault_cortex.files.vault import content_hash
from vault_cortex.store.change import Change

IMPORTS_DIR = ".cortex/imports"
Outcome = Literal["created", "unchanged", "updated", "kept"]


class ImportLog:
    """The record of one origin's notes, written within one change of the vault (`tx`); `save()` writes it
    atomically."""

    def __init__(self, tx: Change, origin: str) -> None:
        self.tx, self.root, self.origin = tx, tx.vault.root, origin
        self.dir = self.root / IMPORTS_DIR
        self.path = self.dir / f"{hashlib.sha256(origin.encode()).hexdigest()[:24]}.json"
        self.notes: dict[str, str] = {}
        self.resume: dict[str, Any] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("origin") == origin:
                self.notes = {str(k): str(v) for k, v in (data.get("notes") or {}).items()}
                self.resume = dict(data.get("resume") or {})
        except (OSError, ValueError, AttributeError):
            pass
        self.fresh = not self.notes  # nothing imported from this origin yet

    def write(self, rel: str, text: str) -> Outcome:
        """Write one imported note as its outcome says (see the module's docstring)."""
        data = text.encode()
        file = self.tx.file(rel)
        new = content_hash(data)
        try:
            current: bytes | None = file.read_bytes()
        except FileNotFoundError:
            current = None
        if current is None:
            self.tx.write(rel, data, None)
            self.notes[rel] = new
            return "created"
        now = content_hash(current)
        if current == data:
            self.notes[rel] = new
            return "unchanged"
        if self.notes.get(rel) == now:  # ours and untouched since: the source grew or changed
            self.tx.write(rel, data, now)
            self.notes[rel] = new
            return "updated"
        return "kept"

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        ignore = self.dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# what imports wrote, per machine: never versioned\n*\n", encoding="utf-8")
        body = {"origin": self.origin, "resume": self.resume or None, "notes": dict(sorted(self.notes.items()))}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body, ensure_ascii=False, indent=0), encoding="utf-8")
        os.replace(tmp, self.path)
