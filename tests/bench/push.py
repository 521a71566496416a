"""The push gate against the cosine-threshold baseline, on LoCoMo dev, cross-validated; and the hooks' latency.

Part 1 (quality): each prompt is ranked in its conversation's vault and what the prompt hook would inject is
simulated from the same features, costs and 400-token budget the hook uses (tests/bench/fit_gate.py builds
them). For the gate, every row is cross-validated by conversation (fit on two, test on the third, mean of
the three); the baseline has nothing to fit. Figures per threshold:
  coverage   questions whose injection holds an evidence turn
  precision  injections (fired on questions) holding an evidence turn
  mem prec   injected memories that are evidence turns
  fired      questions that got an injection at all
  off-topic  off-topic prompts (other conversations' questions, coding/writing prompts, vague one-liners)
             that got an injection
  per inj    memories per injection
Part 2 (latency): the prompt hook in-process on a LoCoMo vault; with --server (or only that: --server-only),
the tool-result and tool-failure hooks over HTTP (and as the real command, finding the server where `serve`
recorded its URL) on the generated 2,000-note bench vault with `vault-cortex serve` running; then as the real
command with no serve: through a running stdio `vault-cortex mcp`'s hook socket (the prompt hook too), and opening
the vault itself.

Run: `python tests/bench/push.py [--data DIR] [--work DIR] [--server | --server-only] [--notes 2000] [--keep DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from server.hooks import run_hook  # noqa: E402
from tests.bench import fit_gate  # noqa: E402
from tests.bench.fit_gate import Figures, Row, evaluate, fit, folds, probabilities  # noqa: E402
from vault_cortex import Cortex  # noqa: E402
from vault_cortex.config import PushSettings, load_settings  # noqa: E402
from vault_cortex.recall.model import load_model  # noqa: E402

GATE_THRESHOLDS = (0.14, 0.17, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
COSINE_THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def line(name: str, f: Figures) -> str:
    return (f"{name:<30}{f.coverage:>9.3f}{f.precision:>10.3f}{f.memory_precision:>9.3f}{f.fired:>8.3f}"
            f"{f.off_topic:>10.3f}{f.per_injection:>8.1f}")


Split = list[tuple[list[Row], list[Row]]]


def held_out(splits: Split, score: Callable[[int, Row], list[float]], threshold: float, budget: int,
             floor: float | None) -> Figures:
    """Mean over the three held-out conversations; `score(fold, row)` scores a held-out row."""
    figures = []
    for i, (_, held) in enumerate(splits):
        figures.append(evaluate(held, [score(i, r) for r in held], threshold, budget, floor))
    return fit_gate.mean(figures)


def quality(rows: list[Row], budget: int) -> None:
    splits = folds(rows)
    fits = [fit(train) for train, _ in splits]
    by_row: dict[tuple[int, int], list[float]] = {}

    def gate(fold: int, r: Row) -> list[float]:
        key = (fold, id(r))
        if key not in by_row:
            by_row[key] = probabilities(r, *fits[fold])
        return by_row[key]

    print(f"{'LoCoMo dev, 400-token budget':<30}{'coverage':>9}{'precision':>10}{'mem prec':>9}{'fired':>8}"
          f"{'off-topic':>10}{'per inj':>8}")
    cv, chosen = fit_gate.cross_validate(rows, budget)
    picks = ", ".join(f"{t:.2f}/{floor:.2f}" for t, floor in chosen)
    print(line("gate, threshold from training", fit_gate.mean(cv)) + f"   (per fold, threshold/floor: {picks})")
    shipped, floor = PushSettings(), load_model().gate.floor
    print(f"gate (cross-validated), by threshold, each memory at the shipped floor {floor:.2f} on its own:")
    for t in sorted({*GATE_THRESHOLDS, shipped.threshold}):
        print(line(f"  p >= {t:.2f}", held_out(splits, gate, t, budget, min(t, floor))))
    print("gate (cross-validated), every candidate riding along once the best fires (floor 0, before lean pushes):")
    for t in (0.17, shipped.threshold):
        print(line(f"  p >= {t:.2f}", held_out(splits, gate, t, budget, 0.0)))
    print("baseline: cosine threshold (the old prompt hook), same blocks and budget:")
    for t in COSINE_THRESHOLDS:
        print(line(f"  cosine >= {t:.2f}", held_out(splits, lambda _, r: r.cosine, t, budget, None)))
    print("targets: coverage >= 0.60, precision >= 0.70, mem prec >= 0.35, per inj <= 2.5, off-topic <= 0.02")


def prompt_latency(work: Path, n: int = 100) -> None:
    """The prompt hook in-process (recall, gate, render, session state) on the first conversation's vault."""
    conv = json.loads(sorted(fit_gate.DATA.glob("*.json"))[0].read_text("utf-8"))
    questions = [qa["question"] for qa in conv["qa"]][:n]
    with tempfile.TemporaryDirectory(prefix="vault-cortex-push-") as tmp:
        # a copy: the hook logs its recalls, which would change the next run's ranking (access, co-activation)
        root = Path(tmp) / "vault"
        shutil.copytree(sorted(work.glob("conv-*"))[0], root)
        with Cortex(root.resolve(), load_settings(root, env={})) as cx:
            run_hook(lambda: cx, "prompt", {"prompt": questions[0]})  # load the model
            times = []
            for i, q in enumerate(questions):
                t0 = time.perf_counter()
                run_hook(lambda: cx, "prompt", {"prompt": q, "session_id": f"bench-{i}"})
                times.append((time.perf_counter() - t0) * 1000)
    print(f"prompt hook in-process ({len(times)} prompts): p50 {pct(times, 50):.0f} ms, p95 {pct(times, 95):.0f} ms")


def failures(n: int, seed: int = 11) -> list[dict[str, object]]:
    """Tool responses that report failures, worded from the bench vault's topics."""
    from tests.bench.gen import queries

    out: list[dict[str, object]] = []
    for i, q in enumerate(queries(n, seed=seed)):
        kind = i % 3
        if kind == 0:
            stderr = f'Traceback (most recent call last):\n  File "/srv/app/main.py", line 12\nRuntimeError: {q}\n'
        elif kind == 1:
            stderr = f"FAILED tests/test_app.py::test_{i} - AssertionError: {q}\n1 failed, 20 passed"
        else:
            stderr = f"error: {q}"
        out.append({"stdout": "", "stderr": stderr, "exit_code": 1})
    return out


def failure_payloads(n: int) -> dict[str, list[dict[str, object]]]:
    """The same failures as each hook receives them: a tool that ran and printed one (PostToolUse), and a command
    that failed (PostToolUseFailure, its output in `error` as Claude Code sends it)."""
    responses = failures(n)
    return {
        "tool-result": [{"session_id": f"bench-{i}", "tool_name": "Bash", "tool_input": {"command": "make"},
                         "tool_response": r, "hook_event_name": "PostToolUse"} for i, r in enumerate(responses)],
        "tool-failure": [{"session_id": f"bench-f{i}", "tool_name": "Bash", "tool_input": {"command": "make"},
                          "error": f"Exit code 1\n{r['stderr']}", "is_interrupt": False,
                          "hook_event_name": "PostToolUseFailure"} for i, r in enumerate(responses)],
    }


def command_times(event: str, payloads: Sequence[dict[str, Any]], env: Mapping[str, str],
                  client: str | None = None) -> list[float]:
    """Milliseconds of `vault-cortex hook <event> [--client C]` run as the real command (python start-up included),
    per payload."""
    out = []
    for p in payloads:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "server.cli", "hook", event, *(["--client", client] if client else [])],
                       input=json.dumps(
            {**p, "session_id": f"{p['session_id']}-cmd"}), text=True, capture_output=True, env=env, check=True)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def prompt_payloads(n: int, seed: int = 13) -> list[dict[str, object]]:
    """UserPromptSubmit inputs asking the bench vault's vocabularies."""
    from tests.bench.gen import queries

    return [{"session_id": f"bench-p{i}", "prompt": q, "hook_event_name": "UserPromptSubmit"}
            for i, q in enumerate(queries(n, seed=seed))]


def bench_vault(vault: Path, notes: int) -> int:
    """The generated bench vault at `vault` (made unless there), synced; its number of notes."""
    from tests.bench.gen import make_vault

    if not (vault / ".cortex").is_dir():
        print(f"generating {notes} notes in {vault}", file=sys.stderr, flush=True)
        make_vault(vault, notes, seed=7)
    with Cortex.open(vault) as cx:
        return cx.sync().notes


def allow_transcripts(vault: Path, folder: Path) -> None:
    """The bench vault's `[hooks] transcript_dirs` set to `folder` alone, so that the server (whose environment moves
    no client's home) reads the bench's transcripts where they are; before `serve` starts."""
    config = vault / ".cortex" / "config.toml"
    text, n = re.subn(r"(?m)^transcript_dirs = .*$", f"transcript_dirs = [{json.dumps(str(folder))}]",
                      config.read_text(encoding="utf-8"))
    if n != 1:
        raise RuntimeError(f"{config} has no one `transcript_dirs = ...` line to set")
    config.write_text(text, encoding="utf-8")


@contextmanager
def stdio_mcp(vault: Path, env: Mapping[str, str]) -> Iterator[None]:
    """`vault-cortex mcp` running on the vault as Claude Code starts it (stdin open), until its hook socket is up."""
    from server.hook_socket import live_sockets

    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "mcp", "--vault", str(vault)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env))
    try:
        deadline = time.monotonic() + 120
        while not live_sockets(vault, env):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("vault-cortex mcp did not open its hook socket")
            time.sleep(0.1)
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # as Claude Code ends a session
        proc.wait(timeout=60)


def tool_result_latency(notes: int, keep: Path | None, n: int = 200) -> None:
    """tool-result and tool-failure over HTTP with `vault-cortex serve` running on the generated bench vault; and
    as the real command, which finds the server where serve recorded its URL."""
    import httpx

    from tests.bench.server import serving

    work = keep or Path(tempfile.mkdtemp(prefix="vault-cortex-bench-push-"))
    vault = work / "vault"
    try:
        synced = bench_vault(vault, notes)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
        env["VAULT_CORTEX_VAULT"] = str(vault)  # no URL: the command finds the server itself
        with serving(vault) as (url, auth), httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            for event, payloads in failure_payloads(n).items():
                for p in payloads[:20]:
                    http.post(f"/v1/hooks/{event}", json=p)
                times, fired = [], 0
                for p in payloads:
                    p = {**p, "session_id": f"{p['session_id']}-timed"}
                    t0 = time.perf_counter()
                    r = http.post(f"/v1/hooks/{event}", json=p)
                    times.append((time.perf_counter() - t0) * 1000)
                    r.raise_for_status()
                    fired += bool(r.json())
                command = command_times(event, payloads[:30], env)
                print(f"{event} over HTTP, {synced}-note vault ({len(times)} failures, {fired} pushed): "
                      f"p50 {pct(times, 50):.0f} ms, p95 {pct(times, 95):.0f} ms (target < 150 ms)")
                print(f"  as the real command (python start-up included, {len(command)} runs): "
                      f"p50 {pct(command, 50):.0f} ms, p95 {pct(command, 95):.0f} ms")
        # no serve: the stdio MCP server Claude Code starts for a session answers on its socket; else each hook
        # opens the vault in its own process
        with stdio_mcp(vault, env):
            for event, payloads in failure_payloads(n).items():
                via = command_times(event, [{**p, "session_id": f"{p['session_id']}-mcp"} for p in payloads[:30]], env)
                print(f"{event} as the real command through the stdio MCP server's socket ({len(via)} runs): "
                      f"p50 {pct(via, 50):.0f} ms, p95 {pct(via, 95):.0f} ms")
            via = command_times("prompt", prompt_payloads(30), env)
            print(f"prompt as the real command through the stdio MCP server's socket ({len(via)} runs): "
                  f"p50 {pct(via, 50):.0f} ms, p95 {pct(via, 95):.0f} ms")
        for event, payloads in failure_payloads(n).items():
            alone = command_times(event, [{**p, "session_id": f"{p['session_id']}-alone"} for p in payloads[:10]], env)
            print(f"{event} as the real command opening the vault itself ({len(alone)} runs): "
                  f"p50 {pct(alone, 50):.0f} ms, p95 {pct(alone, 95):.0f} ms")
        alone = command_times("prompt", [{**p, "session_id": f"{p['session_id']}-alone"} for p in prompt_payloads(10)],
                              env)
        print(f"prompt as the real command opening the vault itself ({len(alone)} runs): "
              f"p50 {pct(alone, 50):.0f} ms, p95 {pct(alone, 95):.0f} ms")
        shutil.rmtree(vault / ".cortex" / "hooks", ignore_errors=True)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=fit_gate.DATA)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vault-cortex-locomo"))
    ap.add_argument("--server", action="store_true",
                    help="also time tool-result and tool-failure over HTTP on the bench vault")
    ap.add_argument("--server-only", action="store_true", help="only the timings over HTTP (no LoCoMo data needed)")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="build (or reuse) the bench vault here")
    args = ap.parse_args(argv)
    if args.server_only:
        tool_result_latency(args.notes, args.keep)
        return 0
    fit_gate.DATA = args.data
    rows = fit_gate.build(args.data, args.work)
    quality(rows, fit_gate.BUDGET_TOKENS - fit_gate.header_tokens())
    print(f"({statistics.fmean([r.kind == 'question' for r in rows]) * len(rows):.0f} questions, "
          f"{sum(r.kind != 'question' for r in rows)} off-topic prompts over 3 conversations)")
    prompt_latency(args.work)
    if args.server:
        tool_result_latency(args.notes, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
