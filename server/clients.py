"""The agent clients vault-cortex hooks into, one record each: which of the client's hook events run which steps of
the one hook core (server/hooks.py `run_hook`), what its payloads need to read as the core reads them, and how the
core's output is shaped back into what the client understands.

`vault-cortex hook EVENT --client NAME` runs a client's hook: EVENT is the installed command's event (the core's
names: `prompt`, `stop`, ...), NAME `claude-code` (the default, so command lines installed before the option
existed keep working) or `codex`. The HTTP route /v1/hooks/{event} and the stdio MCP server's socket take only core
events: the mapping happens here, in the hook's process, before and after. Standard library only (the hook command
imports it before deciding whether to load the library).

Codex CLI 0.171 (docs/agents.md, tests/fixtures/codex/): its payload fields are Claude Code's, so its events map one
to one, except that
- PostToolUse fires for a failing command too and its `tool_response` is the output as one string with no exit
  code; the exit code is in the rollout (the transcript), written before the hook runs, as the command's
  `item_completed` record: the adapter reads it from the rollout's tail and hands the core
  `{"output": ..., "exit_code": N}`; without it the core's heuristic (server/tool_output.py) judges the text;
- Stop also captures the session (the capture step, then the second look, so that the raw notes just captured are
  never pushed back): Codex gives SessionEnd 1 to 3 seconds, too little for opening the vault on a big one, while
  Stop fires after every turn with the rollout written, so each turn's capture adds just its own exchanges (the
  import log's resume point makes a repeat cheap).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPTURE = "session-end"  # the core event whose handler captures the transcript into raw/
ROLLOUT_TAIL_BYTES = 1 << 20  # how far back from the rollout's end a command's exit code is looked for
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

Payload = Mapping[str, Any]
Output = dict[str, Any]


@dataclass(frozen=True)
class Hook:
    """One client event's hook: the `vault-cortex hook EVENT` its command runs, the core steps that runs (in order),
    its matcher and the timeout (seconds) the installer gives it (None: the client's default)."""

    event: str
    steps: tuple[str, ...]
    matcher: str | None = None
    timeout: int | None = None


def _same(event: str, payload: Payload, env: Mapping[str, str]) -> Payload:
    return payload


@dataclass(frozen=True)
class Client:
    """An agent client: its hook events, where its transcripts are, how its payloads are read."""

    name: str
    title: str  # as people call it
    hooks: Mapping[str, Hook]  # the client's event name → its hook, in the order installed
    home_env: str  # the variable that moves the client's own folder (its transcripts are in a folder of it)
    transcripts: str  # that folder: `~/<dot folder>/<transcripts>`, or `$home_env/<transcripts>`
    dot_folder: str
    normalise: Callable[[str, Payload, Mapping[str, str]], Payload] = field(default=_same)

    def event_of(self, event: str) -> str:
        """The client's event name for an installed command's EVENT; ValueError when the client has none."""
        for name, hook in self.hooks.items():
            if hook.event == event:
                return name
        raise ValueError(f"{self.title} has no hook {event!r}; its hooks: "
                         f"{', '.join(h.event for h in self.hooks.values())}")

    def transcript_folder(self, env: Mapping[str, str]) -> str:
        """The client's transcript folder as the hooks' settings name it (`~` is the reading process's home)."""
        home = env.get(self.home_env)
        return str(Path(home) / self.transcripts) if home else f"~/{self.dot_folder}/{self.transcripts}"


def run(client: Client, event: str, payload: Payload, step: Callable[[str, Payload], Output],
        env: Mapping[str, str]) -> Output:
    """Run an installed command's EVENT for `client`: its payload normalised, each core step in order (one that
    fails is reported on stderr, the rest still run), the first output shaped for the client."""
    name = client.event_of(event)
    hook = client.hooks[name]
    core = client.normalise(event, payload, env)
    outputs: list[Output] = []
    for core_event in hook.steps:
        try:
            outputs.append(step(core_event, core))
        except Exception as exc:  # noqa: BLE001 - one step's failure (capture) must not cost the next (second look)
            if len(hook.steps) == 1:
                raise
            print(f"vault-cortex hook {event} ({core_event}): {type(exc).__name__}: {exc}", file=sys.stderr)
    return shape(name, next((o for o in outputs if o), {}))


def shape(client_event: str, out: Output) -> Output:
    """The core's output for the client's event: context under the event's own name; a block only at Stop."""
    if not out:
        return {}
    if client_event == "Stop":
        return {k: out[k] for k in ("decision", "reason") if k in out}
    context = (out.get("hookSpecificOutput") or {}).get("additionalContext")
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": client_event, "additionalContext": context}}


# -- Codex CLI --------------------------------------------------------------------------------------------
def codex_payload(event: str, payload: Payload, env: Mapping[str, str]) -> Payload:
    """A Codex payload as the core reads it: PostToolUse's output with the exit code the rollout recorded."""
    if event != "tool-result" or not isinstance(payload.get("tool_response"), str):
        return payload
    response: dict[str, Any] = {"output": payload["tool_response"]}
    code = rollout_exit_code(str(payload.get("transcript_path") or ""), str(payload.get("tool_use_id") or ""),
                             transcript_folders([CODEX.transcript_folder(env)], env))
    if code is not None:
        response["exit_code"] = code
    return {**payload, "tool_response": response}


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or str(Path.home())


def rollout_exit_code(rollout: str, call_id: str, folders: Iterable[Path],
                      tail: int = ROLLOUT_TAIL_BYTES) -> int | None:
    """The exit code a Codex rollout recorded for the command `call_id` (its `item_completed` record), read from the
    file's last `tail` bytes; None when the rollout is not a regular `.jsonl` in `folders` or holds no such record."""
    if not rollout or not call_id or not rollout.endswith(".jsonl"):
        return None
    path = Path(os.path.realpath(Path(rollout).parent)) / Path(rollout).name
    if not any(path.is_relative_to(os.path.realpath(f)) for f in folders):
        return None
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        size = fh.seek(0, 2)
        fh.seek(max(0, size - tail))
        lines = fh.read().split(b"\n")
    needle = json.dumps(call_id).encode()
    for line in reversed(lines):
        if needle in line and b"exit_code" in line and (code := _exit_code(line, call_id)) is not None:
            return code
    return None


def _exit_code(line: bytes, call_id: str) -> int | None:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    payload = rec.get("payload") if isinstance(rec, dict) else None
    item = payload.get("item") if isinstance(payload, dict) else None
    if isinstance(payload, dict) and payload.get("type") == "exec_command_end" and payload.get("call_id") == call_id:
        item = {"id": call_id, "exit_code": payload.get("exit_code")}  # the older event record
    if not isinstance(item, dict) or item.get("id") != call_id:
        return None
    code = item.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


CLAUDE_CODE = Client(
    name="claude-code", title="Claude Code", home_env="CLAUDE_CONFIG_DIR", dot_folder=".claude",
    transcripts="projects",
    hooks={
        "SessionStart": Hook("session-start", ("session-start",)),
        "UserPromptSubmit": Hook("prompt", ("prompt",)),
        "PreToolUse": Hook("tool", ("tool",), "*"),
        # a tool that ran but printed a failure, and (PostToolUseFailure) a call that failed, such as a command
        # exiting non-zero: both push memories about what failed
        "PostToolUse": Hook("tool-result", ("tool-result",), "*"),
        "PostToolUseFailure": Hook("tool-failure", ("tool-failure",), "*"),
        "Stop": Hook("stop", ("stop",)),  # the second look before the answer (`[hooks] second_look` turns it off)
        # SessionEnd hooks otherwise get 1.5 s, and Claude Code 2.1 cancels the capture ("Hook cancelled") while
        # the hook process is still loading the library; 60 is the most SessionEnd gets
        "PreCompact": Hook("pre-compact", ("pre-compact",), timeout=60),
        "SessionEnd": Hook("session-end", ("session-end",), timeout=60),
    })

CODEX_TIMEOUT = 60  # seconds: Codex's default is 600, far more than a hook that may never block the agent needs
CODEX = Client(
    name="codex", title="Codex CLI", home_env="CODEX_HOME", dot_folder=".codex", transcripts="sessions",
    normalise=codex_payload,
    hooks={
        "SessionStart": Hook("session-start", ("session-start",), timeout=CODEX_TIMEOUT),
        "UserPromptSubmit": Hook("prompt", ("prompt",), timeout=CODEX_TIMEOUT),
        "PreToolUse": Hook("tool", ("tool",), timeout=CODEX_TIMEOUT),  # no matcher: every tool
        "PostToolUse": Hook("tool-result", ("tool-result",), timeout=CODEX_TIMEOUT),
        "Stop": Hook("stop", (CAPTURE, "stop"), timeout=CODEX_TIMEOUT),  # capture, then the second look
    })

CLIENTS = {c.name: c for c in (CLAUDE_CODE, CODEX)}
DEFAULT = CLAUDE_CODE.name


def client(name: str) -> Client:
    """The client called `name`; ValueError naming the known ones else."""
    if name not in CLIENTS:
        raise ValueError(f"unknown client {name!r}: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def transcript_folders(dirs: Iterable[str], env: Mapping[str, str]) -> list[Path]:
    """The folders a hook may read transcripts from, resolved: `dirs` (`~` is env's HOME), and each client's own
    folder under its moved home (`$CLAUDE_CONFIG_DIR/projects`, `$CODEX_HOME/sessions`) when that is set."""
    home = _home(env)
    named = [d for d in dirs if d]
    named += [c.transcript_folder(env) for c in CLIENTS.values() if env.get(c.home_env)]
    expanded = (home + d[1:] if d == "~" or d.startswith("~/") else os.path.expanduser(d) for d in named)
    return list(dict.fromkeys(Path(os.path.realpath(d)) for d in expanded if os.path.isabs(d)))  # never the cwd


def default_transcript_dirs() -> list[str]:
    """`[hooks] transcript_dirs` when unset: every client's standard folder."""
    return [f"~/{c.dot_folder}/{c.transcripts}" for c in CLIENTS.values()]
