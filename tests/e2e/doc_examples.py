"""The examples in README.md and docs/*.md, found, run and compared with what the page shows.

How a page's examples are checked (follow this when you write docs):

- A ```` ```console ```` block is a shell session: a line starting `$ ` is a command (a line ending in `\\`
  continues it) and the lines up to the next command are what it prints, stdout and stderr together. The
  commands of one page run in page order in one bash (so `TOKEN=…` carries over), with `HOME` and the working
  folder a fresh folder holding `my-vault` — the starter vault, its files made ten minutes old (`settle`: recency
  counts from them, and must not move with the checkout's age), synced — and the import examples' files
  (`wal.jsonl`, `conversations.json`, `memory.json`). A page whose first command is `vault-cortex init` starts
  from an empty folder instead. A page whose commands talk to `http://127.0.0.1:8765` gets a real
  `vault-cortex serve` on `~/my-vault` first (on a free port; the address in the commands is changed to it).
- The examples run on the project's clock pinned to `DOC_NOW` (`VAULT_CORTEX_NOW`, vault_cortex/clock.py), the
  starter vault's present, and its files are made ten minutes older than that: what a page shows does not move
  with the calendar (`created_after=7d` finds the same notes in any year). `test_doc_examples.py` runs the pages
  once more with the machine's clock a year ahead (libfaketime), so an example that reads the calendar any other
  way fails.
- What varies from run to run is normalised before comparing: durations (`264 ms`, `1.11s`), rates (`21/s`),
  `took_ms`, the day and time of day lines of `recent`, the month of an activity file; a decimal may differ by
  0.05 (scores move with the clock); `recent`'s lines may come in any order (what happened within one second,
  the log's grain, is listed by path); progress lines (a terminal's `index [███] 77/77 chunks`, a pipe's
  `index: 24/77 chunks`) are left out on both sides. A line that is only `…` stands for any number of lines.
  Everything else must match.
- ```` ```python ```` blocks run in a folder holding `my-vault`; ```` ```toml ```` blocks must be valid vault
  settings (a piece of `.cortex/config.toml`); ```` ```json ```` blocks must parse.
- `<!-- doc-test: skip -->` on the line before a block leaves it out; say in the text why it cannot run.

`python tests/e2e/doc_examples.py --update [PAGE ...]` writes what the commands print now into the pages whose
output no longer matches (review the diff, and put `…` back where a long output was cut).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIXTURES = ROOT / "tests" / "fixtures"
FILES = {"wal.jsonl": "transcripts/2026-10-14 wal investigation.jsonl",
         "conversations.json": "imports/conversations.json", "memory.json": "imports/memory.json"}
SHOWN_ADDRESS = "127.0.0.1:8765"
SKIP = "<!-- doc-test: skip -->"
_MARK = "@@doc-example {}@@"
TEMPLATE_AGE = 600.0  # seconds: how old `settle` makes the starter vault's files
DOC_NOW = "2026-12-01T12:00:00+00:00"  # the examples' clock: the starter vault's last notes are two days old
A_YEAR_AHEAD = "+365d"  # libfaketime's offset for the machine's clock in the second run
FAKETIME_LIBRARY = "/usr/lib/*/faketime/libfaketime.so.1"  # Debian's faketime package
_DECIMAL = re.compile(r"\d+\.\d+")
_PROGRESS = re.compile(r"^\w[\w ]*(?: \[[^\]]*\]|:) \d+/\d+ \w+")
_VARYING = [
    (re.compile(r'"took_ms":\s?[\d.]+'), '"took_ms":<time>'),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b"), "<time>"),
    (re.compile(r"\(\d+(?:\.\d+)?/s\)"), "(<rate>)"),
    (re.compile(r"^\d{4}-\d{2}-\d{2}$"), "<day>"),
    (re.compile(r"^(\s+)\d{2}:\d{2}(?=\s)"), r"\1<hh:mm>"),
    (re.compile(r"\b\d{4}-\d{2}(?=\.jsonl\b)"), "<month>"),
]


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    first: int  # index of the block's first line in the page
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    command: str
    expected: tuple[str, ...]
    first: int  # the page's lines [first, end) hold the expected output
    end: int


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page that are not marked to skip."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and lines[i].strip() != "```":
            start, lang = i + 1, lines[i][3:].strip()
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            if before.strip() != SKIP:
                found.append(Block(page, lang, start, tuple(lines[start:end])))
            i = end
        i += 1
    return found


def steps(block: Block) -> list[Step]:
    """The commands of a console block, each with the output shown after it."""
    out: list[Step] = []
    lines, i = block.lines, 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command += "\n" + lines[i]
        first = i = i + 1
        while i < len(lines) and not lines[i].startswith("$ "):
            i += 1
        end = i
        while end > first and not lines[end - 1].strip():
            end -= 1
        out.append(Step(command, tuple(lines[first:end]), block.first + first, block.first + end))
    return out


def console_steps(page: Path) -> list[Step]:
    return [s for b in blocks(page) if b.lang == "console" for s in steps(b)]


def normalise(line: str) -> str:
    for pattern, replacement in _VARYING:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def _line_matches(expected: str, actual: str) -> bool:
    e, a = normalise(expected), normalise(actual)
    if _DECIMAL.split(e) != _DECIMAL.split(a):
        return False
    return all(abs(float(x) - float(y)) <= 0.05 for x, y in zip(_DECIMAL.findall(e), _DECIMAL.findall(a), strict=True))


def mismatch(expected: tuple[str, ...], actual: list[str], *, unordered: bool = False) -> str | None:
    """None when the output is what the page shows, else the first line that differs; `unordered` (the output of
    `recent`, whose log keeps whole seconds: what happened within one second is listed by path, so a page's
    examples order by how the seconds fell) matches each shown line to a printed one in any order."""
    expected = tuple(line for line in expected if not _PROGRESS.match(line))
    actual = [line for line in actual if not _PROGRESS.match(line)]
    if unordered:
        return _unordered_mismatch(expected, actual)
    i = j = 0
    while i < len(expected):
        if expected[i].strip() == "…":
            if i + 1 == len(expected):
                return None
            j = next((k for k in range(j, len(actual)) if _line_matches(expected[i + 1], actual[k])), -1)
            if j < 0:
                return f"nothing after '…' matches: {expected[i + 1]!r}"
        elif j >= len(actual):
            return f"the output ended; the page shows next: {expected[i]!r}"
        elif not _line_matches(expected[i], actual[j]):
            return f"page: {expected[i]!r}\nprints: {actual[j]!r}"
        else:
            j += 1
        i += 1
    return None if j >= len(actual) else f"the page stops, the output goes on: {actual[j]!r}"


def _unordered_mismatch(expected: tuple[str, ...], actual: list[str]) -> str | None:
    left = list(actual)
    for line in expected:
        if line.strip() == "…":
            continue
        k = next((k for k, printed in enumerate(left) if _line_matches(line, printed)), -1)
        if k < 0:
            return f"page: {line!r}\nis not printed (in any order)"
        del left[k]
    if left and not any(line.strip() == "…" for line in expected):
        return f"the page stops, the output goes on: {left[0]!r}"
    return None


def settle(root: Path, now: float | None = None) -> None:
    """Give the starter vault's files one age, ten minutes before `now` (the machine's clock when None), whenever
    the checkout was made: `init` keeps the template's mtimes, and recency and decay count from them, so shown
    outputs moved with the checkout's age (in its first three minutes recency rounds to 1 and ties graph proximity
    in the why-line; after a week the close hits swap)."""
    when = (time.time() if now is None else now) - TEMPLATE_AGE
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (when, when))


def prepare(home: Path, synced_vault: Path, *, empty: bool) -> None:
    """The folder a page's examples run in: `my-vault` (unless the page makes its own) and the import files."""
    home.mkdir(parents=True)
    if not empty:
        shutil.copytree(synced_vault, home / "my-vault", symlinks=True)  # copy2 keeps mtimes: the index is current
    for name, source in FILES.items():
        shutil.copy(FIXTURES / source, home / name)


def doc_now() -> float:
    return datetime.fromisoformat(DOC_NOW).timestamp()


def faketime_library() -> str:
    """libfaketime, which moves the machine's clock for a process and its children; a clear failure without it."""
    found = sorted(glob.glob(FAKETIME_LIBRARY))
    if not found:
        raise RuntimeError(f"no {FAKETIME_LIBRARY}: install Debian's faketime package (tests/run does)")
    return found[0]


def environment(home: Path, *, ahead: bool = False) -> dict[str, str]:
    """The examples' environment: a fresh HOME, the clock pinned to DOC_NOW; `ahead`: the machine's clock (not the
    project's) a year ahead for every process the examples start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8", COLUMNS="200", VAULT_CORTEX_NOW=DOC_NOW)
    if ahead:
        env.update(LD_PRELOAD=faketime_library(), FAKETIME=A_YEAR_AHEAD, FAKETIME_DONT_FAKE_MONOTONIC="1")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`vault-cortex serve` on the page's vault, for the examples that call the HTTP API."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.log = (home / "serve.log").open("wb")
        self.proc = subprocess.Popen(
            ["vault-cortex", "serve", "--vault", str(home / "my-vault"), "--port", str(self.port)],
            cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"GET /v1/health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    if b"200" in s.recv(64):
                        return
            except OSError:
                time.sleep(0.2)
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"serve did not start: {(home / 'serve.log').read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_console(page: Path, home: Path, *, ahead: bool = False) -> list[tuple[Step, list[str]]]:
    """Run a page's console commands in order in one bash; each step with the lines it printed."""
    todo = console_steps(page)
    env = environment(home, ahead=ahead)
    server = Server(home, env) if any(SHOWN_ADDRESS in s.command for s in todo) else None
    try:
        script = ["exec 2>&1 </dev/null"]
        for n, step in enumerate(todo):
            command = step.command.replace(SHOWN_ADDRESS, f"127.0.0.1:{server.port}") if server else step.command
            script += [f"printf '\\n{_MARK.format(n)}\\n'", command]
        done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=home, env=env,
                              capture_output=True, text=True, timeout=900)
    finally:
        if server:
            server.stop()
    outputs = re.split(r"\n@@doc-example \d+@@\n", "\n" + done.stdout)[1:]
    assert len(outputs) == len(todo), done.stdout[-2000:]
    return [(step, out.rstrip("\n").split("\n") if out.strip() else [])
            for step, out in zip(todo, outputs, strict=True)]


def _is_recent(command: str) -> bool:
    return command.split()[:2] == ["vault-cortex", "recent"]


def check_console(page: Path, home: Path, *, ahead: bool = False) -> list[str]:
    """What differs between a page's console examples and what they print, one message a command; `ahead`: run
    with the machine's clock a year ahead."""
    failures = []
    for step, actual in run_console(page, home, ahead=ahead):
        why = mismatch(step.expected, actual, unordered=_is_recent(step.command))
        if why:
            shown = "\n".join(actual[:40])
            failures.append(f"{page.relative_to(ROOT)}:{step.first}: $ {step.command}\n{why}\n--- it printed:\n{shown}")
    return failures


def check_snippet(block: Block) -> None:
    """A ```toml block is valid vault settings; a ```json block parses."""
    from vault_cortex.config import parse_settings

    text = "\n".join(block.lines)
    if block.lang == "toml":
        parse_settings(tomllib.loads(text))
    elif block.lang == "json":
        json.loads(text)


def update(page: Path, home: Path) -> int:
    """Write what the commands print now where the page shows something else; the number of steps changed."""
    lines = page.read_text(encoding="utf-8").split("\n")
    changed = [(s, a) for s, a in run_console(page, home) if mismatch(s.expected, a, unordered=_is_recent(s.command))]
    for step, actual in reversed(changed):
        lines[step.first:step.end] = actual
    page.write_text("\n".join(lines), encoding="utf-8")
    return len(changed)


def _main(argv: list[str]) -> int:
    import tempfile

    sys.path.insert(0, str(ROOT))
    from vault_cortex.cortex import Cortex
    from vault_cortex.files.vault import init_vault

    names = [a for a in argv if a != "--update"]
    pages = [p for p in PAGES if not names or p.name in names or str(p.relative_to(ROOT)) in names]
    with tempfile.TemporaryDirectory() as tmp:
        synced = Path(tmp) / "template" / "my-vault"
        os.environ["VAULT_CORTEX_NOW"] = DOC_NOW
        init_vault(synced)
        settle(synced, doc_now())
        with Cortex.open(synced) as cx:
            cx.sync()
        for n, page in enumerate(p for p in pages if console_steps(p)):
            home = Path(tmp) / f"page{n}"
            prepare(home, synced, empty=console_steps(page)[0].command.startswith("vault-cortex init"))
            if "--update" in argv:
                print(f"{page.relative_to(ROOT)}: {update(page, home)} outputs rewritten")
            else:
                print("\n\n".join(check_console(page, home)) or f"{page.relative_to(ROOT)}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
