"""Indexing and recall speed on a synthetic vault: cold sync, re-syncs, a rebuild from the cache, recall latency.

Generates a vault with `tests/bench/gen.py` in a temporary folder (or in --keep DIR, which is left behind),
then prints one table of figures with their targets. Figures, not assertions: nothing here fails a build.
Run: `python tests/bench/index.py [--notes 2000] [--queries 200] [--keep DIR] [--profile FILE]`.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tests.bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from tests.bench.gen import make_vault, queries
from vault_cortex import Cortex
from vault_cortex.config import load_settings
from vault_cortex.index.embed import BATCH_SIZE, Embedder, load_embedder
from vault_cortex.index.progress import SyncReport
from vault_cortex.recall.request import RecallRequest

INDEX_FILES = ("index.db", "index.db-wal", "index.db-shm", "vectors.usearch")


class TimedEmbedder:
    """The real model behind a stopwatch: wall time spent in `embed` and `count_tokens`, for cross-checks."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.embed_seconds = 0.0
        self.embedded = 0
        self.count_seconds = 0.0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.embed_seconds += time.perf_counter() - t0
            self.embedded += len(texts)

    def count_tokens(self, text: str) -> int:
        t0 = time.perf_counter()
        try:
            return self.inner.count_tokens(text)
        finally:
            self.count_seconds += time.perf_counter() - t0

    def reset(self) -> None:
        self.embed_seconds = self.count_seconds = 0.0
        self.embedded = 0

    def __getattr__(self, name: str) -> Any:  # anything else the library may use (tokenizer, max_tokens)
        return getattr(self.inner, name)


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, bool | None]] = []

    def add(self, name: str, value: str, target: str = "", ok: bool | None = None) -> None:
        self.rows.append((name, value, target, ok))

    def render(self) -> str:
        w = max(len(r[0]) for r in self.rows)
        v = max(len(r[1]) for r in self.rows)
        t = max(len(r[2]) for r in self.rows)
        lines = [f"{'metric':<{w}}  {'value':>{v}}  {'target':<{t}}  result", "-" * (w + v + t + 12)]
        for name, value, target, ok in self.rows:
            mark = "" if ok is None else ("pass" if ok else "FAIL")
            lines.append(f"{name:<{w}}  {value:>{v}}  {target:<{t}}  {mark}".rstrip())
        return "\n".join(lines)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def progress_printer(every: float = 10.0) -> Callable[[str, int, int], None]:
    last = [0.0]

    def show(phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if done in (0, total) or now - last[0] >= every:
            last[0] = now
            log(f"  {phase}: {done}/{total}")

    return show


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def activity_events(root: Path) -> int:
    """Lines in the vault's activity log (one recall, open or touch each)."""
    return sum(len(p.read_bytes().splitlines()) for p in (root / ".cortex" / "activity").glob("*.jsonl"))


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def touch_note(path: Path, n: int) -> None:
    """Change one note's body (a new sentence at the end of its last section), as an editor save would."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + f"\n\nEdit {n}: I re-read this note and added one more thought.\n",
                    encoding="utf-8", newline="\n")


def sync_timed(cx: Cortex, progress: Callable[[str, int, int], None] | None = None) -> tuple[float, SyncReport]:
    t0 = time.perf_counter()
    report = cx.sync(progress)
    return time.perf_counter() - t0, report


def recall_latencies(call: Callable[[str], object], qs: Sequence[str]) -> list[float]:
    for q in qs[:5]:  # warm-up: first-use costs (SQLite page cache, onnxruntime arenas) are not latency
        call(q)
    out = []
    for q in qs:
        t0 = time.perf_counter()
        call(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def run(root: Path, n_notes: int, n_queries: int, seed: int, profile: Path | None) -> Table:
    table = Table()
    t0 = time.perf_counter()
    make_vault(root, n_notes, seed)
    log(f"generated {n_notes} notes in {time.perf_counter() - t0:.1f}s at {root}")

    settings = load_settings(root)
    t0 = time.perf_counter()
    model = TimedEmbedder(load_embedder(settings.embedding))
    load_s = time.perf_counter() - t0
    log(f"model {model.model_id} loaded in {load_s:.2f}s; threads={settings.embedding.threads} "
        f"batch={BATCH_SIZE}")

    # -- cold sync -------------------------------------------------------------------------------------
    cx = Cortex.open(root, embedder=model)
    log("cold sync ...")
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    load_before = os.getloadavg()[0]
    cpu_before = cpu_seconds()
    cold_s, cold = sync_timed(cx, progress_printer())
    cores = (cpu_seconds() - cpu_before) / cold_s if cold_s else 0.0
    if profiler:
        profiler.disable()
        profiler.dump_stats(str(profile))
        log(f"cProfile of the cold sync written to {profile} (cProfile slows Python code, not ONNX)")
    chunks = cx.status()["chunks"]
    share = cold.embed_seconds / cold.seconds if cold.seconds else 0.0
    timed_share = model.embed_seconds / cold_s if cold_s else 0.0
    log(f"cold sync: {cold}")
    table.add("notes / chunks indexed", f"{cold.notes} / {chunks}", f"{n_notes} / ~{3 * n_notes}")
    table.add("model load", f"{load_s:.2f} s")
    table.add("cold sync", f"{cold_s:.1f} s")
    table.add("  chunks/s", f"{cold.chunks_embedded / cold_s:.1f}", "~44 (DESIGN.md)")
    table.add("  ONNX share (embed_seconds/seconds)", f"{share:.1%}", ">= 85%", share >= 0.85)
    table.add("  cross-check: time in model.embed", f"{timed_share:.1%}")
    table.add("  time in count_tokens (chunking)", f"{model.count_seconds:.1f} s")
    other = cold_s - model.embed_seconds - model.count_seconds
    table.add("  everything else (parse, SQLite, ...)", f"{other:.1f} s")
    table.add("  CPU cores this process got", f"{cores:.2f}", f"~{settings.embedding.threads} if the machine is idle")
    table.add("  load average before / after", f"{load_before:.1f} / {os.getloadavg()[0]:.1f}",
              f"< {os.cpu_count()} = no contention")

    # -- re-syncs --------------------------------------------------------------------------------------
    runs = [sync_timed(cx) for _ in range(3)]
    noop_s = statistics.median(s for s, _ in runs)
    noop_ok = all(r.chunks_embedded == 0 and r.updated == 0 and r.added == 0 for _, r in runs)
    table.add("no-change re-sync (median of 3)", f"{noop_s * 1000:.0f} ms", "< 2 s", noop_s < 2 and noop_ok)

    notes = sorted(root.glob("*/*.md"))
    step = max(1, len(notes) // 5)
    one: list[float] = []
    embedded: list[int] = []
    for i in range(5):
        touch_note(notes[i * step % len(notes)], i)
        s, report = sync_timed(cx)
        one.append(s)
        embedded.append(report.chunks_embedded)
        if report.updated != 1:
            log(f"one-note re-sync {i}: expected 1 updated note, got {report}")
    one_s = statistics.median(one)
    table.add("one-note-changed re-sync (median of 5)", f"{one_s * 1000:.0f} ms", "< 300 ms", one_s < 0.3)
    table.add("  chunks embedded per edit", "/".join(map(str, embedded)), "1-2")

    # -- rebuild from the embedding cache ----------------------------------------------------------------
    cx.close()
    index_dir = root / ".cortex" / "index"
    for name in INDEX_FILES:
        (index_dir / name).unlink(missing_ok=True)
    model.reset()
    cx = Cortex.open(root, embedder=model)
    rebuild_s, rebuilt = sync_timed(cx, progress_printer())
    log(f"rebuild: {rebuilt}")
    table.add("rebuild from embedding cache", f"{rebuild_s:.1f} s", "0 chunks embedded",
              rebuilt.chunks_embedded == 0)
    table.add("  chunks embedded / from cache", f"{rebuilt.chunks_embedded} / {rebuilt.chunks_cached}")

    # -- recall ------------------------------------------------------------------------------------------
    qs = queries(n_queries, seed)
    lat = recall_latencies(lambda q: cx.recall(RecallRequest(query=q, k=10)), qs)
    p50, p95 = percentile(lat, 50), percentile(lat, 95)
    table.add(f"recall p50 / p95 ({n_queries} queries, k=10)", f"{p50:.1f} / {p95:.1f} ms", "p50 < 25 ms",
              p50 < 25)
    empty = sum(1 for q in qs if not cx.recall(RecallRequest(query=q, k=10)).hits)
    table.add("  queries with no hits", str(empty), "0", empty == 0)
    model.reset()
    cx.recall(RecallRequest(query=qs[0], k=10))
    table.add("  query embedding alone", f"{model.embed_seconds * 1000:.1f} ms", "~3 ms (DESIGN.md)")
    cx.recall(RecallRequest(query=qs[0], k=10, budget_tokens=1000))
    lat = recall_latencies(lambda q: cx.recall(RecallRequest(query=q, k=10, budget_tokens=1000)), qs)
    table.add("recall with graph and packing p50 / p95", f"{percentile(lat, 50):.1f} / {percentile(lat, 95):.1f} ms",
              "")

    # -- the same edit once recalls have been logged: the activity log is replayed, the graph rebuilt -----
    events = activity_events(root)
    touch_note(notes[-1], 99)
    after_s, _ = sync_timed(cx)
    table.add(f"one-note re-sync after {events} logged recalls", f"{after_s * 1000:.0f} ms", "< 300 ms",
              after_s < 0.3)
    t0 = time.perf_counter()
    cx.recall(RecallRequest(query=qs[1], k=10))
    first_ms = (time.perf_counter() - t0) * 1000
    table.add("  first recall after that re-sync", f"{first_ms:.1f} ms", "p50 < 25 ms", first_ms < 25)
    cx.close()

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    table.add("peak RSS", f"{peak_mib:.0f} MiB")
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=Path, metavar="DIR", help="build the vault in DIR (must be empty) and keep it")
    ap.add_argument("--profile", type=Path, metavar="FILE", help="write a cProfile of the cold sync to FILE")
    args = ap.parse_args(argv)
    if args.keep:
        root = args.keep.expanduser()
        if root.exists() and any(root.iterdir()):
            log(f"{root} is not empty; --keep needs an empty or new folder")
            return 2
        cleanup = False
    else:
        root = Path(tempfile.mkdtemp(prefix="vault-cortex-bench-"))
        cleanup = True
    started = time.perf_counter()
    try:
        table = run(root.resolve(), args.notes, args.queries, args.seed, args.profile)
    finally:
        if cleanup:
            shutil.rmtree(root, ignore_errors=True)
    print(f"vault-cortex index bench: {args.notes} notes, seed {args.seed}, {os.cpu_count()} CPUs, "
          f"python {sys.version.split()[0]}")
    print(table.render())
    print(f"(total {time.perf_counter() - started:.0f}s{'' if cleanup else f'; vault kept at {root}'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
