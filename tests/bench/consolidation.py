"""Consolidation quality: what a real sleep plan merges, supersedes, wires and edits, on labelled and template vaults.

Two vaults, each adopted (`.cortex/` added, nothing else), indexed with the real model and planned with
`Cortex.sleep_plan` in modes full and light — the path the CLI and the server take:

1. The development set, `tests/fixtures/consolidation/` (`vault/` and its hand-written `labels.toml`): true
   paraphrased duplicates, decisions and their reversals, measurements and their corrections, two bugs with one
   symptom, people who share a first name, template look-alikes, notes written as important and identity regions.
   Prints merge precision, duplicate recall, wrong merges by class, supersessions found, moves into identity
   regions, important notes archived and the share of hand-written notes a plan would change.
2. With `--vault PATH`, a public template-heavy vault: the Obsidian community hub. Get it with
       git clone https://github.com/obsidian-community/obsidian-hub /tmp/obsidian-hub
   and run
       python tests/bench/consolidation.py --vault /tmp/obsidian-hub --sample 1500
   A seeded sample of `--sample` notes from `--folder` (default: every plugin, theme and snippet page and every
   person page) is copied into `--work` (default a temporary folder; give one to keep its index between runs).
   Two different plugin, theme or person pages are never duplicates (each file is its own page), so every
   merge proposed there is wrong: precision is 1.0 only with none. A sample of the related_to wires is
   printed to judge by hand.

    python tests/bench/consolidation.py                       # the development set only
    python tests/bench/consolidation.py --vault /tmp/obsidian-hub --sample 1500 --work /tmp/hub-work
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import tomllib
from collections import Counter
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from vault_cortex.cortex import Cortex  # noqa: E402
from vault_cortex.files.adopt import adopt_vault  # noqa: E402
from vault_cortex.files.paths import top_folder  # noqa: E402
from vault_cortex.files.vault import template_dir  # noqa: E402
from vault_cortex.sleep.cycle import gather  # noqa: E402
from vault_cortex.sleep.operations import Plan, special  # noqa: E402

DEV = ROOT / "tests" / "fixtures" / "consolidation"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HUB_FOLDERS = ("02 - Community Expansions/02.05 All Community Expansions", "01 - Community/People")
WRONG = ("reversal", "correction", "same-symptom", "same-name", "template")
EDITS = ("set_property", "add_to_list", "add_relation", "move", "write")  # what changes a note that exists


def pair(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def labels() -> dict[frozenset[str], str]:
    """Each labelled pair of the development set with its class; a template group gives every pair in it."""
    raw = tomllib.loads((DEV / "labels.toml").read_text(encoding="utf-8"))
    out: dict[frozenset[str], str] = {}
    for cls, groups in raw.items():
        for group in groups:
            for a, b in combinations(group, 2):
                out[pair(a, b)] = cls
    return out


def open_vault(source: Path, work: Path, notes: list[str] | None = None) -> Cortex:
    """A copy of `source` (or of `notes` from it) at `work`, adopted and synced; an existing copy is reused (its
    settings reset to the starter vault's)."""
    if not (work / ".cortex").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        for rel in notes if notes is not None else [p.relative_to(source).as_posix() for p in source.rglob("*.md")]:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, work / rel)
        adopt_vault(work)
    shutil.copy2(template_dir() / ".cortex" / "config.toml", work / ".cortex" / "config.toml")  # this code's defaults
    cx = Cortex.open(work, clock=lambda: NOW)
    started = time.perf_counter()
    cx.sync()
    print(f"  synced {work} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return cx


def merged_pairs(plan: Plan) -> list[frozenset[str]]:
    return [pair(a, b) for m in plan.findings.merges for a, b in combinations(m.sources, 2)]


def edited(plan: Plan, notes: set[str]) -> tuple[set[str], Counter[str]]:
    """The notes a plan would change (edit a line of, move or overwrite), and how many each phase changes."""
    by_phase: dict[str, set[str]] = {}
    for op in plan.ops:
        if op.action in EDITS and op.path in notes:
            by_phase.setdefault(op.phase, set()).add(op.path)
    return set().union(*by_phase.values()), Counter({k: len(v) for k, v in by_phase.items()})


def hand_written(cx: Cortex) -> set[str]:
    """The notes a person wrote: every note but sleep's own (dreams, summaries, the handoff) and archive/."""
    return {p for p in cx.db.note_paths() if not special(p) and p != "HANDOFF.md"}


def print_edits(plan: Plan, notes: set[str]) -> None:
    touched, phases = edited(plan, notes)
    by = ", ".join(f"{k} {v}" for k, v in sorted(phases.items())) or "none"
    print(f"    hand-written notes a plan would change: {len(touched)} of {len(notes)} "
          f"({len(touched) / max(1, len(notes)):.1%}; by phase: {by})")


def dev_set(work: Path) -> None:
    lab = labels()
    cx = open_vault(DEV / "vault", work / "dev")
    try:
        world, vectors = gather(cx.index, cx.recaller, NOW)
        notes = hand_written(cx)
        memos = {m.path: m for m in world.notes}
        identity = {r for r in cx.settings.regions.order if cx.settings.region(r).identity}
        dups = [p for p, c in lab.items() if c == "duplicate"]
        sims = sorted(float(vectors[a] @ vectors[b]) for a, b in (tuple(p) for p in dups))
        print(f"development set: {len(notes)} notes, {len(dups)} duplicate pairs (note similarity "
              f"{sims[0]:.2f}–{sims[-1]:.2f}, median {sims[len(sims) // 2]:.2f}), "
              + ", ".join(f"{Counter(lab.values())[c]} {c} pairs" for c in WRONG))
        for mode in ("full", "light"):
            plan = cx.sleep_plan(mode, save=False)
            merged = merged_pairs(plan)
            right = [p for p in merged if lab.get(p) == "duplicate"]
            wrong = Counter(lab.get(p, "unrelated") for p in merged if lab.get(p) != "duplicate")
            print(f"  {mode}:")
            print(f"    merges proposed: {len(plan.findings.merges)} ({len(merged)} pairs); merge precision "
                  + (f"{len(right) / len(merged):.2f}" if merged else "— (none)")
                  + f"; duplicate recall {len(right) / len(dups):.2f} ({len(right)} of {len(dups)})")
            print("    wrong merges by class: " + ", ".join(f"{c} {wrong[c]}" for c in (*WRONG, "unrelated")))
            expected = {p for p, c in lab.items() if c in ("reversal", "correction")}
            found = [pair(x.newer, x.older) for x in plan.findings.supersedes]
            print(f"    supersessions: {len(found)} ({sum(p in expected for p in found)} of {len(expected)} "
                  f"labelled reversals/corrections; {sum(p not in expected for p in found)} others)")
            into_identity = [op for op in plan.ops if (op.dest and top_folder(op.dest) in identity)
                             or (op.key == "cortex" and op.value in identity)]
            important = {p for p, m in memos.items() if (m.importance or 0) >= 0.75}
            archived = [op for op in plan.ops if op.action == "move" and op.path in important
                        and op.dest and op.dest.startswith("archive/") and op.phase == "prune"]
            print(f"    moves into identity regions: {len(into_identity)}; important notes archived: "
                  f"{len(archived)} of {len(important)}")
            wires = [w for w in plan.findings.wires if w.rel == "related_to"]
            bad = Counter(lab[pair(w.src, w.dst)] for w in wires if lab.get(pair(w.src, w.dst)) in WRONG)
            print(f"    related_to wires: {len(wires)} (between template pages: {bad['template']})")
            print_edits(plan, notes)
            if mode == "full":
                for m in plan.findings.merges:
                    cls = lab.get(pair(*m.sources[:2]), "unrelated")
                    shared = getattr(m, "shared", [])  # none before the distinctive-words check
                    print(f"      merge {m.sources} sim {m.similarity:.2f}: {cls}; agree {m.agree}, share {shared}")
                for x in plan.findings.supersedes:
                    cls = lab.get(pair(x.newer, x.older), "unrelated")
                    print(f"      supersede {x.newer} > {x.older}: {cls}; differ {x.differ}")
                for w in wires:
                    print(f"      wire {w.src} -> {w.dst}: {w.why}")
        missed = [p for p in dups if p not in merged_pairs(cx.sleep_plan("full", save=False))]
        for p in missed:
            a, b = sorted(p)
            print(f"    missed duplicate ({float(vectors[a] @ vectors[b]):.2f}): {a} | {b}")
    finally:
        cx.close()


def hub(vault: Path, sample: int, seed: int, folders: list[str], work: Path) -> None:
    pool = sorted(p.relative_to(vault).as_posix() for f in folders for p in (vault / f).rglob("*.md")
                  if not p.name.startswith("🗂"))
    chosen = sorted(random.Random(seed).sample(pool, min(sample, len(pool))))
    cx = open_vault(vault, work / f"hub-{len(chosen)}-{seed}", chosen)
    try:
        notes = hand_written(cx)
        print(f"template vault {vault.name}: {len(notes)} notes sampled (seed {seed}) of {len(pool)} in "
              + ", ".join(folders))
        for mode in ("full", "light"):
            started = time.perf_counter()
            plan = cx.sleep_plan(mode, save=False)
            print(f"  {mode} plan: {time.perf_counter() - started:.1f} s", file=sys.stderr)
            merged = merged_pairs(plan)
            same_page = [p for p in merged if len({Path(x).stem.casefold() for x in p}) == 1]
            print(f"  {mode}:")
            print(f"    merges proposed: {len(plan.findings.merges)} ({len(merged)} pairs); merge precision "
                  + (f"{len(same_page) / len(merged):.2f} (two different pages are never duplicates)"
                     if merged else "— (none proposed)"))
            print(f"    supersessions: {len(plan.findings.supersedes)}")
            wires = [w for w in plan.findings.wires if w.rel == "related_to"]
            print(f"    related_to wires: {len(wires)}")
            print_edits(plan, notes)
            if mode == "full":
                for w in random.Random(seed).sample(wires, min(20, len(wires))):
                    print(f"      wire {w.src} -> {w.dst}: {w.why}")
                for m in plan.findings.merges[:10]:
                    print(f"      merge {m.sources} sim {m.similarity:.2f}")
    finally:
        cx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", type=Path, help="a template-heavy vault, e.g. a clone of obsidian-hub")
    ap.add_argument("--sample", type=int, default=1500, help="notes sampled from --vault (default 1500)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--folder", action="append", help="folders of --vault to sample (default: the hub's expansions "
                    "and people)")
    ap.add_argument("--work", type=Path, help="where the copies and their indexes go (kept; reused when there)")
    ap.add_argument("--skip-dev", action="store_true", help="only the --vault figures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        if not args.skip_dev:
            dev_set(work)
        if args.vault:
            hub(args.vault, args.sample, args.seed, args.folder or list(HUB_FOLDERS), work)


if __name__ == "__main__":
    main()
