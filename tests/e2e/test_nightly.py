"""The nightly sleep: with `[sleep] nightly = true` the app runs a light sleep at `nightly_at` in the background,
commits it when the vault is a git repository, and stops waiting for the next night when the app shuts down.

A clock that shows half a second before 03:30 until the test has seen the schedule, then runs at real speed,
drives the real schedule (`vault_cortex.sleep.cycle.next_nightly`) from the vault's own config, so nothing waits
for more than a second.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from harness import TEST_HOSTS, TOKEN, checked_client, wait_for
from versioned import committed, git

from server.app import create_app
from server.nightly import Nightly, NightlyStatus
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

START = datetime(2026, 11, 30, 3, 29, 59, 500_000, tzinfo=UTC)  # the vault's nightly_at is 03:30


class RunningClock:
    """A clock that shows `start` until `go()`, then ticks at real speed from there: the test sees the schedule
    before the run however slowly the app starts (it started ticking when made, and under load the run came
    before the first status request)."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.t0: float | None = None

    def go(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self) -> datetime:
        return self.start if self.t0 is None else self.start + timedelta(seconds=time.monotonic() - self.t0)


@pytest.fixture
def nightly_cx(synced_template: Path, tmp_path: Path, embedder: Embedder) -> Iterator[Cortex]:
    """A git-versioned copy of the starter vault with `[sleep] nightly = true`."""
    root = tmp_path / "vault"
    shutil.copytree(synced_template, root, symlinks=True)
    config = root / ".cortex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "\nnightly = false\n" in text and '\nnightly_at = "03:30"\n' in text
    config.write_text(text.replace("\nnightly = false\n", "\nnightly = true\n"), encoding="utf-8")
    committed(root, "start")
    with Cortex.open(root, embedder=embedder) as cx:
        yield cx


def test_a_light_sleep_runs_at_nightly_at_commits_and_stops_with_the_app(nightly_cx: Cortex) -> None:
    clock = RunningClock(START)
    nightly = Nightly(nightly_cx, clock=clock, poll_seconds=0.05)
    app = create_app(nightly_cx, token=TOKEN, nightly=nightly, allowed_hosts=TEST_HOSTS)
    with checked_client(app) as client:
        first = client.get("/v1/status").json()["nightly"]
        assert first["enabled"] is True and first["mode"] == "light" and first["runs"] == 0
        assert first["next_at"] == "2026-11-30T03:30:00Z"
        clock.go()
        assert wait_for(lambda: client.get("/v1/status").json()["nightly"]["runs"] == 1, timeout=120)
        status = client.get("/v1/status").json()["nightly"]
        stopping = time.monotonic()
    # the wait for tomorrow's run is cancelled at shutdown, not waited out (a day): the app's shutdown takes well
    # under a second idle, ~2 s beside `stress --cpu 2`; this bound only fails a shutdown that waits
    assert time.monotonic() - stopping < 120

    assert status["last_error"] is None and status["next_at"] == "2026-12-01T03:30:00Z"
    assert status["last_run_at"].startswith("2026-11-30T03:30:00")
    report = status["last_report"]
    assert report["applied"] and report["skipped"] == [] and report["commit"]
    plan = json.loads((nightly_cx.root / ".cortex" / "sleep" / f"plan-{report['plan']}.json").read_text())
    assert plan["mode"] == "light"
    assert git(nightly_cx.root, "log", "-1", "--format=%s").startswith("sleep (light): ")
    assert git(nightly_cx.root, "rev-parse", "HEAD").strip() == report["commit"]
    assert "<!-- vault-cortex:sleep:start -->" in (nightly_cx.root / "HANDOFF.md").read_text(encoding="utf-8")


def test_a_failed_night_is_reported_and_the_schedule_goes_on(nightly_cx: Cortex) -> None:
    """A journal whose plan is gone can be neither resumed nor rolled back: the night fails, says why, and the
    schedule goes on."""
    journal = nightly_cx.root / ".cortex" / "sleep" / "journal.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text('{"t": "start", "id": "20261129T033000Z", "plan": "x.json"}\n', encoding="utf-8")
    nightly = Nightly(nightly_cx, clock=lambda: START)
    assert nightly.once() is None
    status = nightly.status()
    assert status.runs == 1 and status.last_report is None
    assert status.last_error is not None and status.last_error.startswith("InvalidRequest: cannot read the sleep plan")
    assert nightly.due() == datetime(2026, 11, 30, 3, 30, tzinfo=UTC)


class Killed(Exception):
    """The process died here (a kill, a full disk) in the middle of a sleep."""


def test_an_interrupted_sleep_is_resumed_by_the_next_night_which_then_sleeps(nightly_cx: Cortex) -> None:
    """An interrupted sleep made every later nightly apply refuse ("resume or roll back first"), so
    consolidation stopped until someone read last_error; the next night now finishes it first, and says so."""
    from vault_cortex.sleep import cycle as sleep

    plan = nightly_cx.sleep_plan("full")
    assert len(plan.ops) > 3
    ticks = [0]

    def die_after_three() -> None:
        ticks[0] += 1
        if ticks[0] == 4:
            raise Killed

    with pytest.raises(Killed):
        sleep.apply(nightly_cx.vault, plan, checkpoint=die_after_three)
    assert sleep.interrupted(nightly_cx.root) == "applying"
    nightly = Nightly(nightly_cx, clock=lambda: START)
    nightly.once()
    status = nightly.status()
    assert status.last_error is None, status.last_error
    assert status.last_recovered == f"resumed {plan.id}"
    assert sleep.interrupted(nightly_cx.root) is None
    again = Nightly(nightly_cx, clock=lambda: START)
    again.once()
    assert again.status().last_error is None and again.status().last_recovered is None


def test_nightly_is_off_unless_configured(cx: Cortex) -> None:
    nightly = Nightly(cx)

    async def run() -> None:
        with anyio.fail_after(1):
            await nightly.run()  # returns at once: [sleep] nightly is false in the starter vault

    anyio.run(run)
    assert nightly.status() == NightlyStatus(enabled=False, mode="light", next_at=None, runs=0, last_run_at=None,
                                             last_report=None, last_error=None)
