"""Claude Code hooks: JSON in on stdin, JSON (or nothing) out, exit 0 always; via the server or the vault. Inputs are
copies of what Claude Code 2.1 sent (tests/fixtures/claude_code/) with the prompt or tool changed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from harness import TOKEN, LiveServer

from server import hooks
from server.bearer import TOKEN_ENV
from vault_cortex.cortex import Cortex

DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook opens the vault itself
SENT = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"  # what the real client sent
PROMPT = "The dashboard froze again while the collector was writing; what did we learn about WAL checkpoints?"


def run(event: str, payload: Any, vault: Path | None, url: str = DEAD_URL, env: dict[str, str] | None = None,
        ) -> dict[str, Any] | None:
    """Run a hook in-process as the command does; None when it printed nothing."""
    stdin = io.StringIO(payload if isinstance(payload, str) else json.dumps(payload))
    stdout = io.StringIO()
    assert hooks.main(event, str(vault) if vault else None, url, stdin=stdin, stdout=stdout, env=env or {}) == 0
    text = stdout.getvalue()
    if not text:
        return None
    out = json.loads(text)
    assert isinstance(out, dict)
    return out


def context_of(out: dict[str, Any] | None, event: str) -> str:
    assert out is not None
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(text) < 10_000
    return str(text)


def sent(name: str, **changes: Any) -> dict[str, Any]:
    """The input Claude Code sent for an event, with some fields changed."""
    data: dict[str, Any] = json.loads((SENT / f"{name}.json").read_text())
    return {**data, **changes}


def prompt_input(session: str, prompt: str = PROMPT) -> dict[str, Any]:
    return sent("user_prompt_submit", session_id=session, prompt=prompt)


def test_prompt_injects_each_memory_once_per_session(cx: Cortex) -> None:
    first = context_of(run("prompt", prompt_input("s-once"), cx.root), "UserPromptSubmit")
    assert "## short_term/2026-11-28 dashboard froze.md" in first
    shown = [first]
    for _ in range(6):  # the same prompt again: only memories not shown yet, until none is left
        out = run("prompt", prompt_input("s-once"), cx.root)
        if out is None:
            break
        shown.append(context_of(out, "UserPromptSubmit"))
    else:
        pytest.fail("the same prompt kept injecting memories")
    headings = [line for text in shown for line in text.splitlines() if line.startswith("## ")]
    assert len(headings) == len(set(headings))
    assert context_of(run("prompt", prompt_input("s-other"), cx.root), "UserPromptSubmit") == first
    state = json.loads((cx.root / ".cortex/hooks/s-once.json").read_text())
    assert sorted(state["injected"]) == sorted(h.split(" — ")[0].removeprefix("## ") for h in headings)
    assert (cx.root / ".cortex/hooks/.gitignore").read_text().strip().endswith("*")


def test_a_session_not_updated_for_a_week_is_forgotten_by_the_next_sweep_and_sweeps_are_hourly(cx: Cortex) -> None:
    state = cx.root / ".cortex/hooks"
    state.mkdir(parents=True, exist_ok=True)
    (state / ".swept").unlink(missing_ok=True)  # no sweep yet (other tests share the vault)
    week_ago = time.time() - hooks.STATE_TTL_SECONDS - 60
    stale = state / "s-stale.json"
    stale.write_text('{"injected": ["x.md"]}')
    os.utime(stale, (week_ago, week_ago))
    run("prompt", prompt_input("s-sweep-1"), cx.root)
    assert not stale.exists() and (state / "s-sweep-1.json").exists()
    stale.write_text('{"injected": ["x.md"]}')
    os.utime(stale, (week_ago, week_ago))
    run("prompt", prompt_input("s-sweep-2"), cx.root)
    assert stale.exists()  # swept within the hour: no glob of every session's file on each save
    hour_ago = time.time() - hooks.SWEEP_EVERY_SECONDS - 60
    os.utime(state / ".swept", (hour_ago, hour_ago))
    run("prompt", prompt_input("s-sweep-3"), cx.root)
    assert not stale.exists() and (state / "s-sweep-2.json").exists()


def test_prompt_respects_threshold_budget_and_short_prompts(cx: Cortex) -> None:
    assert run("prompt", prompt_input("s-short", "yes, go on"), cx.root) is None
    out = context_of(run("prompt", prompt_input("s-budget"), cx.root), "UserPromptSubmit")
    budget = cx.settings.hooks.prompt_budget_tokens
    assert cx.embedder.count_tokens(out) <= budget + 8  # the clip marker never applies at this size
    for unrelated in ("qwzx vbnm plokij uhyt grfed swaq", "what is the capital of France?"):
        assert run("prompt", prompt_input("s-noise", unrelated), cx.root) is None, unrelated


def test_session_start_context_and_no_repeat_on_the_next_prompt(cx: Cortex) -> None:
    payload = sent("session_start", session_id="s-start")
    text = context_of(run("session-start", payload, cx.root), "SessionStart")
    assert text.startswith("## ") and "obsidian://" not in text and "score 0." not in text
    injected = set(json.loads((cx.root / ".cortex/hooks/s-start.json").read_text())["injected"])
    assert injected
    later = run("prompt", prompt_input("s-start"), cx.root)
    if later is not None:
        shown = context_of(later, "UserPromptSubmit")
        assert not any(f"## {p}" in shown for p in injected)


def tool_input(session: str, tool: str, **args: str) -> dict[str, Any]:
    return sent("pre_tool_use", session_id=session, tool_name=tool, tool_input=args)


def test_tool_hook_shows_matching_habits_once_per_session(cx: Cortex) -> None:
    text = context_of(run("tool", tool_input("s-tool", "Bash", command="pytest -q tests/"), cx.root), "PreToolUse")
    assert "Write the test first" in text and "sha256" not in text
    assert run("tool", tool_input("s-tool", "Bash", command="pytest -x"), cx.root) is None  # shown already
    curl = context_of(run("tool", tool_input("s-tool", "Bash", command="curl -LO https://x/fw.bin"), cx.root),
                      "PreToolUse")
    assert "Check the sha256 of downloads" in curl
    assert run("tool", tool_input("s-tool-2", "Read", file_path="notes.md"), cx.root) is None
    assert run("tool", {"session_id": "s-tool-3"}, cx.root) is None


@pytest.mark.parametrize("payload", ["", "{not json", "[1, 2]", "null", json.dumps({"prompt": 42}),
                                     json.dumps({"session_id": "../../../etc/x", "prompt": PROMPT})])
def test_bad_input_never_fails_the_agent(cx: Cortex, payload: str) -> None:
    out = run("prompt", payload, cx.root)
    assert out is None or "hookSpecificOutput" in out
    assert not list(cx.root.parent.glob("**/etc/x*"))


def test_no_vault_or_unknown_event_prints_nothing(tmp_path: Path, cx: Cortex) -> None:
    assert run("prompt", prompt_input("s"), None) is None
    assert run("prompt", prompt_input("s"), tmp_path / "missing") is None
    assert run("prompt", prompt_input("s"), tmp_path) is None  # a folder without .cortex/
    assert run("nonsense", prompt_input("s"), cx.root) is None


def test_the_running_server_answers_the_hook(live: LiveServer, cx: Cortex, tmp_path: Path) -> None:
    """A vault folder holding only config: opened directly it would recall nothing, so this came from the server."""
    shell = tmp_path / "shell"
    (shell / ".cortex").mkdir(parents=True)
    text = context_of(run("prompt", prompt_input("s-live"), shell, url=live.url, env={TOKEN_ENV: TOKEN}),
                      "UserPromptSubmit")
    assert "## short_term/2026-11-28 dashboard froze.md" in text
    assert (cx.root / ".cortex/hooks/s-live.json").is_file()  # the server keeps the session state in its vault
    assert run("prompt", prompt_input("s-live-2"), shell, url=live.url, env={TOKEN_ENV: "wrong"}) is None


def test_the_command_exits_0_and_loads_only_the_settings_loader(cx: Cortex) -> None:
    env = {**os.environ, hooks.VAULT_ENV: str(cx.root), hooks.URL_ENV: DEAD_URL}
    for args, stdin in ((["prompt"], json.dumps(prompt_input("s-proc"))), (["tool"], "{}"),
                        (["tool"], json.dumps(tool_input("s-proc", "Edit", file_path="x.py"))),
                        (["bogus", "--nope"], "{}"), (["prompt"], "{broken")):
        done = subprocess.run([sys.executable, "-m", "server.cli", "hook", *args], input=stdin, text=True,
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        if done.stdout:
            json.loads(done.stdout)
    probe = subprocess.run([sys.executable, "-c", "import sys, server.cli, server.hooks; "
                            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vault_cortex', 'numpy')))"],
                           capture_output=True, text=True, timeout=60)
    # the server's address is read by the one settings loader: it and what it imports, never the index or the model
    assert probe.stdout.strip() == str(["vault_cortex", "vault_cortex.config", "vault_cortex.errors",
                                        "vault_cortex.limits"])
