"""The Codex CLI adapter (server/clients.py) on the payloads Codex 0.171 really sent (tests/fixtures/codex/): each
event runs the core's steps with a payload the core reads, the output comes back in Codex's shape, a PostToolUse
gets the exit code the rollout recorded; and the rollout itself read as exchanges (importers/codex_rollout.py) and
captured through the hook command into raw/, once."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from server import clients, hooks
from server.tool_output import failure_query
from vault_cortex.config import HooksSettings
from vault_cortex.importers.codex_rollout import iter_rollout
from vault_cortex.importers.transcript import last_prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
ROLLOUT = "2026/01/01/rollout-2026-01-01T00-00-00-00000000-0000-0000-0000-000000000001.jsonl"
EVENTS = {"session-start": "session-start.json", "prompt": "prompt.json", "tool": "pre-tool.json",
          "tool-result": "post-tool.json", "stop": "stop.json"}
CONTEXT = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "memories"}}
DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook command opens the vault itself


def fixture(name: str, home: Path | None = None) -> dict[str, Any]:
    """A saved payload; with `home`, its /home/me paths moved there."""
    text = (FIXTURES / name).read_text()
    return json.loads(text.replace("/home/me", str(home)) if home else text)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME whose ~/.codex/sessions holds the saved rollout where the payloads name it."""
    home = tmp_path / "home"
    dest = home / ".codex" / "sessions" / ROLLOUT
    dest.parent.mkdir(parents=True)
    dest.write_text((FIXTURES / "rollout.jsonl").read_text().replace("/home/me", str(home)))
    return home


class Steps:
    """A stand-in for the dispatch: records each core step and answers with a given output."""

    def __init__(self, answers: dict[str, dict[str, Any]] | None = None, fail: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.answers, self.fail = answers or {}, fail

    def __call__(self, event: str, payload: Any) -> dict[str, Any]:
        self.calls.append((event, dict(payload)))
        if event == self.fail:
            raise ValueError("the transcript is not in the agent's transcript folder")
        return self.answers.get(event, {})


def test_each_codex_event_runs_the_core_steps_it_maps_to(home: Path) -> None:
    """SessionStart, UserPromptSubmit, PreToolUse, PostToolUse map one to one; Stop captures, then takes its second
    look (so the notes just captured are never pushed back); the payloads reach the core with Codex's fields."""
    env = {"HOME": str(home)}
    for event, name in EVENTS.items():
        steps = Steps()
        assert clients.run(clients.CODEX, event, fixture(name, home), steps, env) == {}
        assert [e for e, _ in steps.calls] == (["session-end", "stop"] if event == "stop" else [event])
        payload = steps.calls[-1][1]
        assert payload["session_id"] == "00000000-0000-0000-0000-000000000001"
    assert set(clients.CODEX.hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    assert {h.event for h in clients.CODEX.hooks.values()} <= set(hooks.HOOK_EVENTS)


def test_a_codex_post_tool_use_gets_the_exit_code_its_rollout_recorded(home: Path, tmp_path: Path) -> None:
    """Codex's PostToolUse has the output and no exit code: the command's `item_completed` record in the rollout
    (written before the hook runs) has it, so `ls /nonexistent` is a failure (exit 2) and becomes a recall query,
    where its output alone (no `Error:` line) said nothing. A rollout outside Codex's folder is not read."""
    payload = fixture("post-tool.json", home)
    assert failure_query(payload["tool_response"], "Bash") is None  # the text alone: no failure seen
    steps = Steps()
    clients.run(clients.CODEX, "tool-result", payload, steps, {"HOME": str(home)})
    response = steps.calls[0][1]["tool_response"]
    assert response == {"output": "ls: cannot access '/nonexistent': No such file or directory\n", "exit_code": 2}
    assert failure_query(response, "Bash") == "ls: cannot access '/nonexistent': No such file or directory"
    elsewhere = tmp_path / "other" / "rollout.jsonl"
    elsewhere.parent.mkdir()
    shutil.copy(home / ".codex" / "sessions" / ROLLOUT, elsewhere)
    steps = Steps()
    clients.run(clients.CODEX, "tool-result", {**payload, "transcript_path": str(elsewhere)}, steps,
                {"HOME": str(home)})
    assert steps.calls[0][1]["tool_response"] == {"output": payload["tool_response"]}
    moved = {"HOME": str(tmp_path / "nobody"), "CODEX_HOME": str(home / ".codex")}  # $CODEX_HOME/sessions counts
    steps = Steps()
    clients.run(clients.CODEX, "tool-result", payload, steps, moved)
    assert steps.calls[0][1]["tool_response"]["exit_code"] == 2


def test_the_output_comes_back_in_codex_shape(home: Path) -> None:
    """Context under the event Codex sent; a block only at Stop (never `decision: block` on PostToolUse); a failed
    capture at Stop still leaves the second look its say."""
    env = {"HOME": str(home)}
    out = clients.run(clients.CODEX, "tool-result", fixture("post-tool.json", home),
                      Steps({"tool-result": {**CONTEXT, "decision": "block", "reason": "x"}}), env)
    assert out == CONTEXT
    block = {"decision": "block", "reason": "Before you finish, look at [[x]]."}
    steps = Steps({"stop": block}, fail="session-end")
    assert clients.run(clients.CODEX, "stop", fixture("stop.json", home), steps, env) == block
    assert [e for e, _ in steps.calls] == ["session-end", "stop"]
    out = clients.run(clients.CODEX, "session-start", fixture("session-start.json", home),
                      Steps({"session-start": {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                                      "additionalContext": "start"}}}), env)
    assert out == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "start"}}


def test_claude_code_commands_run_as_before() -> None:
    """No --client: Claude Code, each event its own core step and its own output (PostToolUseFailure too)."""
    steps = Steps({"tool-failure": {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                                           "additionalContext": "fix"}}})
    out = clients.run(clients.client(clients.DEFAULT), "tool-failure", {"error": "Exit code 1\nboom"}, steps, {})
    assert out["hookSpecificOutput"] == {"hookEventName": "PostToolUseFailure", "additionalContext": "fix"}
    assert steps.calls == [("tool-failure", {"error": "Exit code 1\nboom"})]
    with pytest.raises(ValueError, match="Codex CLI has no hook 'pre-compact'"):
        clients.run(clients.CODEX, "pre-compact", {}, Steps(), {})
    with pytest.raises(ValueError, match="unknown client 'cursor'"):
        clients.client("cursor")


def test_the_transcript_folders_cover_codex(tmp_path: Path) -> None:
    """By default the hooks read Codex's transcripts too (and under $CODEX_HOME when it is set); the setting still
    names the only folders (every client's: tests/integration/test_gemini_adapter.py)."""
    env = {"HOME": str(tmp_path)}
    assert tmp_path / ".codex" / "sessions" in hooks.transcript_folders(HooksSettings().transcript_dirs, env)
    assert hooks.transcript_folders([], {**env, "CODEX_HOME": str(tmp_path / "cx")}) == [tmp_path / "cx" / "sessions"]


def test_a_codex_rollout_reads_as_one_exchange() -> None:
    """The saved session: one prompt, both answers (the Stop hook's reason between them is Codex's, not the user's),
    the command as one line with the size of its output; the environment context and hook context left out."""
    lines, offset = [], 0
    for line in (FIXTURES / "rollout.jsonl").read_bytes().splitlines(True):
        lines.append((offset, line))
        offset += len(line)
    ((_, x),) = list(iter_rollout(lines))
    assert x.prompt == "Is the data folder there?"
    assert x.answer == "The folder /nonexistent does not exist.\n\nChecked once more: it is still missing."
    assert x.tools == ("*(tool: exec_command `ls /nonexistent` → 1 line of output)*",)
    assert x.output == "ls: cannot access '/nonexistent': No such file or directory\n"


def test_the_last_prompt_of_a_rollout(home: Path) -> None:
    """The second look reads the prompt its answer answers from the rollout's end, past the Stop hook's reason."""
    assert last_prompt(home / ".codex" / "sessions" / ROLLOUT) == "Is the data folder there?"


def small_vault(root: Path) -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text("")
    (root / "scientific").mkdir()
    (root / "scientific/Data folder.md").write_text("# Data folder\nThe data folder moved to /srv/data in March.\n")
    return root


def test_stop_captures_the_rollout_once_through_the_hook_command(home: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`vault-cortex hook stop --client codex` (no server): the session lands in raw/ as one note, named after the
    session's id (not `rollout-`); the next Stop of the same session (stop_hook_active) adds nothing."""
    monkeypatch.setenv("HOME", str(home))
    vault = small_vault(tmp_path / "vault")
    payload = fixture("stop.json", home)
    for again in (False, True):
        out = io.StringIO()
        assert hooks.main("stop", str(vault), DEAD_URL, stdin=io.StringIO(json.dumps(
            {**payload, "stop_hook_active": again})), stdout=out, env={"HOME": str(home)}, agent="codex") == 0
        notes = sorted((vault / "raw").glob("*.md"))
        assert [n.name for n in notes] == ["2026-01-01 project 00000000 01.md"], notes
    text = notes[0].read_text()
    assert "Is the data folder there?" in text and "Checked once more" in text and "hook_prompt" not in text
    assert "environment_context" not in text
