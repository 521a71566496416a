"""Keep the index in step with the files: one sync at start, then one per burst of saves, moves or deletes."""

from __future__ import annotations

import logging
import os
import threading
import time
import unicodedata
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import anyio
import msgspec
from anyio.abc import TaskGroup
from watchfiles import Change, awatch

from vault_cortex import clock
from vault_cortex.errors import SyncCancelled
from vault_cortex.files.relations import RELATIONS_PATH
from vault_cortex.index.progress import Progress, SyncReport

if TYPE_CHECKING:
    from vault_cortex.cortex import Cortex

log = logging.getLogger(__name__)

STEP_MS = 20  # watchfiles' poll step: a save is reported one or two steps after it lands
# The longest watchfiles gathers changes before reporting them. It counts every change, the index's own
# writes under .cortex/ included (they are filtered out after), so it must stay short: a busy activity log
# would otherwise hold every save back by this long.
GATHER_MS = 100


# A batch of at most this many changed notes (no folder, no attachment) syncs just them: an Obsidian rename of a
# note linked from hundreds rewrites hundreds of files, and a targeted sync of those costs what they change, while
# a full sync walks the whole vault (about a second per 100k notes) on top of the same work.
TARGETED_MAX = 2000
RETRY_FIRST_S, RETRY_MAX_S = 2.0, 300.0  # a failed sync is retried after 2 s, then 4, 8, … up to 5 min
DEBOUNCE_MS = 300  # least gap between two syncs while changes keep coming (a lone save is indexed at once)
FULL_SYNC_S = 900.0  # and a full sync runs at least this often when changes come, to catch anything missed


class WatchStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What the watcher is doing: whether changes wait for a sync, and how long the oldest has waited."""

    watching: bool
    pending: bool
    lag_ms: float  # how long the oldest change not yet in the index has waited (0 when up to date)
    syncs: int
    last_sync_at: str | None  # ISO time the last sync finished
    last_report: SyncReport | None
    last_error: str | None


def in_dot_folder(root: str, path: str) -> bool:
    """Whether a changed path lies in (or is) a dot-file or dot-folder of the vault: .cortex, .obsidian, .git…"""
    rel = os.path.relpath(path, root)
    return rel == "." or rel.startswith("..") or any(part.startswith(".") for part in rel.split(os.sep))


class Watcher:
    """Runs `cortex.sync()` at start and after file changes outside dot-folders (and of the relations sidecar,
    `.cortex/relations.jsonl`: a sync of no note reads it).

    A lone save syncs as soon as watchfiles reports it (within GATHER_MS); while changes keep coming, syncs
    start at most once per `debounce_ms`, so a burst (a git checkout, a sync client) is batched. Changes
    that land during a sync trigger one more. Syncs never overlap.

    A batch of a few changed notes syncs just those paths (`sync_paths`: a note the API already indexed
    costs a stat); anything else (a folder, an attachment, a big burst, the start, a damaged index, or
    FULL_SYNC_S since the last full one) runs a full sync.
    """

    def __init__(self, cortex: Cortex, *, debounce_ms: int = 300, progress: Progress | None = None,
                 announce: Callable[[SyncReport], None] | None = None,
                 filled: Callable[[float], None] | None = None) -> None:
        self.cortex = cortex
        self._progress = progress  # shown during the start-up sync only
        self._announce = announce  # told the start-up sync's report, once its notes are searchable by words
        self._filled = filled  # told, once, the seconds from the start until every chunk had its vector
        self.debounce_ms = max(debounce_ms, 0)
        self.root = str(cortex.root)
        self._watching = False
        self._stop = threading.Event()
        self._pending_since: float | None = time.monotonic()  # the start-up sync is owed
        self._wake = anyio.Event()
        self._wake.set()
        self._syncs = 0
        self._last_sync_at: str | None = None
        self._last_report: SyncReport | None = None
        self._last_error: str | None = None
        self._changed: set[str] | None = None  # vault paths changed since the last sync; None: sync everything
        self._full_at = time.monotonic()
        self._tasks: TaskGroup | None = None
        self.targeted = 0  # syncs of just the changed paths
        self._retry_s = RETRY_FIRST_S  # wait before retrying a failed sync (doubles while it keeps failing)
        self.full = 0  # syncs of the whole vault (the start-up one included)
        self._started = time.monotonic()
        self._announced = False
        self._filling = False  # chunks were found without a vector, and not all have one yet

    def _note(self, changes: set[tuple[Change, str]]) -> None:
        """Remember which notes changed, or that only a full sync will do."""
        if self._changed is None:
            return
        for _, path in changes:
            rel = os.path.relpath(path, self.root).replace(os.sep, "/")
            if rel == RELATIONS_PATH:
                continue  # any sync, even of no note, folds the relations sidecar into the index
            if not rel.lower().endswith(".md") or len(self._changed) >= TARGETED_MAX:
                self._changed = None  # a folder, an attachment, or too many: walk the vault
                return
            self._changed.add(unicodedata.normalize("NFC", rel))

    def _fill_step(self, progress: Progress | None, phase: str, done: int, total: int) -> None:
        self._filling = True
        if progress is not None:
            progress(phase, done, total)

    def _keep(self, change: Change, path: str) -> bool:
        return not in_dot_folder(self.root, path) or \
            os.path.relpath(path, self.root).replace(os.sep, "/") == RELATIONS_PATH

    def status(self) -> WatchStatus:
        pending = self._pending_since
        return WatchStatus(
            watching=self._watching,
            pending=pending is not None,
            lag_ms=round((time.monotonic() - pending) * 1000, 1) if pending is not None else 0.0,
            syncs=self._syncs,
            last_sync_at=self._last_sync_at,
            last_report=self._last_report,
            last_error=self._last_error,
        )

    def _retry_soon(self) -> None:
        """Wake the sync loop again after the retry delay: a failed sync must not leave the index stale until
        the next file happens to change."""
        delay, self._retry_s = self._retry_s, min(self._retry_s * 2, RETRY_MAX_S)
        wake = self._wake

        async def later() -> None:
            await anyio.sleep(delay)
            wake.set()

        assert self._tasks is not None
        self._tasks.start_soon(later)

    def request_sync(self) -> None:
        """Sync soon, as if a file had changed (e.g. to rebuild a damaged index). Call on the event loop."""
        if self._pending_since is None:
            self._pending_since = time.monotonic()
        self._changed = None
        self._wake.set()

    async def run(self) -> None:
        """Watch and sync until cancelled."""
        self._stop.clear()
        async with anyio.create_task_group() as tg:
            self._tasks = tg
            # Started first so that the watch is in place before the start-up sync walks the vault.
            tg.start_soon(self._watch)
            tg.start_soon(self._sync_loop)
            try:
                await anyio.sleep_forever()
            finally:
                self._stop.set()  # the watch's worker thread returns within a step, so cancelling is quick

    async def _watch(self) -> None:
        self._watching = True
        try:
            async for changes in awatch(self.root, watch_filter=self._keep, debounce=GATHER_MS, step=STEP_MS,
                                        stop_event=self._stop, recursive=True):
                log.debug("%d file changes", len(changes))
                self._note(changes)
                if self._pending_since is None:
                    self._pending_since = time.monotonic()
                self._wake.set()
        finally:
            self._watching = False

    async def _sync_loop(self) -> None:
        started = -float("inf")
        while True:
            await self._wake.wait()
            await anyio.sleep(max(0.0, self.debounce_ms / 1000 - (time.monotonic() - started)))  # batch a burst
            self._wake = anyio.Event()
            started = time.monotonic()
            paths, self._changed = self._changed, set()
            if paths is not None and time.monotonic() - self._full_at > FULL_SYNC_S:
                paths = None
            try:
                first = self._syncs == 0
                progress = self._progress if first else None
                if paths is None:
                    self._full_at = time.monotonic()
                    # words first: the notes are searchable by words, links and properties when this returns
                    report = await anyio.to_thread.run_sync(partial(self.cortex.sync, progress, fill=False))
                    self.full += 1
                else:
                    report = await anyio.to_thread.run_sync(self.cortex.sync_paths, sorted(paths))
                    self.targeted += 1
                # The graph follows the index here, off the interactive path of the next recall (a full build
                # at start-up, then in place); a CLI sync never builds it.
                await anyio.to_thread.run_sync(self.cortex.graph)
                if not self._announced and self._announce is not None:
                    self._announced = True
                    self._announce(report)
                # then the vectors, filled in behind; a change that comes meanwhile is synced first
                left = await anyio.to_thread.run_sync(self.cortex.fill_vectors, partial(self._fill_step, progress),
                                                      self._wake.is_set)
                if not left and self._filling and self._filled is not None:
                    self._filled(time.monotonic() - self._started)
                self._filling = self._filling and bool(left)
            except SyncCancelled:
                log.info("sync stopped: the server is shutting down")
                return
            except Exception as exc:  # noqa: BLE001 - keep watching, and retry without waiting for a change
                log.exception("sync failed; retrying in %.0f s", self._retry_s)
                self._changed = None  # the retry walks the vault
                self._last_error = f"{type(exc).__name__}: {exc}"
                self._retry_soon()
            else:
                self._retry_s = RETRY_FIRST_S
                self._syncs += 1
                self._last_report = report
                self._last_error = None
                self._last_sync_at = clock.local_now().strftime("%Y-%m-%dT%H:%M:%S%z")
                log.info("synced: %d added, %d updated, %d renamed, %d deleted in %.2fs", report.added,
                         report.updated, report.renamed, report.deleted, report.seconds)
            if self._wake.is_set() or self._last_error is not None:  # changes came meanwhile, or a retry is due
                self._pending_since = started
            else:
                self._pending_since = None
