"""The real Gemini CLI against a scripted Gemini API on 127.0.0.1: what the model would have seen.

`GeminiAPI` serves POST /v1beta/models/<model>:streamGenerateContent (server-sent events), generateContent,
countTokens and anything else the client asks, and logs every request body. The main loop's requests (streamed
ones that offer the `run_shell_command` tool) get the script's replies in order — reply n answers the request
holding n model turns, so a retry gets the same reply; any other model call gets a short harmless answer.
`run_gemini` runs `gemini -p PROMPT` in a project folder with its own HOME, offline: an API key of any text, the
base URL pointed at the stub (the client allows http for localhost only), folder trust, telemetry, usage
statistics and updates off, and a fixed model (with none, each prompt first asks the model to route it).
`find_gemini` says where the CLI is: `$GEMINI_CLI` (tests/run installs the pinned one and sets it), else `gemini`
on PATH; a missing one fails the test, unless `VAULT_CORTEX_SKIP_CLIENTS=1` says out loud that the real clients
are left out.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scripted_api import Text, find_client

CLI_ENV = "GEMINI_CLI"
MODEL = "gemini-2.5-flash"  # fixed in the settings: no routing request before each prompt
SHELL_TOOL = "run_shell_command"
# What `run_gemini` writes to $HOME/.gemini/settings.json (the user's settings; a test's hooks go in the
# project's .gemini/settings.json, which a trusted folder's session reads too).
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "model": {"name": MODEL},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def find_gemini() -> Path:
    """The `gemini` entry script; a failure when it is not installed, a skip only when VAULT_CORTEX_SKIP_CLIENTS=1."""
    return find_client(CLI_ENV, "gemini", "Gemini CLI")


# -- replies ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """The model calls a function (the CLI runs the tool and sends its response back)."""

    name: str
    args: dict[str, Any]


Reply = Text | Call


def shell(command: str) -> Call:
    return Call(SHELL_TOOL, {"command": command, "description": "run it"})


def _part(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, Text):
        return {"text": reply.text}
    return {"functionCall": {"name": reply.name, "args": reply.args}}


def _response(part: dict[str, Any]) -> dict[str, Any]:
    """One GenerateContentResponse holding the whole reply."""
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
            "modelVersion": MODEL}


# -- the server --------------------------------------------------------------------------------------------
def offers_shell(body: dict[str, Any]) -> bool:
    """Whether a request offers the shell tool: the main loop's do, side calls (a summary, a check) do not."""
    return any(isinstance(d, dict) and d.get("name") == SHELL_TOOL
               for tool in body.get("tools") or [] if isinstance(tool, dict)
               for d in tool.get("functionDeclarations") or [])


@dataclass
class GeminiAPI:
    """A scripted Gemini API on a free loopback port; `requests` logs every (path, body) it received."""

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
                with api.lock:
                    api.requests.append((self.path.split("?")[0], {}))
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
                if path.endswith(":countTokens"):
                    self._json({"totalTokens": max(1, len(json.dumps(body)) // 4)})
                elif path.endswith(":streamGenerateContent"):
                    self._stream(_response(api.answer(body)))
                elif path.endswith(":generateContent"):
                    self._json(_response(api.answer(body)))
                else:
                    self._json({})

            def _json(self, data: object) -> None:
                out = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, data: object) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps(data)}\r\n\r\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="gemini-api", daemon=True)

    def __enter__(self) -> GeminiAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The scripted reply's part for a main-loop request, else a short text (JSON when JSON is asked for)."""
        if not offers_shell(body):
            config = body.get("generationConfig") or {}
            wants_json = config.get("responseMimeType") == "application/json"
            return {"text": json.dumps({"next_speaker": "user", "reasoning": "scripted"}) if wants_json
                    else "Scripted session"}
        turns = sum(1 for c in body.get("contents") or [] if isinstance(c, dict) and c.get("role") == "model")
        return _part(self.script[turns] if turns < len(self.script) else Text("Done."))

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the main loop's requests, in order."""
        return [b for p, b in self.requests if p.endswith(":streamGenerateContent") and offers_shell(b)]


def parts_text(body: dict[str, Any]) -> list[str]:
    """Every text a request showed the model in its turns, in order: texts and function responses' output."""
    out: list[str] = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if "text" in part:
                out.append(part["text"])
            elif "functionResponse" in part:
                out.append(json.dumps(part["functionResponse"].get("response")))
    return out


# -- the client ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Session:
    """One `gemini -p` run: its exit, output, the folders it used and how long it took."""

    done: subprocess.CompletedProcess[str]
    home: Path
    project: Path
    seconds: float

    def transcripts(self) -> list[Path]:
        """The session's chat logs, ~/.gemini/tmp/<project>/chats/session-*.jsonl."""
        return sorted((self.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))


def run_gemini(gemini: Path, api: GeminiAPI, project: Path, home: Path, prompt: str, *,
               settings: dict[str, Any] | None = None, extra: Sequence[str] = (),
               env: dict[str, str] | None = None, timeout: float = 240) -> Session:
    """`gemini -p PROMPT` in `project`, offline against `api`, allowed to run shell commands, with `home` as HOME.

    `settings` are merged (one level deep) over SETTINGS into the user's settings file."""
    user_dir = home / ".gemini"
    user_dir.mkdir(parents=True, exist_ok=True)
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in SETTINGS.items()}
    for key, value in (settings or {}).items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    (user_dir / "settings.json").write_text(json.dumps(merged, indent=2), encoding="utf-8")
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GEMINI_", "GOOGLE_", "VAULT_CORTEX_")) and k not in ("CI", "SANDBOX")}
    run_env.update({"HOME": str(home), "GEMINI_API_KEY": "test-key-anything", "GOOGLE_GEMINI_BASE_URL": api.url,
                    "NO_COLOR": "1", **(env or {})})
    started = time.monotonic()
    done = subprocess.run([str(gemini), "-p", prompt, "--approval-mode=yolo", *extra],
                          cwd=project, env=run_env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Session(done=done, home=home, project=project, seconds=time.monotonic() - started)
