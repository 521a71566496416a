"""The second look before the answer (the Stop hook) on LoCoMo dev, cross-validated by conversation; its latency.

Part 1 (quality). In each conversation's vault (one note per dialog turn, as tests/bench/locomo.py builds it):
the prompt is a question, the prompt hook pushes what the gate passes for it (tests/bench/fit_gate.py's rows
and setting), and the agent's composed answer is the question restated with its gold answer. The Stop hook
then recalls with the prompt and the answer (`second_look.query`), leaves out what the prompt hook pushed, and
blocks when a memory's own probability reaches the threshold (at most `second_look.LIMIT`). Off-topic turns,
asked in the same vault: another conversation's questions with their answers, and coding or writing prompts
with plain answers (shown nothing before: the harder case). Cross-validated by conversation: the gate is fitted
and its thresholds (push and second look) chosen on two conversations, and measured on the third; the
figures are the mean of the three folds.
  loop       questions whose prompt push or second look brought an evidence turn
  push       questions whose prompt push brought one
  added      loop - push: what the second look adds
  blocks     questions the second look blocked
  precision  blocks that brought an evidence turn
  off-topic  off-topic turns that blocked
Part 2 (latency, with --server): the stop hook over HTTP with `vault-cortex serve` running on the generated
2,000-note bench vault, and as the real command.

Run: `python tests/bench/second_look.py [--data DIR] [--work DIR] [--server] [--notes 2000] [--keep DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.bench import fit_gate, locomo  # noqa: E402
from tests.bench.fit_gate import Row, fit, folds, inject, probabilities  # noqa: E402
from tests.bench.push import allow_transcripts, command_times, failures, pct  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.config import load_settings  # noqa: E402
from vault_cortex.index.embed import load_embedder  # noqa: E402
from vault_cortex.recall import second_look  # noqa: E402
from vault_cortex.recall.gate import PushGate  # noqa: E402
from vault_cortex.recall.gate import choose as gate_choose  # noqa: E402
from vault_cortex.recall.model import load_model  # noqa: E402

# The targets, met on the training folds with a little room: loop coverage, blocks that bring evidence.
TARGET_LOOP = 0.76  # target 0.70 (at 0.72 and at 0.74 the choice held out sat 0.004 and 0.011 above it)
TARGET_PRECISION = 0.62  # target 0.60
MAX_OFF_TOPIC = 0.02
THRESHOLDS = tuple(i / 100 for i in range(2, 96))
REPORTED = (0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)

# Plain answers to tests/bench/fit_gate.py's CODING prompts, in the same order.
PLAIN = [
    "Use datetime.fromisoformat, and if the result is naive attach timezone.utc with replace(tzinfo=...).",
    "Each parent render re-renders its children; wrap the child in React.memo and keep its props stable.",
    "Replace the correlated subquery with ROW_NUMBER() OVER (PARTITION BY customer ORDER BY created DESC).",
    "Use actions/setup-python with cache: pip, keyed on the requirements file's hash.",
    "A mutex has one owner that must unlock it; a semaphore counts permits, e.g. sem_init(&s, 0, 3) for three.",
    "Annotate every function's parameters and return type, then fix what mypy --strict reports.",
    "Run docker system prune -a and docker builder prune to free the space the old layers take.",
    "Find the pivot with a modified binary search, then search the sorted half that can hold the target.",
    "Insertion into a balanced binary search tree is O(log n), rebalancing included.",
    "Add a check target whose recipe runs ruff, mypy and pytest -q in turn.",
    "Start node with --inspect and take heap snapshots in Chrome DevTools, or use clinic heapprofiler.",
    "Wrap the callback API in a Promise with util.promisify, then await it inside an async function.",
    "Match each octet with (25[0-5]|2[0-4]\\d|1?\\d?\\d) joined by escaped dots, anchored at both ends.",
    "The borrow ends at the last use in each iteration, so a mutable borrow inside the loop body is fine.",
    "Add the column as nullable, backfill it in batches, then set the default and NOT NULL.",
    "CrashLoopBackOff means the container keeps exiting: read kubectl logs --previous and the pod's events.",
    "Test an empty list, a list shorter than n, an exact multiple, a remainder and n of zero.",
    "Run git reset --soft HEAD~1: the commit is undone and its changes stay staged.",
    "Broadcast with numpy: the distances are np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)).",
    "During a network partition a system must choose between consistency and availability.",
    "Open with the payments system you built, then two paragraphs on backend work that fits their stack.",
    "The essay argues for local control, warns about cost, and proposes a pilot programme first.",
    "We shipped the release on Friday after the team fixed the last two bugs.",
    "Deep Work From Anywhere; The Quiet Home Office; Async by Default; Focus Without a Commute; Remote Rhythms.",
    "Red leaves drifting down / the river carries autumn / silence on the water.",
    "Dear landlord, the heating has been broken since Monday; could a technician come this week? Thank you.",
    "Gutenberg's press around 1450, the spread of print across Europe, the Reformation, and mass literacy.",
    "Wir freuen uns auf Ihre Antwort.",
    "A double-walled stainless steel bottle that keeps drinks cold for 24 hours and hot for 12.",
    "Start with pizza slices as fractions, compare halves and quarters, then practise with worksheets.",
    "Two entangled particles share one quantum state, so measuring one tells you what the other will show.",
    "Use plural nouns for collections, nest sub-resources, and leave verbs to the HTTP methods.",
    "for f in *.jpeg; do mv -- \"$f\" \"${f%.jpeg}.jpg\"; done",
    "Give the parent display: grid and place-items: center.",
    "PostgreSQL has the stronger planner and parallel queries; MySQL is simpler to run for plain reads.",
    "A cat learned to code in the night, its semicolons were never quite right.",
    "Date, attendees, last week's actions, updates per team, blockers, decisions, new actions with owners.",
    "TCP is connection-based and reliable; UDP sends datagrams without delivery guarantees.",
    "Tables for books, copies, members and loans, with a loan row per copy lent and its due date.",
    "Gradient descent steps against the gradient; the learning rate sets the step size.",
    "The lamp swung as the wave hit the rocks below, and the keeper counted the seconds to the next.",
    "Issue new certificates, install them, run nginx -t, then reload nginx without downtime.",
    "Put each binary under cmd/<name>/main.go and the shared packages under internal/.",
    "Lentil curries, tofu stir-fries and bean chili for protein, with oats and rice for the training days.",
    "Use a Map keyed by the arguments inside a closure, checked before the recursive call.",
]


def restated(question: str, answer: object) -> str:
    """The composed answer of the bench: the question restated with its gold answer."""
    return f"{question.strip().rstrip('?').strip()}: {answer}."


class Look(msgspec.Struct, frozen=True, kw_only=True):
    """A second look's ranked candidates (a Row), and the prompt it followed."""

    prompt: str
    row: Row


def build(data: Path, work: Path) -> list[Look]:
    """Every composed answer ranked in every conversation's vault (cached in work/look-rows.json)."""
    cache = work / "look-rows.json"
    if cache.exists():
        cached = msgspec.json.decode(cache.read_bytes(), type=list[Look])
        if all(len(x) == len(fit_gate.GATE_FEATURES) for lk in cached for x in lk.row.x):  # else other features
            return cached
    if len(PLAIN) != len(fit_gate.CODING):
        raise SystemExit("PLAIN must answer every CODING prompt")
    embedder = load_embedder(load_settings(work, env={}).embedding)
    setups = locomo.prepare(data, work, embedder)
    answers = [{qa["question"]: qa.get("answer") for qa in conv["qa"] if qa.get("category") in (1, 2, 3, 4)}
               for _, conv in locomo.load_conversations(data)]
    looks: list[Look] = []
    for conv, (cx, qs) in enumerate(setups):
        turns: list[tuple[str, str, str, int, int, set[str]]] = [
            (q, restated(q, answers[conv][q]), "question", conv, conv, ev) for q, ev, _ in qs]
        for other, (_, oq) in enumerate(setups):
            if other != conv:
                turns += [(q, restated(q, answers[other][q]), "other", other, other, set()) for q, _, _ in oq[::3]]
        turns += [(q, a, "coding", i % 3, -1, set()) for i, (q, a) in enumerate(zip(fit_gate.CODING, PLAIN,
                                                                                      strict=True))]
        for n, (prompt, answer, kind, fold, source, evidence) in enumerate(turns):
            query = second_look.query(answer, prompt, cx.settings.recall.max_query_chars)
            looks.append(Look(prompt=prompt, row=fit_gate.row(cx, query, kind, conv, fold, source, evidence)))
            if n % 100 == 0:
                print(f"conv {conv}: {n}/{len(turns)} answers", file=sys.stderr)
    work.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(msgspec.json.encode(looks))
    return looks


class Loop(msgspec.Struct, frozen=True, kw_only=True):
    loop: float
    push: float
    added: float
    blocks: float
    precision: float
    off_topic: float


def blocked(look: Row, scores: Sequence[float], shown: set[str], threshold: float, floor: float) -> list[int]:
    """The candidates a second look brings, as the hook does (`second_look.gate_settings`): none unless one not
    shown reaches the threshold, then those at the push's floor, the likeliest first, at most LIMIT."""
    fresh = [i for i, p in enumerate(look.paths) if p not in shown]
    push = PushGate(threshold=0.0, floor=floor, most=second_look.LIMIT, intercept=0.0, weights={})
    at = second_look.gate_settings(push, threshold)
    return [fresh[i] for i in gate_choose([scores[i] for i in fresh], at.threshold, at.floor, second_look.LIMIT)]


Gate = tuple[float, np.ndarray]


def for_look(gate: Gate) -> Gate:
    """The fitted gate as the second look reads it (`second_look.gate_settings`): the features it does not read
    weigh nothing."""
    intercept, weights = gate
    kept = weights.copy()
    kept[[fit_gate.GATE_FEATURES.index(name) for name in second_look.UNREAD]] = 0.0
    return intercept, kept


def evaluate(pushes: dict[tuple[int, str], Row], looks: Sequence[Look], gate: Gate, push: tuple[float, float],
             threshold: float, budget: int) -> Loop:
    """The loop's figures on these turns, with one fitted gate, its push setting and a second-look threshold."""
    q = hit_push = hit_loop = blocks = good_blocks = off = off_blocks = 0
    looking = for_look(gate)
    for look in looks:
        r = look.row
        shown: set[str] = set()
        pushed_evidence = False
        before = pushes.get((r.conv, look.prompt)) if r.kind == "question" else None
        if before is not None:
            pushed = inject(probabilities(before, *gate), before.cost, push[0], budget, push[1])
            shown = {before.paths[i] for i in pushed}
            pushed_evidence = any(before.y[i] for i in pushed)
        brought = blocked(r, probabilities(r, *looking), shown, threshold, push[1])
        if r.kind == "question":
            q += 1
            hit_push += pushed_evidence
            good = any(r.y[i] for i in brought)
            hit_loop += pushed_evidence or good
            blocks += bool(brought)
            good_blocks += good
        else:
            off += 1
            off_blocks += bool(brought)
    return Loop(loop=hit_loop / max(q, 1), push=hit_push / max(q, 1), added=(hit_loop - hit_push) / max(q, 1),
                blocks=blocks / max(q, 1), precision=good_blocks / max(blocks, 1), off_topic=off_blocks / max(off, 1))


def mean(figures: Sequence[Loop]) -> Loop:
    return Loop(**{k: statistics.fmean(getattr(f, k) for f in figures) for k in Loop.__struct_fields__})


def choose(figures: Callable[[float], Loop]) -> float:
    """The second-look threshold: the highest (fewest extra model turns) whose loop coverage, block precision and
    off-topic rate meet the targets; failing that, the one adding the most coverage at the precision targets."""
    at = {t: figures(t) for t in THRESHOLDS}
    meeting = [t for t, f in at.items() if f.precision >= TARGET_PRECISION and f.off_topic <= MAX_OFF_TOPIC
               and f.blocks > 0]
    enough = [t for t in meeting if at[t].loop >= TARGET_LOOP]
    if enough:
        return max(enough)
    return max(meeting, key=lambda t: at[t].added, default=0.95)


def split_looks(looks: Sequence[Look]) -> list[tuple[list[Look], list[Look]]]:
    """The looks of fit_gate.folds' split: train on two conversations, test on the third."""
    out = []
    for test in sorted({lk.row.conv for lk in looks}):
        train = [lk for lk in looks if lk.row.conv != test and lk.row.fold != test and lk.row.source != test]
        held = [lk for lk in looks if lk.row.conv == test and lk.row.fold == test]
        out.append((train, held))
    return out


def line(name: str, f: Loop) -> str:
    return (f"{name:<34}{f.loop:>7.3f}{f.push:>7.3f}{f.added:>7.3f}{f.blocks:>8.3f}{f.precision:>11.3f}"
            f"{f.off_topic:>11.3f}")


def quality(rows: list[Row], looks: list[Look], budget: int) -> float:
    """Print the loop's figures, cross-validated; return the threshold to ship (chosen on the held-out figures)."""
    pushes = {(r.conv, r.prompt): r for r in rows if r.kind == "question"}
    push_splits = folds(rows)
    look_splits = split_looks(looks)
    gates = [fit(train) for train, _ in push_splits]
    settings = [fit_gate.choose_threshold(train, [probabilities(r, *g) for r in train], budget)
                for (train, _), g in zip(push_splits, gates, strict=True)]
    print(f"{'LoCoMo dev, cross-validated':<34}{'loop':>7}{'push':>7}{'added':>7}{'blocks':>8}{'precision':>11}"
          f"{'off-topic':>11}")
    chosen = [choose(lambda t, i=i: evaluate(pushes, look_splits[i][0], gates[i], settings[i], t, budget))
              for i in range(len(gates))]
    held = [evaluate(pushes, look_splits[i][1], gates[i], settings[i], chosen[i], budget) for i in range(len(gates))]
    print(line("threshold from training", mean(held)) + f"   (per fold: {', '.join(f'{t:.2f}' for t in chosen)})")
    by_threshold = {t: mean([evaluate(pushes, look_splits[i][1], gates[i], settings[i], t, budget)
                             for i in range(len(gates))]) for t in THRESHOLDS}
    print("by threshold (held out):")
    for t in sorted({*REPORTED, load_model().gate.second_look}):
        print(line(f"  p >= {t:.2f}", by_threshold[t] if t in by_threshold else mean(
            [evaluate(pushes, look_splits[i][1], gates[i], settings[i], t, budget) for i in range(len(gates))])))
    print("targets: loop >= 0.70, added >= 0.05, precision >= 0.60, off-topic <= 0.02")
    return choose(lambda t: by_threshold[t])


TRANSCRIPTS = 20  # ~1 MB each: the hook reads only their tail
# The rest of a composed answer, as long as a usual one (~1,100 characters with the restated question): the
# hook embeds and searches with the answer's start, so a one-line answer would time a cheaper query than agents send.
EXPLAINED = (
    "I checked the code paths involved and the notes from the last time this came up. The change happened in two "
    "steps: the scheduler picked up the new setting at its next run, and the worker that reads it only reloads its "
    "configuration when it restarts, so for a while the two disagreed. That is why the logs show the old value "
    "until the restart on Thursday and the new one after it. Nothing else in the history touches this; the "
    "migration from last month only renamed the table. If you want it to take effect at once, restart the worker "
    "after changing the setting, or make it watch the file. I would also add a line to the runbook, since the "
    "same thing will happen with the other settings the worker reads at start-up. Let me know if you want me to "
    "write the watcher or the runbook entry.")


def stop_payload(i: int, answer: str, transcript: Path) -> dict[str, object]:
    return {"session_id": f"bench-stop-{i}", "transcript_path": str(transcript), "cwd": "/tmp",
            "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": answer}


def write_transcript(path: Path, prompt: str, answer: str) -> None:
    """A Claude Code transcript of one exchange, as the real client writes it, after a long session."""
    filler = [{"type": "user", "message": {"role": "user", "content": f"earlier prompt {i} " + "x" * 400}}
              for i in range(2000)]
    last = [{"type": "user", "message": {"role": "user", "content": prompt}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in [*filler, *last]), encoding="utf-8")


def latency(notes: int, keep: Path | None, n: int = 200) -> None:
    """The stop hook over HTTP with `vault-cortex serve` running on the generated bench vault."""
    import httpx

    from server.hooks import URL_ENV, VAULT_ENV
    from tests.bench.gen import make_vault, queries
    from tests.bench.server import serving

    work = keep or Path(tempfile.mkdtemp(prefix="vault-cortex-bench-stop-"))
    vault = work / "vault"
    try:
        if not (vault / ".cortex").is_dir():
            print(f"generating {notes} notes in {vault}", file=sys.stderr, flush=True)
            make_vault(vault, notes, seed=7)
        allow_transcripts(vault, work)
        with Cortex.open(vault) as cx:
            report = cx.sync()
        asks = queries(n, seed=13)
        answers = [f"From what I found: {q}. {EXPLAINED}" for q in asks]
        transcripts = [work / f"t-{i}.jsonl" for i in range(TRANSCRIPTS)]
        for path, q, answer in zip(transcripts, asks, answers, strict=False):
            write_transcript(path, q, answer)
        with serving(vault) as (url, auth), httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            payloads = [stop_payload(i, answer, transcripts[i % TRANSCRIPTS]) for i, answer in enumerate(answers)]
            # tool-result (the failure push, same gate) alternated with it: on a busy machine the ratio holds
            failing = [{"session_id": f"bench-fail-{i}", "tool_name": "Bash", "tool_input": {"command": "make"},
                        "tool_response": r, "hook_event_name": "PostToolUse"} for i, r in enumerate(failures(n))]
            for p in payloads[:20]:
                http.post("/v1/hooks/stop", json=p)
            times, beside, fired = [], [], 0
            for p, f in zip(payloads, failing, strict=True):
                t0 = time.perf_counter()
                r = http.post("/v1/hooks/stop", json={**p, "session_id": f"{p['session_id']}-timed"})
                times.append((time.perf_counter() - t0) * 1000)
                r.raise_for_status()
                fired += bool(r.json())
                t0 = time.perf_counter()
                http.post("/v1/hooks/tool-result", json=f).raise_for_status()
                beside.append((time.perf_counter() - t0) * 1000)
            env = {**os.environ, VAULT_ENV: str(vault), URL_ENV: url}
            command = command_times("stop", payloads[:30], env)
        print(f"stop over HTTP, {report.notes}-note vault, ~1 MB transcripts ({len(times)} answers, {fired} blocked): "
              f"p50 {pct(times, 50):.0f} ms, p95 {pct(times, 95):.0f} ms (target < 150 ms)")
        print(f"  tool-result over HTTP alternated with it: p50 {pct(beside, 50):.0f} ms, p95 {pct(beside, 95):.0f} ms")
        print(f"  as the real command (python start-up included, {len(command)} runs): "
              f"p50 {pct(command, 50):.0f} ms, p95 {pct(command, 95):.0f} ms")
        shutil.rmtree(vault / ".cortex" / "hooks", ignore_errors=True)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=fit_gate.DATA)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-locomo"))
    ap.add_argument("--server", action="store_true", help="also time the stop hook over HTTP on the bench vault")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="build (or reuse) the bench vault here")
    args = ap.parse_args(argv)
    fit_gate.DATA = args.data
    rows = fit_gate.build(args.data, args.work)
    looks = build(args.data, args.work)
    chosen = quality(rows, looks, fit_gate.BUDGET_TOKENS - fit_gate.header_tokens())
    print(f"\nchosen by cross-validation: second_look = {chosen:.2f}; shipped: the ranking model's second_look = "
          f"{load_model().gate.second_look:.2f} (tests/bench/fit_gate.py --write ships the fit and this threshold)")
    if args.server:
        latency(args.notes, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
