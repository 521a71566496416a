"""The real Gemini CLI, offline against a scripted Gemini API (tests/e2e/gemini_cli.py), with hand-written hooks:
what each hook event is sent and where its output reaches the model, read from the requests the CLI sent.

One session for the module: every event has a recording hook (it appends its stdin to a log and answers with a
context marker holding `<`, `>` and `&`, except AfterAgent, which blocks once and lets the retry end). The model
calls the shell tool with a failing command, answers, is sent on by the block, answers again. (a) it runs offline
and exits 0; (b) the SessionStart, BeforeAgent and AfterTool markers reach the model, wrapped and escaped, and the
BeforeTool one does not; (c) the block sends the agent on exactly once; (d) the recorded payloads, normalised, are
the fixtures under tests/fixtures/gemini/ (one per event, and the session's chat log) that the adapter is built on.
A second session, whose tool itself fails (not a failing command), shows AfterTool's context dropped.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gemini_cli import SHELL_TOOL, Call, GeminiAPI, Reply, Session, Text, find_gemini, parts_text, run_gemini, shell

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
PROMPT = "Why does the collector fail?"
FAILING = "echo 'sqlite3.OperationalError: database is locked' >&2; exit 1"
FIRST = "The collector's database was locked."
SECOND = "Checked again: a long read held the lock."
REASON = "Check your answer <once more>."
EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd")
FIXTURE_NAMES = {"SessionStart": "session-start.json", "BeforeAgent": "before-agent.json",
                 "BeforeTool": "before-tool.json", "AfterTool": "after-tool.json", "AfterAgent": "after-agent.json",
                 "PreCompress": "pre-compress.json", "SessionEnd": "session-end.json"}
HOOK = f"""\
import json, sys
payload = json.load(sys.stdin)
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps(payload) + "\\n")
event = payload["hook_event_name"]
if event == "AfterAgent":
    out = {{}} if payload["stop_hook_active"] else {{"decision": "block", "reason": {REASON!r}}}
else:
    out = {{"hookSpecificOutput": {{"hookEventName": event, "additionalContext": event + " context <a & b>"}}}}
print(json.dumps(out))
"""


def marker(event: str) -> str:
    """The context a recording hook answers with, as the model sees it: wrapped, `<` and `>` escaped."""
    return f"<hook_context>{event} context &lt;a & b&gt;</hook_context>"


@dataclass(frozen=True)
class Run:
    """The module's session: what the API logged, the hooks' payloads in order, the `gemini -p` run."""

    api: GeminiAPI
    payloads: list[dict[str, Any]]
    session: Session

    def of(self, event: str) -> list[dict[str, Any]]:
        return [p for p in self.payloads if p["hook_event_name"] == event]


def recorded_session(work: Path, script: list[Reply]) -> Run:
    """One `gemini -p PROMPT` run in `work`/project with a recording hook on every event; it must exit 0."""
    gemini = find_gemini()
    project, home, log = work / "project", work / "home", work / "hooks.jsonl"
    (project / ".gemini").mkdir(parents=True)
    (work / "record.py").write_text(HOOK, encoding="utf-8")
    command = f"{sys.executable} {work / 'record.py'} {log}"
    hooks = {event: [{"hooks": [{"type": "command", "command": command, "name": f"record-{event}"}]}]
             for event in EVENTS}
    (project / ".gemini" / "settings.json").write_text(json.dumps({"hooks": hooks}, indent=2), encoding="utf-8")
    with GeminiAPI(script) as api:
        session = run_gemini(gemini, api, project, home, PROMPT)
    assert session.done.returncode == 0, session.done.stderr
    payloads = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return Run(api=api, payloads=payloads, session=session)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return recorded_session(tmp_path_factory.mktemp("gemini"), [shell(FAILING), Text(FIRST), Text(SECOND)])


def test_a_session_with_a_failing_shell_call_runs_offline(run: Run) -> None:
    """Every request went to the stub; the failing command came back to the model as a result holding its exit."""
    assert run.api.requests and all(p.startswith("/v1beta/models/") for p, _ in run.api.requests)
    main = run.api.main_requests()
    assert len(main) == 3, [parts_text(b) for b in main]
    response = main[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert response["name"] == SHELL_TOOL
    output = response["response"]["output"]
    assert "Output: sqlite3.OperationalError: database is locked\nExit Code: 1\n" in output
    assert run.session.done.stdout.strip() == FIRST + SECOND
    assert len(run.session.transcripts()) == 1


def test_start_prompt_and_tool_context_reach_the_model_wrapped_and_escaped(run: Run) -> None:
    """SessionStart's context prefixes the prompt's text, BeforeAgent's is a part of its own in the same turn,
    AfterTool's is appended to the tool's output; BeforeTool's reaches no request."""
    main = run.api.main_requests()
    turn = main[0]["contents"][-1]
    assert turn["role"] == "user"
    texts = [part["text"] for part in turn["parts"]]
    assert texts[0].startswith("<session_context>")  # the CLI's own: date, OS, folders
    assert texts[1:] == [f"{marker('SessionStart')}\n\n{PROMPT}", marker("BeforeAgent")]
    output = main[1]["contents"][-1]["parts"][0]["functionResponse"]["response"]["output"]
    assert output.endswith(f"</untrusted_context>\n\n{marker('AfterTool')}")
    everything = "\n".join(json.dumps(body) for _, body in run.api.requests)
    assert "BeforeTool context" not in everything
    assert "PreCompress context" not in everything and "SessionEnd context" not in everything


def test_an_after_agent_block_sends_the_agent_on_exactly_once(run: Run) -> None:
    """The block's reason is the next user turn (BeforeAgent fires again on it); the retry's AfterAgent has
    stop_hook_active and the whole answer so far, and letting it end ends the session."""
    main = run.api.main_requests()
    last = main[2]["contents"]
    assert [c["role"] for c in last[-2:]] == ["model", "user"]
    assert last[-2]["parts"] == [{"text": FIRST}]
    assert [p["text"] for p in last[-1]["parts"]] == [REASON, marker("BeforeAgent")]
    after = run.of("AfterAgent")
    assert [(p["stop_hook_active"], p["prompt_response"]) for p in after] == [(False, FIRST),
                                                                           (True, f"{FIRST}\n{SECOND}")]
    assert [p["prompt"] for p in run.of("BeforeAgent")] == [f"{marker('SessionStart')}\n\n{PROMPT}", REASON]
    assert {p["prompt"] for p in after} == {f"{marker('SessionStart')}\n\n{PROMPT}"}


def test_every_event_fires_with_the_session_and_its_chat_log(run: Run) -> None:
    """The order of the events; each payload names the session, its chat log and the project folder."""
    order = [p["hook_event_name"] for p in run.payloads if p["hook_event_name"] != "PreCompress"]
    assert order == ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "BeforeAgent",
                     "AfterAgent", "SessionEnd"]
    # PreCompress fires before each model request (trigger "auto"), whether or not the history is compressed
    assert [p["trigger"] for p in run.of("PreCompress")] == ["auto"] * len(run.api.main_requests())
    [transcript] = run.session.transcripts()
    assert {(p["session_id"], p["transcript_path"], p["cwd"]) for p in run.payloads} == {
        (run.payloads[0]["session_id"], str(transcript), str(run.session.project))}


# -- the fixtures ------------------------------------------------------------------------------------------
SESSION_ID = "0b5ec7a1-0000-4000-8000-000000000000"
TIME = "2026-01-02T03:04:05.678Z"


def normalise(text: str, session: Session, session_id: str) -> str:
    """A payload or chat log with its folders, ids, times and process numbers made fixed."""
    text = text.replace(str(session.project), "/home/me/project").replace(str(session.home), "/home/me")
    text = text.replace(session_id, SESSION_ID).replace(session_id[:8], SESSION_ID[:8])
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", TIME, text)
    text = re.sub(r"session-\d{4}-\d\d-\d\dT\d\d-\d\d-", "session-2026-01-02T03-04-", text)
    text = re.sub(r"Today's date is [^(]*\(", "Today's date is Friday, January 2, 2026 (", text)
    text = re.sub(r"(PGID: )\d+", r"\g<1>1000", text)
    return re.sub(r"(run_shell_command_)\d+(_\d+)", r"\g<1>1000\g<2>", text)


def normalised_payload(run: Run, event: str) -> dict[str, Any]:
    payload = run.of(event)[0]
    out: dict[str, Any] = json.loads(normalise(json.dumps(payload), run.session, payload["session_id"]))
    return out


@pytest.mark.parametrize("event", EVENTS)
def test_the_recorded_payload_is_the_fixture(run: Run, event: str) -> None:
    """tests/fixtures/gemini/<event>.json is what this CLI sends that event (the first one of the session)."""
    got = normalised_payload(run, event)
    want = json.loads((FIXTURES / FIXTURE_NAMES[event]).read_text(encoding="utf-8"))
    assert got == want, json.dumps(got, indent=2)


def chat_log(run: Run) -> list[dict[str, Any]]:
    """The session's chat log, normalised, with its records' random ids numbered in order of appearance."""
    [transcript] = run.session.transcripts()
    text = normalise(transcript.read_text(encoding="utf-8"), run.session, run.payloads[0]["session_id"])
    ids: dict[str, str] = {}
    text = re.sub(r'"projectHash":\s*"[0-9a-f]{64}"', '"projectHash": "' + "0" * 64 + '"', text)
    text = re.sub(r'("id":\s*)"([0-9a-f]{32}|[0-9a-f-]{36})"',
                  lambda m: f'{m[1]}"{ids.setdefault(m[2], f"record-{len(ids) + 1}")}"', text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_chat_log_is_the_fixture(run: Run) -> None:
    """tests/fixtures/gemini/session.jsonl is this session's chat log (the file transcript_path names)."""
    got = chat_log(run)
    want = [json.loads(line) for line in (FIXTURES / "session.jsonl").read_text(encoding="utf-8").splitlines()]
    assert got == want, "\n".join(json.dumps(record) for record in got)


def test_after_tool_context_is_dropped_when_the_tool_itself_fails(tmp_path: Path) -> None:
    """A tool that fails (read_file of a missing file, not a failing command) sends the model only its error:
    AfterTool still fires, with the error in `tool_response`, but its context goes nowhere."""
    run = recorded_session(tmp_path, [Call("read_file", {"file_path": "missing.txt"}), Text(FIRST)])
    response = run.api.main_requests()[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert response["name"] == "read_file"
    assert response["response"] == {"error": f"File not found: {run.session.project / 'missing.txt'}"}
    assert "AfterTool context" not in json.dumps(run.api.requests)
    [after] = run.of("AfterTool")
    assert after["tool_response"]["error"] == {"message": f"File not found: {run.session.project / 'missing.txt'}",
                                               "type": "file_not_found"}
    want = json.loads((FIXTURES / "after-tool-error.json").read_text(encoding="utf-8"))
    assert normalised_payload(run, "AfterTool") == want, json.dumps(normalised_payload(run, "AfterTool"), indent=2)
