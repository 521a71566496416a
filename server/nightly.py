"""The nightly sleep: with `[sleep] nightly = true`, `serve` plans and applies a light sleep at `nightly_at`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

import anyio
import msgspec

from vault_cortex import clock
from vault_cortex.config import Settings
from vault_cortex.cortex import Cortex
from vault_cortex.sleep.cycle import ApplyReport, next_nightly

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Schedule = Callable[[Settings, datetime], datetime | None]

MODE = "light"  # promote and link; merging and pruning wait for a sleep someone reviews
POLL_SECONDS = 60.0  # re-read the clock at least this often, so a suspend or a clock change is noticed


class NightlyStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The nightly sleep: whether it is on, when it runs next and how the last run went."""

    enabled: bool
    mode: str
    next_at: datetime | None  # in the server's local time
    runs: int
    last_run_at: datetime | None
    last_report: ApplyReport | None  # None when the last run found nothing to do (or failed)
    last_error: str | None
    # what the last run did first, when it found a sleep interrupted: "resumed <plan>" or "rolled back <plan>"
    last_recovered: str | None = None


def local_now() -> datetime:
    return clock.local_now()


class Nightly:
    """Runs `mode` sleep (plan, then apply; committed when the vault is a git repository) when it is due.

    `clock` and `schedule` are seams for tests: the clock gives the current local time, the schedule
    (`vault_cortex.sleep.cycle.next_nightly`) when the next run is due, or None when nightly sleep is off.
    """

    def __init__(self, cx: Cortex, *, clock: Clock = local_now, schedule: Schedule = next_nightly,
                 mode: str = MODE, poll_seconds: float = POLL_SECONDS) -> None:
        self.cx = cx
        self.clock = clock
        self.schedule = schedule
        self.mode = mode
        self.poll_seconds = poll_seconds
        self._next: datetime | None = None
        self._runs = 0
        self._last_run_at: datetime | None = None
        self._last_report: ApplyReport | None = None
        self._last_error: str | None = None
        self._last_recovered: str | None = None

    def status(self) -> NightlyStatus:
        return NightlyStatus(enabled=self._next is not None, mode=self.mode, next_at=self._next, runs=self._runs,
                             last_run_at=self._last_run_at, last_report=self._last_report,
                             last_error=self._last_error, last_recovered=self._last_recovered)

    def due(self) -> datetime | None:
        """When the next run is due; None when nightly sleep is off or `nightly_at` is not a time."""
        try:
            return self.schedule(self.cx.settings, self.clock())
        except Exception as exc:  # noqa: BLE001 - a bad setting turns the schedule off, not the server
            log.error("nightly sleep is off: %s", exc)
            self._last_error = f"{type(exc).__name__}: {exc}"
            return None

    async def run(self) -> None:
        """Sleep at every due time until cancelled; returns at once when nightly sleep is off."""
        while (due := self.due()) is not None:
            self._next = due
            log.info("next nightly %s sleep at %s", self.mode, due.isoformat(timespec="minutes"))
            while (left := (due - self.clock()).total_seconds()) > 0:
                await anyio.sleep(min(left, self.poll_seconds))
            # Not abandoned on cancel: a shutdown during a sleep waits for it (a killed one is resumable anyway).
            await anyio.to_thread.run_sync(self.once)
        self._next = None

    def once(self) -> ApplyReport | None:
        """Plan and apply one sleep now; the report, or None when there was nothing to do or it failed."""
        started = self.clock()
        report: ApplyReport | None = None
        error: str | None = None
        recovered: str | None = None
        try:
            # An interrupted sleep (killed, a full disk) would refuse every later apply: finish it first.
            done = self.cx.sleep_recover(commit=True)
            if done is not None:
                recovered = f"{'rolled back' if done.rolled_back else 'resumed'} {done.plan}"
                log.warning("nightly sleep: an interrupted sleep was found and %s (%d steps applied, %d skipped)",
                            recovered, len(done.applied), len(done.skipped))
            plan = self.cx.sleep_plan(self.mode)
            report = self.cx.sleep_apply(plan, commit=True) if plan.ops else None
        except Exception as exc:  # noqa: BLE001 - log it, show it in /v1/status, try again tomorrow
            log.exception("the nightly sleep failed")
            error = f"{type(exc).__name__}: {exc}"
        self._last_run_at, self._last_report, self._last_error = started, report, error
        self._last_recovered = recovered
        self._runs += 1
        if error is not None:
            return None
        if report is None:
            log.info("nightly sleep: nothing to do")
        else:
            log.info("nightly sleep %s: %d operations applied, %d skipped%s", report.plan, len(report.applied),
                     len(report.skipped), f", committed {report.commit[:12]}" if report.commit else "")
        return report
