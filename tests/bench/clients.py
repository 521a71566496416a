"""Hook latency per agent client (Claude Code, Codex CLI, Gemini CLI) with `vault-cortex serve` running.

On the generated bench vault (as `push.py --server-only` makes it) with `vault-cortex serve` running, each client's
prompt hook, failure hook and stop hook (the second look) is run as the real command,
`vault-cortex hook EVENT --client C`, which finds the server where serve recorded its URL; beside it, the core's
own latency: the same payloads, normalised by the client's adapter, posted to /v1/hooks/{core event}.
Every payload is its own (a new prompt, error or answer, a new session), so nothing is cached between runs.

The payloads have each client's shape (tests/fixtures/claude_code, codex, gemini):
- Claude Code: UserPromptSubmit; PostToolUseFailure (`error`: "Exit code 1" and the stderr); Stop with the
  answer and a ~1 MB transcript (as second_look.py writes it);
- Codex CLI: UserPromptSubmit; PostToolUse with the stderr as `tool_response` and the exit code in its rollout
  (a copy of tests/fixtures/codex/rollout.jsonl under `$CODEX_HOME/sessions`, asking the run's prompt); Stop,
  which captures the rollout into raw/ in the hook's own process before the second look over HTTP;
- Gemini CLI: BeforeAgent (SessionStart's `<hook_context>` in front of the prompt); AfterTool of
  `run_shell_command` whose `llmContent` ends "Exit Code: 1"; AfterAgent with the answer and a chat log (a copy
  of tests/fixtures/gemini/session.jsonl under `$GEMINI_CLI_HOME/.gemini/tmp`).
The HTTP column times the core steps that go to the server (Codex's Stop: the second look; its capture never does).

Run: `python tests/bench/clients.py [--notes 2000] [--runs 50] [--keep DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from server import clients  # noqa: E402
from server.hooks import VAULT_ENV  # noqa: E402
from tests.bench.push import (  # noqa: E402
    allow_transcripts,
    bench_vault,
    command_times,
    failures,
    pct,
    prompt_payloads,
)
from tests.bench.second_look import EXPLAINED, write_transcript  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CODEX_PROMPT = "Is the data folder there?"  # the prompt of tests/fixtures/codex/rollout.jsonl
CODEX_SESSION = "00000000-0000-0000-0000-000000000001"  # and its session id
GEMINI_PROMPT = "Why does the collector fail?"  # and of tests/fixtures/gemini/session.jsonl, whose first answer is
GEMINI_ANSWER = "The collector's database was locked."
GEMINI_FIRST_EXCHANGE = 10  # the chat log's lines up to that answer (the rest is a second, blocked round)
SEEDS = {"claude-code": 21, "codex": 31, "gemini": 41}  # each client asks and fails differently
WARM = 5  # untimed runs per client and event before the timed ones


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def rollout(path: Path, session: str, prompt: str) -> None:
    """Codex's rollout fixture as session `session` asking `prompt`; its `ls` ends with exit code 2 (`call_0000`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / "codex" / "rollout.jsonl").read_text(encoding="utf-8")
    path.write_text(text.replace(_escaped(CODEX_PROMPT), _escaped(prompt)).replace(CODEX_SESSION, session),
                    encoding="utf-8")


def chat_log(path: Path, prompt: str, answer: str) -> None:
    """Gemini's chat log fixture, its first exchange only, asking `prompt` and answering `answer`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (FIXTURES / "gemini" / "session.jsonl").read_text(encoding="utf-8").splitlines()[:GEMINI_FIRST_EXCHANGE]
    text = "\n".join(lines) + "\n"
    path.write_text(text.replace(_escaped(GEMINI_PROMPT), _escaped(prompt)).replace(
        _escaped(GEMINI_ANSWER), _escaped(answer)), encoding="utf-8")


def payloads(name: str, n: int, work: Path) -> dict[str, list[dict[str, Any]]]:
    """`n` payloads of each timed hook (installed event → payloads) in client `name`'s shape, with the transcripts
    they name written under `work`."""
    seed = SEEDS[name]
    asks = [str(p["prompt"]) for p in prompt_payloads(n, seed=seed)]
    stderr = [str(r["stderr"]) for r in failures(n, seed=seed + 1)]
    answers = [f"From what I found: {q}. {EXPLAINED}" for q in (str(p["prompt"]) for p in prompt_payloads(
        n, seed=seed + 2))]
    out: dict[str, list[dict[str, Any]]] = {"prompt": [], "tool-failure": [], "tool-result": [], "stop": []}
    for i in range(n):
        sid = f"{seed:02x}{i:06x}-0000-4000-8000-000000000000"  # captures name a session by its first 8 characters
        if name == "claude-code":
            transcript = work / "claude" / f"{sid}.jsonl"
            transcript.parent.mkdir(parents=True, exist_ok=True)
            write_transcript(transcript, asks[i], answers[i])
            common = {"session_id": sid, "transcript_path": str(transcript), "cwd": "/home/me/project"}
            out["prompt"].append({**common, "hook_event_name": "UserPromptSubmit", "prompt": asks[i]})
            out["tool-failure"].append({**common, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                        "tool_input": {"command": "make"}, "tool_use_id": f"toolu_{i}",
                                        "error": f"Exit code 1\n{stderr[i]}", "is_interrupt": False})
            out["stop"].append({**common, "hook_event_name": "Stop", "stop_hook_active": False,
                                "last_assistant_message": answers[i]})
        elif name == "codex":
            transcript = work / "codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
            rollout(transcript, sid, asks[i])
            common = {"session_id": sid, "turn_id": f"turn-{i}", "transcript_path": str(transcript),
                      "cwd": "/home/me/project", "model": "scripted", "permission_mode": "bypassPermissions"}
            out["prompt"].append({**common, "hook_event_name": "UserPromptSubmit", "prompt": asks[i]})
            out["tool-result"].append({**common, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                       "tool_input": {"command": "make"}, "tool_response": stderr[i],
                                       "tool_use_id": "call_0000"})
            out["stop"].append({**common, "hook_event_name": "Stop", "stop_hook_active": False,
                                "last_assistant_message": answers[i]})
        else:
            chats = work / "gemini" / ".gemini" / "tmp" / "project" / "chats"
            transcript = chats / f"session-2026-01-02T03-04-{sid[:8]}.jsonl"
            chat_log(transcript, asks[i], answers[i])
            common = {"session_id": sid, "transcript_path": str(transcript), "cwd": "/home/me/project",
                      "timestamp": "2026-01-02T03:04:05.678Z"}
            context = "<hook_context>SessionStart context &lt;a & b&gt;</hook_context>\n\n"
            out["prompt"].append({**common, "hook_event_name": "BeforeAgent", "prompt": context + asks[i]})
            shell = f"<untrusted_context>\nOutput: {stderr[i]}\nExit Code: 1\nProcess Group PGID: {1000 + i}\n" \
                    "</untrusted_context>"
            out["tool-result"].append({**common, "hook_event_name": "AfterTool", "tool_name": clients.GEMINI_SHELL,
                                       "tool_input": {"command": "make", "description": "build"},
                                       "tool_response": {"llmContent": shell, "returnDisplay": stderr[i]}})
            out["stop"].append({**common, "hook_event_name": "AfterAgent", "prompt": context + asks[i],
                                "prompt_response": answers[i], "stop_hook_active": False})
    return {event: ps for event, ps in out.items() if ps}


def http_times(http: Any, client: clients.Client, event: str, batch: Sequence[dict[str, Any]],
               env: Mapping[str, str]) -> tuple[list[float], int]:
    """Milliseconds of the core's steps over HTTP for each payload, normalised as the hook command does (capture,
    which never goes to the server, left out); and how many answered something."""
    steps = [s for s in client.hooks[client.event_of(event)].steps if s != clients.CAPTURE]
    times, fired = [], 0
    for p in batch:
        core = dict(client.normalise(event, {**p, "session_id": f"{p['session_id']}-http"}, env))
        t0 = time.perf_counter()
        outs = [http.post(f"/v1/hooks/{step}", json=core) for step in steps]
        times.append((time.perf_counter() - t0) * 1000)
        for r in outs:
            r.raise_for_status()
        fired += any(r.json() for r in outs)
    return times, fired


def latency(notes: int, keep: Path | None, runs: int) -> None:
    import httpx

    from tests.bench.server import serving

    work = keep or Path(tempfile.mkdtemp(prefix="vault-cortex-bench-clients-"))
    vault = work / "vault"
    try:
        synced = bench_vault(vault, notes)
        allow_transcripts(vault, work)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
        env |= {VAULT_ENV: str(vault), "CODEX_HOME": str(work / "codex"), "GEMINI_CLI_HOME": str(work / "gemini")}
        # each timed set three times over: warm-up, over HTTP, as the command (each payload used once)
        sets = {name: payloads(name, WARM + 2 * runs, work) for name in clients.CLIENTS}
        rows = []
        with serving(vault) as (url, auth), httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            for name, by_event in sets.items():
                client = clients.client(name)
                for event, batch in by_event.items():
                    http_times(http, client, event, batch[:WARM], env)
                    over_http, fired = http_times(http, client, event, batch[WARM:WARM + runs], env)
                    command = command_times(event, batch[WARM + runs:], env, client=name)
                    rows.append((name, f"{event} ({client.event_of(event)})", over_http, fired, command))
        print(f"hook latency per client, {synced}-note vault, `vault-cortex serve` running, {runs} runs each "
              "(ms; target: the command's p95 <= 150)")
        print(f"{'client':<13}{'hook (client event)':<34}{'HTTP p50':>9}{'p95':>6}{'fired':>7}"
              f"{'command p50':>13}{'p95':>6}")
        for name, hook, over_http, fired, command in rows:
            print(f"{name:<13}{hook:<34}{pct(over_http, 50):>9.0f}{pct(over_http, 95):>6.0f}{fired:>7}"
                  f"{pct(command, 50):>13.0f}{pct(command, 95):>6.0f}")
        shutil.rmtree(vault / ".cortex" / "hooks", ignore_errors=True)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=50, help="timed runs per client and hook, over HTTP and as the command")
    ap.add_argument("--keep", type=Path, default=None, help="build (or reuse) the bench vault here")
    args = ap.parse_args(argv)
    latency(args.notes, args.keep, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
