"""The real `vault-cortex serve` as a subprocess on a free loopback port, for the tests that need the process itself
(signals, start-up, the watcher): start it, wait for it, talk to it, stop it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

# How long a stop may take before the process counts as hung: about 1 s idle, 10-12 s measured while it embeds on a
# 2-core machine with two busy loops beside it; ~10x that, so only a hang fails (the figure: tests/bench/server.py).
STOP_WAIT = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running `serve`: its vault, its URL and its process."""

    def __init__(self, vault: Path, port: int, proc: subprocess.Popen[str], token_file: Path | None = None) -> None:
        self.vault = vault
        self.url = f"http://127.0.0.1:{port}"
        self.proc = proc
        self.token_file = token_file or vault / ".cortex/token"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token_file.read_text().strip()}"}

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", params=params, headers=self.auth, timeout=30)

    def status(self) -> dict[str, Any]:
        data: dict[str, Any] = self.get("/v1/status").json()
        return data

    def stop(self, sig: int) -> float:
        """Send `sig`; the seconds until the process has exited (infinite if it had not within STOP_WAIT)."""
        sent = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return float("inf")
        return time.monotonic() - sent


def wait(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (httpx.TransportError, KeyError, TypeError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def serve(vault: Path, log_file: Path | None = None, *options: str, env: dict[str, str] | None = None,
          token_file: Path | None = None, program: Sequence[str] = (sys.executable, "-m", "server.cli"),
          cwd: Path | None = None) -> Iterator[Server]:
    """`vault-cortex [OPTIONS] serve --vault VAULT` until the block ends, its output in log_file (default: beside
    the vault); yields once it answers and its start-up sync is done. `env` adds variables; `token_file`: where
    serve keeps its token, when not in the vault; `program`: how to run vault-cortex (default: this checkout's,
    with the interpreter running the tests)."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}, **(env or {})}
    log = (log_file or vault.parent / "server.log").open("w")
    proc = subprocess.Popen([*program, *options, "serve", "--vault", str(vault), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    server = Server(vault, port, proc, token_file)
    try:
        wait(lambda: httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200, 120, "the server")
        wait(lambda: server.status()["watch"]["syncs"] >= 1, 120, "the start-up sync")
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.close()
