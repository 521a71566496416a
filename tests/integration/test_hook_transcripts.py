"""A hook names a transcript only inside the agent's own transcript folder (Claude Code's `~/.claude/projects/`, or
`[hooks] transcript_dirs`), and only a regular file there is read: through the real `vault-cortex serve` with its
token, and through the hook command with no server. Trust, round three: a session-end naming any `.jsonl` the
server could read imported it into `raw/`; 45 Stop hooks naming a FIFO stopped every route, `/v1/health` too;
`serve --port 99999` printed a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from serving import Server, serve

from server import hooks
from server.cli import main as cli_main
from vault_cortex.config import HooksSettings, parse_settings
from vault_cortex.errors import InvalidRequest
from vault_cortex.importers.transcript import open_transcript

DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook command opens the vault itself
SECRET = "The quarry gate code is 7-4-1-9, kept in the red ledger."
HEALTH_SECONDS = 10.0  # /v1/health answers in milliseconds; stalled, it never did (the old code)
STOP_HOOKS = 45  # more than the worker threads of the server (min(32, cores + 4)) and of anyio (40)


def small_vault(root: Path) -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text("")
    (root / "scientific").mkdir()
    (root / "scientific/Rain gauge.md").write_text("# Rain gauge\nThe rain gauge tips every 0.2 mm of rain.\n")
    return root


def write_transcript(path: Path, prompt: str, answer: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "user", "timestamp": "2026-11-30T09:00:00Z", "message": {"content": prompt}})
                    + "\n" + json.dumps({"type": "assistant", "message": {"content": answer}}) + "\n")
    return path


def session_end(path: Path | str) -> dict[str, object]:
    return {"session_id": "a1b2c3d4", "transcript_path": str(path), "cwd": "/home/me/quarry",
            "hook_event_name": "SessionEnd", "reason": "exit"}


def stop(path: Path | str, n: int) -> dict[str, object]:
    return {"session_id": f"s{n}", "transcript_path": str(path), "cwd": "/home/me/quarry", "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "The rain gauge tips every 0.2 mm, so 12 tips is 2.4 mm."}


def raw_text(vault: Path) -> str:
    return "".join(p.read_text() for p in sorted((vault / "raw").glob("*.md"))) if (vault / "raw").is_dir() else ""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The server's and the hook's HOME: Claude Code keeps its transcripts in `.claude/projects/` under it."""
    (tmp_path / "home/.claude/projects/-home-me-quarry").mkdir(parents=True)
    return tmp_path / "home"


def hook_env(home: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_") and k != "CLAUDE_CONFIG_DIR"},
            "HOME": str(home)}


def post(server: Server, event: str, payload: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/hooks/{event}", headers=server.auth, json=payload, timeout=60)


def test_session_end_reads_no_transcript_outside_the_agents_folder(tmp_path: Path, home: Path) -> None:
    vault = small_vault(tmp_path / "vault")
    outside = write_transcript(tmp_path / "elsewhere/notes.jsonl", "What is the quarry gate code?", SECRET)
    inside = home / ".claude/projects/-home-me-quarry/a1b2c3d4-0000.jsonl"
    (home / ".claude/projects/-home-me-quarry/linked.jsonl").symlink_to(outside)
    with serve(vault, tmp_path / "server.log", env={"HOME": str(home)}) as server:
        for path in (outside, home / ".claude/projects/../../elsewhere/notes.jsonl",
                     home / ".claude/projects/-home-me-quarry/linked.jsonl", "/etc/passwd", "", "notes.jsonl"):
            got = post(server, "session-end", session_end(path))
            assert got.status_code == 400, (path, got.text)
            assert got.json()["error"] == "InvalidRequest" and "transcript" in got.json()["detail"], got.text
        assert "quarry gate" not in raw_text(vault)
        write_transcript(inside, "How often does the rain gauge tip?", "Every 0.2 mm of rain.")
        assert post(server, "session-end", session_end(inside)).json() == {}  # the agent's own: captured
    assert "Every 0.2 mm of rain." in raw_text(vault) and "quarry gate" not in raw_text(vault)


def test_the_hook_command_with_no_server_keeps_the_same_rule(tmp_path: Path, home: Path) -> None:
    vault = small_vault(tmp_path / "vault")
    outside = write_transcript(tmp_path / "elsewhere/notes.jsonl", "What is the quarry gate code?", SECRET)
    inside = write_transcript(home / ".claude/projects/-home-me-quarry/a1b2c3d4-0000.jsonl",
                              "How often does the rain gauge tip?", "Every 0.2 mm of rain.")
    for path, captured in ((outside, False), (inside, True)):
        done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "session-end", "--vault", str(vault),
                               "--url", DEAD_URL], input=json.dumps(session_end(path)), capture_output=True,
                              text=True, env=hook_env(home), timeout=120)
        assert done.returncode == 0 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
        assert ("captured" in done.stderr) is captured, done.stderr
    assert "Every 0.2 mm of rain." in raw_text(vault) and "quarry gate" not in raw_text(vault)


def test_a_fifo_named_as_the_transcript_gets_a_400_and_health_keeps_answering(tmp_path: Path, home: Path) -> None:
    vault = small_vault(tmp_path / "vault")
    fifos = [home / ".claude/projects/-home-me-quarry/s0.jsonl", tmp_path / "elsewhere.jsonl"]
    for fifo in fifos:
        os.mkfifo(fifo)
    answers: list[int | str] = []

    def ask(event: str, payload: dict[str, object]) -> None:
        try:
            answers.append(post(server, event, payload).status_code)
        except httpx.HTTPError as exc:
            answers.append(type(exc).__name__)

    with serve(vault, tmp_path / "server.log", env={"HOME": str(home)}) as server:
        calls = [("stop", stop(fifos[n % 2], n)) for n in range(STOP_HOOKS)]
        calls += [(event, session_end(fifo)) for event in ("session-end", "pre-compact") for fifo in fifos]
        threads = [threading.Thread(target=ask, args=call, daemon=True) for call in calls]
        try:
            for t in threads:
                t.start()
            time.sleep(1.0)  # the requests are in
            started = time.monotonic()
            try:
                health = httpx.get(f"{server.url}/v1/health", timeout=HEALTH_SECONDS)
            except httpx.TimeoutException:
                pytest.fail(f"/v1/health did not answer within {HEALTH_SECONDS:.0f} s")
            assert health.status_code == 200, health.text
            print(f"/v1/health beside {len(calls)} hooks naming a FIFO: {time.monotonic() - started:.3f} s")
            for t in threads:
                t.join(timeout=60)
            assert answers == [400] * len(calls), answers
            assert post(server, "stop", stop(fifos[0], 99)).json()["detail"].count("regular file") == 1
        finally:
            for fifo in fifos:  # a reader blocked in open() (the old code) is let go, so the server can stop
                for _ in range(len(calls)):
                    try:
                        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                    except OSError:
                        break


def test_only_a_regular_file_within_the_size_limit_is_opened(tmp_path: Path) -> None:
    """The opener under every transcript read: no FIFO (without blocking), device, folder or final symlink, and
    nothing larger than the limit."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"{}\n" * 100)
    (tmp_path / "link.jsonl").symlink_to(big)
    (tmp_path / "folder.jsonl").mkdir()
    for path, why in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                      (tmp_path / "folder.jsonl", "not a regular file"), (tmp_path / "link.jsonl", "symbolic link"),
                      (big, "larger than"), (tmp_path / "missing.jsonl", "cannot read")):
        with pytest.raises(InvalidRequest, match=why):
            open_transcript(path, max_bytes=200).close()
    with open_transcript(big, max_bytes=300) as fh:
        assert fh.read() == b"{}\n" * 100


def test_the_folders_a_transcript_may_be_in_are_claude_codes_or_the_configs(tmp_path: Path) -> None:
    claude = tmp_path / "home/.claude/projects/-p"
    mine = tmp_path / "agent/logs"
    for folder in (claude, mine):
        folder.mkdir(parents=True)
        write_transcript(folder / "t.jsonl", "q", "a")
    home = {"HOME": str(tmp_path / "home")}
    claude_folder = (tmp_path / "home/.claude/projects").resolve()
    assert hooks.transcript_folders(HooksSettings().transcript_dirs, home) == [
        claude_folder, (tmp_path / "home/.codex/sessions").resolve(),  # and Codex CLI's
        (tmp_path / "home/.gemini/tmp").resolve()]  # and Gemini CLI's
    assert hooks.transcript_folders(["~/.claude/projects", str(mine)], home) == [
        (tmp_path / "home/.claude/projects").resolve(), mine.resolve()]
    assert hooks.transcript_folders([], {**home, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})[-1] == (
        tmp_path / "cc/projects").resolve()
    assert hooks.transcript_folders(["logs", ""], home) == []  # a relative folder names none (not the cwd)
    env = {"VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS": os.pathsep.join([str(mine), "~/.claude/projects"])}
    assert parse_settings({}, env).hooks.transcript_dirs == [str(mine), "~/.claude/projects"]
    folders = hooks.transcript_folders([str(mine)], home)
    assert hooks.allowed_transcript(str(mine / "t.jsonl"), folders) == mine.resolve() / "t.jsonl"
    for refused in (claude / "t.jsonl", mine / "t.txt", mine, mine / "../logs2/t.jsonl", "relative/t.jsonl"):
        with pytest.raises(InvalidRequest, match="transcript"):
            hooks.allowed_transcript(str(refused), folders)


def test_serve_refuses_a_port_out_of_range_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = small_vault(tmp_path / "vault")
    for port in ("99999", "0", "-1"):
        assert cli_main(["serve", "--vault", str(vault), "--port", port]) == 2
        err = capsys.readouterr().err
        assert err.splitlines() == [f"error: --port must be a port number from 1 to 65535, not {port}"], err
