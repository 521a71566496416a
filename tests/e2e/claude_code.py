"""The real Claude Code CLI against a scripted Messages API on 127.0.0.1: what the model would have seen.

`MessagesAPI` serves POST /v1/messages (streaming server-sent events, or one JSON message), count_tokens and
anything else the client asks, and logs every request body. The main loop's requests (the ones that offer the
`Bash` tool) get the script's replies in order — reply n answers the request holding n assistant turns, so a
retry gets the same reply; any other model call (a title, a summary) gets a short text. `run_claude` runs
`claude -p PROMPT` in a project folder with its own HOME, offline. `find_claude` says where the binary is:
`$CLAUDE_CODE_CLI` (tests/run installs the pinned one and sets it), else `claude` on PATH; a missing binary fails
the test, unless `VAULT_CORTEX_SKIP_CLIENTS=1` says out loud that the real clients are left out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CLI_ENV = "CLAUDE_CODE_CLI"
SKIP_ENV = "VAULT_CORTEX_SKIP_CLIENTS"
# read when the tests are collected: each test runs with the VAULT_CORTEX_* variables cleared (tests/conftest.py)
SKIP_CLIENTS = os.environ.get(SKIP_ENV) == "1"
MODEL = "scripted"  # the model named in replies (Claude Code asks for its default one)


def find_claude() -> Path:
    """The `claude` binary; a failure when it is not installed, a skip only when VAULT_CORTEX_SKIP_CLIENTS=1."""
    given = os.environ.get(CLI_ENV, "").strip()
    found = Path(given) if given else (Path(p) if (p := shutil.which("claude")) else None)
    if found is not None and found.is_file() and os.access(found, os.X_OK):
        return found
    if SKIP_CLIENTS:
        pytest.skip(f"{SKIP_ENV}=1: the real Claude Code CLI is left out")
    pytest.fail(f"the Claude Code CLI is not installed (${CLI_ENV}={given or 'unset'}, no `claude` on PATH): run the "
                f"tests with `bash tests/run`, which installs the pinned one, or set {SKIP_ENV}=1 to leave it out")


# -- replies ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Text:
    """The model answers in words and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """The model calls a tool (Claude Code runs it and sends the result back)."""

    name: str
    input: dict[str, Any]


Reply = Text | ToolUse


def bash(command: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "run it"})


def _blocks(reply: Reply, n: int) -> list[dict[str, Any]]:
    if isinstance(reply, Text):
        return [{"type": "text", "text": reply.text}]
    return [{"type": "tool_use", "id": f"toolu_{n:02d}scripted", "name": reply.name, "input": reply.input}]


def _events(blocks: list[dict[str, Any]], stop: str, n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "message_start", {"type": "message_start", "message": {
        "id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}}
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 20}}
    yield "message_stop", {"type": "message_stop"}


# -- the server --------------------------------------------------------------------------------------------
@dataclass
class MessagesAPI:
    """A scripted Messages API on a free loopback port; `requests` logs every (path, body) it received."""

    script: Sequence[Reply] = ()
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
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
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": max(1, len(json.dumps(body)) // 4)})
                elif path.endswith("/v1/messages"):
                    blocks, stop, n = api.answer(body)
                    if body.get("stream"):
                        self._stream(blocks, stop, n)
                    else:
                        self._json({"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": MODEL,
                                    "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                    "usage": {"input_tokens": 100, "output_tokens": 20}})
                else:
                    self._json({})

            def _json(self, data: object) -> None:
                out = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, blocks: list[dict[str, Any]], stop: str, n: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in _events(blocks, stop, n):
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="messages-api", daemon=True)

    def __enter__(self) -> MessagesAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str, int]:
        """The scripted reply for a main-loop request (one that offers Bash), else a short text."""
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        turns = sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")
        if "Bash" not in tools:
            return [{"type": "text", "text": "Scripted session"}], "end_turn", turns
        reply = self.script[turns] if turns < len(self.script) else Text("Done.")
        return _blocks(reply, turns), "tool_use" if isinstance(reply, ToolUse) else "end_turn", turns

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the main loop's requests, in order."""
        return [b for p, b in self.requests if p.endswith("/v1/messages")
                and "Bash" in {t.get("name") for t in b.get("tools") or [] if isinstance(t, dict)}]


def request_text(body: dict[str, Any]) -> str:
    """Everything a request showed the model: system prompt and every message's text and tool results."""
    parts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for key in ("text", "content"):
                if key in value:
                    walk(value[key])

    walk(body.get("system"))
    walk(body.get("messages"))
    return "\n".join(parts)


# -- the client ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Session:
    """One `claude -p` run: its exit, output and the folders it used."""

    done: subprocess.CompletedProcess[str]
    home: Path
    project: Path


def run_claude(claude: Path, api: MessagesAPI, project: Path, home: Path, prompt: str, *,
               extra: Sequence[str] = (), env: dict[str, str] | None = None, timeout: float = 240) -> Session:
    """`claude -p PROMPT` in `project`, offline against `api`, allowed to run Bash, with `home` as HOME."""
    home.mkdir(parents=True, exist_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "VAULT_CORTEX_"))}
    run_env.update({"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-test-anything",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", **(env or {})})
    done = subprocess.run([str(claude), "-p", prompt, "--allowedTools", "Bash", *extra],
                          cwd=project, env=run_env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Session(done=done, home=home, project=project)
