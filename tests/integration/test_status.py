"""`vault-cortex status`, the real command beside a real `serve`: index, server (pid and URL from its lock),
watcher, indexing, and where vault-cortex is installed (Claude Code's settings, the Obsidian plugin)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from serving import serve

from server import install, status
from server.clients import CODEX, GEMINI
from server.serve_lock import lock_path, sole_server
from vault_cortex.files.vault import init_vault

REPO = Path(__file__).resolve().parents[2]


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("VAULT_CORTEX_", "CODEX_HOME", "GEMINI_"))},
           "HOME": str(home)}
    project = home.parent / "project"  # the current folder: Claude Code's project scope, nothing installed
    project.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)


def test_status_shows_the_index_the_server_and_the_installs(tmp_path: Path) -> None:
    vault, home = tmp_path / "vault", tmp_path / "home"
    init_vault(vault)
    home.mkdir()
    before = run(home, "status", "--vault", str(vault))
    assert before.returncode == 0, before.stderr
    lines = dict(line.split(None, 1) for line in before.stdout.splitlines())
    assert lines["index"].startswith("none yet") and lines["server"].startswith("not running")
    assert lines["claude-code"] == "not installed" and lines["obsidian"].startswith("plugin not installed")
    assert lines["codex"] == "not installed" and lines["gemini"] == "not installed"

    assert run(home, "install", "claude-code", "--vault", str(vault)).returncode == 0
    assert run(home, "install", "codex", "--vault", str(vault), "--no-index").returncode == 0
    assert run(home, "install", "gemini", "--vault", str(vault), "--no-index").returncode == 0
    assert run(home, "install", "obsidian", "--vault", str(vault)).returncode == 0
    with serve(vault) as server:
        pid = server.proc.pid
        shown = run(home, "status", "--vault", str(vault))
        as_json = json.loads(run(home, "status", "--vault", str(vault), "--json").stdout)
        server.stop(signal.SIGTERM)
    assert shown.returncode == 0, shown.stderr
    lines = dict(line.split(None, 1) for line in shown.stdout.splitlines())
    assert lines["server"] == f"running: pid {pid} at {server.url} (answers)"
    assert lines["index"].startswith("23 notes, ") and "last sync 20" in lines["index"]
    assert lines["indexing"] == "idle" and lines["watcher"].startswith("watching, ")
    assert lines["claude-code"].startswith(f"user: MCP server for this vault, hooks on {len(install.HOOKS)} events")
    assert lines["codex"] == (f"user: MCP server, hooks on {len(CODEX.hooks)} events for this vault, "
                              f"{len(CODEX.hooks)} trusted ({home / '.codex' / 'hooks.json'})")
    assert lines["gemini"] == (f"user: MCP server, hooks on {len(GEMINI.hooks)} events for this vault "
                               f"({home / '.gemini' / 'settings.json'})")
    assert lines["obsidian"] == (  # installed with the vault's default URL; this server runs on another port
        f"plugin 0.1.0 in .obsidian/plugins/vault-cortex: server http://127.0.0.1:8765 (the running server is at "
        f"{server.url}: `vault-cortex install obsidian --url {server.url}`), token matches; not enabled in Obsidian "
        "yet (Settings → Community plugins)")
    assert as_json["server"]["pid"] == pid and as_json["index"]["notes"] == 23

    after = run(home, "status", "--vault", str(vault))
    assert "not running" in after.stdout and "23 notes" in after.stdout  # read from the index itself


def test_status_reads_the_serve_lock_as_the_hooks_do(tmp_path: Path) -> None:
    """One reader of serve.lock (server/serve_lock.py): a serve bound to every address is asked on loopback, and
    a record no process holds is not a running server."""
    index = tmp_path / "index"
    index.mkdir()
    with sole_server(index, "http://0.0.0.0:18703") as other:
        assert other is None
        assert status.serving(lock_path(tmp_path, index)) == status.Server(running=True, pid=os.getpid(),
                                                                             url="http://127.0.0.1:18703")
    (index / "serve.lock").write_text(f"pid {os.getpid()} at http://127.0.0.1:18703\n")  # left by a killed serve
    assert status.serving(lock_path(tmp_path, index)) == status.Server(running=False)


def test_version() -> None:
    for args in (["--version"], ["-V"]):
        out = subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO)
        assert out.returncode == 0 and out.stdout == "vault-cortex 0.1.0\n", out
    import vault_cortex

    assert vault_cortex.__version__ == "0.1.0"


def test_status_says_whether_sessions_are_captured_what_is_kept_and_where(tmp_path: Path) -> None:
    vault, home = tmp_path / "vault", tmp_path / "home"
    init_vault(vault)
    home.mkdir()
    shown = run(home, "status", "--vault", str(vault))
    assert dict(line.split(None, 1) for line in shown.stdout.splitlines())["capture"] == (
        "on: prompts, answers and tool calls into raw/")
    config = vault / ".cortex/config.toml"
    text = config.read_text(encoding="utf-8")
    kept = text.replace('folder = "raw"', 'folder = "sessions/"').replace("answers = true", "answers = false")
    config.write_text(kept, encoding="utf-8")
    as_json = json.loads(run(home, "status", "--vault", str(vault), "--json").stdout)
    assert as_json["capture"] == {"enabled": True, "kept": ["prompts", "tools"], "folder": "sessions", "error": None}
    assert "on: prompts and tool calls into sessions/" in run(home, "status", "--vault", str(vault)).stdout
    config.write_text(text.replace("enabled = true\n# What a captured", "enabled = false\n# What a captured"),
                      encoding="utf-8")
    shown = run(home, "status", "--vault", str(vault))
    assert dict(line.split(None, 1) for line in shown.stdout.splitlines())["capture"].startswith("off ([capture]")
    assert json.loads(run(home, "status", "--vault", str(vault), "--json").stdout)["capture"]["enabled"] is False
