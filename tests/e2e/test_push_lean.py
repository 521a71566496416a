"""Lean pushes through the real prompt hook: each memory rides along on its own probability, and when the start
context already holds the best memories the prompt hook pushes nothing rather than leftovers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from server import hooks
from server.bearer import TOKEN_ENV
from vault_cortex.cortex import Cortex
from vault_cortex.recall.request import RecallRequest

DEAD_URL = "http://127.0.0.1:9"
WAL = "The dashboard froze again while the collector was writing; what did we learn about WAL checkpoints?"
BATTERY = "How long does a node last on one 18650 cell in deep sleep?"


def hook(event: str, payload: dict[str, Any], vault: Path) -> dict[str, Any] | None:
    """The real command, as Claude Code runs it."""
    env = {**os.environ, hooks.VAULT_ENV: str(vault), hooks.URL_ENV: DEAD_URL}
    env.pop(TOKEN_ENV, None)
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", event], input=json.dumps(payload), text=True,
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def start(session: str) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/me/greenhouse-sensor",
            "hook_event_name": "SessionStart", "source": "startup"}


def prompt(session: str, text: str) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/me/greenhouse-sensor",
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": text}


def pushed(out: dict[str, Any] | None) -> list[str]:
    """The pushed memories, in the order pushed (likeliest first); the text carries no probability."""
    if out is None:
        return []
    text = out["hookSpecificOutput"]["additionalContext"]
    return [m.group(1) for m in re.finditer(r"^## (.+?\.md)(?: — .*)?$", text, re.M)]


def test_the_start_context_holding_the_best_memories_leaves_nothing_to_push(cx: Cortex) -> None:
    assert hook("session-start", start("s-lean"), cx.root) is not None
    shown = set(json.loads((cx.root / ".cortex/hooks/s-lean.json").read_text())["injected"])
    # a session without the start context is pushed the best memories for this prompt; the start context (the
    # project's notes, and those the gate passes for it) held them
    fresh = pushed(hook("prompt", prompt("s-lean-fresh", WAL), cx.root))
    assert fresh and fresh[0] in shown
    assert hook("prompt", prompt("s-lean", WAL), cx.root) is None  # the start context had the best: no leftovers


def test_every_pushed_memory_reaches_the_floor_on_its_own(cx: Cortex) -> None:
    push = cx.push_gate()
    paths = pushed(hook("prompt", prompt("s-floor", BATTERY), cx.root))
    judged = {h.path: h.push_probability or 0.0 for h in cx.recall(RecallRequest(query=BATTERY, gate=True)).hits}
    out = {path: judged[path] for path in paths}
    assert out and max(out.values()) >= push.threshold
    assert all(p >= push.floor for p in out.values()), out
    assert len(out) <= 3  # lean: before, every candidate above p 0.00 rode along
