"""The activity log replayed into the index: the first replay, a sync after one appended line (what follows every
recall), and a sync after a git union merge that inserted lines in the middle of the file.

Run: `python tests/bench/activity.py [--events 50000]`. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from vault_cortex.files.activity import ACTIVITY_DIR, Event, OpenEvent, RecallEvent, encode
from vault_cortex.index.db import IndexDB
from vault_cortex.index.replay import replay_activity

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--merged", type=int, default=20, help="lines a union merge inserts")
    args = ap.parse_args(argv)
    rnd = random.Random(1)
    paths = [f"folder/note {i}.md" for i in range(5000)]

    def event(i: int) -> Event:
        ts = T0 + timedelta(seconds=i * 40)
        if i % 3:
            return OpenEvent(ts=ts, client="http", path=rnd.choice(paths))
        return RecallEvent(ts=ts, client="http", query=f"query {rnd.randrange(3000)}", mode="balanced",
                           paths=tuple(rnd.sample(paths, 10)))

    tmp = Path(tempfile.mkdtemp(prefix="vc-activity-"))
    try:
        root = tmp / "vault"
        (root / ACTIVITY_DIR).mkdir(parents=True)
        log = root / ACTIVITY_DIR / "2026-11.jsonl"
        log.write_bytes(b"".join(encode(event(i)) for i in range(args.events)))
        db = IndexDB(tmp / "index" / "index.db")

        def replayed() -> float:
            t0 = time.perf_counter()
            with db.write():
                replay_activity(root, db)
            return time.perf_counter() - t0

        first = replayed()
        with log.open("ab") as fh:
            fh.write(encode(OpenEvent(ts=T0, client="bench", path="appended.md")))
        append = replayed()
        lines = log.read_bytes().splitlines(keepends=True)
        for k in range(args.merged):
            lines.insert(rnd.randrange(len(lines)), encode(OpenEvent(ts=T0, client="clone", path=f"merged {k}.md")))
        log.unlink()  # git writes a merged file anew
        log.write_bytes(b"".join(lines))
        merge = replayed()
        db.close()
        print(f"activity log {log.stat().st_size / 1e6:.1f} MB, {args.events:,} events")
        print(f"first replay                       {first:8.2f} s")
        print(f"sync after one appended line       {append * 1000:8.1f} ms")
        print(f"sync after a union merge of {args.merged} lines {merge * 1000:8.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
