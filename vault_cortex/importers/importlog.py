"""What the importers wrote, so that importing again adds nothing and never overwrites a note someone edited.

One record per origin (a transcript's path, or the name of an import kind) in `.cortex/imports/`, never
versioned: each note path the origin wrote, with the hash of the bytes written, plus where a transcript's
last exchange began so a grown transcript is read from there. Writing a note gives one of four outcomes:
`created` (it was missing), `unchanged` (identical), `updated` (it differed, and its bytes are still exactly
what this origin last wrote: replaced atomically), `kept` (it differed and someone or something else wrote
it: left alone and reported).

An import killed part way (a hook's timeout) has written notes the record does not name yet: before each note
is written, the hash it will have is appended to the origin's journal (`<record>.pending`), which the next import
reads as its own, so it finishes (`updated`) the notes the killed one wrote instead of keeping them as someone
else's; `save()` folds them into the record and removes the journal.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
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
        self.journal = self.path.with_suffix(".pending")
        self.notes: dict[str, str] = {}
        self.resume: dict[str, Any] = {}
        self.pending = _read_journal(self.journal)  # path → hashes an import killed before `save` may have written
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("origin") == origin:
                self.notes = {str(k): str(v) for k, v in (data.get("notes") or {}).items()}
                self.resume = dict(data.get("resume") or {})
        except (OSError, ValueError, AttributeError):
            pass
        self.fresh = not self.notes and not self.pending  # nothing imported from this origin yet

    def ours(self, rel: str, digest: str) -> bool:
        """Whether a note with this hash is what this origin wrote last (recorded, or journaled by an import that
        was killed before it saved)."""
        return self.notes.get(rel) == digest or digest in self.pending.get(rel, ())

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
            self._intend(rel, new)
            self.tx.write(rel, data, None)
            self.notes[rel] = new
            return "created"
        now = content_hash(current)
        if current == data:
            self.notes[rel] = new
            return "unchanged"
        if self.ours(rel, now):  # ours and untouched since: the source grew or changed
            self._intend(rel, new)
            self.tx.write(rel, data, now)
            self.notes[rel] = new
            return "updated"
        return "kept"

    def _intend(self, rel: str, digest: str) -> None:
        """Journal the hash a note is about to have, before it is written (one appended line; a line cut short by a
        kill is skipped when read)."""
        self._folder()
        with self.journal.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps([rel, digest], ensure_ascii=False) + "\n")
        self.pending.setdefault(rel, set()).add(digest)

    def save(self) -> None:
        self._folder()
        body = {"origin": self.origin, "resume": self.resume or None, "notes": dict(sorted(self.notes.items()))}
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body, ensure_ascii=False, indent=0), encoding="utf-8")
        os.replace(tmp, self.path)
        self.journal.unlink(missing_ok=True)  # every note it names is recorded now
        for stale in self.dir.glob(f"{self.path.stem}.*.tmp"):  # of saves killed part way (the write lock is held)
            stale.unlink(missing_ok=True)
        self.pending = {}

    def _folder(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        ignore = self.dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# what imports wrote, per machine: never versioned\n*\n", encoding="utf-8")


def _read_journal(path: Path) -> dict[str, set[str]]:
    """The hashes a journal names for each note path; {} when there is none."""
    found: dict[str, set[str]] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            rel, digest = json.loads(line)
        except (ValueError, TypeError):
            continue  # the last line, cut short by the kill
        if isinstance(rel, str) and isinstance(digest, str):
            found.setdefault(rel, set()).add(digest)
    return found
