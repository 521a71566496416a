"""Retrieval quality on the LoCoMo development set, through the same recall API a user gets.

One vault per conversation, one note per dialog turn (`conv-<id>/D<session>-<turn>.md`); each question of
categories 1–4 is asked with `Cortex.recall`, and recall@k is the share of its evidence turns in the top k,
averaged over questions, overall and per category (multi-hop, temporal, open-domain, single-hop); then each
recall mechanism switched off in turn, and the in-process recall latency.
Run: `python tests/bench/locomo.py [--data DIR] [--work DIR] [--sweep] [--cv]`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex import Cortex
from vault_cortex.config import load_settings
from vault_cortex.index.embed import Embedder, load_embedder
from vault_cortex.recall import pipeline
from vault_cortex.recall.model import Cues
from vault_cortex.recall.request import RecallRequest

DATA_ENV = "VAULT_CORTEX_LOCOMO"
# The LoCoMo conversations, one JSON file each (`conversation` and `qa`, as the LoCoMo release gives them): --data,
# else $VAULT_CORTEX_LOCOMO, else ./locomo-dev
DATA = Path(os.environ.get(DATA_ENV, "").strip() or "locomo-dev")
KS = (1, 2, 3, 5, 10)  # R@1–3 also decide what the prompt hook can push (it pushes about two)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-dom", 4: "single-hop"}


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
Question = tuple[str, set[str], int]  # the question, its evidence notes, its LoCoMo category
Scores = dict[int | tuple[int, int], float]  # k → recall@k over all questions; (category, k) → within it


def evaluate(questions: list[Question], ask: Scorer) -> dict[tuple[int, int], tuple[float, int]]:
    """(category, k) → (sum of recall@k, questions) over the questions."""
    sums: dict[tuple[int, int], tuple[float, int]] = {}
    for question, evidence, category in questions:
        got = ask(question)
        for k in KS:
            total, n = sums.get((category, k), (0.0, 0))
            sums[(category, k)] = (total + len(evidence & set(got[:k])) / len(evidence), n + 1)
    return sums


def load_conversations(data: Path) -> list[tuple[str, dict[str, Any]]]:
    files = sorted(data.glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo conversations in {data}: pass --data DIR or set ${DATA_ENV} to a folder of "
                         "them, one JSON file each with its `conversation` and `qa`")
    out = []
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        out.append((path.stem, raw.get("conversation", raw) | {"qa": raw["qa"]}))
    return out


Setups = list[tuple[Cortex, list[Question]]]


def prepare(data: Path, work: Path, embedder: Embedder) -> Setups:
    setups = []
    for conv_id, conv in load_conversations(data):
        root = work / f"conv-{conv_id}"
        if not (root / f"conv-{conv_id}").exists():
            shutil.rmtree(root, ignore_errors=True)
            build_vault(conv, conv_id, root)
        # the ranking's recency counts from now to a note's file time: ranked at the time the vault was written,
        # every figure is the same whenever it is measured (by the wall clock, the gate's rows drifted by the hour)
        written = datetime.fromtimestamp(max(p.stat().st_mtime for p in (root / f"conv-{conv_id}").glob("*.md")), UTC)
        cx = Cortex(root.resolve(), load_settings(root, env={}), embedder, clock=lambda written=written: written)
        report = cx.sync()
        questions = [
            (qa["question"], ev, int(qa["category"]))
            for qa in conv["qa"]
            if qa.get("category") in (1, 2, 3, 4) and (ev := evidence_paths(conv_id, qa.get("evidence", [])))
        ]
        print(f"conv-{conv_id}: {report.notes} notes, {len(questions)} questions "
              f"(sync {report.seconds:.1f}s, {report.chunks_embedded} embedded)", file=sys.stderr)
        setups.append((cx, questions))
    return setups


FUSION = {"dense_weight": "dense", "lexical_weight": "lexical"}  # the ranking model's fusion weights, by old name


def with_recall(cx: Cortex, modes: dict[str, dict[str, float]] | None = None, **changes: Any) -> Cortex:
    """The same vault and index with some recall settings, cue shares or fusion weights of the ranking model (or
    mode weights) changed."""
    model = cx.model
    cues = {k: v for k, v in changes.items() if k in Cues.__struct_fields__}
    fusion = {FUSION[k]: v for k, v in changes.items() if k in FUSION}
    model = msgspec.structs.replace(model, cues=msgspec.structs.replace(model.cues, **cues),
                                    fusion=msgspec.structs.replace(model.fusion, **fusion))
    rest = {k: v for k, v in changes.items() if k not in cues and k not in FUSION}
    settings = msgspec.structs.replace(cx.settings, recall=msgspec.structs.replace(cx.settings.recall, **rest))
    if modes:
        settings = msgspec.structs.replace(settings, modes={**settings.modes, **modes})
    clone = Cortex.__new__(Cortex)
    clone.__dict__.update(cx.__dict__)
    clone._settings = settings
    clone.model = model
    clone.recaller = copy.copy(cx.recaller)  # the same live graph and caches, with the clone's settings
    clone.recaller.settings = settings
    clone.recaller.model = model
    return clone


def packed_recall(setups: Setups, budget: int) -> float:
    """Share of evidence turns that made it into a packed context of `budget` tokens."""
    total, n = 0.0, 0
    for cx, questions in setups:
        for q, evidence, _ in questions:
            ctx = cx.recall(RecallRequest(query=q, k=50, budget_tokens=budget), log_activity=False).context
            got = {item.path for item in ctx.items} if ctx else set()
            total += len(evidence & got) / len(evidence)
            n += 1
    return total / max(1, n)


def run_all(setups: Setups, k: int = 10, each: Callable[[Cortex], None] | None = None, **recall_kwargs: Any) -> Scores:
    """Recall@k averaged over every question of every conversation (question-weighted), and per category (`each`
    is called with each conversation's vault before its questions are asked)."""
    sums: dict[tuple[int, int], tuple[float, int]] = {}
    for cx, questions in setups:
        if each is not None:
            each(cx)
        def ask(q: str, cx: Cortex = cx) -> list[str]:
            return [h.path for h in cx.recall(RecallRequest(query=q, k=k, **recall_kwargs), log_activity=False).hits]

        for key, (total, n) in evaluate(questions, ask).items():
            before = sums.get(key, (0.0, 0))
            sums[key] = (before[0] + total, before[1] + n)
    out: Scores = {key: total / n for key, (total, n) in sums.items()}
    for kk in KS:
        parts = [sums[(c, kk)] for c in CATEGORIES if (c, kk) in sums]
        out[kk] = sum(t for t, _ in parts) / max(1, sum(n for _, n in parts))
    return out


def latency(setups: Setups) -> tuple[float, float]:
    """p50 and p95 of `Cortex.recall` (default settings, model loaded, query embedding included), in ms."""
    times = []
    for cx, questions in setups:
        for q, _, _ in questions:
            started = time.perf_counter()
            cx.recall(RecallRequest(query=q), log_activity=False)
            times.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(times, n=20)
    return statistics.median(times), cuts[18]


def row(name: str, res: Scores) -> str:
    """Recall@1/2/3/5/10 over all questions, then recall@10 within each category."""
    return (f"{name:<28}" + "".join(f"{res[k]:>8.3f}" for k in KS) + "  |"
            + "".join(f"{res.get((c, 10), 0.0):>11.3f}" for c in CATEGORIES))


def header(title: str) -> str:
    return (f"{title:<28}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + "  |"
            + "".join(f"{name:>11}" for name in CATEGORIES.values()))


def category_table(res: Scores, counts: dict[int, int]) -> list[str]:
    """Recall@1/2/3/5/10 within each category, with its number of questions."""
    lines = [f"{'category':<28}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + f"{'questions':>11}"]
    for c, name in CATEGORIES.items():
        lines.append(f"  {name + f' ({c})':<26}" + "".join(f"{res.get((c, k), 0.0):>8.3f}" for k in KS)
                     + f"{counts.get(c, 0):>11}")
    lines.append(f"  {'all':<26}" + "".join(f"{res[k]:>8.3f}" for k in KS) + f"{sum(counts.values()):>11}")
    return lines


MECHANISMS: dict[str, dict[str, Any]] = {
    "company (neighbours lift)": {"company": 0.0},
    "session (same-session lift)": {"session": 0.0},
    "person (who is asked about)": {"person": 0.0},
    "when (holds a time)": {"when": 0.0},
    "dated (written when the query names)": {"dated": 0.0},
    "answer (follows a question)": {"answer": 0.0},
    "conversation cues (all five)": {"conversation": False},
}
OFF = {k: v for change in MECHANISMS.values() for k, v in change.items()}  # every mechanism switched off
COMPANY_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
CUE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # recall.person, recall.when, ...
DATED_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)  # recall.dated


def cross_validated(setups: Setups, setting: str, grid: Iterable[float]) -> Scores:
    """Each conversation scored with the value of `setting` that does best (recall@10) on the others."""
    grid = list(grid)
    scored = {(i, v): run_all([(with_recall(cx, **{setting: v}), q)]) for i, (cx, q) in enumerate(setups)
              for v in grid}
    sums: dict[int | tuple[int, int], tuple[float, int]] = {}
    for held, (_, questions) in enumerate(setups):
        others = [i for i in range(len(setups)) if i != held]
        best = max(grid, key=lambda v: sum(scored[(i, v)][10] * len(setups[i][1]) for i in others))
        print(f"  held out conversation {held + 1}: {setting} = {best}", file=sys.stderr)
        counts = {c: sum(1 for *_, cat in questions if cat == c) for c in CATEGORIES}
        for key, value in scored[(held, best)].items():
            weight = len(questions) if isinstance(key, int) else counts[key[0]]
            total, n = sums.get(key, (0.0, 0))
            sums[key] = (total + value * weight, n + weight)
    return {key: total / max(1, n) for key, (total, n) in sums.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-locomo"))
    ap.add_argument("--sweep", action="store_true", help="also print a grid of fusion weights")
    ap.add_argument("--cv", action="store_true",
                    help="also cross-validate the ranking model's cue shares (company, session, person, when, dated, "
                         "answer) by conversation (fit on two, score the third)")
    ap.add_argument("--budget", action="store_true",
                    help="also run with the lexical budget at the share of the chunks it is at 100k notes")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    embedder = load_embedder(load_settings(args.work, env={}).embedding)
    setups = prepare(args.data, args.work, embedder)
    print(header("LoCoMo dev (turn per note)"))
    base = [(cx, q) for cx, q in setups]
    relevance_only = {"focus_only": {"relevance": 1.0}}  # the baselines: no signal and no mechanism but relevance
    print(row("BM25 only", run_all([(with_recall(cx, relevance_only, dense_weight=0.0, lexical_weight=1.0,
                                                  **OFF), q) for cx, q in base], mode="focus_only")))
    print(row("dense only", run_all([(with_recall(cx, relevance_only, dense_weight=1.0, lexical_weight=0.0,
                                                   **OFF), q) for cx, q in base], mode="focus_only")))
    print(row("fusion only (relevance)", run_all(
        [(with_recall(cx, modes=relevance_only, **OFF), q) for cx, q in base], mode="focus_only")))
    default_scores = run_all(base)
    print(row("vault-cortex (default)", default_scores))
    modes = sorted(setups[0][0].settings.modes)
    for mode in modes:
        print(row(f"  mode {mode}", run_all(base, mode=mode)))
    default = setups[0][0].settings.modes["balanced"]
    print("ablation (balanced without one signal):")
    for signal in [s for s, w in default.items() if w > 0 and s != "relevance"]:
        ablated = {"ablated": {**default, signal: 0.0}}
        res = run_all([(with_recall(cx, modes=ablated), q) for cx, q in base], mode="ablated")
        print(row(f"  - {signal}", res))
    print("mechanisms (default without one):")
    for name, change in MECHANISMS.items():
        print(row(f"  - {name}", run_all([(with_recall(cx, **change), q) for cx, q in base])))
    if args.cv:
        print(row("  company, cross-validated", cross_validated(base, "company", COMPANY_GRID)))
        print(row("  session, cross-validated", cross_validated(base, "session", CUE_GRID)))
        print(row("  person, cross-validated", cross_validated(base, "person", CUE_GRID)))
        print(row("  when, cross-validated", cross_validated(base, "when", CUE_GRID)))
        print(row("  dated, cross-validated", cross_validated(base, "dated", DATED_GRID)))
        print(row("  answer, cross-validated", cross_validated(base, "answer", CUE_GRID)))
    counts: dict[int, int] = {}
    for _, questions in setups:
        for _, _, c in questions:
            counts[c] = counts.get(c, 0) + 1
    print("by category (default):")
    print("\n".join(category_table(default_scores, counts)))
    p50, p95 = latency(base)
    print(f"recall latency in-process (default): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print("recall within a packed context (default mode):")
    for budget in (512, 1000, 2000):
        print(f"  {budget:>5} tokens: {packed_recall(base, budget):.3f}")
    if args.budget:  # the generated 100k vault has 305,690 chunks; LoCoMo's vaults a few hundred
        print("lexical budget at its share of a 100k-note vault's chunks:")
        shipped = pipeline.LEXICAL_BUDGET
        for budget in (10_000, 3_000):  # the budget is the pipeline's constant: set for each vault in turn
            def scaled(cx: Cortex, budget: int = budget) -> None:
                pipeline.LEXICAL_BUDGET = max(1, cx.db.lex.max_chunk_id() * budget // 305_690)
            print(row(f"  budget {budget:,} / 305,690", run_all(base, each=scaled)))
        pipeline.LEXICAL_BUDGET = shipped
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
