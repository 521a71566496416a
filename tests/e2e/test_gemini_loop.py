"""The real Gemini CLI with what `vault-cortex install gemini --scope project` writes, on a copy of the starter vault
served by a real `vault-cortex serve` (the same user: the same HOME): what reaches the model is read from the requests
`gemini -p` sent a scripted Gemini API (tests/e2e/gemini_cli.py); the scenario is every client's
(tests/e2e/memory_loop.py).

From a project folder named after the vault's project: (a) the start context, (b) a prompt push, (c) the earlier fix
after a failing shell command (a tool *success* whose output ends `Exit Code: 1`), (d) the session captured into raw/
at SessionEnd, once; (e) a second look at AfterAgent that sends the agent back once, and only once, with no prompt
push on its own reason, and the reason kept out of the capture.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from gemini_cli import GeminiAPI, Reply, Session, Text, find_gemini, parts_text, run_gemini, shell
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

from server.serve_lock import recorded_url
from vault_cortex.index.embed import Embedder

pytestmark = pytest.mark.slow

START = "## soul/Build things that last.md"  # in the start context of the starter vault's project
PROMPT_MARK = "<hook_context>Memories (vault-cortex) that may bear on this prompt"
FAILURE_MARK = "<hook_context>Memories (vault-cortex) about this run_shell_command failure"
REASON = "Before you finish"


@pytest.fixture(scope="module")
def gemini() -> Path:
    return find_gemini()


@pytest.fixture
def vault(synced_template: Path, tmp_path: Path, embedder: Embedder) -> Path:
    """The synced starter vault plus the note about the earlier fix, indexed."""
    return scenario_vault(synced_template, tmp_path / "vault", embedder)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_CORTEX_", "GEMINI_"))}
    return {**env, "HOME": str(home)}


@pytest.fixture
def served(vault: Path, home: Path) -> Iterator[Path]:
    """`vault-cortex serve --verbose` on the vault, on a free port, run by the user whose HOME is `home`; its log."""
    log = vault.parent / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "--verbose", "serve", "--vault", str(vault),
                                 "--port", str(free_port())], cwd=REPO, env=user_env(home), stdout=err, stderr=err)
    try:
        assert wait_for(lambda: recorded_url(vault) is not None or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, log.read_text()
        assert wait_for(lambda: "watching for changes" in log.read_text(), timeout=180), log.read_text()
        yield log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def start(home: Path, vault: Path) -> Path:
    """The project folder (named after the vault's project) in `home`, with vault-cortex installed for it."""
    project = home / PROJECT
    project.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "server.cli", "install", "gemini", "--vault", str(vault), "--scope",
                           "project", "--project", str(project)], capture_output=True, text=True, cwd=REPO,
                          timeout=180, env=user_env(home))
    assert done.returncode == 0, done.stderr
    assert "transcript_dirs" not in done.stderr  # the starter config names Gemini's chat logs
    return project


@dataclass
class Run:
    """A finished `gemini -p`: what the API logged, and the session."""

    api: GeminiAPI
    session: Session

    def requests(self) -> list[list[str]]:
        """The texts of each main-loop request, in order (function responses as JSON)."""
        return [parts_text(body) for body in self.api.main_requests()]


def session(gemini: Path, project: Path, home: Path, prompt: str, script: list[Reply]) -> Run:
    """One `gemini -p` against a scripted API; it must exit 0 with no hook failing."""
    with GeminiAPI(script) as api:
        done = run_gemini(gemini, api, project, home, prompt)
    assert done.done.returncode == 0, done.done.stderr
    assert "vault-cortex hook" not in done.done.stderr, done.done.stderr
    return Run(api=api, session=done)


def test_the_memory_loop_in_gemini(gemini: Path, vault: Path, home: Path, served: Path) -> None:
    """(a)–(d): the start context, the prompt push and the earlier fix after the failing command reach the model
    inside `<hook_context>`; the hooks asked the running server; SessionEnd captured the session into raw/ once."""
    project = start(home, vault)
    run = session(gemini, project, home, PROMPT, [shell(FAILING), Text(ANSWER)])
    first, after = run.requests()[:2]
    # (a) the start context, about the project, in front of the prompt
    (context,) = [t for t in first if START in t]
    assert context.startswith("<hook_context>") and PROJECT in context and context.endswith(f"\n\n{PROMPT}")
    # (b) the prompt push: a memory the start context lacks, a part of its own after the prompt
    (pushed,) = [t for t in first if t.startswith(PROMPT_MARK)]
    assert f"## {PUSHED}" in pushed and PUSHED.removesuffix(".md") not in context
    # (c) the failing command: the earlier fix is appended to the command's output in the next request
    (output,) = [t for t in after if "database is locked" in t and "Exit Code: 1" in t]
    assert FAILURE_MARK in output and f"## {FIX}" in output
    served_log = served.read_text()
    for event in ("session-start", "prompt", "tool-result", "stop"):
        assert f'"POST /v1/hooks/{event} HTTP/1.1" 200' in served_log, served_log[-3000:]
    # (d) SessionEnd captured the exchange into raw/, once
    captured = raw_notes(vault)
    assert len([p for p, text in captured.items() if PROMPT in text]) == 1, captured
    (note,) = [text for text in captured.values() if PROMPT in text]
    assert ANSWER in note and "run_shell_command" in note
    assert "hook_context" not in note and "session_context" not in note


def test_a_second_look_sends_gemini_back_once(gemini: Path, vault: Path, home: Path, served: Path) -> None:
    """(e) An answer composed without a tool call meets memory: AfterAgent blocks once, its reason (the memory that
    bears on the answer) comes back as the next user turn with nothing pushed for it; the AfterAgent after it
    (stop_hook_active) lets the revision end. The capture keeps one exchange, without the reason."""
    project = start(home, vault)
    run = session(gemini, project, home, SHORT_PROMPT, [Text(COMPOSED), Text(REVISED)])
    requests = run.requests()
    assert not [t for t in requests[0] if t.startswith(PROMPT_MARK)]  # nothing pushed on the short prompt
    assert SECOND_LOOK.removesuffix(".md") not in "\n".join(requests[0])
    assert len(requests) == 2, requests[-1][-3:]  # blocked once, then the revision ended the turn
    assert requests[1][-2] == COMPOSED  # the composed answer the memory bears on, then the reason after it
    reason = requests[1][-1]
    assert reason.startswith(REASON) and SECOND_LOOK in reason
    assert run.session.done.stdout.strip().endswith(REVISED)
    captured = raw_notes(vault)
    assert len([p for p, text in captured.items() if REVISED in text]) == 1, captured
    assert not any(REASON in text for text in captured.values()), captured
