"""The Gemini CLI adapter (server/clients.py) on the payloads Gemini CLI 0.61 really sent (tests/fixtures/gemini/):
each installed event runs the core step it maps to with a payload the core reads (the prompt without hook context, a
failing command's exit code from `llmContent`, AfterAgent's last answer), the output comes back in the shape Gemini
reads; the second look reads the prompt from the chat log's end; SessionEnd captures the chat log into raw/, once."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from server import clients, hooks, install_gemini
from server.tool_output import failure_query
from vault_cortex.config import HooksSettings
from vault_cortex.importers.transcript import last_prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
CHAT = "project/chats/session-2026-01-02T03-04-0b5ec7a1.jsonl"  # under ~/.gemini/tmp, as the payloads name it
EVENTS = {"session-start": "session-start.json", "prompt": "before-agent.json", "tool-result": "after-tool.json",
          "stop": "after-agent.json", "session-end": "session-end.json"}
FIRST_ANSWER_LINES = 10  # the chat log as it stood at the first AfterAgent: up to the first answer (record-5)
DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook command opens the vault itself


def fixture(name: str, home: Path | None = None) -> dict[str, Any]:
    """A saved payload; with `home`, its /home/me paths moved there."""
    text = (FIXTURES / name).read_text()
    return json.loads(text.replace("/home/me", str(home)) if home else text)


def chat_log(home: Path, lines: int | None = None) -> Path:
    """The saved chat log where the payloads name it (its first `lines` lines: the log at an earlier moment)."""
    dest = home / ".gemini" / "tmp" / CHAT
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / "session.jsonl").read_text().replace("/home/me", str(home))
    dest.write_text("".join(text.splitlines(True)[:lines]))
    return dest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    chat_log(home)
    return home


class Steps:
    """A stand-in for the dispatch: records each core step and answers with a given output."""

    def __init__(self, answers: dict[str, dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.answers = answers or {}

    def __call__(self, event: str, payload: Any) -> dict[str, Any]:
        self.calls.append((event, dict(payload)))
        return self.answers.get(event, {})


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def test_each_gemini_event_runs_the_core_step_it_maps_to(home: Path) -> None:
    """SessionStart, BeforeAgent, AfterTool, AfterAgent, SessionEnd: one core step each, the payload's session and
    chat log passed on; the installer writes exactly these events."""
    env = {"HOME": str(home)}
    for event, name in EVENTS.items():
        steps = Steps()
        assert clients.run(clients.GEMINI, event, fixture(name, home), steps, env) == {}
        assert [e for e, _ in steps.calls] == [event]
        payload = steps.calls[0][1]
        assert payload["session_id"] == "0b5ec7a1-0000-4000-8000-000000000000"
        assert payload["transcript_path"] == str(home / ".gemini" / "tmp" / CHAT)
    assert {n: (h.event, h.matcher) for n, h in clients.GEMINI.hooks.items()} == install_gemini.HOOKS
    assert {h.event for h in clients.GEMINI.hooks.values()} <= set(hooks.HOOK_EVENTS)
    with pytest.raises(ValueError, match="Gemini CLI has no hook 'pre-compact'"):
        clients.run(clients.GEMINI, "pre-compact", fixture("pre-compress.json"), Steps(), env)


def test_before_agent_recalls_with_the_prompt_the_user_wrote() -> None:
    """BeforeAgent's `prompt` carries SessionStart's context in front (`<hook_context>…</hook_context>`): the core
    gets the prompt alone."""
    steps = Steps()
    clients.run(clients.GEMINI, "prompt", fixture("before-agent.json"), steps, {})
    assert steps.calls[0][1]["prompt"] == "Why does the collector fail?"


def test_the_second_looks_reason_is_no_prompt_to_recall_for() -> None:
    """A block at AfterAgent comes back as a new prompt, and BeforeAgent fires on it: vault-cortex's own reason
    recalls nothing (the vault is not even opened)."""
    from vault_cortex.recall.second_look import HEADER

    reason = f"{HEADER}\n- short_term/x.md (close to the answer)\n  gist"
    steps = Steps()
    clients.run(clients.GEMINI, "prompt", {**fixture("before-agent.json"), "prompt": reason}, steps, {})
    assert hooks._prompt(lambda: pytest.fail("the vault is opened"), steps.calls[0][1]) is None  # type: ignore


def test_a_failing_command_is_a_failure_with_its_exit_code() -> None:
    """AfterTool for `...; exit 1` is a tool *success* whose `llmContent` ends `Exit Code: 1` and the process group:
    the core gets the output and the code, and its query is the error line. A command that succeeded (no exit code
    line), another tool's content and a tool that failed itself (Gemini drops a hook's context then) are no failure."""
    steps = Steps()
    clients.run(clients.GEMINI, "tool-result", fixture("after-tool.json"), steps, {})
    response = steps.calls[0][1]["tool_response"]
    assert response == {"output": "sqlite3.OperationalError: database is locked", "exit_code": 1}
    assert failure_query(response, "run_shell_command") == "OperationalError: database is locked"
    ok = fixture("after-tool.json")
    ok["tool_response"] = {"llmContent": "Output: 3 files\nProcess Group PGID: 7", "returnDisplay": "3 files"}
    assert clients.gemini_tool_response(ok) == {"output": "3 files", "exit_code": 0}
    assert failure_query(clients.gemini_tool_response(ok), "run_shell_command") is None
    empty = {**ok, "tool_response": {"llmContent": "Output: (empty)\nExit Code: 2\nProcess Group PGID: 7"}}
    assert clients.gemini_tool_response(empty) == {"output": "", "exit_code": 2}
    read = {**ok, "tool_name": "read_file", "tool_response": {"llmContent": "ValueError: bad value\n"}}
    assert clients.gemini_tool_response(read) is None
    assert clients.gemini_tool_response(fixture("after-tool-error.json")) is None
    assert hooks._tool_result(lambda: pytest.fail("the vault is opened"), {  # type: ignore[arg-type,return-value]
        **fixture("after-tool-error.json"), "tool_response": None}) is None


def test_after_agent_reads_the_last_answer(home: Path) -> None:
    """`prompt_response` holds every answer of the prompt joined by a newline: the last one is the chat log's last
    Gemini record when the text ends with it (chunks joined by a space count alike); else the whole text."""
    folders = clients.transcript_folders([clients.GEMINI.transcript_folder({"HOME": str(home)})], {"HOME": str(home)})
    log = str(chat_log(home, FIRST_ANSWER_LINES))
    answer = "The collector's database was locked."
    assert clients.last_answer(f"Let me run it.\n{answer}", log, folders) == answer
    assert clients.last_answer("Let me run it.\nThe collector's database was  locked.", log, folders) == answer
    assert clients.last_answer("Something else entirely.", log, folders) == "Something else entirely."
    assert clients.last_answer(f"Let me run it.\n{answer}", str(home / "elsewhere.jsonl"), folders) == (
        f"Let me run it.\n{answer}")  # no chat log to read: the whole text
    steps = Steps()
    clients.run(clients.GEMINI, "stop", {**fixture("after-agent.json", home),
                                         "prompt_response": f"Let me run it.\n{answer}"}, steps, {"HOME": str(home)})
    (_, payload), = steps.calls
    assert payload["last_assistant_message"] == answer and payload["stop_hook_active"] is False


def test_the_output_comes_back_in_gemini_shape(home: Path) -> None:
    """Context under the event Gemini sent (SessionStart, BeforeAgent, AfterTool); a block only at AfterAgent, as
    `{"decision": "block", "reason": ...}`; never a block on AfterTool."""
    env = {"HOME": str(home)}
    for event, name, gemini_event in (("session-start", "session-start.json", "SessionStart"),
                                      ("prompt", "before-agent.json", "BeforeAgent"),
                                      ("tool-result", "after-tool.json", "AfterTool")):
        core = {**context("PostToolUse", "memories"), "decision": "block", "reason": "x"}
        assert clients.run(clients.GEMINI, event, fixture(name, home), Steps({event: core}), env) == (
            context(gemini_event, "memories"))
    block = {"decision": "block", "reason": "Before you finish, look at [[x]]."}
    assert clients.run(clients.GEMINI, "stop", fixture("after-agent.json", home), Steps({"stop": block}), env) == block


def test_the_transcript_folders_cover_every_client(tmp_path: Path) -> None:
    """By default the hooks read Claude Code's, Codex's and Gemini's transcripts (Gemini's under
    $GEMINI_CLI_HOME/.gemini/tmp when that is set); the setting still names the only folders."""
    env = {"HOME": str(tmp_path)}
    assert HooksSettings().transcript_dirs == clients.default_transcript_dirs()
    assert hooks.transcript_folders(HooksSettings().transcript_dirs, env) == [
        tmp_path / ".claude" / "projects", tmp_path / ".codex" / "sessions", tmp_path / ".gemini" / "tmp"]
    assert hooks.transcript_folders([], {**env, "GEMINI_CLI_HOME": str(tmp_path / "g")}) == [
        tmp_path / "g" / ".gemini" / "tmp"]


def test_the_last_prompt_of_a_chat_log(home: Path) -> None:
    """The second look reads the prompt its answer answers from the chat log's end: the prompt the user wrote, without
    the hook context around it (the payload's `prompt` carries it)."""
    assert last_prompt(chat_log(home, FIRST_ANSWER_LINES)) == "Why does the collector fail?"


def small_vault(root: Path) -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text("")
    (root / "scientific").mkdir()
    (root / "scientific/Collector.md").write_text("# Collector\nThe collector's database lock came from a long read.\n")
    return root


def test_session_end_captures_the_chat_log_once_through_the_hook_command(home: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`vault-cortex hook session-end --client gemini` (no server): the session lands in raw/ as one note named after
    the session id's start, one per exchange (the saved session's block reason is another hook's, so it reads as a
    prompt; vault-cortex's own second look would not: tests/unit/test_gemini_chat.py); again, nothing new."""
    monkeypatch.setenv("HOME", str(home))
    vault = small_vault(tmp_path / "vault")
    for _ in range(2):
        out = io.StringIO()
        assert hooks.main("session-end", str(vault), DEAD_URL, stdin=io.StringIO(json.dumps(
            fixture("session-end.json", home))), stdout=out, env={"HOME": str(home)}, agent="gemini") == 0
        assert out.getvalue() == ""
        notes = sorted((vault / "raw").glob("*.md"))
        assert [n.name for n in notes] == ["2026-01-02 project 0b5ec7a1 01.md", "2026-01-02 project 0b5ec7a1 02.md"]
    first, second = (n.read_text() for n in notes)
    assert "Why does the collector fail?" in first and "The collector's database was locked." in first
    assert "Checked again" in second and "hook_context" not in first + second
