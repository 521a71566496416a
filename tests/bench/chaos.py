"""Chaos: SIGKILL `vault-cortex sync` and `vault-cortex serve` at random moments while a second process writes;
the next sync must heal the index, and no write of the second process may be lost.

Each trial edits some notes of a synthetic vault (tests/bench/gen.py) and may add, rename and delete one, starts a
`sync` or a `serve` subprocess and, beside it, a second writer process (`Cortex.remember` through the one write
path, a few notes with random pauses, the index written as it goes: the two contend for the write lock and the
vector file), SIGKILLs the victim after a random delay (while it loads, embeds, writes or idles), lets the
writer finish, then runs one more sync in this process and `verify` (rows and vector content against a
rebuild). A trial fails when verify finds a difference, any note's bytes differ from what the trial wrote, or a
note the writer reported saved is missing or different. Uses the real ONNX model throughout (the subprocesses
cannot take a fake one).

Run: `python tests/bench/chaos.py [--notes 300] [--kills 32] [--seed 11] [--no-writer] [--keep DIR]`.
Prints one line per trial, then the trials, failures and time to recover (the sync after the kill).
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.gen import make_vault  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.config import EmbeddingSettings  # noqa: E402
from vault_cortex.index.embed import load_embedder  # noqa: E402

WORDS = ("barometric cistern dovetail ember fjord gimbal hawser isotope jib kelp lathe mortise nacelle "
         "obsidian pergola quern rivet sextant tholepin umber vellum windlass xylem yawl zither").split()


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".cortex" not in p.parts}


def notes(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if ".cortex" not in p.parts)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(10_000)) for _ in range(rng.randint(8, 30))) + "."


def mutate(root: Path, rng: random.Random, trial: int) -> str:
    """Edit some notes (new text the cache has not seen); each with odds of one half, add one note linking three
    others, rename one and delete one (trials of edits alone are where a lost link resolution shows)."""
    all_notes = notes(root)
    edits = rng.randint(3, 20) if rng.random() < 0.5 else rng.randint(40, 90)  # one write group, or many
    for path in rng.sample(all_notes, min(edits, len(all_notes))):
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"\n## Chaos {trial}\n{sentence(rng)} {sentence(rng)}\n")
    done = [f"{edits} edited"]
    new = root / "short_term" / f"Chaos note {trial}.md"
    if rng.random() < 0.5:
        targets = [p.stem for p in rng.sample(all_notes, 3)]
        new.parent.mkdir(exist_ok=True)
        new.write_text(f"# Chaos note {trial}\n{sentence(rng)} See [[{targets[0]}]], [[{targets[1]}]] and "
                       f"[[{targets[2]}]].\n", encoding="utf-8")
        done.append("1 added")
    if rng.random() < 0.5:
        moved = rng.choice([p for p in notes(root) if p != new])
        moved.rename(moved.with_name(f"{moved.stem} (moved {trial}).md"))
        done.append("1 renamed")
    if rng.random() < 0.5:
        rng.choice([p for p in notes(root) if p != new and "(moved" not in p.name]).unlink()
        done.append("1 deleted")
    return ", ".join(done)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(victim: str, root: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    cmd = [sys.executable, "-m", "server.cli"]
    if victim == "sync":
        cmd += ["sync", "-q", "--vault", str(root)]
    else:
        cmd += ["serve", "--vault", str(root), "--port", str(free_port())]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            cwd=Path(__file__).resolve().parents[2])


# The second writer: remembers each text given, pausing a random moment before each, and prints each one's path.
WRITER = """
import random, sys, time
from vault_cortex import Cortex
root, trial, seed, texts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rng = random.Random(seed)
with Cortex.open(root) as cx:
    for i, text in enumerate(texts):
        time.sleep(rng.uniform(0.0, 1.5))
        doc = cx.remember(text, title=f"Writer {trial}-{i}")
        print(doc.path, flush=True)
"""


def start_writer(root: Path, rng: random.Random, trial: int) -> tuple[subprocess.Popen[str], list[str]]:
    """The second writer process for a trial; returns it and the texts it writes."""
    texts = [sentence(rng) for _ in range(rng.randint(2, 5))]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(trial), str(rng.randrange(1 << 30)),
                             *texts], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[2])
    return proc, texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--kills", type=int, default=32, help="SIGKILLs to land (trials whose process ended first "
                                                           "are counted apart)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--keep", type=Path, default=None, help="build the vault here and keep it")
    ap.add_argument("--no-writer", action="store_true", help="no second writer process beside the victim")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    base = args.keep or Path(tempfile.mkdtemp(prefix="vault-cortex-chaos-"))
    root = base / "vault"
    make_vault(root, args.notes, seed=args.seed)
    embedder = load_embedder(EmbeddingSettings())
    t0 = time.perf_counter()
    with Cortex.open(root, embedder=embedder) as cx:
        first = cx.sync()
    print(f"chaos: {first.notes} notes, real model; first sync {time.perf_counter() - t0:.1f} s; "
          f"target {args.kills} SIGKILLs of sync/serve"
          f"{'' if args.no_writer else ', a second process writing beside each'}", flush=True)
    print(f"{'trial':>5} {'victim':>6} {'kill at':>8} {'killed':>6} {'recover':>8} {'verify':>7} {'ok':>3}  changes",
          flush=True)

    estimate = {"sync": 4.0, "serve": 8.0}  # seconds a victim runs besides embedding, learnt as trials end
    kills = trials = failures = written = 0
    recover_s: list[float] = []
    verify_s: list[float] = []
    try:
        while kills < args.kills:
            trials += 1
            victim = "sync" if trials % 2 else "serve"
            changes = mutate(root, rng, trials)
            edited = int(changes.split()[0])
            expected = snapshot(root)
            # Any moment of the victim's run: start-up (~2-3 s), then about 0.1 s per edited note to embed.
            delay = rng.uniform(0.05, 1.0) * (estimate[victim] + 0.12 * edited)
            proc = start(victim, root)
            writer = None if args.no_writer else start_writer(root, rng, trials)
            started = time.monotonic()
            try:
                proc.wait(timeout=delay)
                killed = False
                ran = time.monotonic() - started - 0.12 * edited
                estimate[victim] = max(1.0, 0.7 * estimate[victim] + 0.3 * ran)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed = True
                kills += 1
            saved: dict[str, str] = {}
            writer_error = ""
            if writer is not None:
                out, err = writer[0].communicate(timeout=600)
                saved = dict(zip(out.splitlines(), writer[1], strict=False))
                if writer[0].returncode != 0 or len(saved) != len(writer[1]):
                    writer_error = err.strip().splitlines()[-1] if err.strip() else "the writer stopped short"
                written += len(saved)
                changes += f", {len(saved)} written beside it"
            t = time.perf_counter()
            with Cortex.open(root, embedder=embedder) as cx:
                cx.sync()
                recovered = time.perf_counter() - t
                t = time.perf_counter()
                result = cx.verify()
                verified = time.perf_counter() - t
                dangling_ok = result.ok
            now = snapshot(root)
            kept = all(p in now and text in now[p].decode() for p, text in saved.items())
            same = {p: b for p, b in now.items() if p not in saved} == expected
            ok = dangling_ok and same and kept and not writer_error
            failures += not ok
            recover_s.append(recovered)
            verify_s.append(verified)
            print(f"{trials:>5} {victim:>6} {delay:>7.2f}s {'yes' if killed else 'no':>6} {recovered:>7.2f}s "
                  f"{verified:>6.1f}s {'ok' if ok else 'NO':>3}  {changes}", flush=True)
            if not ok:
                for line in result.differences[:10]:
                    print(f"        {line}", flush=True)
                if not same:
                    print("        a note's bytes changed", flush=True)
                if not kept:
                    print("        a note the second writer saved is missing or changed", flush=True)
                if writer_error:
                    print(f"        the second writer failed: {writer_error}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"trials: {trials}, SIGKILLs landed: {kills}, notes the second writer saved: {written}, "
          f"failures: {failures}")
    print(f"time to recover (one sync after the kill): median {statistics.median(recover_s):.2f} s, "
          f"max {max(recover_s):.2f} s; verify: median {statistics.median(verify_s):.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
