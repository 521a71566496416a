"""Session capture: how long the SessionEnd hook's import of a large Claude Code transcript takes, and its memory.

Generates a realistic transcript (prompts, answers, tool calls with large outputs, reminders, a sub-agent
side chain) of the given size, then imports it into a fresh vault three times: the first import, the same
file again (nothing to add), and after the transcript grew by a few exchanges. Each run is a separate
`vault-cortex hook session-end` process, timed from outside, with its peak RSS (ru_maxrss of the child).

    python tests/bench/capture.py               # 10 MB
    python tests/bench/capture.py --mb 50
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("the collector batches writes and the checkpoint waits for readers while the node sleeps between "
         "samples so the battery lasts longer than the estimate said").split()


def _line(rec: dict[str, object]) -> str:
    return json.dumps(rec, ensure_ascii=False) + "\n"


def exchange(rng: random.Random, n: int, session: str, day: int = 5) -> str:
    """One exchange as Claude Code writes it: prompt, answer with tool calls, tool results, noise records."""
    ts = f"2026-10-{day:02d}T{9 + n // 600 % 12:02d}:{n // 10 % 60:02d}:{n % 60:02d}Z"
    base = {"sessionId": session, "timestamp": ts, "cwd": "/home/me/greenhouse-sensor"}
    words = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
    out = [_line({**base, "type": "user", "message": {"role": "user", "content": f"Question {n}: {words(30)}?"}})]
    out.append(_line({**base, "type": "user", "isMeta": True,
                      "message": {"role": "user",
                                  "content": "<system-reminder>remember the todo list</system-reminder>"}}))
    for t in range(rng.randint(1, 4)):
        tid = f"toolu_{n}_{t}"
        out.append(_line({**base, "type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": words(40)},
            {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"pytest -q tests/test_{t}.py"}}]}}))
        body = "\n".join(f"{i}: {words(8)}" for i in range(rng.randint(20, 400)))
        out.append(_line({**base, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": body}]}}))
    out.append(_line({**base, "type": "assistant", "isSidechain": True,
                      "message": {"role": "assistant", "content": [{"type": "text", "text": words(20)}]}}))
    out.append(_line({**base, "type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"Answer {n}: {words(80)}."}]}}))
    return "".join(out)


def make_transcript(path: Path, size: int, *, seed: int = 7, start: int = 1) -> int:
    """Append exchanges to path until it holds at least size bytes; the number of the last exchange."""
    rng = random.Random(seed + start)
    n = start - 1
    with path.open("a", encoding="utf-8") as fh:
        while fh.tell() < size:
            n += 1
            fh.write(exchange(rng, n, path.stem))
    return n


def hook(vault: Path, transcript: Path, event: str = "session-end") -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one `vault-cortex hook EVENT` process."""
    payload = json.dumps({"session_id": transcript.stem, "transcript_path": str(transcript),
                          "cwd": "/home/me/greenhouse-sensor", "hook_event_name": "SessionEnd", "reason": "exit"})
    t0 = time.perf_counter()
    env = {**os.environ, "VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS": str(transcript.parent)}  # the hook reads it there
    done = subprocess.run([sys.executable, "-c", CHILD, "hook", event, "--vault", str(vault)],
                          input=payload, capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    took = time.perf_counter() - t0
    *said, rss = done.stderr.strip().splitlines()
    if done.stdout or "captured" not in "".join(said):
        raise SystemExit(f"unexpected hook output: {done.stdout!r} {done.stderr!r}")
    print(f"    {' '.join(said)}", file=sys.stderr)
    return took, int(rss) / 1024


# the hook command as installed, reporting its own peak RSS (KiB on Linux) on the last stderr line
CHILD = ("import resource, sys; from server.cli import main; main(sys.argv[1:]); "
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")


def traced(vault: Path, transcript: Path) -> tuple[float, float]:
    """Seconds and peak Python allocations (MiB, tracemalloc) of the import itself, in this process."""
    import tracemalloc

    from vault_cortex.cortex import Cortex
    from vault_cortex.importers.capture import capture_transcript

    with Cortex.open(vault) as cx, cx.vault.change("bench", index=False) as tx:  # files only, as the hook does
        tracemalloc.start()
        t0 = time.perf_counter()
        capture_transcript(tx, transcript)
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return took, peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=10.0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from vault_cortex.files.vault import init_vault

    with tempfile.TemporaryDirectory() as tmp:
        vault, transcript = Path(tmp) / "vault", Path(tmp) / "4f1c9e2a-bench.jsonl"
        init_vault(vault)
        last = make_transcript(transcript, int(args.mb * 1e6))
        size = transcript.stat().st_size
        print(f"transcript: {size / 1e6:.1f} MB, {last} exchanges, {sum(1 for _ in transcript.open())} lines; "
              f"load average {os.getloadavg()[0]:.2f}")
        rows = [("first import", *hook(vault, transcript))]
        rows.append(("same file again", *hook(vault, transcript)))
        make_transcript(transcript, size + 50_000, start=last + 1)
        rows.append(("grew by 50 kB (pre-compact)", *hook(vault, transcript, "pre-compact")))
        notes = len(list((vault / "raw").glob("*.md")))
        print("| run (a `vault-cortex hook` process) | seconds | peak RSS |\n|---|---|---|")
        for name, took, rss in rows:
            print(f"| {name} | {took:.2f} | {rss:.0f} MiB |")
        print(f"raw notes in the vault: {notes}")
        other = Path(tmp) / "vault2"
        init_vault(other)
        took, peak = traced(other, transcript)
        print(f"in-process import of the grown file into a fresh vault (tracemalloc, slower): {took:.2f} s, "
              f"peak Python allocations {peak:.1f} MiB")


if __name__ == "__main__":
    main()
