"""`Vault.change()`: the one door for changes to the vault, with one rule.

Every writer (remember, link, edit, move, archive, the importers, capture, sleep's apply and rollback, habit
and resonance weights, curiosities) goes through it:

    with vault.change() as tx:
        data = tx.read(path)
        tx.write(path, new, content_hash(data), op="append")

A change holds the vault's write lock (one writer thread, one writer process), checks each write against the
hash its caller read (`WriteConflict` when the file changed underneath), writes atomically, logs the edit
event of each operation that names one (as the client the adapter bound, `activity.acting_as`, unless the
change names its writer: "sleep", "import", "capture"), and on exit indexes exactly the notes it touched.

The rule: once a file is saved, the call succeeds. When indexing it fails, the change says so in `warnings`
(and the log); the watcher or the next sync indexes it. So a client never retries a write that was made.
`tests/unit/test_one_write_path.py` checks that nothing else calls the atomic write or takes the write lock.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from vault_cortex.config import Settings
from vault_cortex.errors import DiskFull, InvalidRequest, NoteNotFound, UnsafePath, VaultReadOnly, WriteConflict
from vault_cortex.files.activity import EditEvent, Event, current_client
from vault_cortex.files.activity import append as append_event
from vault_cortex.files.activity_files import fingerprint_key
from vault_cortex.files.activity_files import flush as flush_pending
from vault_cortex.files.edit import edit_bytes
from vault_cortex.files.relations import RELATIONS_PATH
from vault_cortex.files.vault import (
    NoteDoc,
    NotRegular,
    atomic_write,
    content_hash,
    fsync_dir,
    on_disk,
    read_regular,
    rename_new,
)
from vault_cortex.index.upkeep import Index

log = logging.getLogger(__name__)

OWN_FILES = ".cortex/"  # vault-cortex's own files (sleep plans, journals' backups, decay state): not notes


class Vault:
    """A vault's files and the index derived from them, read and changed through one door."""

    def __init__(self, root: Path, settings: Settings, index: Index, clock: Callable[[], datetime], *,
                 read_only: bool = False) -> None:
        self.root, self.settings, self.index, self.clock = root, settings, index, clock
        self.read_only = read_only  # a read-only vault (a backup, a share): every change is refused, nothing logged

    def read_bytes(self, path: str) -> bytes:
        """A note's bytes as they are on disk (for edits that must keep every byte they do not change)."""
        file = on_disk(self.root, path)
        try:
            return read_regular(file)
        except FileNotFoundError:
            raise NoteNotFound(f"no note at {path!r}") from None
        except NotRegular as exc:
            raise NoteNotFound(f"{path!r}: {exc}") from None

    def read_note(self, path: str) -> NoteDoc:
        """A note's text and ETag; the path must be a vault-relative .md path outside dot-folders."""
        data = self.read_bytes(path)
        content = data.decode("utf-8", errors="replace")
        warnings = [] if "\ufffd" not in content or data.decode("utf-8", errors="ignore") == content else [
            "the note is not valid UTF-8: undecodable bytes show as U+FFFD here, and a PUT of this content "
            "writes them so (vault-cortex's own edits keep the bytes)"]
        return NoteDoc(path=path, content=content, etag=content_hash(data), warnings=warnings)

    def edit_text(self, path: str, edit: Callable[[str], str], if_match: str | None = None, *,
                  op: str | None = None) -> NoteDoc:
        """One change applying a frontmatter edit (files/edit.py) to a note's bytes: only the edited lines change,
        whatever the encoding of the rest; refused if the note changed since if_match was read."""
        with self.change() as tx:
            _, new = tx.edit(path, lambda data: edit_bytes(data, edit), if_match, op=op)
        return NoteDoc(path=path, content=new.decode("utf-8", errors="replace"), etag=content_hash(new),
                       warnings=tx.warnings)

    def log(self, event: Event) -> None:
        """Append to the activity log; a failure to log never fails the caller's request. A read-only vault
        keeps no activity log (recall then learns nothing from use)."""
        if self.read_only:
            return
        try:
            append_event(self.root, event, key=lambda: fingerprint_key(self.index.index_dir),
                         keep_hook_queries=self.settings.activity.log_hook_queries)
        except OSError as exc:
            log.warning("could not append to the activity log: %s", exc)

    def flush_activity(self) -> list[str]:
        """Move what reads logged (machine-local, pending) into the versioned activity log, each line once;
        under the write lock, so no replay counts a line half moved. Returns the versioned files written."""
        with self.index.writing():
            return flush_pending(self.root)

    @contextmanager
    def change(self, writer: str | None = None, *, index: bool = True) -> Iterator[Change]:
        """Hold the write lock for one change; on exit index the notes it wrote, moved or removed. Its edits are
        logged as `writer`'s, when a feature writes as itself ("sleep", "import", "capture"), else as the
        client's the adapter bound (`activity.current_client`).

        `index=False` leaves the indexing to the running server's watcher (capture does, from a hook process
        beside `serve`). The notes are indexed even when the body fails after saving some: they are saved.
        A read-only vault refuses every change (VaultReadOnly) before anything is read or locked; a full disk
        is DiskFull (every write is atomic: what did not fit was not written at all).
        """
        if self.read_only:
            raise VaultReadOnly(f"the vault at {self.root} is read-only (a read-only mount or folder): vault-cortex "
                                "searches it but cannot write notes, plans or weights there")
        with self.index.writing():
            tx = Change(self, writer or current_client())
            try:
                yield tx
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                raise DiskFull(f"no space left on the disk holding {self.root} ({exc.strerror}): the write stopped "
                               "and nothing was half-written; free some space and try again") from exc
            finally:
                if index:
                    tx.index_touched()


class Change:
    """One change under the write lock: reads, checked writes, moves and removals; what it touched is indexed
    when it ends, and what went wrong after a file was saved is in `warnings`."""

    def __init__(self, vault: Vault, client: str) -> None:
        self.vault, self.client = vault, client
        self.touched: list[str] = []
        self.warnings: list[str] = []
        self.relations = False  # the relations sidecar was written: the index reads it again

    def file(self, path: str, *, own: bool = False) -> Path:
        """The file for a vault path: a note (`note_path`'s checks: never a dot-folder), or with `own` one of
        vault-cortex's own files under `.cortex/` (a sleep's plan, backups and decay state), which no request
        can name."""
        if not own:
            return on_disk(self.vault.root, path)
        parts = path.split("/")
        if not path.startswith(OWN_FILES) or any(p in ("", ".", "..") for p in parts):
            raise UnsafePath(f"not a path inside {OWN_FILES}: {path!r}")
        return self.vault.root / path

    def read(self, path: str, if_match: str | None = None) -> bytes:
        """A note's bytes now (NoteNotFound if it is missing or a folder); WriteConflict when `if_match` is given
        and the note changed since it was read (its ETag is stale)."""
        data = self.vault.read_bytes(path)
        if if_match is not None and content_hash(data) != if_match:
            raise WriteConflict(f"{path} changed since it was read (ETag {if_match} is stale); read it again")
        return data

    def write(self, path: str, data: bytes, expected: str | None, *, op: str | None = None,
              own: bool = False) -> str:
        """Save a file atomically: create it (`expected` None: it must not exist yet) or replace the bytes whose
        hash is `expected` (WriteConflict if it changed since). `op` logs an edit event; `own`: see `file`.
        Returns the new ETag."""
        file = self.file(path, own=own)
        atomic_write(file, data, expected)  # refuses a folder, FIFO or device at the path
        if not own:
            self._touch(path)
        self.relations |= path == RELATIONS_PATH
        if op is not None:
            self.vault.log(EditEvent(ts=self.vault.clock(), client=self.client, path=path, op=op))
        return content_hash(data)

    def edit(self, path: str, edit: Callable[[bytes], bytes], if_match: str | None = None, *,
             op: str | None = None) -> tuple[bytes, bytes]:
        """Apply an edit to a note's bytes and save the result if it differs: (old bytes, new bytes). Refused if
        `if_match` is given and the note changed since it was read."""
        old = self.read(path, if_match)
        new = edit(old)
        if new != old:
            self.write(path, new, content_hash(old), op=op)
        return old, new

    def remove(self, path: str, expected: str, *, own: bool = False) -> None:
        """Remove a file whose bytes still hash to `expected`; WriteConflict (and nothing removed) otherwise."""
        file = self.file(path, own=own)
        try:
            now = content_hash(read_regular(file))
        except FileNotFoundError:
            return
        except NotRegular as exc:
            raise InvalidRequest(f"{path!r}: {exc}") from None
        if now != expected:
            raise WriteConflict(f"{path} changed on disk since it was read; it was not removed")
        file.unlink()
        fsync_dir(file.parent)
        if not own:
            self._touch(path)
        self.relations |= path == RELATIONS_PATH

    def move(self, path: str, dest: str, data: bytes, expected: str, *, op: str | None = None,
             between: Callable[[], None] | None = None) -> str:
        """Move a note with one rename (`rename_new`: never over an existing `dest`, WriteConflict): the file
        itself travels, so a save that lands meanwhile, even one an editor writes in place through a descriptor
        it opened before, is in the moved note. Then, if `data` (what was read, hashing to `expected`, with the
        note's own links rewritten for its new place) differs, it is saved there through the checked write; a
        save that landed since the read is never overwritten: the note is renamed back and WriteConflict raised
        (the caller reads again and redoes, or refuses). `between` runs after the rename (a journal's
        checkpoint). Returns the ETag at `dest`."""
        src, target = self.file(path), self.file(dest)
        if src.is_symlink():  # a link's target stays where it is: the note's bytes move, as a file, and the link goes
            return self._move_link(path, dest, data, expected, op=op, between=between)
        try:
            rename_new(src, target)
        except FileExistsError:
            raise WriteConflict(f"{dest!r} already exists; a move never overwrites") from None
        except FileNotFoundError:
            raise NoteNotFound(f"no note at {path!r}") from None
        fsync_dir(src.parent)
        fsync_dir(target.parent)
        self._touch(path)
        self._touch(dest)
        if between is not None:
            between()
        if content_hash(data) == expected:
            etag = content_hash(read_regular(target))
        else:
            try:
                etag = self.write(dest, data, expected)
            except WriteConflict:
                self._rename_back(target, src, path, dest)
                raise WriteConflict(f"{path} was saved while it was being moved; it was not moved") from None
        if op is not None:
            self.vault.log(EditEvent(ts=self.vault.clock(), client=self.client, path=path, op=op, dest=dest))
        return etag

    def _rename_back(self, target: Path, src: Path, path: str, dest: str) -> None:
        """Undo a move whose rewrite met a save: the note goes back, with the save, unless its old name was taken
        meanwhile (then it stays at `dest`, with the save, its own links as they were)."""
        try:
            rename_new(target, src)
        except FileExistsError:
            raise WriteConflict(f"{path} was saved while it was being moved, and a new {path} was made meanwhile: "
                                f"the note is at {dest} with that save, its own links not rewritten") from None
        fsync_dir(src.parent)
        fsync_dir(target.parent)

    def _move_link(self, path: str, dest: str, data: bytes, expected: str, *, op: str | None,
                   between: Callable[[], None] | None) -> str:
        """Move a note that is a symlink: save `data` at `dest`, then remove the link if it still reads
        `expected` (else the copy is taken back: WriteConflict)."""
        etag = self.write(dest, data, None)
        if between is not None:
            between()
        try:
            self.remove(path, expected)
        except WriteConflict:
            self.remove(dest, etag)
            raise WriteConflict(f"{path} was saved while it was being moved; it was not moved") from None
        if op is not None:
            self.vault.log(EditEvent(ts=self.vault.clock(), client=self.client, path=path, op=op, dest=dest))
        return etag

    def _touch(self, path: str) -> None:
        if path not in self.touched:
            self.touched.append(path)

    def index_touched(self) -> None:
        """Index the notes this change touched so far (at its end, or earlier when the caller must); a failure is
        a warning, never an error: the files are saved."""
        touched, self.touched = self.touched, []
        if not touched and not self.relations:
            return
        self.relations = False
        try:
            self.vault.index.sync_paths(touched)
        except Exception as exc:  # noqa: BLE001 - the rule: a saved file is a successful write
            log.warning("saved %s, but indexing failed: %s: %s", ", ".join(touched), type(exc).__name__, exc)
            self.warnings.append(f"saved, but indexing failed ({type(exc).__name__}: {exc}); the watcher or the "
                                 "next sync indexes it")

