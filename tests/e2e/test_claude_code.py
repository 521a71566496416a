"""The real Claude Code CLI with the hooks and MCP entry `vault-cortex install claude-code` writes: what reaches
the model is read from the requests it sent to a scripted Messages API (tests/e2e/claude_code.py).

A session on a copy of the starter vault (plus a note about an earlier fix of a locked database), from a project
folder named after its project: (a) the start context, (b) a prompt push of a memory the start context lacks,
(c) the earlier fix after a failing Bash call, (d) the session captured into raw/, once, however often it ends.
Run twice: with no serve (the stdio MCP server answers the hooks on its socket once it is up; before that, a
hook opens the vault itself), and with `vault-cortex serve` on a port
the config does not name (the hooks find it where serve recorded its URL; MCP over HTTP with the token from the
environment). A scenario is a script of replies and checks on the logged requests. (e) The Stop hook's second look
(the last test): `session(claude, project, home, QUESTION, [Text(COMPOSED_ANSWER), Text(REVISED)])`; a blocked stop
sends Claude Code back to the API with a user turn "Stop hook feedback:\n<reason>", so `run.texts()[1]` holds the
reason and the memories it names, and with no block there is no second request.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from claude_code import MessagesAPI, Reply, Session, Text, bash, find_claude, request_text, run_claude
from harness import free_port, wait_for
from memory_loop import (
    ANSWER,
    COMPOSED,
    FAILING,
    FIX,
    PROJECT,
    PROMPT,
    PUSHED,
    REPO,
    REVISED,
    SECOND_LOOK,
    SHORT_PROMPT,
    raw_notes,
    scenario_vault,
)

from server.bearer import TOKEN_ENV, read_token
from server.serve_lock import recorded_url
from vault_cortex.index.embed import Embedder

pytestmark = pytest.mark.slow

START_MARK = "SessionStart hook additional context"
PROMPT_MARK = "UserPromptSubmit hook additional context"
FAILURE_MARK = "Memories (vault-cortex) about this Bash failure"
UNSTUCK = "I am stuck on this bug, how do I usually get unstuck?"


@pytest.fixture(scope="module")
def claude() -> Path:
    return find_claude()


@pytest.fixture
def vault(synced_template: Path, tmp_path: Path, embedder: Embedder) -> Path:
    """The synced starter vault plus the note about the earlier fix, indexed."""
    return scenario_vault(synced_template, tmp_path / "vault", embedder)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}


def install(vault: Path, project: Path, *extra: str) -> None:
    """`vault-cortex install claude-code --scope project`, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "server.cli", "install", "claude-code", "--vault", str(vault),
                           "--scope", "project", "--project", str(project), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=120, env=clean_env())
    assert done.returncode == 0, done.stderr


@dataclass
class Run:
    """A finished `claude -p` session: what the API logged, and where it ran."""

    api: MessagesAPI
    session: Session

    def texts(self) -> list[str]:
        """What each of the main loop's requests showed the model, in order."""
        return [request_text(b) for b in self.api.main_requests()]

    def session_id(self) -> str:
        transcripts = list((self.session.home / ".claude" / "projects").rglob("*.jsonl"))
        assert len(transcripts) == 1, transcripts
        return transcripts[0].stem


def session(claude: Path, project: Path, home: Path, prompt: str, script: list[Reply], *extra: str,
            env: dict[str, str] | None = None) -> Run:
    """One `claude -p` run against a scripted API; it must exit 0."""
    with MessagesAPI(script) as api:
        done = run_claude(claude, api, project, home, prompt, extra=extra, env=env)
    assert done.done.returncode == 0, done.done.stderr
    assert "Hook cancelled" not in done.done.stderr and "hook error" not in done.done.stderr.lower(), done.done.stderr
    return Run(api=api, session=done)


def start(work: Path, vault: Path, *install_extra: str) -> tuple[Path, Path]:
    """The project folder (named after the vault's project) with vault-cortex installed, and a HOME of its own
    where the user has said yes to the project's MCP servers."""
    project = work / PROJECT
    project.mkdir(parents=True)
    install(vault, project, *install_extra)
    home = work / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    return project, home


def check_the_loop(claude: Path, vault: Path, project: Path, home: Path, env: dict[str, str] | None = None) -> Run:
    """(a)–(d) on one session and its resumption; returns the first run."""
    run = session(claude, project, home, PROMPT, [bash(FAILING), Text(ANSWER)], env=env)
    texts = run.texts()
    assert len(texts) >= 2, [b.get("messages") for b in run.api.main_requests()]  # a third: a second look
    first = texts[0]
    # (a) the start context, about the project, delivered as Claude Code delivers hook context
    assert START_MARK in first and PROMPT_MARK in first
    start_context = first.split(START_MARK, 1)[1].split(PROMPT_MARK, 1)[0]
    assert "## soul/Build things that last.md" in start_context and PROJECT in start_context
    # (b) the prompt push: a memory the start context lacks
    pushed = first.split(PROMPT_MARK, 1)[1]
    assert f"## {PUSHED}" in pushed and PUSHED.removesuffix(".md") not in start_context
    # (c) the failing Bash call: its error and the earlier fix reach the model in the next request
    after = texts[1]
    assert "Exit code 1\nsqlite3.OperationalError: database is locked" in after
    assert FAILURE_MARK in after, after[-4000:]
    assert f"## {FIX}" in after.split(FAILURE_MARK, 1)[1]
    assert "busy_timeout=5000" in after.split(FAILURE_MARK, 1)[1]  # the fix itself, inside the pushed passage
    # (d) SessionEnd captured the exchange into raw/
    captured = raw_notes(vault)
    assert [p for p, text in captured.items() if PROMPT in text], captured
    # ... and once: resuming the session and ending it again keeps every note and duplicates none
    session(claude, project, home, "Thanks, and what about the WAL checkpoints?",
            [Text("Checkpoint after the report's read ends; keep reads short so the WAL can be reset.")],
            "--resume", run.session_id(), env=env)
    again = raw_notes(vault)
    assert {p: again.get(p) is not None for p in captured} == dict.fromkeys(captured, True)
    assert len([p for p, text in again.items() if PROMPT in text]) == 1, again
    assert any("WAL checkpoints" in text for text in again.values())
    return run


def test_what_reaches_the_model_with_the_hooks_opening_the_vault(claude: Path, vault: Path, tmp_path: Path) -> None:
    """No serve: the MCP server is the stdio one Claude Code starts; it answers the hooks on its socket once it is up
    (tests/e2e/test_hook_socket.py), and a hook that comes first opens the vault itself."""
    project, home = start(tmp_path, vault)
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-cortex"]["type"] == "stdio"
    run = check_the_loop(claude, vault, project, home)
    # the stdio MCP server answered Claude Code in time: its tools are offered to the model from the first request
    # (Claude Code does not wait for its MCP servers in -p mode; the server lists its tools before opening the vault)
    assert "mcp__vault-cortex__recall" in json.dumps(run.api.main_requests()[0])


def test_the_first_session_on_a_new_vault_gets_its_start_context_and_a_push(claude: Path, tmp_path: Path) -> None:
    """`init`, `install`, then the first session, no server: the hooks open an index, they never build one (a hook
    must answer within a second), so install builds it; before, that session got no start context and no push."""
    vault = tmp_path / "vault"
    done = subprocess.run([sys.executable, "-m", "server.cli", "init", str(vault)], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=clean_env())
    assert done.returncode == 0, done.stderr
    project, home = start(tmp_path, vault)
    # at the default budget the start context holds the project's notes (the commit conventions too): the prompt
    # asks for a memory of no project
    first = session(claude, project, home, UNSTUCK, [Text(ANSWER)]).texts()[0]
    assert START_MARK in first and PROMPT_MARK in first, first[-3000:]
    start_context = first.split(START_MARK, 1)[1].split(PROMPT_MARK, 1)[0]
    assert "## soul/Build things that last.md" in start_context
    assert "## personality/How I get unstuck.md" in first.split(PROMPT_MARK, 1)[1]


@pytest.fixture
def served(vault: Path) -> Iterator[tuple[str, str]]:
    """`vault-cortex serve --verbose` on a free port the vault's config does not name; (its URL, its log file)."""
    port = free_port()
    log = vault.parent / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "--verbose", "serve", "--vault", str(vault),
                                 "--port", str(port)], cwd=REPO, env=clean_env(), stdout=err,
                                stderr=err)
    try:
        assert wait_for(lambda: recorded_url(vault) is not None or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, log.read_text()
        assert wait_for(lambda: "watching for changes" in log.read_text(), timeout=180), log.read_text()
        yield f"http://127.0.0.1:{port}", str(log)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_what_reaches_the_model_with_serve_on_another_port(claude: Path, vault: Path, tmp_path: Path,
                                                           served: tuple[str, str]) -> None:
    """The hooks post to the running server, found where it recorded its URL (the config names port 8765), and
    the MCP entry `--transport http` writes reaches it with the token Claude Code expands from the environment."""
    url, log_file = served
    assert recorded_url(vault) == url and not url.endswith(":8765")
    project, home = start(tmp_path / "work", vault, "--transport", "http")
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vault-cortex"]
    assert entry == {"type": "http", "url": f"{url}/mcp", "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}
    token = read_token(vault, {})
    assert token and token not in (project / ".mcp.json").read_text()
    run = check_the_loop(claude, vault, project, home, env={TOKEN_ENV: token})
    served_log = Path(log_file).read_text()
    for event in ("session-start", "prompt", "tool-failure"):
        assert f'"POST /v1/hooks/{event} HTTP/1.1" 200' in served_log, served_log[-3000:]
    # MCP over streamable HTTP: uvicorn logs the mount's own path (`/`) or, in newer releases, the full one
    assert re.search(r'"POST /(?:mcp)? HTTP/1\.1" 200', served_log), served_log[-3000:]
    assert "mcp__vault-cortex__recall" in "\n".join(json.dumps(b) for b in run.api.main_requests())


STOP_MARK = "Stop hook feedback"


def test_a_second_look_reaches_the_model_before_its_composed_answer_is_final(claude: Path, vault: Path,
                                                                              tmp_path: Path) -> None:
    """(e) An answer composed without a tool call meets memory: the Stop hook blocks once, and the next request the
    model gets holds the memory that bears on the answer; the stop after it (stop_hook_active) is not blocked."""
    project, home = start(tmp_path, vault)
    run = session(claude, project, home, SHORT_PROMPT, [Text(COMPOSED), Text(REVISED)])
    texts = run.texts()
    assert PROMPT_MARK not in texts[0]  # nothing pushed on the prompt: the start context and the answer are all
    assert SECOND_LOOK.removesuffix(".md") not in texts[0]  # the start context lacks it
    assert len(texts) == 2, texts[-1][-3000:]  # blocked once, then the revised answer ended the turn
    feedback = texts[1].split(STOP_MARK, 1)
    assert len(feedback) == 2, texts[1][-3000:]
    assert SECOND_LOOK in feedback[1] and "Before you finish" in feedback[1]
    assert "43 days" in feedback[1]  # the fact that contradicts the answer, inside the passage
    assert COMPOSED in texts[1]  # the composed answer the memory bears on, then the reason after it
    assert run.session.done.stdout.strip().endswith(REVISED)
