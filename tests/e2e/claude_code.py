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
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripted_api import SKIP_CLIENTS, SKIP_ENV, RecordingAPI, Stream, Text, find_client

__all__ = ["CLI_ENV", "MODEL", "SKIP_CLIENTS", "SKIP_ENV", "MessagesAPI", "Reply", "Session", "Text", "ToolUse",
           "bash", "find_claude", "request_text", "run_claude"]

CLI_ENV = "CLAUDE_CODE_CLI"
MODEL = "scripted"  # the model named in replies (Claude Code asks for its default one)


def find_claude() -> Path:
    """The `claude` binary; a failure when it is not installed, a skip only when VAULT_CORTEX_SKIP_CLIENTS=1."""
    return find_client(CLI_ENV, "claude", "Claude Code CLI")


# -- replies ---------------------------------------------------------------------------------------------
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
    server: RecordingAPI = field(init=False)

    def __post_init__(self) -> None:
        self.server = RecordingAPI(self.route, "messages-api")
        self.url = self.server.url

    @property
    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        return self.server.logged()

    def __enter__(self) -> MessagesAPI:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def route(self, path: str, body: dict[str, Any]) -> Stream | dict[str, Any]:
        if path.endswith("/count_tokens"):
            return {"input_tokens": max(1, len(json.dumps(body)) // 4)}
        if not path.endswith("/v1/messages"):
            return {}
        blocks, stop, n = self.answer(body)
        if body.get("stream"):
            return Stream(_events(blocks, stop, n))
        return {"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": MODEL, "content": blocks,
                "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}}

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
