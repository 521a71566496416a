"""`vault-cortex serve` for real: an empty folder becomes a vault, uvicorn serves it on a free loopback port,
and a note saved by atomic rename shows up in recall."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

NEW_NOTE = "scientific/Rain gauge tipping bucket.md"
NEW_TEXT = ("# Rain gauge tipping bucket\n\nThe tipping bucket rain gauge counts 0.2 mm per tip on an interrupt "
            "pin; debounce it in software or a gust doubles the rainfall.\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, vault: Path, port: int, proc: subprocess.Popen[str]) -> None:
        self.vault = vault
        self.url = f"http://127.0.0.1:{port}"
        self.proc = proc

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {(self.vault / '.cortex/token').read_text().strip()}"}

    def get(self, path: str, **params: str | int) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", params=params, headers=self.auth, timeout=10)


def wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():  # type: ignore[operator]
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    vault = tmp_path_factory.mktemp("live") / "vault"  # missing: serve creates it from the template
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    with subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port", str(port)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        server = Served(vault, port, proc)
        try:
            wait(lambda: httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200, 60, "the server")
            wait(lambda: server.get("/v1/status").json()["watch"]["syncs"] >= 1, 120, "the start-up sync")
            yield server
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_serve_creates_the_vault_and_a_private_token(served: Served) -> None:
    assert (served.vault / ".cortex/config.toml").is_file()
    assert (served.vault / "soul").is_dir()
    assert stat.S_IMODE((served.vault / ".cortex/token").stat().st_mode) == 0o600
    status = served.get("/v1/status").json()
    assert status["index"]["notes"] >= 20
    assert status["watch"]["watching"] is True
    assert status["nightly"]["enabled"] is False and status["nightly"]["next_at"] is None  # off in the template
    assert status["regions"][0] == "soul" and "balanced" in status["modes"]
    assert httpx.get(f"{served.url}/v1/status", timeout=5).status_code == 401


@pytest.mark.slow
def test_an_atomic_save_is_recalled(served: Served) -> None:
    path = served.vault / NEW_NOTE
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(NEW_TEXT)
    saved = time.monotonic()
    os.replace(tmp, path)

    def found() -> bool:
        hits = served.get("/v1/recall", q="tipping bucket rain gauge debounce", k=3).json()["hits"]
        return bool(hits) and hits[0]["path"] == NEW_NOTE

    wait(found, 10, "the saved note in recall")
    print(f"save → recall: {(time.monotonic() - saved) * 1000:.0f} ms")
    assert served.get("/v1/status").json()["watch"]["lag_ms"] == 0.0


@pytest.mark.slow
def test_an_index_write_does_not_loop(served: Served) -> None:
    """The index and activity log live in .cortex/: their writes must not trigger more syncs."""
    before = served.get("/v1/status").json()["watch"]["syncs"]
    for _ in range(5):
        served.get("/v1/recall", q="battery")  # appends to .cortex/activity/
    time.sleep(1.0)
    assert served.get("/v1/status").json()["watch"]["syncs"] == before
