"""`vault-cortex hook stop` (Claude Code's Stop event): a second look before the answer, through the real command
and the real server route, with payloads shaped as the real client sends them."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import TOKEN, LiveServer

from server import hooks
from server.bearer import TOKEN_ENV
from vault_cortex.cortex import Cortex
from vault_cortex.recall import second_look

DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook opens the vault itself
CALIBRATION = "scientific/Capacitive soil moisture calibration.md"
PROMPT = "What values should I use for the soil probes?"
CALIBRATE = "How should I calibrate the capacitive soil moisture sensors?"
WRONG = "Use 3000 for dry and 1000 for wet on every probe; they are all the same."  # the note says otherwise


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME of the server and of the hook command: Claude Code writes its transcripts under it, where the hooks
    read them."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def projects(tmp: Path) -> Path:
    """Claude Code's folder of this project's transcripts (HOME is tmp)."""
    folder = tmp / ".claude/projects/-home-me-greenhouse-sensor"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def transcript(tmp: Path, prompt: str, answer: str) -> Path:
    """A Claude Code session transcript as the real client writes it: earlier turns, the prompt, a tool call."""
    path = projects(tmp) / "session.jsonl"
    records = [
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
        {"type": "user", "message": {"role": "user", "content": "Earlier: how is the collector deployed?"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "As a unit."}]}},
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls probes/"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "p1.cfg p2.cfg p3.cfg"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def stop_input(session: str, answer: str, path: Path, active: bool = False) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": str(path), "cwd": "/home/me/greenhouse-sensor",
            "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": active,
            "last_assistant_message": answer}


def hook(stdin: str, vault: Path, url: str = DEAD_URL, token: str | None = None) -> dict[str, Any] | None:
    """The real command, as Claude Code runs it; its output object, None when it printed nothing."""
    env = {**os.environ, hooks.VAULT_ENV: str(vault), hooks.URL_ENV: url}
    env.pop(TOKEN_ENV, None)
    if token:
        env[TOKEN_ENV] = token
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "stop"], input=stdin, text=True,
                          capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if not done.stdout.strip():
        return None
    out = json.loads(done.stdout)
    assert isinstance(out, dict)
    return out


def block_reason(out: dict[str, Any] | None) -> str:
    assert out is not None
    assert set(out) == {"decision", "reason"} and out["decision"] == "block"
    reason = out["reason"]
    assert isinstance(reason, str) and 0 < len(reason) < hooks.MAX_CONTEXT_CHARS
    return reason


def memories(reason: str) -> list[str]:
    return [line[3:].split(" — ")[0] for line in reason.splitlines() if line.startswith("## ")]


def test_an_answer_a_memory_contradicts_is_sent_back_once(cx: Cortex, tmp_path: Path) -> None:
    path = transcript(tmp_path, PROMPT, WRONG)
    reason = block_reason(hook(json.dumps(stop_input("s-stop", WRONG, path)), cx.root))
    assert reason.splitlines()[0] == second_look.HEADER
    shown = memories(reason)
    assert shown[0] == CALIBRATION and len(shown) <= second_look.LIMIT
    lines = reason.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"## {CALIBRATION} — "))
    assert not lines[at + 1].startswith("#")  # the path and why in words, then the passage that bears
    assert "2870" in lines[at + 1]  # the dry value the answer got wrong
    assert "are not the answer's (3000, 1000)" in lines[at]
    assert lines[-1] == second_look.WHERE.format(root=cx.root)  # where to read them
    # the stop that follows a block is never blocked (Claude Code marks it), whatever it says
    assert hook(json.dumps(stop_input("s-stop", WRONG, path, active=True)), cx.root) is None
    # a later answer in the same session: the memory was shown once, it is not shown again
    again = hook(json.dumps(stop_input("s-stop", WRONG, path)), cx.root)
    assert again is None or CALIBRATION not in memories(block_reason(again))
    state = json.loads((cx.root / ".cortex/hooks/s-stop.json").read_text())
    assert CALIBRATION in state["injected"]


def test_a_memory_the_session_was_shown_is_not_a_second_look(cx: Cortex, tmp_path: Path) -> None:
    path = transcript(tmp_path, PROMPT, WRONG)
    out = io.StringIO()
    hooks.main("prompt", str(cx.root), DEAD_URL, env={}, stdout=out, stdin=io.StringIO(json.dumps(
        {"session_id": "s-seen", "cwd": "/x", "hook_event_name": "UserPromptSubmit", "prompt": CALIBRATE,
         "transcript_path": str(path)})))
    assert CALIBRATION in out.getvalue()  # the prompt hook showed it
    again = hook(json.dumps(stop_input("s-seen", WRONG, path)), cx.root)
    assert again is None or CALIBRATION not in memories(block_reason(again))


def test_answers_the_vault_knows_nothing_about_never_block(cx: Cortex, tmp_path: Path) -> None:
    for prompt, answer in (
            ("Write a Python function that reverses a string", "def rev(s): return s[::-1] reverses it by slicing."),
            ("What is the difference between TCP and UDP?", "TCP is connection-based and reliable; UDP sends "
                                                             "datagrams without delivery guarantees."),
            ("Fix the typo in the README", "Done: I fixed the typo."),
            ("thanks", "ok")):
        path = transcript(tmp_path, prompt, answer)
        assert hook(json.dumps(stop_input("s-off", answer, path)), cx.root) is None, answer


def test_bad_input_fails_open(cx: Cortex, tmp_path: Path) -> None:
    """Any error: no output, exit 0 (the agent finishes as if no hook ran)."""
    path = transcript(tmp_path, PROMPT, WRONG)
    folder = projects(tmp_path)
    for stdin in ("", "{broken", "[1]", json.dumps({"last_assistant_message": 42}),
                  json.dumps(stop_input("s-bad", WRONG, folder / "missing.jsonl") | {"session_id": "s-bad-1"}),
                  json.dumps(stop_input("s-bad", WRONG, folder) | {"session_id": "s-bad-2"}),  # a folder
                  json.dumps(stop_input("s-bad", WRONG, tmp_path / "elsewhere.jsonl") | {"session_id": "s-bad-5"}),
                  json.dumps({**stop_input("s-bad-3", WRONG, path), "stop_hook_active": "yes"})):
        out = hook(stdin, cx.root)
        assert out is None or memories(block_reason(out))
    broken = projects(tmp_path) / "broken.jsonl"
    broken.write_text("{not json\n" * 3, encoding="utf-8")
    out = hook(json.dumps(stop_input("s-bad-4", WRONG, broken)), cx.root)
    assert out is None or memories(block_reason(out))  # the answer alone is judged


def test_the_setting_turns_it_off(cx: Cortex, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(cx.root, vault, symlinks=True)
    config = vault / ".cortex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "\nsecond_look = true\n" in text
    config.write_text(text.replace("\nsecond_look = true\n", "\nsecond_look = false\n"), encoding="utf-8")
    path = transcript(tmp_path, PROMPT, WRONG)
    assert hook(json.dumps(stop_input("s-off-setting", WRONG, path)), vault) is None


def test_with_captures_turned_off_the_transcript_is_not_read(cx: Cortex, tmp_path: Path) -> None:
    """`[capture] enabled = false`: the Stop hook neither reads the transcript nor writes a note; the answer alone
    is judged."""
    vault = tmp_path / "vault"
    shutil.copytree(cx.root, vault, symlinks=True)
    config = vault / ".cortex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert text.count("\nenabled = true\n") == 1  # [capture]'s
    config.write_text(text.replace("\nenabled = true\n", "\nenabled = false\n"), encoding="utf-8")
    notes = sorted(vault.rglob("*.md"))
    missing = projects(tmp_path) / "never-there.jsonl"  # reading it would be an error on stderr
    env = {**os.environ, hooks.VAULT_ENV: str(vault), hooks.URL_ENV: DEAD_URL}
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "stop"], text=True, capture_output=True,
                          input=json.dumps(stop_input("s-no-capture", WRONG, missing)), env=env, timeout=120)
    assert done.returncode == 0 and "transcript" not in done.stderr, done.stderr
    assert not done.stdout.strip() or memories(block_reason(json.loads(done.stdout)))
    assert sorted(vault.rglob("*.md")) == notes


def test_the_running_server_answers_stop(live: LiveServer, cx: Cortex, tmp_path: Path) -> None:
    shell = tmp_path / "shell"
    (shell / ".cortex").mkdir(parents=True)  # opened directly it would recall nothing: the answer is the server's
    path = transcript(tmp_path, PROMPT, WRONG)
    reason = block_reason(hook(json.dumps(stop_input("s-live-stop", WRONG, path)), shell, live.url, TOKEN))
    assert memories(reason)[0] == CALIBRATION
    assert (cx.root / ".cortex/hooks/s-live-stop.json").is_file()  # the server keeps the session state
    out = hooks.post_hook(live.url, TOKEN, "stop", stop_input("s-live-stop-2", WRONG, path))  # in the hook's deadline
    assert memories(block_reason(out))[0] == CALIBRATION  # how fast: tests/bench/second_look.py --server
    assert hooks.post_hook(live.url, TOKEN, "stop", stop_input("s-live-stop-2", WRONG, path, active=True)) == {}

