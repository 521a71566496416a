"""`vault-cortex hook tool-failure` (PostToolUseFailure: a tool call that failed) and `hook tool-result`
(PostToolUse: a tool that ran but printed a failure) bring back the note about an earlier fix. Payloads are copies
of what Claude Code 2.1 sent (tests/fixtures/claude_code/) with the tool's output changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import TOKEN, LiveServer

from server import hooks
from server.bearer import TOKEN_ENV
from vault_cortex.cortex import Cortex

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tool_result"
SENT = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"  # what the real client sent
FIX_NOTE = "scientific/2026-11-20 collector database is locked.md"
DEAD_URL = "http://127.0.0.1:9"
TRACEBACK = """Traceback (most recent call last):
  File "/home/me/greenhouse-sensor/collector/main.py", line 88, in <module>
    store.write(reading)
  File "/home/me/greenhouse-sensor/collector/store.py", line 41, in write
    self.conn.execute("INSERT INTO readings VALUES (?, ?, ?)", row)
sqlite3.OperationalError: database is locked
"""


def with_fix_note(cx: Cortex) -> Cortex:
    """The e2e vault plus the note about an earlier fix of a locked database."""
    if not (cx.root / FIX_NOTE).exists():
        shutil.copy(FIXTURE / Path(FIX_NOTE).name, cx.root / FIX_NOTE)
        cx.sync()
    return cx


def sent(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SENT / f"{name}.json").read_text())
    return data


def payload(session: str, response: Any, tool: str = "Bash", command: str = "python -m collector") -> dict[str, Any]:
    """A PostToolUse input as Claude Code sends it, with this session, tool and response."""
    return {**sent("post_tool_use"), "session_id": session, "tool_name": tool,
            "tool_input": {"command": command, "description": "run the collector"}, "tool_response": response}


def failed(session: str, error: Any, *, interrupt: bool = False, tool: str = "Bash") -> dict[str, Any]:
    """A PostToolUseFailure input as Claude Code sends it, with this session and error."""
    return {**sent("post_tool_use_failure"), "session_id": session, "tool_name": tool, "error": error,
            "is_interrupt": interrupt}


def hook(args: list[str], stdin: str, vault: Path, url: str = DEAD_URL, token: str | None = None,
         ) -> subprocess.CompletedProcess[str]:
    """The real command, as Claude Code runs it."""
    env = {**os.environ, hooks.VAULT_ENV: str(vault), hooks.URL_ENV: url}
    env.pop(TOKEN_ENV, None)
    if token:
        env[TOKEN_ENV] = token
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", *args], input=stdin, text=True,
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def context(done: subprocess.CompletedProcess[str], event: str = "PostToolUse") -> str | None:
    if not done.stdout.strip():
        return None
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(text) <= hooks.MAX_CONTEXT_CHARS
    return str(text)


def test_a_locked_database_brings_back_the_fix_once_per_session(cx: Cortex) -> None:
    with_fix_note(cx)
    response = {"stdout": "", "stderr": TRACEBACK, "interrupted": False, "exit_code": 1}
    text = context(hook(["tool-result"], json.dumps(payload("s-fail", response)), cx.root))
    assert text is not None
    first = text.split("\n## ")[1]
    assert first.startswith(FIX_NOTE), text  # the fix comes first
    assert "busy_timeout=5000" in first and "p 0." not in first  # the fix in the passage, no probability
    assert "database is locked" in text.splitlines()[0]
    again = context(hook(["tool-result"], json.dumps(payload("s-fail", response)), cx.root))
    assert again is not None and f"## {FIX_NOTE}" not in again  # once per session, then a reminder of it
    assert f"The fix may be in [[{FIX_NOTE.removesuffix('.md')}]], shown earlier in this session." in again


def test_a_tool_call_that_went_well_pushes_nothing(cx: Cortex) -> None:
    with_fix_note(cx)
    for response, tool in (({"stdout": "12 passed in 0.4s", "stderr": "", "exit_code": 0}, "Bash"),
                           ("sqlite3.OperationalError: database is locked\n", "Read"),  # a file that mentions it
                           ({"stdout": "", "stderr": "", "exit_code": 0}, "Bash"), ({}, "Bash"), (None, "Bash")):
        assert context(hook(["tool-result"], json.dumps(payload("s-ok", response, tool)), cx.root)) is None


def test_bad_input_and_a_failure_nothing_knows_exit_0(cx: Cortex) -> None:
    with_fix_note(cx)
    for stdin in ("", "{broken", "[1]", json.dumps({"tool_response": 42})):
        hook(["tool-result"], stdin, cx.root)
    unknown = {"stderr": "zq_frobnicator: quux overflowed the wibble at 0x7f3a", "exit_code": 3}
    assert context(hook(["tool-result"], json.dumps(payload("s-unknown", unknown)), cx.root)) is None
    huge = {"stdout": "x" * 900_000 + "\nsqlite3.OperationalError: database is locked\n", "exit_code": 1}
    text = context(hook(["tool-result"], json.dumps(payload("s-huge", huge)), cx.root))
    assert text is not None and FIX_NOTE in text


def test_the_running_server_answers_tool_result(live: LiveServer, cx: Cortex, tmp_path: Path) -> None:
    with_fix_note(cx)
    shell = tmp_path / "shell"
    (shell / ".cortex").mkdir(parents=True)  # opened directly it would recall nothing
    response = {"stderr": TRACEBACK, "exit_code": 1}
    text = context(hook(["tool-result"], json.dumps(payload("s-live-fail", response)), shell, live.url, TOKEN))
    assert text is not None and FIX_NOTE in text
    out = hooks.post_hook(live.url, TOKEN, "tool-result", payload("s-live-2", response))  # within the hook's deadline
    assert FIX_NOTE in out["hookSpecificOutput"]["additionalContext"]  # how fast: tests/bench/push.py --server


def test_a_failed_command_brings_back_the_fix_once_per_session(cx: Cortex) -> None:
    """The payload Claude Code sent for `exit 1` after printing the error: no tool_response, the text in `error`."""
    with_fix_note(cx)
    real = sent("post_tool_use_failure")
    assert "tool_response" not in real and real["error"].startswith("Exit code 1\n")
    text = context(hook(["tool-failure"], json.dumps({**real, "session_id": "s-failed"}), cx.root),
                   "PostToolUseFailure")
    assert text is not None
    assert text.split("\n## ")[1].startswith(FIX_NOTE), text
    assert "Bash failure (OperationalError: database is locked)" in text.splitlines()[0]
    again = context(hook(["tool-failure"], json.dumps({**real, "session_id": "s-failed"}), cx.root),
                    "PostToolUseFailure")
    assert again is not None and f"## {FIX_NOTE}" not in again  # once per session, then a reminder of it
    assert f"The fix may be in [[{FIX_NOTE.removesuffix('.md')}]], shown earlier in this session." in again
    # the same failure as PostToolUse never arrives from Claude Code: that hook reads tool_response only
    assert context(hook(["tool-result"], json.dumps({**real, "session_id": "s-failed-2"}), cx.root)) is None


def test_an_interrupt_or_an_error_that_says_nothing_pushes_nothing(cx: Cortex) -> None:
    with_fix_note(cx)
    for p in (failed("s-int", f"Exit code 130\n{TRACEBACK}", interrupt=True), failed("s-bare", "Exit code 1"),
              failed("s-none", None), failed("s-num", 42), failed("s-empty", ""),
              failed("s-unknown", "Exit code 3\nzq_frobnicator: quux overflowed the wibble at 0x7f3a")):
        assert context(hook(["tool-failure"], json.dumps(p), cx.root), "PostToolUseFailure") is None, p
    for stdin in ("", "{broken", "[1]"):
        hook(["tool-failure"], stdin, cx.root)  # exits 0 (checked in hook)


def test_the_running_server_answers_tool_failure(live: LiveServer, cx: Cortex, tmp_path: Path) -> None:
    with_fix_note(cx)
    shell = tmp_path / "shell"
    (shell / ".cortex").mkdir(parents=True)  # opened directly it would recall nothing
    text = context(hook(["tool-failure"], json.dumps(failed("s-live-f", f"Exit code 1\n{TRACEBACK}")), shell,
                        live.url, TOKEN), "PostToolUseFailure")
    assert text is not None and FIX_NOTE in text
