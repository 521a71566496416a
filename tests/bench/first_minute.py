"""The first minutes of `serve` on a vault it has never indexed: when recall first answers, when every note is
searchable by words, when every chunk has its vector, and what the server holds in memory, with the real model.

A generated vault (`tests/bench/gen.py`) is copied afresh for each run, and the real `vault-cortex serve` is
started on it; the bench polls /v1/status and /v1/recall every half second. With `--code DIR` (a worktree of an
older commit: `git worktree add /tmp/before <commit>`) the same vault is served by that code too, and the runs
alternate (this code, the other, this code…) so that a busy machine weighs on both alike. Figures, not assertions:

- first answer: seconds from the start of the process until a recall returns a hit;
- all words: until every note is in the index (searchable by words, links and properties);
- all vectors: until every chunk has its vector (recall matches by meaning everywhere);
- chunks/s: chunks given a vector per second, from the first vector to the last;
- peak RSS: the server's high-water mark (VmHWM) over the whole run; RSS idle: after it all, and its CPU over
  `--idle` seconds of nothing to do;
- with `--timeout S`, a serve not done by then is stopped and the share of chunks with a vector is printed;
- RSS after start-up on the starter vault: `serve` on a new vault (it copies the starter vault), `--settle`
  seconds after its start-up index is done, and its CPU over the next `--idle` seconds (10 at least).

Run: `python tests/bench/first_minute.py [--notes 10000] [--sections 2,3,3,3,4] [--code /tmp/before] [--runs 1]
[--idle 60] [--timeout S]`
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):  # run as a script: make `tests.bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.gen import SECTIONS, make_vault, queries, sections_arg

HERE = Path(__file__).resolve().parents[2]
ROWS = (("first_answer", "first answer", "s"), ("all_words", "all notes searchable by words", "s"),
        ("all_vectors", "all chunks with a vector", "s"), ("chunks_per_s", "chunks given a vector per second", ""),
        ("notes_at_timeout", "notes indexed when the time allowed was up", "%"),
        ("vectors_at_timeout", "of their chunks, those with a vector", "%"),
        ("peak_rss", "peak RSS of serve", "MiB"), ("idle_rss", "RSS when idle", "MiB"),
        ("idle_cpu", "CPU when idle", "%"), ("starter_rss", "RSS after start-up on the starter vault", "MiB"),
        ("starter_idle_cpu", "CPU when idle then (starter vault)", "%"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_status(pid: int, key: str) -> float:
    """A /proc/PID/status figure in MiB (VmRSS, VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_once(code: Path, source: Path, notes: int, idle: float, timeout: float) -> dict[str, Any]:
    """Serve a fresh copy of the vault with the code in `code`; the figures of its first minutes."""
    work = Path(tempfile.mkdtemp(prefix="first-minute-"))
    vault = work / "vault"
    shutil.copytree(source, vault)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    env["PYTHONPATH"] = str(code)
    out: dict[str, Any] = {}
    asks = queries(20)
    with (work / "serve.log").open("w") as log_file:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port",
                                 str(port)], cwd=code, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            headers: dict[str, str] = {}
            first_vector = None
            n = 0
            while time.monotonic() - started < timeout:
                time.sleep(0.5)
                if proc.poll() is not None:
                    raise RuntimeError(f"serve exited {proc.returncode}: {(work / 'serve.log').read_text()[-2000:]}")
                try:
                    if not headers:
                        token = (vault / ".cortex/token").read_text().strip()
                        headers = {"Authorization": f"Bearer {token}"}
                    status = httpx.get(f"{url}/status", headers=headers, timeout=30).json()["index"]
                    if "first_answer" not in out:
                        n += 1
                        hits = httpx.get(f"{url}/recall", params={"q": asks[n % len(asks)], "k": 5},
                                         headers=headers, timeout=30).json().get("hits")
                        if hits:
                            out["first_answer"] = time.monotonic() - started
                except (httpx.HTTPError, OSError, ValueError, KeyError):
                    continue
                now = time.monotonic() - started
                if status["vectors"] and first_vector is None:
                    first_vector = now
                if status["notes"] >= notes and "all_words" not in out:
                    out["all_words"] = now
                if status["notes"] >= notes and status["vectors"] >= status["chunks"] and not status["indexing"]:
                    out["all_vectors"] = now
                    out["chunks"] = status["chunks"]
                    span = now - (first_vector or 0.0)
                    out["chunks_per_s"] = status["chunks"] / span if span > 0 else 0.0
                    break
            else:  # the time allowed is up: how far the notes and the vectors got
                out["notes_at_timeout"] = 100 * status["notes"] / notes
                out["chunks"] = status["chunks"]
                out["vectors_at_timeout"] = 100 * status["vectors"] / max(1, status["chunks"])
                out["chunks_per_s"] = status["vectors"] / max(1e-9, timeout - (first_vector or 0.0))
            if "all_vectors" in out:  # idle figures only once it is done
                time.sleep(2.0)
                cpu = cpu_seconds(proc.pid)
                time.sleep(idle)
                out["idle_cpu"] = 100 * (cpu_seconds(proc.pid) - cpu) / idle
                out["idle_rss"] = proc_status(proc.pid, "VmRSS")
            out["peak_rss"] = proc_status(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.rmtree(work, ignore_errors=True)
    return out


def starter(code: Path, settle: float, idle: float) -> dict[str, float]:
    """RSS of `serve` on a new starter vault (created by serve itself), `settle` seconds after its start-up
    sync has finished and every chunk has its vector; then its CPU over `idle` seconds of nothing to do."""
    work = Path(tempfile.mkdtemp(prefix="first-minute-starter-"))
    vault = work / "vault"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    env["PYTHONPATH"] = str(code)
    with (work / "serve.log").open("w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port",
                                 str(port)], cwd=code, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                time.sleep(0.5)
                try:
                    headers = {"Authorization": f"Bearer {(vault / '.cortex/token').read_text().strip()}"}
                    status = httpx.get(f"{url}/status", headers=headers, timeout=30).json()
                except (httpx.HTTPError, OSError, ValueError):
                    continue
                index = status["index"]
                if (status["watch"]["syncs"] and not status["watch"]["pending"] and not index["indexing"]
                        and index["vectors"] >= index["chunks"] > 0):
                    break
            time.sleep(settle)
            rss, cpu = proc_status(proc.pid, "VmRSS"), cpu_seconds(proc.pid)
            time.sleep(idle)
            return {"starter_rss": rss, "starter_idle_cpu": 100 * (cpu_seconds(proc.pid) - cpu) / idle}
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            shutil.rmtree(work, ignore_errors=True)


def render(results: dict[str, list[dict[str, Any]]]) -> str:
    names = list(results)
    lines = ["| figure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key, label, unit in ROWS:
        cells = []
        for name in names:
            values = [r[key] for r in results[name] if key in r]
            cells.append(f"{statistics.median(values):.1f}{(' ' + unit) if unit else ''}" if values else "—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--code", type=Path, default=None, metavar="DIR", help="also serve with the code in DIR")
    ap.add_argument("--runs", type=int, default=1, help="runs of each code, alternated (medians are printed)")
    ap.add_argument("--idle", type=float, default=60.0, metavar="S", help="seconds of idle CPU measured after")
    ap.add_argument("--timeout", type=float, default=7200.0, metavar="S",
                    help="time allowed each serve; when it is up, how far the vectors got is printed")
    ap.add_argument("--sections", type=sections_arg, default=SECTIONS, metavar="N,N,…",
                    help="sections per note in the generated vault (5,6,7,8: about 6.5 chunks per note)")
    ap.add_argument("--settle", type=float, default=15.0, metavar="S",
                    help="seconds after the starter vault's start-up before its RSS is read")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="generate the vault in DIR and reuse it")
    args = ap.parse_args(argv)
    source = args.keep or Path(tempfile.mkdtemp(prefix="first-minute-vault-"))
    if not (source / ".cortex").is_dir():
        make_vault(source, args.notes, args.seed, args.sections)
    codes = {"this code": HERE} | ({f"code at {args.code}": args.code.resolve()} if args.code else {})
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    log(f"{args.notes} notes, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for run in range(args.runs):
        for name, code in codes.items():
            log(f"run {run + 1}: {name}")
            got = serve_once(code, source, args.notes, args.idle, args.timeout)
            log("  " + ", ".join(f"{k} {v:.1f}" for k, v in got.items()))
            results[name].append(got)
    for run in range(args.runs):
        for name, code in codes.items():
            got = starter(code, args.settle, max(args.idle, 10.0))
            results[name][run].update(got)
            log(f"run {run + 1}: {name}: starter vault " + ", ".join(f"{k} {v:.1f}" for k, v in got.items()))
    if args.keep is None:
        shutil.rmtree(source, ignore_errors=True)
    print(f"first serve of a generated vault of {args.notes} notes ({results[next(iter(codes))][0].get('chunks', 0)}"
          f" chunks), real model; medians of {args.runs} run(s); load average at end {os.getloadavg()[0]:.1f}")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
