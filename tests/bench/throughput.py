"""End-to-end embedding throughput of a first `sync`: chunks given a vector per second of wall time and per CPU
second of the process (all its threads), this code beside an older checkout, runs alternated.

Each run is a fresh process on a fresh copy of a generated vault (`tests/bench/gen.py`), with that code's own
template config. The older code is imported from its tree with this checkout's editable install set aside (as
`first_minute.py --code` serves it). Besides the totals, this code's run is split into its phases: notes written
(words), then the vectors filled in behind (`fill_vectors`, what `serve` runs after its words-first sync: from
the first "vectors" progress step to the end). The load average is printed beside every run: on a shared
machine compare the ratios of alternated runs.

Run: `python tests/bench/throughput.py --code /tmp/before [--notes 250] [--sections 5,6,7,8] [--runs 3]
[--keep DIR]` (`git worktree add /tmp/before <commit>` first).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tests.bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.gen import make_vault, sections_arg

HERE = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: argv = code folder, vault. Prints one JSON line.
CHILD = r'''
import json, sys, time
code, vault = sys.argv[1], sys.argv[2]
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, code)
import vault_cortex
assert vault_cortex.__file__.startswith(code), vault_cortex.__file__
from vault_cortex import Cortex
wall, cpu = time.perf_counter(), time.process_time()
cx = Cortex.open(vault)
out = {}

def progress(phase, done, total):
    if phase == "vectors" and "words_wall" not in out:  # the words are in: the fill begins
        out["words_wall"], out["words_cpu"] = time.perf_counter() - wall, time.process_time() - cpu

cx.sync(progress)
out["wall"], out["cpu"] = time.perf_counter() - wall, time.process_time() - cpu
if "words_wall" in out:
    out["fill_wall"], out["fill_cpu"] = out["wall"] - out["words_wall"], out["cpu"] - out["words_cpu"]
out["chunks"] = cx.db.chunk_count()
print(json.dumps(out))
'''


def one_run(code: Path, source: Path) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    try:
        vault = work / "vault"
        shutil.copytree(source, vault)
        shutil.copy(code / "vault_template" / ".cortex" / "config.toml", vault / ".cortex" / "config.toml")
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
        load = os.getloadavg()[0]
        done = subprocess.run([sys.executable, "-c", CHILD, str(code), str(vault)], capture_output=True, text=True,
                              env=env, cwd=work, check=False)
        if done.returncode:
            raise RuntimeError(done.stderr[-3000:])
        got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        got["load"] = (load + os.getloadavg()[0]) / 2
        return got
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", type=Path, required=True, metavar="DIR", help="the older checkout to compare with")
    ap.add_argument("--notes", type=int, default=250)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sections", type=sections_arg, default=(5, 6, 7, 8), metavar="N,N,…")
    ap.add_argument("--runs", type=int, default=3, help="runs of each code, alternated (medians are printed)")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="generate the vault in DIR and reuse it")
    args = ap.parse_args(argv)
    source = args.keep or Path(tempfile.mkdtemp(prefix="throughput-vault-"))
    if not (source / ".cortex").is_dir():
        make_vault(source, args.notes, args.seed, args.sections)
    codes = {"this code": HERE, str(args.code): args.code.resolve()}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    try:
        for run in range(args.runs):
            for name, code in codes.items():
                got = one_run(code, source)
                results[name].append(got)
                phases = "".join(f", {p} {got[p + '_wall']:.1f} s wall {got[p + '_cpu']:.1f} s CPU"
                                 for p in ("words", "fill") if p + "_wall" in got)
                print(f"run {run + 1} {name}: {got['chunks']} chunks in {got['wall']:.1f} s wall, {got['cpu']:.1f} s "
                      f"CPU: {got['chunks'] / got['wall']:.1f} chunks/s, {got['chunks'] / got['cpu']:.1f} per CPU s"
                      f"{phases}; load {got['load']:.1f}", file=sys.stderr, flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(source, ignore_errors=True)

    def median(name: str, key: str) -> float:
        return statistics.median(r["chunks"] / r[key] for r in results[name])

    this, other = codes
    print(f"first sync of a generated vault of {args.notes} notes, medians of {args.runs} alternated runs")
    print(f"| figure | this code | {other} | ratio |\n|---|---|---|---|")
    for key, label in (("wall", "chunks per second (wall)"), ("cpu", "chunks per CPU second")):
        a, b = median(this, key), median(other, key)
        print(f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")
    print(f"| load average | {statistics.median(r['load'] for r in results[this]):.1f} | "
          f"{statistics.median(r['load'] for r in results[other]):.1f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
