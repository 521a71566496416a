"""Filtered recall: hits returned and latency with filters that keep 2%, 20% and 90% of the notes.

    python tests/bench/filters.py [--notes 5000] [--queries 50]

The index is real (SQLite FTS5, usearch); the embedder is the deterministic bag-of-words fake from
tests/fakes.py, so the vault builds in seconds and the figures are the candidate search's own cost (the real
model adds its constant ~3 ms per query embedding). Prints, per filter, how many of k=10 came back and the
recall latency p50 / p95.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes import FakeEmbedder  # noqa: E402

from vault_cortex.cortex import Cortex  # noqa: E402
from vault_cortex.recall.filters import Filters  # noqa: E402
from vault_cortex.recall.request import RecallRequest  # noqa: E402

WORDS = ("battery voltage sensor greenhouse sqlite checkpoint dashboard collector solder enclosure probe soil "
         "calibration wifi sleep current reading chart window transaction").split()


def build(root: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    (root / ".cortex").mkdir(parents=True)
    for i in range(n):
        tags = ["rare/deep"] if i % 50 == 0 else ["some"] if i % 5 == 0 else ["most"] if i % 10 else []
        folder = "rare" if i % 50 == 0 else "notes"
        (root / folder).mkdir(exist_ok=True)
        text = " ".join(rng.choice(WORDS) for _ in range(40))
        (root / folder / f"n{i:05d}.md").write_text(
            f"---\ncreated: 2026-11-{1 + i % 28:02d}\ntags: [{', '.join(tags)}]\n---\n{text}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args()
    rng = random.Random(1)
    queries = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(args.queries)]
    cases = {"none": None, "tag 2%": Filters(tags=["rare"]), "path prefix 2%": Filters(path_prefix="rare/"),
             "tag 20%": Filters(tags=["some"]), "tag 90%": Filters(tags=["most"]),
             "created in a 1-day window (~3.6%)": Filters(created_after="2026-11-10", created_before="2026-11-11")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        build(root, args.notes, 7)
        with Cortex.open(root, embedder=FakeEmbedder()) as cx:
            started = time.perf_counter()
            cx.sync()
            print(f"{args.notes} notes synced in {time.perf_counter() - started:.1f}s (fake embedder)")
            print(f"{'filter':<36} {'hits of 10 (min / mean)':>24} {'p50 ms':>8} {'p95 ms':>8}")
            for name, filters in cases.items():
                times, got = [], []
                for q in queries:
                    t = time.perf_counter()
                    hits = cx.recall(RecallRequest(query=q, k=10, **msgspec.structs.asdict(filters)),
                                     log_activity=False).hits
                    times.append((time.perf_counter() - t) * 1000)
                    got.append(len(hits))
                times.sort()
                p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
                print(f"{name:<36} {min(got):>12} / {statistics.mean(got):<9.1f} {statistics.median(times):>8.1f} "
                      f"{p95:>8.1f}")


if __name__ == "__main__":
    main()
