"""Nothing an agent session says reaches the disk unredacted: a session full of secrets and `<private>` spans,
driven through every hook event of the real `vault-cortex hook` command (posting to the real `serve`, and once
more with no server, opening the vault itself), then `activity flush`: no byte of any secret or private text is
under the vault, its index folder, the user cache or the server's log, and `git status` shows no prompt text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from serving import serve

from vault_cortex.files.vault import init_vault

SID = "9d0c4e21-5b7a-4f10-8c3e-6a2f1e9b7d55"
PRIVATE = "zebracorn bank PIN is 4921"  # the text of a `<private>` span
HIDDEN = "quokkaplan offer letter"  # the outer text of nested spans
SECRETS = {
    "password": "Hunter2Secret!",
    "url": "p4ss/w#rd9Zq",
    "bearer": "eyQ9vR7tLmW2xK5pN8sJ3hB6",
    "basic": "dXNlcjpwYXNzd29yZDEyMw",
    "curl": "curlPw9!xq",
    "mysql": "MyPw7731zz",
    "sshpass": "SshPw5521yy",
    "pgpass": "PgPw8830ww",
    "hex32": "9f2c7d4e1a6b8c3f5e0d2a7b4c9e1f3a",
    "hex40": "3b8e1f9c2d7a4e6b0c5f8a1d3e9b7c2f4a6d8e0b",
    "github": "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b",
}
NEEDLES = [PRIVATE, "zebracorn", "4921", HIDDEN, "quokkaplan", *SECRETS.values()]
PROMPT = (f"Why does the greenhouse collector fail with database is locked? <private>{PRIVATE}</private> "
          f"password={SECRETS['password']} and the db is postgres://app:{SECRETS['url']}@db.local/greenhouse "
          f"<private>{HIDDEN} <private>inner</private> more {HIDDEN}</private> my token is {SECRETS['github']}")
COMMAND = (f"curl -u admin:{SECRETS['curl']} -H 'Authorization: Bearer {SECRETS['bearer']}' https://api.local && "
           f"mysql -u root -p{SECRETS['mysql']} greenhouse && sshpass -p {SECRETS['sshpass']} ssh pi@probe && "
           f"PGPASSWORD={SECRETS['pgpass']} psql -h db.local")
ERROR = (f"Exit code 1\nsqlite3.OperationalError: database is locked\nAuthorization: Basic {SECRETS['basic']}\n"
         f"api_key {SECRETS['hex32']} rejected; token: {SECRETS['hex40']}")
ANSWER = (f"The collector holds the database locked while a report runs; I used api key {SECRETS['hex32']} and "
          f"PGPASSWORD={SECRETS['pgpass']}. <private>{PRIVATE}</private> Add a busy timeout of 5 seconds.")


def rec(kind: str, content: object, ts: str) -> str:
    return json.dumps({"type": kind, "sessionId": SID, "timestamp": ts, "uuid": f"u{ts}{kind}",
                       "message": {"role": kind, "content": content}}) + "\n"


def transcript(path: Path) -> Path:
    """The session as Claude Code writes it: the prompt, a failing command with secrets, the answer."""
    path.write_text("".join([
        rec("user", PROMPT, "2026-11-30T10:00:00Z"),
        rec("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": COMMAND}}],
            "2026-11-30T10:00:01Z"),
        rec("user", [{"type": "tool_result", "tool_use_id": "t1", "content": ERROR}], "2026-11-30T10:00:02Z"),
        rec("assistant", [{"type": "text", "text": ANSWER}], "2026-11-30T10:00:03Z"),
    ]), encoding="utf-8")
    return path


def events(session: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every hook event of the session, with the payload Claude Code sends."""
    base = {"session_id": SID, "transcript_path": str(session), "cwd": "/home/me/greenhouse"}
    return [
        ("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        ("prompt", {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}),
        ("tool", {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": COMMAND}}),
        ("tool-result", {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                         "tool_input": {"command": COMMAND},
                         "tool_response": {"stdout": "", "stderr": ERROR + "\n1 failed, 3 passed in 0.2s",
                                           "interrupted": False}}),
        ("tool-failure", {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                          "tool_input": {"command": COMMAND}, "error": ERROR, "is_interrupt": False}),
        ("stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": ANSWER}),
        ("pre-compact", {**base, "hook_event_name": "PreCompact", "trigger": "auto"}),
        ("session-end", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}),
    ]


def run(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=180)


def leaks(folder: Path, skip: str = "") -> list[str]:
    """`file: needle` for every needle found in the bytes of a file under folder."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not (skip and skip in p.parts)):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {n}" for n in NEEDLES if n.encode() in data]
    return found


def test_no_secret_or_private_text_reaches_the_disk_through_any_hook(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    init_vault(vault)
    git = ["git", "-C", str(vault), "-c", "user.name=test", "-c", "user.email=test@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "vault"], check=True)
    cache = tmp_path / "cache"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "XDG_CACHE_HOME": str(cache)}
    session = transcript(tmp_path / f"{SID}.jsonl")
    log = tmp_path / "serve.log"
    with serve(vault, log, "--verbose", env={"XDG_CACHE_HOME": str(cache)}):
        for event, payload in events(session):
            done = run("hook", event, "--vault", str(vault), env=env, stdin=json.dumps(payload))
            assert done.returncode == 0 and "Traceback" not in done.stderr, (event, done.stderr)
        assert '"POST /v1/hooks/prompt HTTP/1.1" 200' in log.read_text()
    for event, payload in events(session):  # no server: each hook opens the vault itself
        done = run("hook", event, "--vault", str(vault), env=env, stdin=json.dumps(payload))
        assert done.returncode == 0 and "Traceback" not in done.stderr, (event, done.stderr)
    assert list((vault / "raw").glob("*.md")), "the session was captured"
    pending = b"".join(p.read_bytes() for p in (vault / ".cortex" / "pending-activity").glob("*.jsonl"))
    assert pending.count(b'"client":"hook"') >= 6, pending  # the hooks' recalls were logged (without their text)
    flushed = run("activity", "flush", "--vault", str(vault), env=env)
    assert flushed.returncode == 0, flushed.stderr
    assert list((vault / ".cortex" / "activity").glob("*.jsonl"))
    status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                            text=True, check=True).stdout
    assert ".cortex/activity/" in status  # the flushed log is what a commit would take
    subprocess.run([*git, "add", "-A"], check=True)
    diff = subprocess.run([*git, "diff", "--cached"], capture_output=True, text=True, check=True).stdout
    assert not [n for n in NEEDLES if n in status + diff]
    logged = subprocess.run([*git, "diff", "--cached", "--", ".cortex/activity"], capture_output=True, text=True,
                            check=True).stdout
    assert '"event":"recall"' in logged and "greenhouse collector" not in logged  # the capture in raw/ keeps it
    found = leaks(vault, skip=".git") + leaks(cache) + [f"serve.log: {n}" for n in NEEDLES if n in log.read_text()]
    assert not found, "\n".join(found)
