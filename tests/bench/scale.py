"""How costs grow with the vault: writes, recall, context, syncs, a rename, memory and disk at 1k / 10k / 100k notes.

Each size runs in its own process (so peak RSS is that size's), on a generated vault (`tests/bench/gen.py`, with
popularity hubs: a few notes draw a large share of the links) indexed with the tests' FakeEmbedder, so the
model's cost is out of the figures; `--real N` adds one size with the real model. HTTP figures go through a live
uvicorn server with its watcher, as `serve` runs. Prints one table with the fitted growth exponent of each figure
(the slope of log(value) against log(notes)): ~0 is flat, ~1 linear. Figures, not assertions.

Run: `python tests/bench/scale.py [--sizes 1000,10000,100000] [--real 2000] [--keep DIR] [--writes N] [--code DIR]`
(`--keep DIR` keeps the generated vaults there and reuses them on the next run; the index is rebuilt each run;
`--code DIR` measures another checkout, e.g. `git worktree add /tmp/before <commit>`, with this script, so a
before/after pair is one script on one machine back to back).

Each size runs in three processes: the index phase (a cold sync of a fresh copy, one-note edits), a no-change
sync as `vault-cortex sync` runs it, and the serve phase (a live server with its watcher: recall, context,
writes, and an Obsidian rename of a note linked from 100 notes, timed until the watcher has indexed it). The
serve phase's peak RSS is the server's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tests.bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.gen import make_vault, queries

INDEX_DIR = Path(".cortex") / "index"
ROWS = (  # (key, label, unit)
    ("edit_sync", "one-note edit, re-sync (median of 5)", "s"),
    ("edit_paths", "one-note edit, one-file sync (median of 5)", "ms"),
    ("remember_p50", "POST /v1/notes (remember) p50", "ms"),
    ("remember_p95", "POST /v1/notes (remember) p95", "ms"),
    ("put_p50", "PUT /v1/notes (If-Match) p50", "ms"),
    ("put_p95", "PUT /v1/notes (If-Match) p95", "ms"),
    ("recall_p50", "recall k=10 over HTTP p50", "ms"),
    ("recall_p95", "recall k=10 over HTTP p95", "ms"),
    ("context_p50", "context (1,500 tokens) over HTTP p50", "ms"),
    ("nochange_sync", "no-change sync (open + sync + close, fresh process)", "s"),
    ("rename", "Obsidian rename of a note linked from 100, until the watcher is done", "s"),
    ("rename_links", "  notes whose links were rewritten", ""),
    ("cold_sync", "cold sync, fake embedder", "s"),
    ("cold_add", "  of which usearch add", "s"),
    ("cold_rss_mib", "  peak RSS of the cold sync", "MiB"),
    ("rss_mib", "peak RSS of serve (start-up sync, requests, rename)", "MiB"),
    ("disk_kb_note", "index on disk per note", "KB"),
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def add_hubs(root: Path, n_notes: int, seed: int) -> None:
    """Give the vault popularity hubs: 1 note in 500 is linked from ~1% of the others (at least 100 notes)."""
    rng = random.Random(seed * 31 + 5)
    notes = sorted(p for p in root.rglob("*.md") if ".cortex" not in p.parts)
    hubs = rng.sample(notes, max(1, n_notes // 500))
    per_hub = max(100, n_notes // 100)
    for hub in hubs:
        for src in rng.sample(notes, min(per_hub, len(notes) - 1)):
            if src == hub:
                continue
            with src.open("a", encoding="utf-8", newline="\n") as fh:
                fh.write(f"\nSee also [[{hub.stem}]] for the background.\n")


def vault_for(size: int, keep: Path | None, seed: int = 7) -> tuple[Path, bool]:
    """A generated vault of `size` notes (reused from --keep when there); True when it is a temporary copy."""
    if keep is not None:
        root = keep / f"vault-{size}"
        if not (root / ".done").exists():
            shutil.rmtree(root, ignore_errors=True)
            log(f"generating {size} notes in {root}")
            make_vault(root, size, seed)
            add_hubs(root, size, seed)
            (root / ".done").mkdir()
        work = Path(tempfile.mkdtemp(prefix=f"vc-scale-{size}-")) / "vault"
        shutil.copytree(root, work, ignore=shutil.ignore_patterns(".done", "index"))
        return work, True
    work = Path(tempfile.mkdtemp(prefix=f"vc-scale-{size}-")) / "vault"
    log(f"generating {size} notes in {work}")
    make_vault(work, size, seed)
    add_hubs(work, size, seed)
    return work, True


def touch(path: Path, n: int) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + f"\n\nEdit {n}: I re-read this note and added one more thought.\n",
                    encoding="utf-8", newline="\n")


def obsidian_rename(root: Path, old: str, new: str, linking: Sequence[str]) -> int:
    """Move a note and rewrite `[[Old]]`/`[[Old|x]]`/`[[Old#h]]` in the linking notes, as Obsidian does."""
    old_stem, new_stem = Path(old).stem, Path(new).stem
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    os.replace(root / old, root / new)
    pattern = re.compile(r"\[\[" + re.escape(old_stem) + r"(?=[\]|#])")
    changed = 0
    for rel in linking:
        path = root / (new if rel == old else rel)
        text = path.read_text(encoding="utf-8")
        out = pattern.sub("[[" + new_stem, text)
        if out != text:
            path.write_text(out, encoding="utf-8", newline="\n")
            changed += 1
    return changed


def wait_until(check: Callable[[], bool], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the index did not catch up")
        time.sleep(0.02)


def measure_index(size: int, keep: Path | None, real: bool) -> dict[str, Any]:
    """Phase 1, in its own process: a cold sync of a fresh copy of the vault, then one-note edits re-synced in
    full and through the one-file path. The vault (with its index) is left for phase 2."""
    from tests.fakes import FakeEmbedder
    from vault_cortex import Cortex
    from vault_cortex.index.vectors import Vectors

    root, _ = vault_for(size, keep)
    out: dict[str, Any] = {"notes": size, "root": str(root)}
    add_seconds = [0.0]
    original_add = Vectors.add

    def timed_add(self: Vectors, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original_add(self, *args, **kwargs)
        finally:
            add_seconds[0] += time.perf_counter() - t0

    Vectors.add = timed_add  # type: ignore[method-assign]
    with Cortex.open(root, embedder=None if real else FakeEmbedder()) as cx:
        t0 = time.perf_counter()
        cx.sync()
        out["cold_sync"] = time.perf_counter() - t0
        out["cold_add"] = add_seconds[0]
        log(f"  {size}: cold sync {out['cold_sync']:.1f} s")
        notes = sorted(cx.db.note_paths())
        rng = random.Random(size)
        edits = []
        for i in range(5):
            touch(root / rng.choice(notes), i)
            t0 = time.perf_counter()
            cx.sync()
            edits.append(time.perf_counter() - t0)
        out["edit_sync"] = statistics.median(edits)
        if hasattr(cx, "sync_paths"):  # the path a watcher event or an API write takes (issue 13)
            edits = []
            for i in range(5):
                path = rng.choice(notes)
                touch(root / path, i + 5)
                t0 = time.perf_counter()
                cx.sync_paths([path])
                edits.append((time.perf_counter() - t0) * 1000)
            out["edit_paths"] = statistics.median(edits)
    out["cold_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def measure_nochange(root: Path, real: bool) -> dict[str, Any]:
    """A no-change sync as `vault-cortex sync` runs it: a fresh process opens the vault, syncs, closes."""
    from tests.fakes import FakeEmbedder
    from vault_cortex import Cortex

    t0 = time.perf_counter()
    with Cortex.open(root, embedder=None if real else FakeEmbedder()) as cx:
        cx.sync()
    return {"nochange_sync": time.perf_counter() - t0}


def measure_serve(size: int, root: Path, real: bool, writes: int) -> dict[str, Any]:
    """Phase 3, in a fresh process as `serve` is: a live server with its watcher (its start-up sync included):
    recall, context, remember, PUT, and an Obsidian rename of a note linked from 100 notes timed until the
    watcher has the index right. Peak RSS is this process's: the server's."""
    import httpx

    from server.app import create_app
    from server.watch import Watcher
    from tests.e2e.harness import LiveServer
    from tests.fakes import FakeEmbedder
    from vault_cortex import Cortex

    out: dict[str, Any] = {}
    embedder = None if real else FakeEmbedder()
    rng = random.Random(size + 1)
    with Cortex.open(root, embedder=embedder) as cx:
        notes = sorted(cx.db.note_paths())
        token = "scale-bench-" + "x" * 32
        headers = {"Authorization": f"Bearer {token}"}
        app = create_app(cx, token=token, watcher=Watcher(cx, debounce_ms=300))
        with LiveServer(app) as server, httpx.Client(base_url=server.url, headers=headers, timeout=900) as http:
            wait_until(lambda: http.get("/v1/status").json()["watch"]["syncs"] >= 1)
            qs = queries(60, seed=size)
            for q in qs[:5]:
                http.get("/v1/recall", params={"q": q, "k": 10})
            lat = []
            for q in qs[5:]:
                t0 = time.perf_counter()
                http.get("/v1/recall", params={"q": q, "k": 10}).raise_for_status()
                lat.append((time.perf_counter() - t0) * 1000)
            out["recall_p50"], out["recall_p95"] = percentile(lat, 50), percentile(lat, 95)
            lat = []
            for q in qs[:20]:
                t0 = time.perf_counter()
                http.post("/v1/context", json={"task": q, "budget_tokens": 1500}).raise_for_status()
                lat.append((time.perf_counter() - t0) * 1000)
            out["context_p50"] = percentile(lat, 50)
            lat = []
            for i in range(writes):
                t0 = time.perf_counter()
                http.post("/v1/notes", json={"text": f"Scale bench memory {i}: the {qs[i]} note.",
                                             "title": f"Scale bench memory {size} {i}"}).raise_for_status()
                lat.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.35)  # let the watcher see the save, as it would between real writes
            out["remember_p50"], out["remember_p95"] = percentile(lat, 50), percentile(lat, 95)
            lat = []
            for i in range(writes):
                path = rng.choice(notes)
                doc = http.get("/v1/notes", params={"path": path}).json()
                t0 = time.perf_counter()
                http.put("/v1/notes", params={"path": path}, headers={"If-Match": f'"{doc["etag"]}"'},
                         json={"content": doc["content"] + f"\nPUT {i}.\n"}).raise_for_status()
                lat.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.35)
            out["put_p50"], out["put_p95"] = percentile(lat, 50), percentile(lat, 95)
            out.update(rename_while_serving(cx, root, notes, rng))
    index_dir = root / INDEX_DIR
    disk = sum(p.stat().st_size for p in index_dir.glob("*") if p.is_file())
    out["disk_kb_note"] = disk / 1024 / size
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def rename_while_serving(cx: Any, root: Path, notes: Sequence[str], rng: random.Random) -> dict[str, Any]:
    """Link one note from 100 others (given time to index), then rename it as Obsidian does (move it, rewrite
    the 100 links) and time until the watcher has indexed it all: the new path in, the old out, none dangling."""
    db = sqlite3.connect(f"file:{root / INDEX_DIR / 'index.db'}?mode=ro", uri=True)

    def inbound(path: str) -> set[str]:  # by the links_dst index: the bench must not load every link itself
        return {p for (p,) in db.execute("SELECT n.path FROM links l JOIN notes n ON n.id = l.note_id "
                                         "WHERE l.dst_path = ?", (path,))}

    target = next(p for p in rng.sample(list(notes), len(notes)) if len(inbound(p)) < 5)
    stem = Path(target).stem
    already = inbound(target)
    linking = sorted(set(rng.sample([p for p in notes if p != target and p not in already], 100 - len(already)))
                     | already)
    for rel in linking:
        if rel not in already:
            with (root / rel).open("a", encoding="utf-8", newline="\n") as fh:
                fh.write(f"\nSee also [[{stem}]] for the background.\n")

    def linked_from() -> int:
        return sum(1 for rel in linking for ln in cx.db.links(src=rel) if ln.dst == target)

    wait_until(lambda: linked_from() >= len(linking))
    new = str(Path(target).with_name(stem + " renamed.md"))

    marks = ",".join("?" * len(linking))
    new_stem = Path(new).stem

    def settled() -> bool:
        """The new path indexed, the old gone, and each of the 100 notes' links resolved to the new path."""
        have = {p for (p,) in db.execute("SELECT path FROM notes WHERE path IN (?, ?)", (target, new))}
        if have != {new}:
            return False
        resolved = db.execute(
            f"SELECT count(DISTINCT n.path) FROM links l JOIN notes n ON n.id = l.note_id "
            f"WHERE n.path IN ({marks}) AND l.target = ? AND l.dst_path = ?", (*linking, new_stem, new)).fetchone()[0]
        return bool(resolved == len(linking))

    t0 = time.perf_counter()
    changed = obsidian_rename(root, target, new, linking)
    wait_until(settled)
    seconds = time.perf_counter() - t0
    db.close()
    return {"rename": seconds, "rename_links": changed}


def exponent(sizes: Sequence[int], values: Sequence[float]) -> float | None:
    """Least-squares slope of log(value) on log(size)."""
    pts = [(math.log(s), math.log(v)) for s, v in zip(sizes, values, strict=True) if v and v > 0]
    if len(pts) < 2:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else None


def render(results: Sequence[dict[str, Any]], real: dict[str, Any] | None) -> str:
    sizes = [r["notes"] for r in results]
    head = ["figure", *[f"{s:,} notes" for s in sizes], "exponent"] + ([f"{real['notes']:,} real model"] if real
                                                                     else [])
    rows = [head]
    for key, label, unit in ROWS:
        vals = [r.get(key) for r in results]
        exp = exponent(sizes, [v for v in vals if v is not None]) if all(v is not None for v in vals) else None
        cells = [_fmt(v, unit) for v in vals]
        row = [label, *cells, "" if exp is None else f"{exp:.2f}"]
        if real:
            row.append(_fmt(real.get(key), unit))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _fmt(v: Any, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.2f} s" if v < 10 else f"{v:.0f} s"
    if unit == "ms":
        return f"{v:.0f} ms"
    if unit == "MiB":
        return f"{v:.0f} MiB"
    if unit == "KB":
        return f"{v:.1f} KB"
    return f"{v:g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated vault sizes (fake embedder)")
    ap.add_argument("--real", type=int, default=0, metavar="N", help="also one size N with the real model")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep and reuse the generated vaults")
    ap.add_argument("--writes", type=int, default=20, metavar="N", help="remember and PUT requests timed (20)")
    ap.add_argument("--leave", action="store_true",
                    help="leave each measured vault and its index in place (its path is printed) for profiling")
    ap.add_argument("--code", type=Path, default=None, metavar="DIR",
                    help="measure another checkout's vault_cortex and server (e.g. a worktree of an older main)")
    ap.add_argument("--phase", choices=("index", "nochange", "serve"), help=argparse.SUPPRESS)  # internal, JSON
    ap.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--one-real", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    if args.phase == "index":
        print(json.dumps(measure_index(args.size, args.keep, args.one_real)))
        return 0
    if args.phase == "nochange":
        print(json.dumps(measure_nochange(args.root, args.one_real)))
        return 0
    if args.phase == "serve":
        print(json.dumps(measure_serve(args.size, args.root, args.one_real, args.writes)))
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"code: {args.code or 'this checkout'}", flush=True)
    results = [_measure(size, args, real=False) for size in [int(s) for s in args.sizes.split(",") if s]]
    real = _measure(args.real, args, real=True) if args.real else None
    print(render(results, real))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


def _measure(size: int, args: argparse.Namespace, *, real: bool) -> dict[str, Any]:
    """Both phases of one size, each in its own process; the vault copy is removed afterwards."""
    log(f"measuring {size} notes{' (real model)' if real else ''}")
    common = ["--size", str(size), "--writes", str(args.writes)] + (["--one-real"] if real else [])
    if args.code is not None:
        common += ["--code", str(args.code)]
    out = _child(["--phase", "index", *common] + (["--keep", str(args.keep)] if args.keep else []))
    root = Path(out.pop("root"))
    try:
        out.update(_child(["--phase", "nochange", "--root", str(root), *common]))
        out.update(_child(["--phase", "serve", "--root", str(root), *common]))
    finally:
        if args.leave:
            log(f"  left {root}")
        else:
            shutil.rmtree(root.parent, ignore_errors=True)
    return out


def _child(args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    raise SystemExit(main())
