"""The real Codex CLI with what `vault-cortex install codex` writes — no `--dangerously-bypass-hook-trust`: the
installer's trust hashes must be the ones Codex computes — on a copy of the starter vault: what reaches the model is
read from the requests `codex exec` sent a scripted Responses API (tests/e2e/codex_cli.py).

From a project folder named after the vault's project, with no `serve` (the stdio MCP server Codex starts answers the
hooks on its socket once it is up; a hook that comes first opens the vault itself): (a) the start context, (b) a
prompt push, (c) the earlier fix after a failing command, (d) the session captured into raw/ at Stop, once, however
often Stop fires; (e) a second look that sends the agent back once, and only once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from codex_cli import (
    Reply,
    ResponsesAPI,
    Session,
    Text,
    exec_command,
    find_codex,
    hook_trust,
    hooks_list,
    messages,
    request_text,
    run_codex,
)
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

from server.install import is_ours
from vault_cortex.index.embed import Embedder

pytestmark = pytest.mark.slow

START = "## soul/Build things that last.md"  # in the start context of the starter vault's project
PROMPT_MARK = "Memories (vault-cortex) that may bear on this prompt"
FAILURE_MARK = "Memories (vault-cortex) about this Bash failure"


@pytest.fixture(scope="module")
def codex() -> Path:
    return find_codex()


@pytest.fixture
def vault(synced_template: Path, tmp_path: Path, embedder: Embedder) -> Path:
    """The synced starter vault plus the note about the earlier fix, indexed."""
    return scenario_vault(synced_template, tmp_path / "vault", embedder)


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_CORTEX_", "CODEX_"))}
    return {**env, "HOME": str(home), "CODEX_HOME": str(home / ".codex")}


def vault_cortex(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`vault-cortex ARGS` as the user whose HOME is `home` runs it."""
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=180, env=user_env(home))


def start(work: Path, vault: Path) -> tuple[Path, Path]:
    """A HOME and in it the project folder (named after the vault's project) with vault-cortex installed for it."""
    home = work / "home"
    project = home / PROJECT
    project.mkdir(parents=True)
    done = vault_cortex(home, "install", "codex", "--vault", str(vault), "--scope", "project", "--project",
                        str(project))
    assert done.returncode == 0, done.stderr
    return project, home


@dataclass
class Run:
    """A finished `codex exec`: what the API logged, and the session."""

    api: ResponsesAPI
    session: Session

    def requests(self) -> list[dict[str, object]]:
        return self.api.main_requests()

    def developer(self, n: int) -> list[str]:
        """The developer messages of the n-th main request (hook context lands there)."""
        return messages(self.requests()[n], "developer")


def session(codex: Path, project: Path, home: Path, prompt: str, script: list[Reply], *extra: str) -> Run:
    """One `codex exec` against a scripted API; it must exit 0 with no hook failing."""
    with ResponsesAPI(script) as api:
        done = run_codex(codex, api, project, home, prompt, extra=extra)
    assert done.done.returncode == 0, done.done.stderr
    assert "hook" not in done.done.stderr.lower() or "failed" not in done.done.stderr.lower(), done.done.stderr
    return Run(api=api, session=done)


def test_the_memory_loop_in_codex(codex: Path, vault: Path, tmp_path: Path) -> None:
    """(a)–(d): the start context, the prompt push and the earlier fix after the failing command reach the model as
    developer messages; Stop captured the session into raw/ once; a resumed session adds its exchange, no copy."""
    project, home = start(tmp_path, vault)
    run = session(codex, project, home, PROMPT, [exec_command(FAILING), Text(ANSWER)])
    first = run.developer(0)
    # (a) the start context, about the project
    (context,) = [m for m in first if START in m]
    assert PROJECT in context
    # (b) the prompt push: a memory the start context lacks, right after the prompt
    (pushed,) = [m for m in first if m.startswith(PROMPT_MARK)]
    assert f"## {PUSHED}" in pushed and PUSHED.removesuffix(".md") not in context
    # (c) the failing command: the earlier fix reaches the model in the next request, before the output
    after = run.requests()[1]
    (failure,) = [m for m in messages(after, "developer") if m.startswith(FAILURE_MARK)]
    assert f"## {FIX}" in failure
    assert "database is locked" in request_text(after)
    # (d) Stop captured the exchange into raw/, once
    captured = raw_notes(vault)
    assert len([p for p, text in captured.items() if PROMPT in text]) == 1, captured
    (note,) = [text for text in captured.values() if PROMPT in text]
    assert ANSWER in note and "exec_command" in note and "environment_context" not in note
    # ... and a resumed session keeps every note and duplicates none
    (rollout,) = run.session.transcripts()
    session_id = rollout.stem[-36:]
    again = session(codex, project, home, "Thanks, and what about the WAL checkpoints?",
                    [Text("Checkpoint after the report's read ends; keep reads short so the WAL can be reset.")],
                    "resume", session_id)
    assert again.requests(), "the resumed session reached the model"
    now = raw_notes(vault)
    assert {p: p in now for p in captured} == dict.fromkeys(captured, True)
    assert len([p for p, text in now.items() if PROMPT in text]) == 1, now
    assert any("WAL checkpoints" in text for text in now.values()), now


def test_a_second_look_sends_codex_back_once(codex: Path, vault: Path, tmp_path: Path) -> None:
    """(e) An answer composed without a tool call meets memory: Stop blocks once, its reason (the memory that bears
    on the answer) comes back as a user message; the Stop after it (stop_hook_active) lets the revision end."""
    project, home = start(tmp_path, vault)
    run = session(codex, project, home, SHORT_PROMPT, [Text(COMPOSED), Text(REVISED)])
    requests = run.requests()
    assert not [m for m in run.developer(0) if m.startswith(PROMPT_MARK)]  # nothing pushed on the short prompt
    assert SECOND_LOOK.removesuffix(".md") not in request_text(requests[0])
    assert len(requests) == 2, json.dumps(requests[-1])[-3000:]  # blocked once, then the revision ended the turn
    reason = messages(requests[1], "user")[-1]
    assert reason.startswith("<hook_prompt") and SECOND_LOOK in reason and "Before you finish" in reason
    assert messages(requests[1], "assistant") == [COMPOSED]
    assert run.session.done.stdout.strip() == REVISED


def test_the_installed_hooks_are_trusted_as_codex_computes_it(codex: Path, vault: Path, tmp_path: Path) -> None:
    """`codex app-server`'s hooks/list: every hook the installer wrote, user and project scope, is "trusted", with the
    hash it wrote; after uninstall none of them is listed."""
    project, home = start(tmp_path, vault)
    assert vault_cortex(home, "install", "codex", "--vault", str(vault), "--no-index").returncode == 0
    listed = {h["key"]: h for h in hooks_list(codex, home, project)}
    for hooks_file in (home / ".codex" / "hooks.json", project / ".codex" / "hooks.json"):
        ours = hook_trust(hooks_file, json.loads(hooks_file.read_text())["hooks"], is_ours)
        assert len(ours) == 5 and set(ours) <= set(listed), sorted(listed)
        assert {k: (listed[k]["currentHash"], listed[k]["trustStatus"]) for k in ours} == {
            k: (digest, "trusted") for k, digest in ours.items()}
    for scope in ("user", "project"):
        assert vault_cortex(home, "uninstall", "codex", "--scope", scope, "--project", str(project)).returncode == 0
    assert hooks_list(codex, home, project) == []
