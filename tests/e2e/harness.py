"""What the e2e tests share besides fixtures: the token, the error-shape check and a live uvicorn server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import httpx2
import uvicorn
from litestar import Litestar
from litestar.testing import TestClient
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from server.app import LOOPBACK_HOSTS

TOKEN = "test-token-" + "x" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEST_HOSTS = [*LOOPBACK_HOSTS, "testserver.local"]  # the test client's Host, for MCP's DNS-rebinding check
ERROR_KEYS = {"error", "detail", "status"}


def assert_error_shape(response: httpx.Response) -> None:
    """Every error response is `{"error": str, "detail": str, "status": <its status>}` and nothing else."""
    if response.status_code < 400:
        return
    response.read()
    assert response.headers.get("content-type", "").startswith("application/json"), response.text
    body = response.json()
    if response.request.url.path.startswith("/mcp") and "jsonrpc" in body:
        return  # an MCP protocol error, in JSON-RPC's own shape
    assert set(body) == ERROR_KEYS, body
    assert isinstance(body["error"], str) and body["error"].isidentifier(), body
    assert isinstance(body["detail"], str) and body["detail"], body
    assert body["status"] == response.status_code, body


def checked_client(app: Litestar) -> TestClient[Litestar]:
    """A test client that sends the token and checks the shape of every error response it receives."""
    client = TestClient(app)
    client.headers.update(AUTH)
    client.event_hooks = {"response": [assert_error_shape]}
    return client


def send_without_token(client: TestClient[Litestar], method: str, url: str, **kwargs: Any) -> httpx.Response:
    request = client.build_request(method, url, **kwargs)
    del request.headers["Authorization"]
    return client.send(request)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving an app on a free loopback port, in a thread."""

    def __init__(self, app: Litestar) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, ws="none",
                                                    lifespan="on", log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


def over_http(live: LiveServer, body: Callable[[Client], Awaitable[Any]], token: str = TOKEN) -> Any:
    """Run `body` with an MCP client connected to the live server's /mcp (streamable HTTP)."""
    async def main() -> Any:
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                    Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client):
            return await body(client)

    return anyio.run(main)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
