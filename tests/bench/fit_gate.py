"""Fit the push gate (recall/gate.py) on the LoCoMo development set plus off-topic prompts; print its config.

Each prompt is ranked by `Cortex.ranked` (balanced mode) in its conversation's vault (one note per dialog
turn, as tests/bench/locomo.py builds it); the gate's features of the best `gate.CANDIDATES` memories are
labelled 1 when the memory is an evidence turn of the question, else 0. Off-topic prompts (another
conversation's questions, coding and writing prompts, vague one-liners) label every candidate 0.

Cross-validation is by conversation: fit on two, choose the threshold and the floor (the probability a memory
needs on its own to go along) on those two, test on the third; the mean of the three held-out folds is
reported. The setting chosen has the best coverage among those meeting the targets (precision per injection,
pushed memories that are evidence, memories per injection, off-topic). The final fit uses all three.

The second look's threshold is chosen for the same fit (tests/bench/second_look.py). One command prints every
figure and the constants to ship, and with `--write` writes them where they ship: the coefficients, the floor
and the second look into the ranking model (vault_cortex/index/data/ranking-model.json, with a new checksum), the
threshold a person may change into the default of `push.threshold`.

Run: `python tests/bench/fit_gate.py [--data DIR] [--work DIR] [--write]`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from server.hooks import MIN_PROMPT_CHARS, PROMPT_HEADER, render_memory  # noqa: E402
from tests.bench import locomo  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.config import PushSettings, load_settings  # noqa: E402
from vault_cortex.index.embed import load_embedder  # noqa: E402
from vault_cortex.recall.gate import ASKED_FLOOR, CANDIDATES, choose, features  # noqa: E402
from vault_cortex.recall.model import GATE_FEATURES, MODEL_PATH, Gate, encode, load_model  # noqa: E402
from vault_cortex.recall.scored import cues, gate, to_hit  # noqa: E402

DATA = locomo.DATA
BUDGET_TOKENS = 400  # the prompt hook's default budget
MOST = PushSettings().most
# The targets (README "Push"), met on the training folds with a little room: injections holding evidence, pushed
# memories that are evidence, memories per injection, off-topic prompts that get an injection.
TARGET_PRECISION = 0.72  # target 0.70
TARGET_MEMORY_PRECISION = 0.37  # target 0.35
MAX_PER_INJECTION = 2.3  # target 2.5
MAX_OFF_TOPIC = 0.02

CODING = [
    "Write a Python function that parses an ISO 8601 date and returns a timezone-aware datetime",
    "Why does my React component re-render every time the parent state changes?",
    "Refactor this SQL query to use a window function instead of a correlated subquery",
    "How do I configure a GitHub Actions workflow to cache pip dependencies?",
    "Explain the difference between a mutex and a semaphore with an example in C",
    "Add type hints to this module and make mypy strict pass",
    "The Docker build fails with 'no space left on device', how do I clean up?",
    "Implement binary search over a rotated sorted array in TypeScript",
    "What is the time complexity of inserting into a balanced binary search tree?",
    "Set up a Makefile target that runs the linters and the unit tests",
    "How can I profile memory usage of a long-running Node.js process?",
    "Convert this callback-based API to async/await",
    "Write a regex that matches IPv4 addresses but not 999.1.1.1",
    "Explain how Rust's borrow checker handles mutable references in loops",
    "Generate a migration that adds a non-null column with a default to a large Postgres table",
    "Why is my Kubernetes pod stuck in CrashLoopBackOff?",
    "Write unit tests for a function that splits a list into chunks of size n",
    "How do I undo the last git commit but keep the changes staged?",
    "Optimise this numpy loop that computes pairwise distances",
    "What does the CAP theorem say about partition tolerance?",
    "Draft a cover letter for a backend engineering position at a fintech startup",
    "Summarise the main arguments of this essay in three bullet points",
    "Rewrite this paragraph so it is more concise and uses active voice",
    "Suggest five titles for a blog post about remote work productivity",
    "Write a haiku about autumn leaves falling on a quiet river",
    "Proofread this email to my landlord about the broken heating",
    "Outline a ten minute talk on the history of the printing press",
    "Translate this sentence into formal German: we look forward to your reply",
    "Write a product description for a stainless steel water bottle",
    "Give me a lesson plan for teaching fractions to ten-year-olds",
    "Explain quantum entanglement to a high school student",
    "What are good practices for naming REST API endpoints?",
    "Create a bash script that renames all .jpeg files to .jpg in a folder",
    "How do I center a div horizontally and vertically with CSS grid?",
    "Compare PostgreSQL and MySQL for a read-heavy analytics workload",
    "Write a limerick about a cat who learned to program",
    "Draft meeting notes template for a weekly engineering sync",
    "What is the difference between TCP and UDP?",
    "Help me design a database schema for a library lending system",
    "Explain gradient descent and the role of the learning rate",
    "Write a short story opening set in a lighthouse during a storm",
    "List the steps to rotate TLS certificates on an nginx server",
    "How should I structure a Go project with several binaries?",
    "Create a weekly meal plan for a vegetarian athlete",
    "What is the best way to memoise a recursive function in JavaScript?",
]
VAGUE = [
    "ok what next", "hmm, not sure about that", "can you help me", "tell me more", "let's continue",
    "what do you think?", "that's interesting", "go ahead and do it", "any ideas?", "try again please",
    "sounds good to me", "and then what?", "why though", "I don't get it", "make it better",
    "is that right?", "what else", "fine, whatever works", "please explain", "keep going",
    "do the usual thing", "same as before", "wait, what?", "let me think about it", "that didn't work",
    "something like that", "anything else to add?", "just fix it", "where were we?", "thanks, that helps",
]


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """One prompt asked in one conversation's vault, with its candidates' features, labels and costs."""

    prompt: str
    conv: int  # the vault's conversation (fold)
    kind: str  # question, other, coding, vague
    fold: int  # the fold the prompt is tested in (generic prompts are split three ways)
    source: int  # the conversation the prompt's text comes from, -1 for generic prompts
    x: list[list[float]]  # features per candidate, in GATE_FEATURES order
    y: list[int]  # 1 = evidence turn
    cost: list[int]  # tokens of the memory's block in the prompt hook
    cosine: list[float]  # best-chunk cosine (the old hook's threshold)
    paths: list[str] = []  # the candidates' notes (what a session was shown, for the second look)


def build(data: Path, work: Path) -> list[Row]:
    """Every prompt ranked in every conversation's vault (cached in work/gate-rows.json)."""
    cache = work / "gate-rows.json"
    if cache.exists():
        cached = msgspec.json.decode(cache.read_bytes(), type=list[Row])
        # an older cache lacks the paths, or holds other features: built again
        if all((r.paths or not r.y) and all(len(x) == len(GATE_FEATURES) for x in r.x) for r in cached):
            return cached
    embedder = load_embedder(load_settings(work, env={}).embedding)
    setups = locomo.prepare(data, work, embedder)
    rows: list[Row] = []
    questions = [[q for q, _, _ in qs] for _, qs in setups]
    for conv, (cx, qs) in enumerate(setups):
        prompts: list[tuple[str, str, int, int, set[str]]] = [(q, "question", conv, conv, ev) for q, ev, _ in qs]
        for other, oq in enumerate(questions):
            if other != conv:
                prompts += [(q, "other", conv, other, set()) for q in oq[::3]]
        prompts += [(q, "coding", i % 3, -1, set()) for i, q in enumerate(CODING)]
        prompts += [(q, "vague", i % 3, -1, set()) for i, q in enumerate(VAGUE)]
        for n, (prompt, kind, fold, source, evidence) in enumerate(prompts):
            rows.append(row(cx, prompt, kind, conv, fold, source, evidence))
            if n % 100 == 0:
                print(f"conv {conv}: {n}/{len(prompts)} prompts", file=sys.stderr)
    work.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(msgspec.json.encode(rows))
    return rows


def row(cx: Cortex, prompt: str, kind: str, conv: int, fold: int, source: int, evidence: set[str]) -> Row:
    query = prompt[: cx.settings.recall.max_query_chars]
    qvec = cx.embedder.embed([query])[0]
    _, weights = cx.recaller.mode(None)
    every = cx.recaller.ranked(query, qvec, weights)
    ranked = every[:CANDIDATES]
    feats = features(query, cues(ranked), [s.chunk.text for s in every[CANDIDATES:]])
    verdicts = gate(every, query, cx.push_gate())[:CANDIDATES]  # the block's why-line, as the hook would print it
    costs = [cx.embedder.count_tokens(render_memory(to_hit(s, query, v)))
             for s, v in zip(ranked, verdicts, strict=True)]
    return Row(prompt=prompt, conv=conv, kind=kind, fold=fold, source=source,
               x=[[f[k] for k in GATE_FEATURES] for f in feats], y=[int(s.note.path in evidence) for s in ranked],
               cost=costs, cosine=[s.fused.cosine for s in ranked], paths=[s.note.path for s in ranked])


# -- the model --------------------------------------------------------------------------------------------
def fit(rows: Sequence[Row], l2: float = 1.0) -> tuple[float, np.ndarray]:
    """L2-regularised logistic regression by Newton's method; returns (intercept, weights)."""
    x = np.array([v for r in rows for v in r.x], dtype=np.float64)
    y = np.array([v for r in rows for v in r.y], dtype=np.float64)
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    reg = np.full(a.shape[1], l2)
    reg[0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(a @ w, -50, 50)))
        grad = a.T @ (p - y) + reg * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(w[0]), w[1:]


def probabilities(r: Row, intercept: float, weights: np.ndarray) -> list[float]:
    z = intercept + np.array(r.x, dtype=np.float64).reshape(len(r.x), -1) @ weights if r.x else np.zeros(0)
    return [float(v) for v in 1 / (1 + np.exp(-np.clip(z, -50, 50)))]


def inject(scores: Sequence[float], costs: Sequence[int], threshold: float, budget: int,
           floor: float | None = None, most: int = MOST) -> list[int]:
    """Indices pushed, as the prompt hook does: `gate.choose` (nothing unless the best score reaches the
    threshold, then the likeliest at or above the floor, at most `most`), then within the budget in that order."""
    out = []
    for i in choose(scores, threshold, threshold if floor is None else floor, most):
        if costs[i] <= budget:
            budget -= costs[i]
            out.append(i)
    return out


class Figures(msgspec.Struct, frozen=True, kw_only=True):
    coverage: float  # questions whose injection holds an evidence turn
    precision: float  # injections (on questions) holding an evidence turn
    memory_precision: float  # injected memories that are evidence
    fired: float  # questions that got an injection
    off_topic: float  # off-topic prompts that got an injection
    per_injection: float  # memories per injection


def evaluate(rows: Sequence[Row], scores: Sequence[Sequence[float]], threshold: float,
             budget: int = BUDGET_TOKENS, floor: float | None = None) -> Figures:
    q_n = fired = good = mem = mem_good = off_n = off_fired = 0
    for r, s in zip(rows, scores, strict=True):
        # the hook leaves prompts shorter than MIN_PROMPT_CHARS ("yes", "go on") alone
        pushed = inject(s, r.cost, threshold, budget, floor) if len(r.prompt.strip()) >= MIN_PROMPT_CHARS else []
        if r.kind == "question":
            q_n += 1
            if pushed:
                fired += 1
                mem += len(pushed)
                hits = sum(r.y[i] for i in pushed)
                mem_good += hits
                good += hits > 0
        else:
            off_n += 1
            off_fired += bool(pushed)
    return Figures(coverage=good / max(q_n, 1), precision=good / max(fired, 1),
                   memory_precision=mem_good / max(mem, 1), fired=fired / max(q_n, 1),
                   off_topic=off_fired / max(off_n, 1), per_injection=mem / max(fired, 1))


FLOORS = tuple(i / 100 for i in range(0, 41))
THRESHOLDS = tuple(i / 100 for i in range(2, 96))


def meets(f: Figures) -> bool:
    """The push targets (with the training room above): precise injections, lean ones, no off-topic noise."""
    return (f.precision >= TARGET_PRECISION and f.memory_precision >= TARGET_MEMORY_PRECISION
            and f.per_injection <= MAX_PER_INJECTION and f.off_topic <= MAX_OFF_TOPIC)


def meets_targets(f: Figures) -> bool:
    """The push targets themselves, without the training room of `meets`."""
    return f.precision >= 0.70 and f.memory_precision >= 0.35 and f.per_injection <= 2.5 and f.off_topic <= 0.02


def best_setting(figures: Callable[[float, float], Figures],
                 targets: Callable[[Figures], bool] = meets) -> tuple[float, float]:
    """(threshold, floor) with the best coverage among those that meet the targets; a memory rides along only on
    its own probability (the floor), so the floor is searched as much as the threshold."""
    best: tuple[float, float, float] = (-1.0, 0.95, 0.95)
    for floor in FLOORS:
        for t in THRESHOLDS:
            if t < floor:
                continue
            f = figures(t, floor)
            if targets(f):
                if f.coverage > best[0]:
                    best = (f.coverage, t, floor)
                break  # higher thresholds only lose coverage
    return best[1], best[2]


def choose_threshold(rows: Sequence[Row], scores: Sequence[Sequence[float]], budget: int) -> tuple[float, float]:
    """(threshold, floor) with the best training coverage that meets the targets."""
    return best_setting(lambda t, floor: evaluate(rows, scores, t, budget, floor))


def folds(rows: Sequence[Row]) -> list[tuple[list[Row], list[Row]]]:
    convs = sorted({r.conv for r in rows})
    out = []
    for test in convs:
        train = [r for r in rows if r.conv != test and r.fold != test and r.source != test]
        held = [r for r in rows if r.conv == test and r.fold == test]
        out.append((train, held))
    return out


def cross_validate(rows: Sequence[Row], budget: int) -> tuple[list[Figures], list[tuple[float, float]]]:
    """Per held-out conversation: fit and choose (threshold, floor) on the other two, measure on it."""
    figures, thresholds = [], []
    for train, held in folds(rows):
        b, w = fit(train)
        t, floor = choose_threshold(train, [probabilities(r, b, w) for r in train], budget)
        figures.append(evaluate(held, [probabilities(r, b, w) for r in held], t, budget, floor))
        thresholds.append((t, floor))
    return figures, thresholds


def threshold_by_cross_validation(rows: Sequence[Row], budget: int) -> tuple[float, float]:
    """(threshold, floor) whose held-out figures (mean of the folds) meet the targets with the best coverage, for
    the shipped model."""
    splits = folds(rows)
    scored = [(held, [probabilities(r, *fit(train)) for r in held]) for train, held in splits]
    return best_setting(lambda t, floor: mean([evaluate(held, p, t, budget, floor) for held, p in scored]))


def ceiling(rows: Sequence[Row], budget: int) -> list[float]:
    """Each held-out conversation's coverage at the targets with the threshold and floor chosen on its own answers:
    what no choice of them can pass with this fit (the shipped choice is made without those answers)."""
    out = []
    for train, held in folds(rows):
        p = [probabilities(r, *fit(train)) for r in held]
        t, floor = best_setting(lambda t, floor, p=p, held=held: evaluate(held, p, t, budget, floor), meets_targets)
        f = evaluate(held, p, t, budget, floor)
        out.append(f.coverage if meets_targets(f) else 0.0)
    return out


def by_category(rows: Sequence[Row], data: Path, budget: int) -> dict[str, tuple[int, float, float, float]]:
    """Per LoCoMo category (multi-hop, temporal, …): its questions, their held-out coverage and precision per
    injection, each fold fitted and its threshold and floor chosen on the other two, and the share with evidence
    among the gate's candidates at all (where coverage is lost)."""
    category: dict[tuple[int, str], int] = {}
    for i, (_, conv) in enumerate(locomo.load_conversations(data)):
        for qa in conv["qa"]:
            if qa.get("category") in locomo.CATEGORIES:
                category.setdefault((i, qa["question"]), qa["category"])
    counts = {c: [0.0, 0.0, 0.0, 0.0] for c in locomo.CATEGORIES}  # questions, covered, fired, any candidate
    for train, held in folds(rows):
        b, w = fit(train)
        t, floor = choose_threshold(train, [probabilities(r, b, w) for r in train], budget)
        for c, n in counts.items():
            asked = [r for r in held if r.kind == "question" and category[(r.conv, r.prompt)] == c]
            f = evaluate(asked, [probabilities(r, b, w) for r in asked], t, budget, floor)
            n[0] += len(asked)
            n[1] += f.coverage * len(asked)
            n[2] += f.fired * len(asked)
            n[3] += sum(any(r.y) for r in asked)
    return {locomo.CATEGORIES[c]: (round(q), covered / max(q, 1), covered / max(fired, 1), found / max(q, 1))
            for c, (q, covered, fired, found) in counts.items()}


CURVE = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)


def curve(rows: Sequence[Row], budget: int, floor: float) -> list[tuple[float, Figures]]:
    """The held-out figures (mean of the folds) at each threshold of CURVE: what coverage costs in precision."""
    scored = [(held, [probabilities(r, *fit(train)) for r in held]) for train, held in folds(rows)]
    return [(t, mean([evaluate(held, p, t, budget, min(floor, t)) for held, p in scored])) for t in CURVE]


def asked_floor_curve(rows: Sequence[Row], floors: Sequence[float] = (0.03, 0.05, 0.08, 0.10, 0.15)) -> list[str]:
    """For each floor: the share of questions whose evidence is among the candidates that still get an answer (the
    best candidate's held-out chance at or above the floor), and the share of off-topic prompts that get one."""
    best: list[tuple[str, float, bool]] = []
    for train, held in folds(rows):
        b, w = fit(train)
        best += [(r.kind, max(probabilities(r, b, w), default=0.0), any(r.y)) for r in held]
    answerable = [p for kind, p, found in best if kind == "question" and found]
    off = [p for kind, p, _ in best if kind != "question"]
    return [f"floor {f:.2f}: answerable questions answered {sum(p >= f for p in answerable) / len(answerable):.3f}, "
            f"off-topic answered {sum(p >= f for p in off) / len(off):.3f}" for f in floors]


def mean(figures: Sequence[Figures]) -> Figures:
    fields = Figures.__struct_fields__
    return Figures(**{k: statistics.fmean(getattr(f, k) for f in figures) for k in fields})


def header_tokens() -> int:
    embedder = load_embedder(load_settings(Path("."), env={}).embedding)
    return embedder.count_tokens(PROMPT_HEADER)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-locomo"))
    ap.add_argument("--write", action="store_true",
                    help="write the constants where the defaults live (vault_cortex/config.py and the starter config)")
    args = ap.parse_args(argv)
    from tests.bench import second_look  # it builds on this module's rows

    rows = build(args.data, args.work)
    budget = BUDGET_TOKENS - header_tokens()
    figures, thresholds = cross_validate(rows, budget)
    print("prompt push, cross-validated by conversation (fit and choose on two, measure on the third):")
    for i, (f, (t, floor)) in enumerate(zip(figures, thresholds, strict=True)):
        print(f"fold {i} (held out; threshold {t:.2f}, floor {floor:.2f}): "
              f"{json.dumps({k: round(v, 3) for k, v in msgspec.to_builtins(f).items()})}")
    cv = {k: round(v, 3) for k, v in msgspec.to_builtins(mean(figures)).items()}
    print(f"cross-validated mean: {json.dumps(cv)}")
    print("targets: coverage >= 0.60, precision >= 0.70, memory_precision >= 0.35, per_injection <= 2.5, "
          "off_topic <= 0.02\n")
    b, w = fit(rows)
    t, floor = threshold_by_cross_validation(rows, budget)
    print(f"coverage against precision per injection (held out, floor {floor:.2f}, the threshold swept):")
    for threshold, f in curve(rows, budget, floor):
        print(f"  threshold {threshold:.2f}: coverage {f.coverage:.3f}, precision {f.precision:.3f}, memory precision "
              f"{f.memory_precision:.3f}, {f.per_injection:.2f} per injection, off-topic {f.off_topic:.3f}")
    print("by kind of question (held out, each fold's own choice): " + "; ".join(
        f"{name} ({n}): coverage {coverage:.2f}, precision {precision:.2f}, evidence among the candidates {found:.2f}"
        for name, (n, coverage, precision, found) in by_category(rows, args.data, budget).items()))
    print("a recall asked for (MCP `recall`) answers that nothing bears when its best memory's chance is under "
          f"the floor (now {ASKED_FLOOR:.2f}); held out, by floor:")
    for line in asked_floor_curve(rows):
        print(f"  {line}")
    top = ceiling(rows, budget)
    print(f"ceiling: coverage at the targets with each held-out conversation's own best threshold and floor: "
          f"{' / '.join(f'{c:.3f}' for c in top)} (mean {statistics.fmean(top):.3f})")
    print()
    print("second look (the Stop hook), cross-validated by conversation:")
    look = second_look.quality(rows, second_look.build(args.data, args.work), budget)
    constants = {"threshold": t, "floor": floor, "second_look": look, "intercept": b}
    weights = {name: float(v) for name, v in zip(GATE_FEATURES, w, strict=True)}
    print("\n# fitted on all three conversations, thresholds chosen by cross-validation; the [push] defaults")
    print("\n".join(push_table(constants, weights)))
    if args.write:
        for path in write_defaults(constants, weights):
            print(f"written: {path.relative_to(ROOT)}")
        print("docs/push.md and docs/configuration.md quote these figures and constants: update them")
    return 0


# -- shipping the fit -------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
CONFIG_PY = ROOT / "vault_cortex" / "config.py"
TEMPLATE = ROOT / "vault_template" / ".cortex" / "config.toml"
MODEL = MODEL_PATH  # the ranking model shipped beside the embedding model (recall/model.py)
DECIMALS = {"threshold": 2, "floor": 2, "second_look": 2}  # the rest (intercept, weights): 3


def number(key: str, value: float) -> str:
    text = f"{value:.{DECIMALS.get(key, 3)}f}".rstrip("0")
    text = text + "0" if text.endswith(".") else text
    return "0.0" if text == "-0.0" else text


def push_table(constants: dict[str, float], weights: dict[str, float]) -> list[str]:
    """The fit as it ships: the `[push]` threshold a person may change, and the ranking model's gate."""
    gate = {k: v for k, v in constants.items() if k != "threshold"}
    return ["[push]", f"threshold = {number('threshold', constants['threshold'])}",
            "# the ranking model's gate (vault_cortex/index/data/ranking-model.json)",
            *(f"{k} = {number(k, v)}" for k, v in gate.items()),
            "weights = {" + ", ".join(f"{k} = {number(k, v)}" for k, v in weights.items()) + "}"]


def write_defaults(constants: dict[str, float], weights: dict[str, float], config_py: Path = CONFIG_PY,
                   template: Path = TEMPLATE, model: Path = MODEL) -> list[Path]:
    """The fit written where it ships: the gate's coefficients, floor and second look into the ranking model
    (a new checksum; its version and provenance kept), and the threshold a person may change into the default of
    `PushSettings` in vault_cortex/config.py and the starter config's `[push]` (the value and the comment's
    'default X')."""
    shipped = load_model(model)
    gate = Gate(intercept=float(number("intercept", constants["intercept"])),
                weights={k: float(number(k, v)) for k, v in weights.items()},
                floor=float(number("floor", constants["floor"])),
                second_look=float(number("second_look", constants["second_look"])))
    model.write_bytes(encode(msgspec.structs.replace(shipped, gate=gate)))
    threshold = number("threshold", constants["threshold"])
    source = config_py.read_text(encoding="utf-8")
    start = source.index("class PushSettings(")
    end = source.index("\n\n\n", start)
    body = re.sub(r"^(    threshold: float = )-?\d+(?:\.\d+)?", rf"\g<1>{threshold}", source[start:end], count=1,
                  flags=re.M)
    config_py.write_text(source[:start] + body + source[end:], encoding="utf-8")
    out, table = [], ""
    for text in template.read_text(encoding="utf-8").split("\n"):
        header = re.match(r"^\[([\w.]+)\]$", text)
        table = header.group(1) if header else table
        if table == "push" and text.startswith("threshold = "):
            text = f"threshold = {threshold}"
            i = len(out) - 1
            while i >= 0 and out[i].startswith("#"):  # the comment above states the default
                out[i] = re.sub(r"(default )-?\d+(?:\.\d+)?", rf"\g<1>{threshold}", out[i], flags=re.I)
                i -= 1
        out.append(text)
    template.write_text("\n".join(out), encoding="utf-8")
    return [model, config_py, template]


def coefficients(rows: Sequence[Row]) -> dict[str, Any]:
    b, w = fit(rows)
    return {"intercept": b, "weights": dict(zip(GATE_FEATURES, (float(v) for v in w), strict=True))}


if __name__ == "__main__":
    sys.exit(main())
