"""What the real agent CLIs' tests share: where a client's binary is, and a scripted model API on 127.0.0.1.

`find_client` says where an agent CLI is: the path in its environment variable (tests/run installs the pinned
one and sets it), else the command on PATH; a missing binary fails the test, unless `VAULT_CORTEX_SKIP_CLIENTS=1`
says out loud that the real clients are left out. `RecordingAPI` serves HTTP on a free loopback port, logs every
request body and answers each through the function it was given: a JSON value, or a `Stream` of server-sent events.
tests/e2e/claude_code.py (the Messages API) and tests/e2e/codex_cli.py (the Responses API) build on these.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

SKIP_ENV = "VAULT_CORTEX_SKIP_CLIENTS"
# read when the tests are collected: each test runs with the VAULT_CORTEX_* variables cleared (tests/conftest.py)
SKIP_CLIENTS = os.environ.get(SKIP_ENV) == "1"


def find_client(cli_env: str, command: str, name: str) -> Path:
    """An agent CLI's binary: `$cli_env`, else `command` on PATH; a failure when it is missing, a skip only when
    VAULT_CORTEX_SKIP_CLIENTS=1."""
    given = os.environ.get(cli_env, "").strip()
    found = Path(given) if given else (Path(p) if (p := shutil.which(command)) else None)
    if found is not None and found.is_file() and os.access(found, os.X_OK):
        return found
    if SKIP_CLIENTS:
        pytest.skip(f"{SKIP_ENV}=1: the real {name} is left out")
    pytest.fail(f"the {name} is not installed (${cli_env}={given or 'unset'}, no `{command}` on PATH): run the "
                f"tests with `bash tests/run`, which installs the pinned one, or set {SKIP_ENV}=1 to leave it out")


@dataclass(frozen=True)
class Text:
    """The model answers in words and ends its turn."""

    text: str


@dataclass(frozen=True)
class Stream:
    """An answer sent as server-sent events: (event name, data) pairs."""

    events: Iterable[tuple[str, dict[str, Any]]]


Answer = Stream | dict[str, Any]
Route = Callable[[str, dict[str, Any]], Answer]  # (path without query, parsed JSON body) -> the answer


class RecordingAPI:
    """HTTP on a free loopback port; `requests` logs every (path, body) POSTed, `route` answers each of them.

    GET answers `{}`, HEAD an empty 200. A body that is not JSON is logged as `{"unparsed": text}`.
    """

    def __init__(self, route: Route, name: str) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def do_GET(self) -> None:
                self._json({})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0]
                with api.lock:
                    api.requests.append((path, body))
                answer = route(path, body)
                if isinstance(answer, Stream):
                    self._stream(answer)
                else:
                    self._json(answer)

            def _json(self, data: object) -> None:
                out = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, answer: Stream) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event, data in answer.events:
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def logged(self) -> list[tuple[str, dict[str, Any]]]:
        """A copy of the log so far."""
        with self.lock:
            return list(self.requests)
