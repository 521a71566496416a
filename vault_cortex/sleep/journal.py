"""Applying a sleep plan: journalled, resumable and reversible, then optionally committed to git (`commit.py`).

Each step re-checks the hashes its files must have and is skipped (and reported) when one changed. The
journal (`.cortex/sleep/journal.jsonl`, fsync'd) records a step before and after it runs, with the original
bytes backed up first, so a run killed at any point can be resumed or rolled back with no note lost or
half-written: a move writes its destination atomically before removing the source.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex.errors import DiskFull, InvalidRequest, WriteConflict
from vault_cortex.files.edit import edit_bytes
from vault_cortex.files.relations import RELATIONS_PATH, with_relation
from vault_cortex.files.vault import content_hash
from vault_cortex.sleep.commit import Commit, commit_vault
from vault_cortex.sleep.dream import dream_addendum, handoff_text
from vault_cortex.sleep.operations import STATE_PATH, Op, Plan, apply_edit, state_json
from vault_cortex.store.change import Change, Vault

log = logging.getLogger(__name__)

SLEEP_DIR = ".cortex/sleep"
JOURNAL = f"{SLEEP_DIR}/journal.jsonl"
GITIGNORE = "# Plans, journals and backups stay local (this file too: a dry run leaves git clean);\n" \
    "# state.json (decay anchors) is versioned.\n*\n!state.json\n"
OWN = frozenset({STATE_PATH, RELATIONS_PATH})  # the files a plan writes under .cortex/ (not notes)
_TMP = re.compile(r"^\.[a-z0-9_]{8}\.tmp$")  # atomic_write's temp files
Checkpoint = Callable[[], None]


class Skip(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    path: str
    reason: str


class ApplyReport(msgspec.Struct, frozen=True, kw_only=True):
    """What applying (or resuming, or rolling back) a plan did."""

    plan: str
    applied: list[int]
    skipped: list[Skip]
    undone: list[int] = msgspec.field(default_factory=list)
    rolled_back: bool = False
    commit: str | None = None  # the git commit made, when asked and the vault is a repository
    # the author vault-cortex committed as because git has no identity for the vault (none set anywhere)
    committed_as: str | None = None
    journal: str = JOURNAL


def plan_file(root: Path, plan_id: str) -> Path:
    return root / SLEEP_DIR / f"plan-{plan_id}.json"


def save_plan(vault: Vault, p: Plan) -> Path:
    """Save a plan as `.cortex/sleep/plan-<id>.json` (one of vault-cortex's own files, not a note)."""
    folder = vault.root / SLEEP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / ".gitignore").exists():
        (folder / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    path = plan_file(vault.root, p.id)
    data = msgspec.json.format(msgspec.json.encode(p), indent=2)
    with vault.change("sleep") as tx:
        try:
            old: bytes | None = path.read_bytes()
        except FileNotFoundError:
            old = None
        if old != data:
            tx.write(path.relative_to(vault.root).as_posix(), data, None if old is None else content_hash(old),
                     own=True)
    return path


def load_plan(path: Path) -> Plan:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Plan)
    except (OSError, msgspec.DecodeError) as exc:
        raise InvalidRequest(f"cannot read the sleep plan {path}: {exc}") from exc


# -- applying ------------------------------------------------------------------------------------------------

class _Journal:
    """Append-only, fsync'd JSON lines; a torn last line (a kill mid-write) is ignored on read."""

    def __init__(self, root: Path, checkpoint: Checkpoint | None) -> None:
        self.path = root / JOURNAL
        self.checkpoint = checkpoint

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_bytes().split(b"\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def write(self, **record: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"  # a line cut short by a crash stays alone
            # ASCII: a handoff that is not UTF-8 is carried as \udcXX escapes, restored byte for byte on resume
            line = b"\n" * torn + json.dumps(record).encode() + b"\n"
            if os.write(fd, line) != len(line):  # a full disk takes part of a line: not journalled at all
                os.ftruncate(fd, size)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            os.fsync(fd)
        finally:
            os.close(fd)
        self.tick()

    def tick(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint()


class _Run:
    """One application of a plan: what the journal says so far, and the steps still to do."""

    def __init__(self, tx: Change, p: Plan, journal: _Journal, records: list[dict[str, Any]]) -> None:
        self.tx, self.root, self.plan, self.journal = tx, tx.vault.root, p, journal
        self.backups = self.root / SLEEP_DIR / "runs" / p.id
        self.begun = {r["step"]: r for r in records if r.get("t") == "begin"}
        self.done = {r["step"] for r in records if r.get("t") == "done"}
        self.skipped = [Skip(step=r["step"], path=r["path"], reason=r["why"]) for r in records if r.get("t") == "skip"]
        self.undone = {r["step"] for r in records if r.get("t") == "undo"}

    def file(self, path: str) -> Path:
        return self.tx.file(path, own=path in OWN)

    def current(self, path: str) -> str | None:
        f = self.file(path)
        return content_hash(f.read_bytes()) if f.exists() else None

    def conflicts(self) -> list[str]:
        return [f"`{s.path}`: {s.reason} (step {s.step})" for s in self.skipped]

    def run(self) -> None:
        skipped = {s.step for s in self.skipped}
        for op in self.plan.ops:
            if op.step in self.done or op.step in skipped:
                continue
            why = self.blocked(op, skipped)
            if why is None and op.step in self.begun and self.finish(op):
                continue
            if why is None:
                why = next(("changed on disk since the plan was made" for path, h in op.hashes.items()
                            if self.current(path) != h), None)
            if why is not None:
                self.skipped.append(Skip(step=op.step, path=op.path, reason=why))
                skipped.add(op.step)
                self.journal.write(t="skip", step=op.step, path=op.path, why=why)
                continue
            try:
                self.do(op)
            except WriteConflict as exc:  # saved in the gap between the check and the write: left as it is
                why = f"changed on disk while the sleep ran ({exc})"
                self.skipped.append(Skip(step=op.step, path=op.path, reason=why))
                skipped.add(op.step)
                self.journal.write(t="skip", step=op.step, path=op.path, why=why)
        self.journal.write(t="end")

    def blocked(self, op: Op, skipped: set[int]) -> str | None:
        missing = [s for s in op.requires if s in skipped]
        return f"step {missing[0]} it depends on was skipped" if missing else None

    def finish(self, op: Op) -> bool:
        """A step begun before a crash: True if its effect is already complete (now journalled done)."""
        result = self.begun[op.step]["result"]
        if op.action == "move":
            assert op.dest is not None
            if self.current(op.dest) == result:
                with suppress(WriteConflict):  # only the very bytes that were copied: a later save stays
                    self.tx.remove(op.path, result)
                self.journal.write(t="done", step=op.step)
                self.done.add(op.step)
                return True
            return False
        if self.current(op.path) == result:
            self.journal.write(t="done", step=op.step)
            self.done.add(op.step)
            return True
        return False

    def content(self, op: Op, old: bytes | None) -> bytes:
        """The bytes an operation writes; the dream log, handoff and state also record what was skipped."""
        if op.step in self.begun and self.begun[op.step].get("content") is not None:
            return str(self.begun[op.step]["content"]).encode("utf-8", "surrogateescape")
        if op.action in ("set_property", "add_to_list", "add_relation"):
            assert old is not None and op.key is not None
            key = op.key
            return edit_bytes(old, lambda text: apply_edit(text, op.action, key, op.value))
        if op.action == "add_edge":
            assert op.src is not None and op.key is not None and isinstance(op.value, str)
            side = (old or b"").decode("utf-8", "surrogateescape")  # lossless, as edit_bytes
            return with_relation(side, op.src, op.key, op.value).encode("utf-8", "surrogateescape")
        text = old.decode("utf-8", "surrogateescape") if old is not None else None  # lossless, as edit_bytes
        assert op.content is not None
        if op.phase == "dream":
            return dream_addendum(op.content, self.conflicts()).encode()
        if op.phase == "handoff" and self.plan.handoff is not None:
            h = msgspec.structs.replace(self.plan.handoff, conflicts=self.conflicts())
            return handoff_text(text, h).encode("utf-8", "surrogateescape")
        if op.phase == "state" and self.plan.state is not None:
            return state_json(msgspec.structs.replace(self.plan.state, conflicts=self.conflicts())).encode()
        return op.content.encode()

    def do(self, op: Op) -> None:
        src = self.file(op.path)
        if op.action == "move":
            assert op.dest is not None
            data = src.read_bytes()
            self.journal.write(t="begin", step=op.step, result=content_hash(data))
            self.tx.move(op.path, op.dest, data, content_hash(data), between=self.journal.tick)
        else:
            old = src.read_bytes() if src.exists() else None
            new = self.content(op, old)
            backup = None
            if old is not None:
                backup = self.backups / f"{op.step}.bak"
                rel = backup.relative_to(self.root).as_posix()
                if backup.exists():
                    self.tx.remove(rel, content_hash(backup.read_bytes()), own=True)
                self.tx.write(rel, old, None, own=True)
            late = new.decode("utf-8", "surrogateescape") if op.phase in ("dream", "handoff", "state") else None
            self.journal.write(t="begin", step=op.step, result=content_hash(new), content=late,
                               backup=backup.relative_to(self.root).as_posix() if backup else None)
            if new != old:
                self.tx.write(op.path, new, op.hashes[op.path], own=op.path in OWN)
                self.journal.tick()
        self.journal.write(t="done", step=op.step)
        self.done.add(op.step)

    def undo(self, op: Op) -> str | None:
        """Put back what a begun step changed; a reason when a file changed since and was left alone."""
        rec = self.begun[op.step]
        result, before = rec["result"], op.hashes.get(op.path)
        if op.action == "move":
            assert op.dest is not None
            dest, src = self.file(op.dest), self.file(op.path)
            if not dest.exists():
                return None
            data = dest.read_bytes()
            if content_hash(data) != result:
                return f"`{op.dest}` changed since the sleep; left where it is"
            if not src.exists():
                self.tx.write(op.path, data, None)
            self.journal.tick()
            self.tx.remove(op.dest, result)
            return None
        now = self.current(op.path)
        if now == before or now is None and before is None:
            return None
        if now != result:
            return f"`{op.path}` changed since the sleep; left as it is"
        if before is None:
            self.tx.remove(op.path, result, own=op.path in OWN)
        else:
            self.tx.write(op.path, (self.root / rec["backup"]).read_bytes(), result, own=op.path in OWN)
        return None

    def cleanup(self) -> None:
        """Remove temp files a killed write left in the folders the plan touches."""
        for op in self.plan.ops:
            for path in (op.path, op.dest):
                folder = self.file(path).parent if path else None
                if folder is not None and folder.is_dir():
                    for f in folder.iterdir():
                        if _TMP.match(f.name):
                            f.unlink()

    def report(self, commit: Commit | None = None, rolled_back: bool = False) -> ApplyReport:
        return ApplyReport(plan=self.plan.id, applied=sorted(self.done - self.undone), skipped=self.skipped,
                           undone=sorted(self.undone), rolled_back=rolled_back,
                           commit=commit.sha if commit else None, committed_as=commit.author if commit else None)


def _open_run(tx: Change, checkpoint: Checkpoint | None) -> tuple[_Run, list[dict[str, Any]]]:
    root = tx.vault.root
    journal = _Journal(root, checkpoint)
    records = journal.records()
    start = next((r for r in records if r.get("t") == "start"), None)
    if start is None:
        raise InvalidRequest("no sleep has been applied in this vault: nothing to resume or roll back")
    return _Run(tx, load_plan(root / start["plan"]), journal, records), records


@contextmanager
def _disk_full_says_what_next() -> Iterator[None]:
    """A sleep stopped by a full disk: its steps so far are journalled (each file whole, old or new)."""
    try:
        yield
    except DiskFull as exc:
        raise DiskFull(f"{exc}. The sleep stopped there; once there is space, resume it (`vault-cortex sleep "
                       "--resume`) or roll it back (`vault-cortex sleep --rollback`)") from exc


def apply(vault: Vault, p: Plan, *, commit: bool = False, checkpoint: Checkpoint | None = None) -> ApplyReport:
    """Do exactly the plan, journalled; files changed since planning are skipped and reported."""
    root = vault.root
    with _disk_full_says_what_next(), vault.change("sleep") as tx:
        journal = _Journal(root, checkpoint)
        records = journal.records()
        if records and not any(r.get("t") in ("end", "rolled_back") for r in records):
            raise WriteConflict("an interrupted sleep is in .cortex/sleep/journal.jsonl: resume it "
                                 "(`vault-cortex sleep resume`) or roll it back (`vault-cortex sleep rollback`) first")
        path = save_plan(vault, p)
        if records:
            old = next(r["id"] for r in records if r.get("t") == "start")
            (root / SLEEP_DIR / "runs" / old).mkdir(parents=True, exist_ok=True)
            os.replace(journal.path, root / SLEEP_DIR / "runs" / old / "journal.jsonl")
        journal.write(t="start", id=p.id, plan=path.relative_to(root).as_posix())
        return _finish(tx, _Run(tx, p, journal, []), commit)


def resume(vault: Vault, *, commit: bool = False, checkpoint: Checkpoint | None = None) -> ApplyReport:
    """Finish an interrupted sleep from its journal."""
    with _disk_full_says_what_next(), vault.change("sleep") as tx:
        run, records = _open_run(tx, checkpoint)
        if any(r.get("t") in ("end", "rolled_back") for r in records):
            raise InvalidRequest(f"the last sleep ({run.plan.id}) finished or was rolled back: nothing to resume")
        if run.undone:
            raise InvalidRequest("a rollback of the last sleep was interrupted: run `vault-cortex sleep rollback`")
        return _finish(tx, run, commit)


def interrupted(root: Path) -> str | None:
    """What an interrupted sleep in the journal was doing: "applying" or "rolling back"; None when the last
    sleep finished or was rolled back (or none was applied)."""
    records = _Journal(root, None).records()
    if not any(r.get("t") == "start" for r in records):
        return None
    if any(r.get("t") in ("end", "rolled_back") for r in records):
        return None
    return "rolling back" if any(r.get("t") == "undo" for r in records) else "applying"


def recover(vault: Vault, *, commit: bool = False) -> ApplyReport | None:
    """Finish an interrupted sleep (resume it), or finish undoing it when its rollback was interrupted; None
    when nothing was interrupted. What an unattended run (nightly) does first, so consolidation never stops."""
    state = interrupted(vault.root)
    if state is None:
        return None
    return rollback(vault) if state == "rolling back" else resume(vault, commit=commit)


def rollback(vault: Vault, *, checkpoint: Checkpoint | None = None) -> ApplyReport:
    """Undo the last sleep, finished or interrupted, step by step in reverse; hand-edited files are kept."""
    with _disk_full_says_what_next(), vault.change("sleep") as tx:
        run, records = _open_run(tx, checkpoint)
        if any(r.get("t") == "rolled_back" for r in records):
            raise InvalidRequest(f"the last sleep ({run.plan.id}) was already rolled back")
        for op in reversed(run.plan.ops):
            if op.step in run.begun and op.step not in run.undone:
                why = run.undo(op)
                if why:
                    run.skipped.append(Skip(step=op.step, path=op.path, reason=why))
                run.journal.write(t="undo", step=op.step, why=why)
                run.undone.add(op.step)
        run.cleanup()
        run.journal.write(t="rolled_back")
    return run.report(rolled_back=True)


def _finish(tx: Change, run: _Run, commit: bool) -> ApplyReport:
    """Run the plan's remaining steps, index what they changed, and commit them to git when asked."""
    run.cleanup()
    run.run()
    tx.index_touched()
    try:  # what recall learned since reaches the versioned log at sleep
        flushed = tx.vault.flush_activity()
    except OSError as exc:  # the lines stay pending (a half-done flush is finished next time): nothing is lost
        log.warning("could not move the pending activity into the versioned log: %s", exc)
        flushed = []
    made = commit_vault(run.root, run.plan, sorted(run.done), also=flushed) if commit else None
    return run.report(commit=made)
