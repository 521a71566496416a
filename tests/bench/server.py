"""The server under load, over loopback HTTP: recall latency, save-to-recall visibility, readers beside a writer,
a small write while a big note embeds, and SIGINT to exit in the middle of that embedding.

Generates a vault with `tests/bench/gen.py` (or reuses the one in --keep DIR), indexes it, runs
`vault-cortex serve` on a free loopback port in a subprocess, and prints one table of figures with their
targets. Figures, not assertions: nothing here fails a build.
Run: `python tests/bench/server.py [--notes 2000] [--recalls 300] [--saves 30] [--readers 20] [--seconds 30]
[--big-sections 1000] [--keep DIR]`.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from tests.bench.gen import make_vault, queries
from vault_cortex import Cortex

COUNTER = "short_term/bench counter.md"
JOURNAL = "short_term/bench journal.md"
BIG = "short_term/bench big note.md"
WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def atomic_save(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def serving(vault: Path, stopped: list[float] | None = None) -> Iterator[tuple[str, dict[str, str]]]:
    """`vault-cortex serve` on the vault until the block ends; `stopped` is given the seconds from SIGINT to exit."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.1)
        auth = {"Authorization": f"Bearer {(vault / '.cortex/token').read_text().strip()}"}
        with httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            while not ((s := http.get("/v1/status").json()["watch"])["syncs"] >= 1 and not s["pending"]):
                time.sleep(0.1)
        yield url, auth
    finally:
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if stopped is not None:
            stopped.append(time.perf_counter() - sent)


def bench_recall(http: httpx.Client, qs: list[str]) -> tuple[list[float], list[float]]:
    for q in qs[:20]:  # warm the model, caches and connections
        http.get("/v1/recall", params={"q": q})
    wall, server = [], []
    for q in qs:
        t0 = time.perf_counter()
        r = http.get("/v1/recall", params={"q": q, "k": 10})
        wall.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        server.append(float(r.json()["took_ms"]))
    return wall, server


def bench_visibility(http: httpx.Client, vault: Path, n: int) -> list[float]:
    """Milliseconds from an atomic save of a new note to the note topping recall for its unique words."""
    out = []
    rng = random.Random(11)
    for i in range(n):
        tag = f"{rng.choice(WORDS)}{i}x{rng.randrange(10**6)}"
        rel = f"short_term/visibility {tag}.md"
        text = f"# Visibility {tag}\n\nThe {tag} probe reported a reading worth keeping, number {i}.\n"
        saved = time.perf_counter()
        atomic_save(vault / rel, text)
        while True:
            hits = http.get("/v1/recall", params={"q": f"{tag} probe reading", "k": 1}).json()["hits"]
            if hits and hits[0]["path"] == rel:
                break
            if time.perf_counter() - saved > 30:
                raise RuntimeError(f"{rel} never showed up in recall")
            time.sleep(0.005)
        out.append((time.perf_counter() - saved) * 1000)
        time.sleep(0.2)  # let the next save start from an idle watcher
    return out


def bench_write_while_embedding(http: httpx.Client, vault: Path, sections: int, n: int = 5) -> list[float]:
    """Milliseconds of a small POST /v1/notes while the watcher embeds a note of `sections` headed sections (text no
    cache has seen), each once its embedding has begun; the embedding is left running (the stop comes next)."""
    rng = random.Random()
    body = "\n".join(f"## Entry {k}\n" + " ".join(f"big{k}w{j}x{rng.randrange(10**6)}" for j in range(60))
                     for k in range(sections))
    atomic_save(vault / BIG, f"# Big note\n\n{body}\n")
    deadline = time.monotonic() + 600
    while not (http.get("/v1/status").json()["index"]["indexing"] or {}).get("done"):
        if time.monotonic() > deadline:
            raise RuntimeError("the watcher never started embedding the big note")
        time.sleep(0.05)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        http.post("/v1/notes", json={"text": f"The anemometer cup {i} was replaced.", "title": f"Bench cup {i}"},
                  timeout=600).raise_for_status()
        out.append((time.perf_counter() - t0) * 1000)
    if not http.get("/v1/status").json()["index"]["indexing"]:
        print("  (the big note was embedded before the writes were done: raise --big-sections)", flush=True)
    return out


class Load:
    """Readers recalling in a loop while a writer saves a note every 100 ms (as an editor does: new notes and
    edits of one journal note, by atomic rename) and an API client updates a note with If-Match."""

    def __init__(self, url: str, auth: dict[str, str], vault: Path, qs: list[str]) -> None:
        self.url, self.auth, self.vault, self.qs = url, auth, vault, qs
        self.latencies: list[float] = []
        self.api_latencies: list[float] = []
        self.errors: list[str] = []
        self.created: list[str] = []
        self.journal_entries = 0
        self.saves = 0
        self.api_writes = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def reader(self, seed: int) -> None:
        rng = random.Random(seed)
        local: list[float] = []
        with httpx.Client(base_url=self.url, headers=self.auth, timeout=30) as http:
            while not self.stop.is_set():
                t0 = time.perf_counter()
                try:
                    r = http.get("/v1/recall", params={"q": rng.choice(self.qs), "k": 10})
                    if r.status_code != 200:
                        self.errors.append(f"recall {r.status_code}: {r.text[:200]}")
                except httpx.HTTPError as exc:
                    self.errors.append(f"recall: {exc!r}")
                local.append((time.perf_counter() - t0) * 1000)
        with self.lock:
            self.latencies += local

    def file_writer(self) -> None:
        journal = "# Bench journal\n"
        next_at = time.perf_counter()
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                if i % 2:
                    rel = f"short_term/load {i}.md"
                    atomic_save(self.vault / rel, f"# Load {i}\n\nWritten under load, note {i} of the run.\n")
                    self.created.append(rel)
                else:
                    journal += f"- entry {i}: journalmark{i}x\n"
                    atomic_save(self.vault / JOURNAL, journal)
                    self.journal_entries = i
                self.saves += 1
            except OSError as exc:
                self.errors.append(f"save: {exc!r}")
            next_at += 0.1
            time.sleep(max(0.0, next_at - time.perf_counter()))

    def api_writer(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.auth, timeout=30) as http:
            r = http.put("/v1/notes", params={"path": COUNTER}, json={"content": "# Bench counter\n"})
            etag, content = r.headers["ETag"], "# Bench counter\n"
            i = 0
            while not self.stop.is_set():
                t0 = time.perf_counter()
                i += 1
                content += f"- write {i}\n"
                try:
                    r = http.put("/v1/notes", params={"path": COUNTER}, json={"content": content},
                                 headers={"If-Match": etag})
                    if r.status_code != 200:
                        self.errors.append(f"write {r.status_code}: {r.text[:200]}")
                        content = http.get("/v1/notes", params={"path": COUNTER}).json()["content"]
                    else:
                        etag = r.headers["ETag"]
                        self.api_writes += 1
                except httpx.HTTPError as exc:
                    self.errors.append(f"write: {exc!r}")
                self.api_latencies.append((time.perf_counter() - t0) * 1000)
                time.sleep(max(0.0, 0.1 - (time.perf_counter() - t0)))

    def run(self, readers: int, seconds: float) -> float:
        threads = [threading.Thread(target=self.reader, args=(n,)) for n in range(readers)]
        threads += [threading.Thread(target=self.file_writer), threading.Thread(target=self.api_writer)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        self.stop.set()
        for t in threads:
            t.join()
        return time.perf_counter() - started

    def lost(self, http: httpx.Client, notes_before: int) -> list[str]:
        """Writes that the files or the index do not show once the watcher is idle."""
        while (s := http.get("/v1/status").json()["watch"])["pending"] or s["lag_ms"]:
            time.sleep(0.1)
        lost = []
        counter = http.get("/v1/notes", params={"path": COUNTER}).json()["content"]
        if counter.count("- write ") != self.api_writes:
            lost.append(f"{COUNTER}: {counter.count('- write ')} lines, {self.api_writes} writes acknowledged")
        notes = http.get("/v1/status").json()["index"]["notes"]
        if notes != notes_before + len(self.created) + 2:
            lost.append(f"index holds {notes} notes, expected {notes_before} + {len(self.created)} new + 2")
        for rel in self.created:
            if not (self.vault / rel).is_file():
                lost.append(f"{rel}: missing on disk")
        last = f"journalmark{self.journal_entries}x"
        hits = http.get("/v1/recall", params={"q": last, "k": 1}).json()["hits"]
        if not hits or hits[0]["path"] != JOURNAL:
            lost.append(f"{JOURNAL}: its last version (with {last}) is not the one indexed")
        for rel in self.created[-5:]:
            n = rel.split()[-1].removesuffix(".md")
            hits = http.get("/v1/recall", params={"q": f"Load {n} written under load note {n}", "k": 20}).json()["hits"]
            if rel not in [h["path"] for h in hits]:
                lost.append(f"{rel}: not recalled")
        return lost


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--recalls", type=int, default=300)
    ap.add_argument("--saves", type=int, default=30)
    ap.add_argument("--readers", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--big-sections", type=int, default=1000,
                    help="sections (one chunk each) of the note embedded while writes and the stop are timed")
    ap.add_argument("--keep", type=Path, default=None, help="build (or reuse) the vault here and leave it behind")
    args = ap.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="vault-cortex-bench-server-"))
    vault = work / "vault"
    try:
        if not (vault / ".cortex").is_dir():
            print(f"generating {args.notes} notes in {vault}", flush=True)
            make_vault(vault, args.notes, seed=7)
        for stale in vault.glob("short_term/*.md"):  # left by an earlier run of this script
            if stale.name.startswith(("visibility ", "load ", "bench counter", "bench journal", "bench big note",
                                      "Bench cup ")):
                stale.unlink()
        t0 = time.perf_counter()
        with Cortex.open(vault) as cx:
            report = cx.sync()
        print(f"indexed {report.notes} notes in {time.perf_counter() - t0:.1f}s", flush=True)

        qs = queries(max(args.recalls, 200), seed=7)
        stopped: list[float] = []
        with serving(vault, stopped) as (url, auth), httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            wall, took = bench_recall(http, qs[: args.recalls])
            visible = bench_visibility(http, vault, args.saves)
            notes_before = http.get("/v1/status").json()["index"]["notes"]
            load = Load(url, auth, vault, qs)
            elapsed = load.run(args.readers, args.seconds)
            lost = load.lost(http, notes_before)
            during = bench_write_while_embedding(http, vault, args.big_sections)

        rows = [
            ("recall over HTTP p50", f"{pct(wall, 50):.1f} ms", "< 50 ms", pct(wall, 50) < 50),
            ("recall over HTTP p95", f"{pct(wall, 95):.1f} ms", "", None),
            ("  of which in the facade (took_ms) p50", f"{statistics.median(took):.1f} ms", "", None),
            ("save → recall p50", f"{pct(visible, 50):.0f} ms", "", None),
            ("save → recall p95", f"{pct(visible, 95):.0f} ms", "< 500 ms", pct(visible, 95) < 500),
            (f"{args.readers} readers + writer: recalls/s", f"{len(load.latencies) / elapsed:.0f}", "", None),
            ("  recall p50 under load", f"{pct(load.latencies, 50):.0f} ms", "", None),
            ("  recall p95 under load", f"{pct(load.latencies, 95):.0f} ms", "", None),
            ("  saves by the editor (one per 100 ms)", str(load.saves), "", None),
            ("  API writes with If-Match", f"{load.api_writes}", "", None),
            ("  API write p95 under load", f"{pct(load.api_latencies, 95):.0f} ms", "", None),
            ("  errors", str(len(load.errors)), "0", not load.errors),
            ("  lost writes", str(len(lost)), "0", not lost),
            (f"write while a {args.big_sections}-chunk note embeds p50", f"{pct(during, 50):.0f} ms", "", None),
            ("  max", f"{max(during):.0f} ms", "", None),
            ("SIGINT → exit while that note embeds", f"{stopped[0]:.2f} s", "< 2 s", stopped[0] < 2),
        ]
        print(f"\nvault: {report.notes} notes; {os.cpu_count()} CPUs; loopback HTTP")
        for name, value, target, ok in rows:
            mark = "" if ok is None else ("  ok" if ok else "  MISSED")
            print(f"{name:<42} {value:>12}  {target:<9}{mark}")
        for line in (load.errors + lost)[:10]:
            print(f"  ! {line}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
