"""Retrieval quality on the LoCoMo development set, through the same recall API a user gets.

One vault per conversation, one note per dialog turn (`conv-<id>/D<session>-<turn>.md`); each question of
categories 1–4 is asked with `Cortex.recall`, and recall@k is the share of its evidence turns in the top k,
averaged over questions. Run: `python tests/bench/locomo.py [--data DIR] [--work DIR] [--sweep]`.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex import Cortex
from vault_cortex.config import load_settings
from vault_cortex.index.embed import Embedder, load_embedder

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev"
KS = (1, 5, 10)


def session_datetime(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' → '2023-05-08T13:56'."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M")


def build_vault(conv: dict[str, Any], conv_id: str, root: Path) -> int:
    """Write one note per dialog turn; returns the number of notes."""
    folder = root / f"conv-{conv_id}"
    folder.mkdir(parents=True, exist_ok=True)
    (root / ".cortex").mkdir(exist_ok=True)
    count = 0
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        session = int(key.split("_")[1])
        created = session_datetime(conv[f"{key}_date_time"])
        for turn_no, turn in enumerate(conv[key], 1):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            lines = [
                "---",
                f"created: {created}",
                f"speaker: {turn['speaker']}",
                f"session: {session}",
                "cortex: long_term",
                "---",
                text,
            ]
            if turn_no > 1:
                lines.append(f"follows:: [[D{session}-{turn_no - 1}]]")
            (folder / f"D{session}-{turn_no}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
            count += 1
    return count


def evidence_paths(conv_id: str, evidence: Iterable[str]) -> set[str]:
    out = set()
    for ev in evidence:
        m = re.fullmatch(r"D(\d+):(\d+)", ev.strip())
        if m:
            out.add(f"conv-{conv_id}/D{m.group(1)}-{m.group(2)}.md")
    return out


Scorer = Callable[[str], list[str]]


def evaluate(questions: list[tuple[str, set[str]]], ask: Scorer) -> dict[int, float]:
    sums = dict.fromkeys(KS, 0.0)
    for question, evidence in questions:
        got = ask(question)
        for k in KS:
            sums[k] += len(evidence & set(got[:k])) / len(evidence)
    return {k: sums[k] / max(1, len(questions)) for k in KS}


def load_conversations(data: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(data.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        out.append((path.stem, raw.get("conversation", raw) | {"qa": raw["qa"]}))
    return out


def prepare(data: Path, work: Path, embedder: Embedder) -> list[tuple[Cortex, list[tuple[str, set[str]]]]]:
    setups = []
    for conv_id, conv in load_conversations(data):
        root = work / f"conv-{conv_id}"
        if not (root / f"conv-{conv_id}").exists():
            shutil.rmtree(root, ignore_errors=True)
            build_vault(conv, conv_id, root)
        cx = Cortex(root.resolve(), load_settings(root, env={}), embedder)
        report = cx.sync()
        questions = [
            (qa["question"], ev)
            for qa in conv["qa"]
            if qa.get("category") in (1, 2, 3, 4) and (ev := evidence_paths(conv_id, qa.get("evidence", [])))
        ]
        print(f"conv-{conv_id}: {report.notes} notes, {len(questions)} questions "
              f"(sync {report.seconds:.1f}s, {report.chunks_embedded} embedded)", file=sys.stderr)
        setups.append((cx, questions))
    return setups


def with_recall(cx: Cortex, modes: dict[str, dict[str, float]] | None = None, **changes: float) -> Cortex:
    """The same vault and index with some recall settings (or mode weights) changed."""
    settings = msgspec.structs.replace(cx.settings, recall=msgspec.structs.replace(cx.settings.recall, **changes))
    if modes:
        settings = msgspec.structs.replace(settings, modes={**settings.modes, **modes})
    clone = Cortex.__new__(Cortex)
    clone.__dict__.update(cx.__dict__)
    clone.settings = settings
    clone.recaller = copy.copy(cx.recaller)  # the same live graph and caches, reading the clone's settings
    clone.recaller._settings = lambda: settings
    return clone


def packed_recall(setups: list[tuple[Cortex, list[tuple[str, set[str]]]]], budget: int) -> float:
    """Share of evidence turns that made it into a packed context of `budget` tokens."""
    total, n = 0.0, 0
    for cx, questions in setups:
        for q, evidence in questions:
            ctx = cx.recall(q, k=50, budget_tokens=budget, log_activity=False).context
            got = {item.path for item in ctx.items} if ctx else set()
            total += len(evidence & got) / len(evidence)
            n += 1
    return total / max(1, n)


def run_all(setups: list[tuple[Cortex, list[tuple[str, set[str]]]]], k: int = 10,
            **recall_kwargs: Any) -> dict[int, float]:
    """Recall@k averaged over every question of every conversation (question-weighted)."""
    total = dict.fromkeys(KS, 0.0)
    n = 0
    for cx, questions in setups:
        def ask(q: str, cx: Cortex = cx) -> list[str]:
            return [h.path for h in cx.recall(q, k=k, log_activity=False, **recall_kwargs).hits]

        res = evaluate(questions, ask)
        for kk in KS:
            total[kk] += res[kk] * len(questions)
        n += len(questions)
    return {kk: total[kk] / n for kk in KS}


def row(name: str, res: dict[int, float]) -> str:
    return f"{name:<28}" + "".join(f"{res[k]:>10.3f}" for k in KS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-locomo"))
    ap.add_argument("--sweep", action="store_true", help="also print a grid of fusion weights")
    ap.add_argument("--budget", action="store_true",
                    help="also run with recall.lexical_budget at the share of the chunks it is at 100k notes")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    embedder = load_embedder(load_settings(args.work, env={}).embedding)
    setups = prepare(args.data, args.work, embedder)
    print(f"{'LoCoMo dev (turn per note)':<28}" + "".join(f"{'R@' + str(k):>10}" for k in KS))
    base = [(cx, q) for cx, q in setups]
    relevance_only = {"focus_only": {"relevance": 1.0}}
    print(row("BM25 only", run_all([(with_recall(cx, relevance_only, dense_weight=0.0, lexical_weight=1.0), q)
                                    for cx, q in base], mode="focus_only")))
    print(row("dense only", run_all([(with_recall(cx, relevance_only, dense_weight=1.0, lexical_weight=0.0), q)
                                     for cx, q in base], mode="focus_only")))
    print(row("fusion only (relevance)", run_all(
        [(with_recall(cx, modes=relevance_only), q) for cx, q in base], mode="focus_only")))
    print(row("vault-cortex (default)", run_all(base)))
    modes = sorted(setups[0][0].settings.modes)
    for mode in modes:
        print(row(f"  mode {mode}", run_all(base, mode=mode)))
    default = setups[0][0].settings.modes["balanced"]
    print("ablation (balanced without one signal):")
    for signal in [s for s, w in default.items() if w > 0 and s != "relevance"]:
        ablated = {"ablated": {**default, signal: 0.0}}
        res = run_all([(with_recall(cx, modes=ablated), q) for cx, q in base], mode="ablated")
        print(row(f"  - {signal}", res))
    print("recall within a packed context (default mode):")
    for budget in (512, 1000, 2000):
        print(f"  {budget:>5} tokens: {packed_recall(base, budget):.3f}")
    if args.budget:  # the generated 100k vault has 305,690 chunks; LoCoMo's vaults a few hundred
        print("lexical budget at its share of a 100k-note vault's chunks:")
        for budget in (10_000, 3_000):
            scaled = [(with_recall(cx, lexical_budget=max(1, cx.db.lex.max_chunk_id() * budget // 305_690)), q)
                      for cx, q in base]
            print(row(f"  budget {budget:,} / 305,690", run_all(scaled)))
    if args.sweep:
        for wd in (0.3, 0.4, 0.5, 0.6, 0.7):
            res = run_all([(with_recall(cx, dense_weight=wd, lexical_weight=1 - wd), q) for cx, q in base])
            print(row(f"  fusion dense={wd:.1f}", res))
        for g in (0.05, 0.1, 0.2, 0.25, 0.3):
            mode = {"g": {**default, "graph": g}}
            res = run_all([(with_recall(cx, modes=mode), q) for cx, q in base], mode="g")
            print(row(f"  graph weight {g:.2f}", res))
    print("reference (DESIGN.md): BM25 R@10 0.520, dense 0.431, RRF 0.552; "
          "targets R@10 >= 0.60 (fusion), >= 0.68 (full)")
    print(f"({statistics.fmean([len(q) for _, q in setups]):.0f} questions per conversation; "
          f"{time.perf_counter() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
