"""A local, private memory tool leaves nothing behind: the real CLI and `serve`, run with HOME, the XDG folders and
TMPDIR pointed at empty folders, create nothing outside the vault (onnxruntime's usage telemetry wrote a device id
and a queued event under ~/.cache/Microsoft), and a busy port is one clear line and a non-zero exit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from serving import Server, free_port, wait

XDG = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")


def sealed_env(tmp_path: Path) -> tuple[dict[str, str], list[Path]]:
    """The environment with HOME, every XDG folder and TMPDIR each an empty folder of its own; and those folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_CORTEX_", "ORT_"))}
    folders = []
    for name in ("HOME", *XDG, "TMPDIR"):
        folder = tmp_path / "outside" / name.lower()
        folder.mkdir(parents=True)
        env[name] = str(folder)
        folders.append(folder)
    return env, folders


def left_behind(folders: list[Path]) -> list[str]:
    return sorted(str(p) for folder in folders for p in folder.rglob("*"))


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_the_cli_and_serve_create_nothing_outside_the_vault(tmp_path: Path) -> None:
    env, folders = sealed_env(tmp_path)
    vault = tmp_path / "vault"
    assert cli(env, "init", str(vault)).returncode == 0
    done = cli(env, "recall", "--vault", str(vault), "what do I know about sleep")
    assert done.returncode == 0, done.stderr
    assert cli(env, "install", "claude-code", "--vault", str(vault), "--dry-run").returncode == 0
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port",
                             str(port)], stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
    server = Server(vault, port, proc)
    try:
        wait(lambda: httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200, 60, "the server")
        wait(lambda: server.status()["watch"]["syncs"] >= 1, 120, "the start-up sync")
        answer = server.get("/v1/recall", q="memory")
        assert answer.status_code == 200, answer.text
        server.stop(signal.SIGINT)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.close()
    assert left_behind(folders) == []


def test_a_busy_port_is_one_clear_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    """It printed "serving … at http://…" and then uvicorn's `[Errno 98]` line, and exited 3."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    vault = tmp_path / "vault"
    assert cli(env, "init", str(vault)).returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli(env, "serve", "--vault", str(vault), "--port", str(port))
    assert done.returncode == 1, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f"127.0.0.1:{port}" in errors[0] and "--port" in errors[0], done.stderr
    assert not any("serving" in ln or "Errno" in ln or "Traceback" in ln for ln in lines), done.stderr
