"""The agents' hooks, one core in Claude Code's events (server/clients.py maps another client's onto them):
session-start context, pushed memories on prompts and failed tool results (through the push gate, each memory once
per session), tool habits, and capture of the session's transcript into `raw/` (the
`[capture]` folder, with what it keeps) at SessionEnd and PreCompact.

`vault-cortex hook EVENT` reads the hook's JSON input on stdin and prints its output. It posts to the running
server (found where `serve` recorded its URL, else at the config's host and port) when, within HEALTH_TIMEOUT,
it proves on the hook's connection that it holds the vault's token (server/proof.py: a listener that is not the
vault's server gets neither the token nor the input), else asks a stdio MCP server of the vault on its socket
(server/hook_socket.py), and otherwise opens the vault itself; the same
`run_hook` does the work either way (a capture too: the server has the library loaded, which this process would
have to import).
It never blocks the agent: it always exits 0 and prints valid JSON or nothing. This module imports only
the standard library and the one settings loader (vault_cortex/config.py, which loads none of the library's index,
model or numpy) at load time, so a hook costs little when the server runs.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack, closing
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from server.bearer import read_token
from server.clients import DEFAULT, client, run, transcript_folders
from server.hook_socket import ask, live_sockets
from server.hook_state import STATE_DIR as STATE_DIR  # where the session files are (tests, status)
from server.hook_state import STATE_TTL_SECONDS as STATE_TTL_SECONDS
from server.hook_state import SWEEP_EVERY_SECONDS as SWEEP_EVERY_SECONDS
from server.hook_state import SessionState
from server.proof import NotProven, proven_connection
from server.serve_lock import recorded_url
from server.tool_output import error_query, failure_query
from vault_cortex.config import load_settings
from vault_cortex.errors import ConfigError

if TYPE_CHECKING:  # the library loads numpy and ONNX: imported only when a hook opens the vault itself
    from vault_cortex.cortex import Cortex
    from vault_cortex.recall.scored import Hit

log = logging.getLogger(__name__)

VAULT_ENV = "VAULT_CORTEX_VAULT"
URL_ENV = "VAULT_CORTEX_URL"
MAX_CONTEXT_CHARS = 8000  # Claude Code keeps about 10,000 characters of hook context whole
MAX_INPUT_BYTES = 1 << 20
MIN_PROMPT_CHARS = 12  # "yes", "go on": nothing worth a recall
HEALTH_TIMEOUT = 0.3

OpenCortex = Callable[[], "Cortex"]


# -- the work, shared by the server route and the direct path ----------------------------------------------
def run_hook(open_cx: OpenCortex, event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The hook's output object for its input; `{}` when there is nothing to add. Everything it logs is the
    hooks' (`HOOK_CLIENT`, whose queries the activity log keeps only as fingerprints), on every path."""
    text = contextvars.copy_context().run(EVENTS[event].run, as_hooks(open_cx), payload)
    if not text:
        return {}
    if event == "stop":  # Claude Code sends the agent back to work with the reason as its next input
        return {"decision": "block", "reason": clip(text)}
    return {"hookSpecificOutput": {"hookEventName": EVENTS[event].claude, "additionalContext": clip(text)}}


def as_hooks(open_cx: OpenCortex) -> OpenCortex:
    """`open_cx`, binding the hooks' client (`activity.acting_as`) when it first opens the vault: until then
    nothing is logged, and the library is not loaded for a hook that needs no vault. `run_hook` runs the handler
    in a context of its own, which the binding does not outlive."""
    def opened() -> Cortex:
        cx = open_cx()
        from vault_cortex.files.activity import HOOK_CLIENT, bind_client

        bind_client(HOOK_CLIENT)
        return cx
    return opened


def _session_start(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    cx = open_cx()
    state = SessionState(cx.root, str(payload.get("session_id") or ""))
    if payload.get("source") != "resume":  # a new, cleared or compacted conversation has none of them any more
        state.reset()
    project = Path(str(payload.get("cwd") or "")).name or None  # the project folder the agent works in
    ctx = cx.context(project=project, budget_tokens=cx.settings.hooks.session_budget_tokens,
                     exclude=frozenset(state.captured))  # after a compaction, not its own words back
    state.add(item.path for item in ctx.context.items)
    return ctx.markdown.strip() or None


def _prompt(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    """Memories the push gate passes for the prompt, not yet injected in the session, within the budget."""
    prompt = str(payload.get("prompt") or "").strip()
    if len(prompt) < MIN_PROMPT_CHARS:
        return None
    from vault_cortex.recall.second_look import HEADER

    if prompt.startswith(HEADER):  # the second look's own reason, which Gemini CLI sends as a prompt: no query
        return None
    cx = open_cx()
    return push(cx, prompt[: cx.settings.recall.max_query_chars], payload, PROMPT_HEADER)


def push(cx: Cortex, query: str, payload: Mapping[str, Any], header: str, remind: str = "") -> str | None:
    """Recall through the push gate; each passing memory once per session, in rank order, within the budget. With
    `remind` (a failure's), a memory the session was shown already that the gate passes gets one line pointing
    back to it (`remind [[it]], shown earlier in this session.`) instead of nothing.

    The gate (recall/gate.py, `[push]` in the config) judges from the ranking's own features whether a memory
    bears on the query; recall scores alone are relative to the query's best candidate, so a nonsense
    prompt's top hit would still score high.
    """
    from vault_cortex.recall.brief import reminder
    from vault_cortex.recall.pack import fit_in_order
    from vault_cortex.recall.request import RecallRequest
    from vault_cortex.recall.second_look import fresh_and_shown, widened

    state = SessionState(cx.root, str(payload.get("session_id") or ""))
    shown, gate = frozenset(state.paths), cx.push_gate()
    hits = cx.recall(RecallRequest(query=query, gate=True), exclude=frozenset(state.captured),
                     shown=frozenset() if remind else shown, push=widened(gate, shown) if remind else gate).hits
    hits, again = fresh_and_shown(hits, shown, gate.threshold, gate.most) if remind else (hits, [])
    blocks = fit_in_order(((h.path, render_memory(h)) for h in hits),
                          cx.settings.hooks.prompt_budget_tokens - cx.embedder.count_tokens(header),
                          cx.embedder.count_tokens)
    state.add(blocks)
    lines = [*blocks.values(), *(reminder(remind, h.path) for h in again)]
    return "\n\n".join([header, *lines]) if lines else None


def _tool(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    """Habits whose `tool_patterns` match the tool call, each once per session."""
    tool = str(payload.get("tool_name") or "").strip()
    if not tool:
        return None
    tool_input = payload.get("tool_input")
    cx = open_cx()
    from vault_cortex.identity.habits import render

    found = cx.habits_for_context("", tool=tool, tool_input=tool_input if isinstance(tool_input, dict) else None)
    state = SessionState(cx.root, str(payload.get("session_id") or ""))
    fresh = [h for h in found.habits if h.tool_pattern and h.path not in state]
    if not fresh:
        return None
    state.add(h.path for h in fresh)
    return "\n".join([TOOL_HEADER.format(tool=tool), *(render(h.title, h.text) for h in fresh)])


def _tool_result(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    """When a tool that ran reports a failure in its output (a test runner's summary), the memories about it."""
    tool = str(payload.get("tool_name") or "").strip()
    return _failure_push(open_cx, payload, tool, failure_query(payload.get("tool_response"), tool))


def _tool_failure(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    """When a tool call fails (PostToolUseFailure: a command exiting non-zero), the memories about its `error`;
    an interrupt (the user stopped it) is not a failure."""
    if payload.get("is_interrupt") is True:
        return None
    tool = str(payload.get("tool_name") or "").strip()
    return _failure_push(open_cx, payload, tool, error_query(payload.get("error"), tool))


def _failure_push(open_cx: OpenCortex, payload: Mapping[str, Any], tool: str, query: str | None) -> str | None:
    """The memories the push gate passes for what failed (earlier fixes), each once per session."""
    if query is None:
        return None  # the vault is not even opened for a tool call that went well
    cx = open_cx()
    return push(cx, query, payload, TOOL_RESULT_HEADER.format(tool=tool or "tool", failure=query[:120]), FIX_IN)


def _stop(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    """A second look before the answer: memories not shown in this session that bear on the answer (and the
    prompt it answers), when the gate is confident; never twice in a row (Claude Code marks the stop that
    follows a block with `stop_hook_active`)."""
    from vault_cortex.recall import second_look
    from vault_cortex.recall.request import RecallRequest

    answer = str(payload.get("last_assistant_message") or "").strip()
    if payload.get("stop_hook_active") or len(answer) < MIN_PROMPT_CHARS:
        return None
    cx = open_cx()
    if not cx.settings.hooks.second_look:
        return None
    from vault_cortex.importers.transcript import last_prompt

    # none, or captures turned off (the transcripts are not read then): the answer alone is judged
    named = str(payload.get("transcript_path") or "") if cx.settings.capture.enabled else ""
    prompt = last_prompt(transcript(cx.settings.hooks.transcript_dirs, named)) if named else ""
    query = second_look.query(answer, prompt, cx.settings.recall.max_query_chars)
    state = SessionState(cx.root, str(payload.get("session_id") or ""))
    look, seen = second_look.gate_settings(cx.push_gate(), cx.model.gate.second_look), frozenset(state.paths)
    hits = cx.recall(RecallRequest(query=query, gate=True), exclude=frozenset(state.captured),
                     push=second_look.widened(look, seen)).hits  # the shown ones too: one may contradict the answer
    fresh, shown = second_look.chosen(hits, seen, answer, look.threshold)
    if not fresh and not shown:
        return None
    state.add(h.path for h in fresh)
    return second_look.reason(fresh, answer, str(cx.root), shown)


def capture(cx: Cortex, payload: Mapping[str, Any]) -> str | None:
    """Import the session's transcript into the `[capture]` folder (`raw/`), one note per exchange, with what the
    settings keep; the summary goes to stderr only. Captures turned off (or keeping nothing): the transcript is not
    even read.

    Only files: the running server's watcher (or the next sync) indexes the notes. Importing again adds
    nothing; a transcript that grew adds its new exchanges and refreshes its last one (see importers/capture).
    """
    from vault_cortex.importers.capture import capture_transcript, session_name

    keep = cx.settings.capture
    if not keep.on:
        print("vault-cortex: session not captured ([capture] " + ("enabled = false" if not keep.enabled else
              "keeps no prompts, answers or tools") + ")", file=sys.stderr)
        return None
    file = transcript(cx.settings.hooks.transcript_dirs, str(payload.get("transcript_path") or ""))
    project = Path(str(payload.get("cwd") or "")).name or None
    with cx.vault.change("capture", index=False) as tx:  # the running server's watcher indexes them
        done = capture_transcript(tx, file, default_session=session_name(file, project), keep=keep)
    state = SessionState(cx.root, str(payload.get("session_id") or ""))
    state.captured_too(done.created + done.updated + done.unchanged + done.kept)  # never pushed back to it
    left = "".join(f", {v} {k}" for k, v in done.counts.items() if k != "exchanges")
    print(f"vault-cortex: session {done.session!r} captured: {len(done.created)} new, {len(done.updated)} updated, "
          f"{len(done.unchanged)} unchanged, {len(done.kept)} kept raw notes{left}", file=sys.stderr)
    return None


def transcript(dirs: Iterable[str], named: str) -> Path:
    """The transcript a hook input names, when it is in the agent's own transcript folder (`[hooks]
    transcript_dirs`); InvalidRequest else. The server and the hook command both decide here; the file is opened
    by `open_transcript` (a regular file only, without waiting)."""
    return allowed_transcript(named, transcript_folders(dirs, os.environ))


def allowed_transcript(named: str, folders: Iterable[Path]) -> Path:
    """`named` with its folders resolved, when it is a `.jsonl` file inside one of `folders`; InvalidRequest else
    (a request names nothing outside the vault but the agent's own transcripts)."""
    from vault_cortex.errors import InvalidRequest
    from vault_cortex.importers.transcript import transcript_file

    if not named:
        raise InvalidRequest("the hook input names no transcript_path (expected the session's .jsonl)")
    if Path(named).suffix != ".jsonl":
        raise InvalidRequest(f"transcript_path must name the session's .jsonl transcript, not {named!r}")
    if not Path(named).expanduser().is_absolute():
        raise InvalidRequest(f"transcript_path must be an absolute path, not {named!r}")
    file = transcript_file(named)
    folders = list(folders)
    if not any(file.is_relative_to(folder) for folder in folders):
        where = ", ".join(str(f) for f in folders) or "none"
        raise InvalidRequest(f"transcript_path {named!r} is not in the agent's transcript folder ({where}); "
                             "a hook reads transcripts only there ([hooks] transcript_dirs names others)")
    return file


def _capture(open_cx: OpenCortex, payload: Mapping[str, Any]) -> str | None:
    return capture(open_cx(), payload)


class HookEvent(NamedTuple):
    """One hook event, everything about it in one place."""

    name: str  # the command's event: `vault-cortex hook NAME`, the route /v1/hooks/NAME
    claude: str  # Claude Code's name for it, the `hookEventName` of the output
    run: Callable[[OpenCortex, Mapping[str, Any]], str | None]  # the core's step
    timeout: float  # how long the command waits for the server's (or the socket's) answer


EVENTS = {e.name: e for e in (
    HookEvent("session-start", "SessionStart", _session_start, 30.0),
    HookEvent("prompt", "UserPromptSubmit", _prompt, 10.0),
    HookEvent("tool", "PreToolUse", _tool, 5.0),
    HookEvent("tool-result", "PostToolUse", _tool_result, 5.0),
    HookEvent("tool-failure", "PostToolUseFailure", _tool_failure, 5.0),
    HookEvent("stop", "Stop", _stop, 5.0),
    HookEvent("session-end", "SessionEnd", _capture, 30.0),
    HookEvent("pre-compact", "PreCompact", _capture, 30.0),
)}
HOOK_EVENTS = tuple(EVENTS)
EVENT_NAMES = {e.name: e.claude for e in EVENTS.values()}  # the command's event → Claude Code's


PROMPT_HEADER = ("Memories (vault-cortex) that may bear on this prompt, best first (the vault-cortex MCP tool note "
                 "reads a whole one):")


TOOL_HEADER = "Habits from the vault (vault-cortex) for this {tool} call:"
TOOL_RESULT_HEADER = "Memories (vault-cortex) about this {tool} failure ({failure}), best first:"
FIX_IN = "The fix may be in"  # a failure's reminder of a memory shown earlier


def render_memory(hit: Hit) -> str:
    """One pushed memory in the one text form (recall/brief.py): its path, why in words, the passage that bears."""
    from vault_cortex.recall.brief import in_words, item

    return item(hit.path, in_words(hit.push_why, hit.reason), hit.snippet)


def clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """Cut at a line boundary to stay well under what Claude Code keeps whole."""
    if len(text) <= limit:
        return text
    marker = "\n… (cut to fit the hook's size limit)"
    cut = text.rfind("\n", 0, limit - len(marker))
    return text[: cut if cut > 0 else limit - len(marker)] + marker


# -- the command: stdin → server or vault → stdout ---------------------------------------------------------
def main(event: str, vault: str | None, url: str | None, *, stdin: IO[str] | None = None,
         stdout: IO[str] | None = None, env: Mapping[str, str] | None = None, agent: str = DEFAULT) -> int:
    """Run one hook of the client `agent` (server/clients.py maps it onto the core); always returns 0 and writes
    valid JSON or nothing."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    env = os.environ if env is None else env
    try:
        payload = read_payload(stdin)
        where = vault or env.get(VAULT_ENV), url or env.get(URL_ENV)
        out = run(client(agent), event, payload, lambda core, p: dispatch(core, dict(p), *where, env), env)
        if out:
            stdout.write(json.dumps(out) + "\n")
            stdout.flush()
    except Exception as exc:  # noqa: BLE001 - a hook must never block the agent
        print(f"vault-cortex hook {event}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


def read_payload(stdin: IO[str]) -> dict[str, Any]:
    if stdin.isatty():
        return {}
    raw = stdin.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        raise ValueError("hook input larger than 1 MiB")
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input is not a JSON object")
    return data


def dispatch(event: str, payload: dict[str, Any], vault: str | None, url: str | None,
             env: Mapping[str, str]) -> dict[str, Any]:
    if event not in EVENTS:
        raise ValueError(f"unknown hook {event!r}")
    if not vault:
        raise ValueError(f"no vault: pass --vault or set ${VAULT_ENV}")
    root = Path(vault).expanduser()
    if not (root / ".cortex").is_dir():
        raise ValueError(f"{root} is not a vault (no .cortex/)")
    token = read_token(root, env)  # a capture too: the server has the library loaded, this process would import it
    for base in [url.rstrip("/")] if url else server_urls(root, env):
        if not token:  # no token yet: no server of this vault has run, and nothing could prove one
            break
        try:  # a listener that is not this vault's server (another vault's, another user's) gets nothing
            return post_hook(base, token, event, payload)
        except NotProven as exc:
            log.warning("%s did not prove it serves this vault (%s): nothing was sent to it", base, exc)
        except OSError as exc:  # nothing answers there (serve is not running): the common case, said quietly
            log.debug("no server at %s (%s)", base, exc)
        except Exception as exc:  # noqa: BLE001 - fall back to the next candidate, then the vault itself
            log.warning("server at %s failed (%s)", base, exc)
    for path in live_sockets(root, env):  # a stdio MCP server Claude Code started: the model is loaded there
        try:
            return ask(path, event, payload, EVENTS[event].timeout)
        except (OSError, ValueError) as exc:
            log.warning("MCP server at %s failed (%s)", path, exc)
    return run_direct(root, event, payload)


def answer(cx: Cortex, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A hook run by a process that holds the vault open (the stdio MCP server's socket)."""
    return run_hook(lambda: cx, event, payload)


def server_urls(root: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Where this vault's server may listen, most likely first: the URL its running `serve` recorded (only while
    that process lives), then the one the vault's settings give. A config that cannot be read leaves the recorded
    URL alone (that serve read it when it was whole), and raises its ConfigError when there is none."""
    recorded = recorded_url(root, None, env)
    try:
        configured = server_url(root, env)
    except ConfigError as exc:
        if recorded is None:
            raise
        log.warning("%s: only the running serve's address is tried", exc)
        return [recorded]
    return list(dict.fromkeys(u for u in (recorded, configured) if u))


def server_url(root: Path, env: Mapping[str, str] | None = None) -> str:
    """The URL the vault's `[server]` settings give (config.toml, then `VAULT_CORTEX_SERVER_*`, as `serve` reads
    them), a wildcard address reached on loopback; ConfigError when the settings cannot be read."""
    server = load_settings(root, env).server
    host = "127.0.0.1" if server.host in ("0.0.0.0", "::") else server.host
    return f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"


def post_hook(base: str, token: str, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The server's output for the hook, asked on a connection where the server first proved it holds `token`.

    Raises OSError when nothing answers, NotProven when the listener did not prove it (it was sent nothing)."""
    conn = proven_connection(base, token, HEALTH_TIMEOUT)
    with closing(conn):
        if conn.sock is not None:
            conn.sock.settimeout(EVENTS[event].timeout)
        path = urllib.parse.urlsplit(base).path.rstrip("/")
        try:
            conn.request("POST", f"{path}/v1/hooks/{event}", body=json.dumps(payload).encode(),
                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with conn.getresponse() as resp:
                status, raw = resp.status, resp.read()
        except OSError as exc:  # it answered the proof: a failure now is the server's, not a missing server
            raise ValueError(f"no answer to the hook ({exc})") from exc
    if status != 200:
        raise ValueError(f"the server answered HTTP {status}")
    out = json.loads(raw)
    if not isinstance(out, dict):
        raise ValueError("the server's hook output is not a JSON object")
    return out


def run_direct(root: Path, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Open the vault in this process (only if the hook needs it) and run the hook."""
    with ExitStack() as stack:
        opened: list[Cortex] = []

        def open_cx() -> Cortex:
            if not opened:
                from vault_cortex.cortex import Cortex

                opened.append(stack.enter_context(Cortex.open(root)))
            return opened[0]

        return run_hook(open_cx, event, payload)
