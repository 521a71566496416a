"""The agent clients vault-cortex hooks into, one record each: which of the client's hook events run which steps of
the one hook core (server/hooks.py `run_hook`), what its payloads need to read as the core reads them, and how the
core's output is shaped back into what the client understands.

`vault-cortex hook EVENT --client NAME` runs a client's hook: EVENT is the installed command's event (the core's
names: `prompt`, `stop`, ...), NAME `claude-code` (the default, so command lines installed before the option
existed keep working), `codex` or `gemini`. The HTTP route /v1/hooks/{event} and the stdio MCP server's socket take
only core events: the mapping happens here, in the hook's process, before and after. Standard library only (the
hook command imports it before deciding whether to load the library).

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

Gemini CLI 0.61 (docs/agents.md, tests/fixtures/gemini/) has its own event names and payloads:
- BeforeAgent's `prompt` is the prompt as the model gets it, SessionStart's context (`<hook_context>…`) in front of
  the first one: the adapter takes what hooks added out;
- AfterTool fires for a failing command too, as a success: the exit code is a line `Exit Code: N` of
  `tool_response.llmContent` (absent when 0), after the output; the adapter hands the core `{"output": ...,
  "exit_code": N}` for the shell tool, and nothing to judge for any other tool (its output is content: a file, a
  search) nor for a tool that failed itself (`error`: Gemini then sends the model the error alone and drops a hook's
  context, so a push would reach no one and only mark its memories shown);
- AfterAgent's `prompt_response` is every answer of the prompt so far, each model turn's text joined by a newline
  (and a streamed turn's chunks by a space): the answer is the last Gemini record of the chat log when the payload's
  text ends with it (whitespace aside), else the whole text; a block is `{"decision": "block", "reason": ...}` and
  the retry's AfterAgent has `stop_hook_active`;
- capture stays at SessionEnd, which Gemini awaits (60 s by default) when the session ends: a capture at each
  AfterAgent would open the vault after every prompt for what SessionEnd does once.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPTURE = "session-end"  # the core event whose handler captures the transcript into raw/
ROLLOUT_TAIL_BYTES = 1 << 20  # how far back from the rollout's end a command's exit code is looked for
CHAT_TAIL_BYTES = 1 << 20  # how far back from a Gemini chat log's end its last answer is looked for
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
    stop: str = "Stop"  # the event whose output may block (send the agent on with the reason)
    home_holds_dot_folder: bool = False  # `$home_env` moves the folder holding the dot folder (Gemini's), not it

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
        if not home:
            return f"~/{self.dot_folder}/{self.transcripts}"
        return str(Path(home, self.dot_folder if self.home_holds_dot_folder else "", self.transcripts))


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
    return shape(name, next((o for o in outputs if o), {}), client.stop)


def shape(client_event: str, out: Output, stop: str = "Stop") -> Output:
    """The core's output for the client's event: context under the event's own name; a block only at `stop`."""
    if not out:
        return {}
    if client_event == stop:
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
    lines = tail_lines(rollout, folders, tail) if call_id else None
    if lines is None:
        return None
    needle = json.dumps(call_id).encode()
    for line in reversed(lines):
        if needle in line and b"exit_code" in line and (code := _exit_code(line, call_id)) is not None:
            return code
    return None


def tail_lines(file: str, folders: Iterable[Path], tail: int) -> list[bytes] | None:
    """The lines of a transcript's last `tail` bytes (the first one maybe cut); None when `file` is not a regular
    `.jsonl` in `folders` (opened without following a link or waiting)."""
    if not file or not file.endswith(".jsonl"):
        return None
    path = Path(os.path.realpath(Path(file).parent)) / Path(file).name
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
        return fh.read().split(b"\n")


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


# -- Gemini CLI -------------------------------------------------------------------------------------------
GEMINI_SHELL = "run_shell_command"  # the one tool whose output has an exit code
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.S)  # its own `<` and `>` are escaped
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)$")
_SHELL_TRAILER = re.compile(r"^(?:Exit Code|Signal|Background PIDs|Process Group PGID): .*$")
_UNTRUSTED = re.compile(r"</?untrusted_context>")


def gemini_payload(event: str, payload: Payload, env: Mapping[str, str]) -> Payload:
    """A Gemini CLI payload as the core reads it: the prompt without hook context, a shell command's output with its
    exit code, the last answer of AfterAgent as `last_assistant_message`."""
    if event == "prompt":
        return {**payload, "prompt": _HOOK_CONTEXT.sub("", str(payload.get("prompt") or "")).strip()}
    if event == "tool-result":
        return {**payload, "tool_response": gemini_tool_response(payload)}
    if event == "stop":
        folders = transcript_folders([GEMINI.transcript_folder(env)], env)
        return {**payload, "last_assistant_message": last_answer(
            str(payload.get("prompt_response") or ""), str(payload.get("transcript_path") or ""), folders)}
    return payload


def gemini_tool_response(payload: Payload) -> dict[str, Any] | None:
    """AfterTool's `tool_response` as the core judges it: for the shell tool `{"output", "exit_code"}` read from
    `llmContent` (`Output: ...`, then `Exit Code: N` when not 0, then the process group); None (nothing failed) for
    any other tool, whose output is content, and for a tool that failed itself (Gemini drops a hook's context then)."""
    response = payload.get("tool_response")
    if payload.get("tool_name") != GEMINI_SHELL or not isinstance(response, Mapping) or response.get("error"):
        return None
    content = response.get("llmContent")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text")) for p in content if isinstance(p, Mapping) and "text" in p)
    if not isinstance(content, str):
        return None
    lines = _UNTRUSTED.sub("", content).strip().split("\n")
    code = 0
    while lines and _SHELL_TRAILER.match(lines[-1]):
        if m := _EXIT_CODE.match(lines.pop()):
            code = int(m.group(1))
    output = "\n".join(lines).removeprefix("Output: ")
    return {"output": "" if output == "(empty)" else output, "exit_code": code}


def last_answer(prompt_response: str, chat_log: str, folders: Iterable[Path], tail: int = CHAT_TAIL_BYTES) -> str:
    """The last answer in AfterAgent's `prompt_response` (every model turn's text of the prompt, joined by a
    newline): the chat log's last Gemini record with text, when the payload's text ends with it (whitespace aside:
    Gemini joins a streamed turn's chunks with a space); else the whole text."""
    lines = tail_lines(chat_log, folders, tail) or []
    for line in reversed(lines):
        if b'"gemini"' not in line:
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        text = rec.get("content") if isinstance(rec, dict) and rec.get("type") == "gemini" else None
        if isinstance(text, str) and text.strip():
            flat = "".join(text.split())
            return text.strip() if flat and "".join(prompt_response.split()).endswith(flat) else prompt_response
    return prompt_response


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

GEMINI = Client(
    name="gemini", title="Gemini CLI", home_env="GEMINI_CLI_HOME", dot_folder=".gemini", transcripts="tmp",
    home_holds_dot_folder=True, normalise=gemini_payload, stop="AfterAgent",
    hooks={  # the installer's (server/install_gemini.py); Gemini's default timeout, 60 s, suits them all
        "SessionStart": Hook("session-start", ("session-start",)),
        "BeforeAgent": Hook("prompt", ("prompt",)),
        "AfterTool": Hook("tool-result", ("tool-result",), "*"),
        "AfterAgent": Hook("stop", ("stop",)),
        "SessionEnd": Hook(CAPTURE, (CAPTURE,)),
    })

CLIENTS = {c.name: c for c in (CLAUDE_CODE, CODEX, GEMINI)}
DEFAULT = CLAUDE_CODE.name


def client(name: str) -> Client:
    """The client called `name`; ValueError naming the known ones else."""
    if name not in CLIENTS:
        raise ValueError(f"unknown client {name!r}: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def transcript_folders(dirs: Iterable[str], env: Mapping[str, str]) -> list[Path]:
    """The folders a hook may read transcripts from, resolved: `dirs` (`~` is env's HOME), and each client's own
    folder under its moved home (`$CLAUDE_CONFIG_DIR/projects`, `$CODEX_HOME/sessions`,
    `$GEMINI_CLI_HOME/.gemini/tmp`) when that is set."""
    home = _home(env)
    named = [d for d in dirs if d]
    named += [c.transcript_folder(env) for c in CLIENTS.values() if env.get(c.home_env)]
    expanded = (home + d[1:] if d == "~" or d.startswith("~/") else os.path.expanduser(d) for d in named)
    return list(dict.fromkeys(Path(os.path.realpath(d)) for d in expanded if os.path.isabs(d)))  # never the cwd


def default_transcript_dirs() -> list[str]:
    """`[hooks] transcript_dirs` when unset: every client's standard folder."""
    return [f"~/{c.dot_folder}/{c.transcripts}" for c in CLIENTS.values()]
