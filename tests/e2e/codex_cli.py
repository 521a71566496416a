"""The real Codex CLI (`codex exec`) against a scripted Responses API on 127.0.0.1: what the model would have seen.

`ResponsesAPI` serves POST /v1/responses as server-sent events and logs every request body. Codex sends the whole
history each turn; the main loop's requests (the ones that offer `exec_command`) get the script's replies in
order — reply n answers the request whose input holds n of the model's own items (assistant messages and
function calls), so a retry gets the same reply; any other model call gets a short text. A reply is
`response.output_item.done` then `response.completed` (without the latter Codex retries the request five times).
`run_codex` runs `codex exec PROMPT` in a project folder with its own HOME and CODEX_HOME (HOME/.codex), offline:
the provider, sandbox and approval settings go on the command line (`-c`, the session-flags layer), so the
CODEX_HOME/config.toml a test or an installer writes is left as it is. `find_codex` says where the binary is:
`$CODEX_CLI` (tests/run installs the pinned one and sets it), else `codex` on PATH.

Hook trust (Codex 0.171, read in codex-rs/hooks/src/engine/discovery.rs, computed by server/install_codex.py, which
the installer uses and this module re-exports, and checked by tests/e2e/test_codex_cli.py against
`codex app-server`'s `hooks/list`): `codex exec` runs a user or project hook only when CODEX_HOME/config.toml
holds, for that hook, a table

    [hooks.state."<absolute path of the hooks.json>:<event label>:<group index>:<handler index>"]
    trusted_hash = "sha256:<hex>"

where the event label is snake case (`session_start`, `user_prompt_submit`, `pre_tool_use`, `post_tool_use`, `stop`,
`session_end`, ...) and the hash is sha256 over compact JSON with sorted keys (non-ASCII kept as UTF-8) of
`{"event_name": label, "matcher": m, "hooks": [{"type": "command", "command": c, "timeout": t, "async": a}]}`:
the one handler as Codex normalised it — `timeout` always present (default 600 s, at least 1; SessionEnd: default
1, clamped to 1..3), `async` always present, `statusMessage` only when set, `matcher` only when the event takes one
(not UserPromptSubmit or Stop) and it is set. A hook with no entry is skipped silently; editing it changes the hash
and skips it silently again ("modified"). A project's `.codex/hooks.json` also needs the project trusted:
`[projects."<project root>"] trust_level = "trusted"` (else `codex exec` warns that project-local configuration is
disabled and runs none of it). `--dangerously-bypass-hook-trust` runs untrusted hooks for one invocation.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripted_api import RecordingAPI, Stream, Text, find_client

from server.install_codex import EVENT_LABELS, hook_trust, hook_trust_hash, trust_toml

__all__ = ["CLI_ENV", "EVENT_LABELS", "FunctionCall", "Reply", "ResponsesAPI", "Session", "Text", "client_env",
           "exec_command", "find_codex", "hook_trust", "hook_trust_hash", "hooks_list", "messages", "offline_config",
           "request_text", "run_codex", "trust_toml"]

CLI_ENV = "CODEX_CLI"
MODEL = "scripted"
PROVIDER = "scripted"  # the model provider run_codex configures
KEY_ENV = "SCRIPTED_API_KEY"  # the provider's env_key: Codex sends its value as the bearer token
SHELL_TOOL = "exec_command"  # Codex 0.171's shell tool (unified exec): arguments {"cmd": ...}


def find_codex() -> Path:
    """The `codex` binary; a failure when it is not installed, a skip only when VAULT_CORTEX_SKIP_CLIENTS=1."""
    return find_client(CLI_ENV, "codex", "Codex CLI")


# -- replies ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionCall:
    """The model calls a tool (Codex runs it and sends the output back as a function_call_output)."""

    name: str
    arguments: dict[str, Any]


Reply = Text | FunctionCall


def exec_command(cmd: str) -> FunctionCall:
    """A shell command through Codex's exec_command tool."""
    return FunctionCall(SHELL_TOOL, {"cmd": cmd})


def _item(reply: Reply, n: int) -> dict[str, Any]:
    if isinstance(reply, Text):
        return {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
    return {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": reply.name,
            "arguments": json.dumps(reply.arguments)}


def _events(item: dict[str, Any], n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    response = {"id": f"resp_{n:04d}", "object": "response", "model": MODEL}
    yield "response.created", {"type": "response.created", "response": {**response, "status": "in_progress"}}
    yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
    yield "response.completed", {"type": "response.completed", "response": {
        **response, "status": "completed", "usage": {"input_tokens": 100, "input_tokens_details": None,
                                                     "output_tokens": 20, "output_tokens_details": None,
                                                     "total_tokens": 120}}}


def _model_items(body: dict[str, Any]) -> int:
    """How many of the model's own items (assistant messages, function calls) a request's input holds."""
    return sum(1 for it in body.get("input") or [] if isinstance(it, dict) and (
        it.get("type") == "function_call" or (it.get("type") == "message" and it.get("role") == "assistant")))


def _offers_shell(body: dict[str, Any]) -> bool:
    return SHELL_TOOL in {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}


# -- the server --------------------------------------------------------------------------------------------
@dataclass
class ResponsesAPI:
    """A scripted Responses API on a free loopback port; `requests` logs every (path, body) it received."""

    script: Sequence[Reply] = ()
    server: RecordingAPI = field(init=False)

    def __post_init__(self) -> None:
        self.server = RecordingAPI(self.route, "responses-api")
        self.url = self.server.url

    @property
    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        return self.server.logged()

    def __enter__(self) -> ResponsesAPI:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def route(self, path: str, body: dict[str, Any]) -> Stream | dict[str, Any]:
        if not path.endswith("/responses"):
            return {}
        n = _model_items(body)
        if not _offers_shell(body):
            return Stream(_events(_item(Text("Scripted session"), n), n))
        reply = self.script[n] if n < len(self.script) else Text("Done.")
        return Stream(_events(_item(reply, n), n))

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the main loop's requests, in order."""
        return [b for p, b in self.requests if p.endswith("/responses") and _offers_shell(b)]


def _content_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return []


def messages(body: dict[str, Any], role: str) -> list[str]:
    """The text of each message a request holds from `role` ("developer", "user", "assistant"), in order."""
    return ["\n".join(_content_text(it.get("content"))) for it in body.get("input") or []
            if isinstance(it, dict) and it.get("type") == "message" and it.get("role") == role]


def request_text(body: dict[str, Any]) -> str:
    """Everything a request showed the model: instructions, every message, tool call and tool output."""
    parts: list[str] = _content_text(body.get("instructions"))
    for it in body.get("input") or []:
        if not isinstance(it, dict):
            continue
        parts += _content_text(it.get("content")) + _content_text(it.get("output"))
        if isinstance(it.get("arguments"), str):
            parts.append(it["arguments"])
    return "\n".join(parts)


# -- the client ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Session:
    """One `codex exec` run: its exit, output and the folders it used."""

    done: subprocess.CompletedProcess[str]
    home: Path
    project: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def transcripts(self) -> list[Path]:
        """The rollout files the session wrote (CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl)."""
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"))


def client_env(home: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a Codex run gets: this one without OPENAI_*, CODEX_* and VAULT_CORTEX_* variables, with
    `home` as HOME and home/.codex as CODEX_HOME."""
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_", "VAULT_CORTEX_"))}
    run_env.update({"HOME": str(home), "CODEX_HOME": str(home / ".codex"), KEY_ENV: "sk-test-anything",
                    **(env or {})})
    return run_env


def offline_config(api: ResponsesAPI) -> list[str]:
    """`-c` overrides: the scripted provider, no sandbox or approvals, nothing that calls another service."""
    provider = (f'{{name="{PROVIDER}", base_url="{api.url}/v1", wire_api="responses", env_key="{KEY_ENV}"}}')
    settings = [f'model="{MODEL}"', f'model_provider="{PROVIDER}"', f"model_providers.{PROVIDER}={provider}",
                'approval_policy="never"', 'sandbox_mode="danger-full-access"', "features.plugins=false",
                "features.remote_plugin=false", "features.apps=false", "analytics.enabled=false",
                "check_for_update_on_startup=false"]
    return [arg for setting in settings for arg in ("-c", setting)]


def run_codex(codex: Path, api: ResponsesAPI, project: Path, home: Path, prompt: str, *,
              extra: Sequence[str] = (), env: Mapping[str, str] | None = None, timeout: float = 240) -> Session:
    """`codex exec PROMPT` in `project`, offline against `api`, allowed to run commands, with `home` as HOME."""
    done = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "--strict-config", *offline_config(api),
                           *extra, prompt],
                          cwd=project, env=client_env(home, env), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Session(done=done, home=home, project=project)


def hooks_list(codex: Path, home: Path, cwd: Path, timeout: float = 60) -> list[dict[str, Any]]:
    """The hooks Codex finds for `cwd`, as `codex app-server` lists them (key, eventName, command, timeoutSec,
    currentHash, trustStatus, ...)."""
    requests = [{"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "vault-cortex-tests",
                                                                              "version": "0"}}},
                {"method": "initialized"},
                {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}]
    with subprocess.Popen([str(codex), "app-server"], cwd=cwd, env=client_env(home), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        watchdog = threading.Timer(timeout, proc.kill)  # a hung server ends the read below
        watchdog.start()
        try:
            proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            proc.stdin.flush()
            for line in proc.stdout:
                answer = json.loads(line)
                if answer.get("id") == 2:
                    assert "result" in answer, answer
                    return [h for entry in answer["result"]["data"] for h in entry["hooks"]]
        finally:
            watchdog.cancel()
            proc.kill()
    raise AssertionError("codex app-server closed without answering hooks/list")
