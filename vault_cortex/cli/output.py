"""What the commands print: a result as JSON or as text, and the progress of indexing on stderr (for the commands
that index, sync, and those that must index first)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

import msgspec

from vault_cortex.index.progress import WORDS

T = TypeVar("T")


def emit(result: T, as_json: bool, text: Callable[[T], object]) -> int:
    """Print a command's result: as JSON (`--json`) or as `text` prints it; the command's exit code (0)."""
    if as_json:
        print(msgspec.json.encode(result).decode())
    else:
        text(result)
    return 0


class ProgressBar:
    """A one-line progress bar per phase on stderr when it is a terminal; a line per quarter otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.perf_counter()
        self.last_quarter = -1
        self.drawn = False
        self.phase = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        if total <= 0:
            return
        if phase != self.phase:  # a new phase: its own line, rate and quarters
            if self.tty and self.drawn and self.phase:
                self._write("\n")
            self.phase, self.started, self.last_quarter, self.drawn = phase, time.perf_counter(), -1, False
        unit = "notes" if phase == WORDS else "chunks"
        frac = done / total
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        if self.tty:
            width = 30
            filled = int(frac * width)
            bar = "█" * filled + "·" * (width - filled)
            eta = f", {int((total - done) / rate)}s left" if rate and done < total else ""
            self._write(f"\r{phase} [{bar}] {done}/{total} {unit} ({rate:.0f}/s{eta})")
            self.drawn = done < total
            if done >= total:
                self._write("\n")
        else:
            quarter = int(frac * 4)
            if quarter != self.last_quarter:
                self.last_quarter = quarter
                self._write(f"{phase}: {done}/{total} {unit}\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def indexing_progress(*, quiet: bool | None = None) -> ProgressBar | None:
    """Progress for the sync a command runs first (on a never-synced vault it indexes every note): none when
    `quiet`, which defaults to stderr not being a terminal (commands without a --quiet flag)."""
    if quiet is None:
        quiet = not sys.stderr.isatty()
    return None if quiet else ProgressBar()
