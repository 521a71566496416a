"""A sleep SIGKILLed at random points, then resumed or rolled back: no note lost, none half-written.

Each trial copies one planned vault, runs `vault-cortex sleep apply PLAN` in a subprocess that kills itself at
its N-th journal checkpoint (`sleep_killed.py`, through the journal's checkpoint seam), checks the
half-done vault, then resumes (three trials in four) or rolls back (one in four) and compares every file
with an uninterrupted run (or with the vault before the sleep).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_sleep import NOW, REPO, build_vault, snapshot

from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import content_hash
from vault_cortex.index.embed import Embedder
from vault_cortex.sleep import cycle as sleep
from vault_cortex.sleep.operations import Plan

TRIALS = 24
KILLED = Path(__file__).with_name("sleep_killed.py")


class Prepared:
    def __init__(self, root: Path, plan: Plan, before: dict[str, bytes], after: dict[str, bytes], ticks: int) -> None:
        self.root, self.plan, self.before, self.after, self.ticks = root, plan, before, after, ticks


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Prepared:
    base = tmp_path_factory.mktemp("kill")
    root = build_vault(base / "vault")
    with Cortex.open(root, embedder=embedder, clock=lambda: NOW) as cx:
        plan = cx.sleep_plan("full")
    reference = base / "reference"
    shutil.copytree(root, reference, symlinks=True)
    ticks = [0]
    with Cortex.open(reference, embedder=embedder) as cx:
        report = sleep.apply(cx.vault, plan, checkpoint=lambda: ticks.__setitem__(0, ticks[0] + 1))
    assert not report.skipped
    return Prepared(root, plan, snapshot(root), snapshot(reference), ticks[0])


def _body(data: bytes) -> bytes:
    return data.split(b"\n---\n", 1)[-1]


@pytest.mark.slow
def test_a_killed_sleep_resumes_or_rolls_back_without_losing_a_note(prepared: Prepared, tmp_path: Path,
                                                                   embedder: Embedder) -> None:
    p = prepared
    assert p.ticks > TRIALS
    points = sorted(random.Random(20261130).sample(range(1, p.ticks + 1), TRIALS))
    known = {content_hash(b) for b in p.before.values()} | {op.result for op in p.plan.ops}
    originals = [_body(b) for path, b in p.before.items() if path.endswith(".md") and path != "HANDOFF.md"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    plan_file = f".cortex/sleep/plan-{p.plan.id}.json"
    for trial, n in enumerate(points):
        vault = tmp_path / f"trial-{trial}"
        shutil.copytree(p.root, vault, symlinks=True)
        run = subprocess.run([sys.executable, str(KILLED), str(n), "sleep", "--vault", str(vault),
                              "apply", str(vault / plan_file)], cwd=REPO, capture_output=True, text=True,
                             env=env, timeout=300)
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)

        half = snapshot(vault)
        for path, data in half.items():  # every file is whole: as it was, or as some step of the plan left it
            assert path.endswith(".json") or content_hash(data) in known, (n, path)
        bodies = {_body(data) for path, data in half.items() if path.endswith(".md")}
        assert all(body in bodies for body in originals), n  # every original note's content is reachable

        with Cortex.open(vault, embedder=embedder) as cx:
            if trial % 4 == 3:
                report = sleep.rollback(cx.vault)
                expected = p.before
            else:
                report = sleep.resume(cx.vault)
                expected = p.after
        assert not report.skipped, (n, report.skipped)
        assert snapshot(vault) == expected, n
        assert not [f for f in vault.rglob(".*.tmp") if ".git" not in f.parts], n
    print(f"\n{TRIALS} kills at checkpoints {points[0]}…{points[-1]} of {p.ticks}: "
          f"{TRIALS - TRIALS // 4} resumed, {TRIALS // 4} rolled back, every file whole")


@contextmanager
def _small_disk(at: Path, size: int) -> Iterator[Path]:
    """A tmpfs of `size` bytes at `at` (root only; skipped with the reason where mounting is impossible)."""
    at.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(at)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'mount failed'}")
    try:
        yield at
    finally:
        if subprocess.run(["umount", str(at)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(at)], capture_output=True, check=False)


def _fill(filler: Path, leave: int) -> None:
    """Take all the free space of the disk holding `filler` but `leave` bytes."""
    st = os.statvfs(filler.parent)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, max(st.f_bavail * st.f_frsize - leave, 1))
    finally:
        os.close(fd)


def test_a_sleep_on_a_full_disk_stops_with_a_clear_error_and_nothing_half_written(
        prepared: Prepared, tmp_path: Path, embedder: Embedder) -> None:
    """Issue 21 F11: sleep apply on a full disk ended in a bare OSError. The vault sits on a small tmpfs (its index
    elsewhere) filled to leave a little room, different each trial, so the disk fills at a different step: the
    apply stops with DiskFull, every file is whole (as it was, or as a step left it), no temp file is left, and
    once there is room the sleep resumes to what an uninterrupted run makes, or rolls back to the vault before."""
    from vault_cortex.config import load_settings
    from vault_cortex.errors import DiskFull
    from vault_cortex.sleep.journal import interrupted

    p = prepared
    known = {content_hash(b) for b in p.before.values()} | {op.result for op in p.plan.ops}
    size = sum(f.stat().st_size for f in p.root.rglob("*") if f.is_file() and ".cortex/index" not in f.as_posix())
    stopped = 0
    for trial, leave in enumerate((0, 4096, 12288, 24576, 49152, 98304, 1 << 20)):
        with _small_disk(tmp_path / f"disk-{trial}", size * 2 + (2 << 20)) as disk:
            vault = disk / "vault"
            shutil.copytree(p.root, vault, symlinks=True,
                            ignore=lambda folder, names: ["index"] if folder.endswith(".cortex") else [])
            index = tmp_path / f"index-{trial}"
            shutil.copytree(p.root / ".cortex/index", index)
            _fill(disk / "filler", leave)
            with Cortex(vault, load_settings(vault, {}), embedder, index_dir=index) as cx:
                try:
                    sleep.apply(cx.vault, p.plan)
                except DiskFull as exc:
                    stopped += 1
                    assert "no space left" in str(exc) and "--resume" in str(exc) and "--rollback" in str(exc)
                half = snapshot(vault)
                for path, data in half.items():  # every file whole: as it was, or as some step left it
                    assert path.endswith(".json") or path == "filler" or content_hash(data) in known, (leave, path)
                assert not [f for f in vault.rglob(".*.tmp") if ".git" not in f.parts], leave
                (disk / "filler").unlink()
                if interrupted(vault) is None:  # finished, or stopped before the journal's first line
                    expected = p.after if snapshot(vault) != p.before else p.before
                elif trial % 2:
                    sleep.rollback(cx.vault)
                    expected = p.before
                else:
                    sleep.resume(cx.vault)
                    expected = p.after
                assert snapshot(vault) == expected, leave
    print(f"\n{stopped} of 7 applies stopped by a full disk; every file whole, each resumed or rolled back")
    assert stopped >= 4  # most trials met the full disk partway
