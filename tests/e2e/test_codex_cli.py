"""The real Codex CLI offline against a scripted Responses API, with hand-written recording hooks on every event
(tests/e2e/codex_cli.py): the harness the Codex adapter is built on, and what Codex 0.171 sends its hooks.

One session (module-scoped): the user's hooks.json runs a recorder for SessionStart, UserPromptSubmit, PreToolUse and
PostToolUse (matcher "Bash"), Stop and SessionEnd; it appends each payload (and the transcript as it stood) to a log
and answers with a context marker, and at Stop blocks once unless `stop_hook_active`. The hooks are trusted the way
an installer would trust them: `[hooks.state]` hashes written to CODEX_HOME/config.toml, no bypass flag. The model
runs `ls /nonexistent` (it fails), answers, is sent on by Stop, answers again.
Run as a script (`CODEX_CLI=... python tests/e2e/test_codex_cli.py`) it rewrites tests/fixtures/codex/.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from codex_cli import (
    ResponsesAPI,
    Session,
    Text,
    exec_command,
    find_codex,
    hook_trust,
    hooks_list,
    messages,
    run_codex,
    trust_toml,
)

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
PROMPT = "Is the data folder there?"
FAILING = "ls /nonexistent"
ANSWER = "The folder /nonexistent does not exist."
AGAIN = "Checked once more: it is still missing."
STOP_REASON = "STOP MARKER: look once more before you stop."
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")
EVENTS = (*CONTEXT_EVENTS, "Stop", "SessionEnd")
FIXTURE_NAMES = {"SessionStart": "session-start.json", "UserPromptSubmit": "prompt.json",
                 "PreToolUse": "pre-tool.json", "PostToolUse": "post-tool.json", "Stop": "stop.json",
                 "SessionEnd": "session-end.json"}
RECORDER = '''\
import json, pathlib, sys
payload = json.load(sys.stdin)
event = payload["hook_event_name"]
transcript = pathlib.Path(payload.get("transcript_path") or "/nonexistent")
lines = transcript.read_text().splitlines() if transcript.is_file() else []
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"payload": payload, "transcript": lines}) + "\\n")
if event in __CONTEXT_EVENTS__:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "MARKER " + event}}))
elif event == "Stop" and not payload["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": __STOP_REASON__}))
'''.replace("__CONTEXT_EVENTS__", repr(CONTEXT_EVENTS)).replace(
    "__STOP_REASON__", repr(STOP_REASON))


def marker(event: str) -> str:
    return f"MARKER {event}"


@dataclass(frozen=True)
class Recorded:
    """The session's run, the API's log and what the hooks recorded, in the order they ran."""

    session: Session
    api: ResponsesAPI
    records: list[dict[str, Any]]

    def payloads(self, event: str) -> list[dict[str, Any]]:
        return [r["payload"] for r in self.records if r["payload"]["hook_event_name"] == event]


def hooks_config(recorder: Path, log: Path) -> dict[str, Any]:
    """The hooks.json "hooks" object: the recorder on every event (the tool events for Bash only)."""
    command = shlex.join([sys.executable, str(recorder), str(log)])
    return {event: [{**({"matcher": "Bash"} if event in ("PreToolUse", "PostToolUse") else {}),
                     "hooks": [{"type": "command", "command": command}]}] for event in EVENTS}


def record_session(codex: Path, root: Path) -> Recorded:
    """The session: a HOME with the trusted recording hooks, a project inside it, one `codex exec`."""
    home = root / "home" / "me"
    project = home / "project"
    project.mkdir(parents=True)
    (home / ".codex").mkdir()
    recorder, log = root / "recorder.py", root / "hooks.jsonl"
    recorder.write_text(RECORDER)
    hooks = hooks_config(recorder, log)
    hooks_file = home / ".codex" / "hooks.json"
    hooks_file.write_text(json.dumps({"hooks": hooks}, indent=2))
    (home / ".codex" / "config.toml").write_text(trust_toml(hooks_file, hooks))
    with ResponsesAPI([exec_command(FAILING), Text(ANSWER), Text(AGAIN)]) as api:
        session = run_codex(codex, api, project, home, PROMPT)
    assert session.done.returncode == 0, session.done.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return Recorded(session=session, api=api, records=records)


@pytest.fixture(scope="module")
def codex() -> Path:
    return find_codex()


@pytest.fixture(scope="module")
def run(codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record_session(codex, tmp_path_factory.mktemp("codex"))


# -- normalised copies for the fixtures ----------------------------------------------------------------------
SESSION_ID = "00000000-0000-0000-0000-000000000001"
TURN_ID = "00000000-0000-0000-0000-000000000002"


def anonymised(value: Any, session: Session, ids: dict[str, str]) -> Any:
    """`value` with the temporary HOME as /home/me, ids (session, turn, ...) numbered, the rollout's date fixed."""
    if isinstance(value, dict):
        return {k: anonymised(v, session, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [anonymised(v, session, ids) for v in value]
    if not isinstance(value, str):
        return value
    text = value.replace(str(session.home), "/home/me")
    text = re.sub(r"\d{4}/\d\d/\d\d/rollout-[\dT-]{19}-", "2026/01/01/rollout-2026-01-01T00-00-00-", text)
    for found in re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text):
        ids.setdefault(found, f"00000000-0000-0000-0000-{len(ids) + 1:012d}")
        text = text.replace(found, ids[found])
    return text


def fixture_payloads(run: Recorded) -> dict[str, dict[str, Any]]:
    """The first payload of each event, anonymised (PostToolUse: the failing command's)."""
    ids = {run.payloads("SessionStart")[0]["session_id"]: SESSION_ID,
           run.payloads("UserPromptSubmit")[0]["turn_id"]: TURN_ID}
    return {event: anonymised(run.payloads(event)[0], run.session, ids) for event in EVENTS}


def fixture_rollout(run: Recorded) -> list[dict[str, Any]]:
    """The rollout transcript anonymised, timestamps fixed and long texts (the base instructions) cut short."""
    ids = {run.payloads("SessionStart")[0]["session_id"]: SESSION_ID,
           run.payloads("UserPromptSubmit")[0]["turn_id"]: TURN_ID}

    def shorten(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("2026-01-01T00:00:00.000Z" if k == "timestamp" and isinstance(v, str) else shorten(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [shorten(v) for v in value]
        if isinstance(value, str) and len(value) > 1500:
            return value[:300] + f" [... {len(value) - 300} more characters left out of the fixture]"
        return value

    (rollout,) = run.session.transcripts()
    return [shorten(anonymised(json.loads(line), run.session, ids)) for line in rollout.read_text().splitlines()]


def save_fixtures(run: Recorded, dest: Path = FIXTURES) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for event, payload in fixture_payloads(run).items():
        (dest / FIXTURE_NAMES[event]).write_text(json.dumps(payload, indent=2) + "\n")
    (dest / "rollout.jsonl").write_text("".join(json.dumps(line) + "\n" for line in fixture_rollout(run)))


# -- the tests -----------------------------------------------------------------------------------------------
def test_trust_hashes_are_the_ones_codex_computes(codex: Path, tmp_path: Path) -> None:
    """The hashes hook_trust writes are Codex's own (`hooks/list`'s currentHash): user hooks written to config.toml
    are trusted, an edited one is "modified", project hooks count only once the project is trusted, and a
    SessionEnd hook gets at most 3 seconds."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    (project / ".codex").mkdir(parents=True)
    hooks = hooks_config(tmp_path / "recorder.py", tmp_path / "log")
    hooks["SessionEnd"][0]["hooks"][0]["timeout"] = 30
    hooks["UserPromptSubmit"][0]["hooks"].append({"type": "command", "command": "echo ü", "statusMessage": "x"})
    user_file, project_file = home / ".codex" / "hooks.json", project / ".codex" / "hooks.json"
    user_file.write_text(json.dumps({"hooks": hooks}))
    project_file.write_text(json.dumps({"hooks": hooks}))
    config = home / ".codex" / "config.toml"
    config.write_text(trust_toml(user_file, hooks) + "\n" + trust_toml(project_file, hooks))

    listed = {h["key"]: h for h in hooks_list(codex, home, project)}
    ours = hook_trust(user_file, hooks)
    assert set(ours) <= set(listed), sorted(listed)
    assert {k: listed[k]["currentHash"] for k in ours} == ours
    assert {listed[k]["trustStatus"] for k in ours} == {"trusted"}
    assert listed[f"{user_file}:session_end:0:0"]["timeoutSec"] == 3
    assert not any(k.startswith(str(project_file)) for k in listed), "an untrusted project's hooks are not listed"

    config.write_text(trust_toml(user_file, hooks) + "\n" + trust_toml(project_file, hooks, projects=[project]))
    hooks["Stop"][0]["hooks"][0]["command"] += " --edited"
    user_file.write_text(json.dumps({"hooks": hooks}))
    listed = {h["key"]: h for h in hooks_list(codex, home, project)}
    assert listed[f"{user_file}:stop:0:0"]["trustStatus"] == "modified"
    assert {h["trustStatus"] for k, h in listed.items() if k.startswith(str(project_file))} == {"trusted"}


def test_a_session_runs_offline_with_a_failing_command(run: Recorded) -> None:
    """(a) The scripted session ran whole: the command failed, its output went back to the model, the answers
    were printed; every request went to the scripted API."""
    requests = run.api.main_requests()
    assert len(requests) == 3
    assert all(path == "/v1/responses" for path, _ in run.api.requests)
    (output,) = [it["output"] for it in requests[1]["input"] if it.get("type") == "function_call_output"]
    assert "Process exited with code 2" in output and "/nonexistent" in output
    assert run.session.done.stdout.strip() == AGAIN


def test_hook_context_reaches_the_model_as_developer_messages(run: Recorded) -> None:
    """(b) SessionStart and UserPromptSubmit context are developer messages around the prompt in the first request;
    PreToolUse and PostToolUse context follow the tool call, both before the tool's output."""
    first, second = run.api.main_requests()[:2]
    assert messages(first, "developer")[-2:] == [marker("SessionStart"), marker("UserPromptSubmit")]
    kinds = [(it.get("type"), it.get("role"), "\n".join(c.get("text", "") for c in it.get("content") or []))
             for it in second["input"]]
    start = kinds.index(("message", "developer", marker("SessionStart")))
    assert kinds[start + 1] == ("message", "user", PROMPT)
    assert kinds[start + 2] == ("message", "developer", marker("UserPromptSubmit"))
    assert [k[0] for k in kinds[start + 3:]] == ["function_call", "message", "message", "function_call_output"]
    assert [k[2] for k in kinds[start + 4:start + 6]] == [marker("PreToolUse"), marker("PostToolUse")]


def test_a_stop_hook_sends_the_agent_on_once(run: Recorded) -> None:
    """(c) Stop blocked once: its reason came back as a user message, and the next Stop had stop_hook_active."""
    last = run.api.main_requests()[-1]
    assert messages(last, "user")[-1].endswith(f">{STOP_REASON}</hook_prompt>")
    assert messages(last, "assistant") == [ANSWER]
    stops = run.payloads("Stop")
    assert [(s["stop_hook_active"], s["last_assistant_message"]) for s in stops] == [(False, ANSWER), (True, AGAIN)]


def test_hook_payloads_are_the_fixtures(run: Recorded) -> None:
    """(d) Each event fired as often as the session asks, and its payload (anonymised) is the saved fixture."""
    assert [r["payload"]["hook_event_name"] for r in run.records] == [
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "Stop", "SessionEnd"]
    for event, payload in fixture_payloads(run).items():
        saved = json.loads((FIXTURES / FIXTURE_NAMES[event]).read_text())
        assert payload == saved, f"{event}: Codex now sends {payload}"


def test_the_transcript_is_written_before_each_hook(run: Recorded) -> None:
    """(d) transcript_path is the rollout file, already holding everything up to the hook's moment: at the first
    Stop it has the answer, at SessionEnd the second one; the saved rollout fixture has the same kinds of lines."""
    (rollout,) = run.session.transcripts()
    assert {r["payload"]["transcript_path"] for r in run.records} == {str(rollout)}
    by_event = {r["payload"]["hook_event_name"]: r["transcript"] for r in reversed(run.records)}  # first of each
    assert ANSWER in "\n".join(by_event["Stop"]) and AGAIN not in "\n".join(by_event["Stop"])
    assert AGAIN in "\n".join(run.records[-1]["transcript"])
    saved = [json.loads(line) for line in (FIXTURES / "rollout.jsonl").read_text().splitlines()]
    kinds = {(line["type"], line["payload"].get("type")) for line in saved}
    assert kinds == {(line["type"], line["payload"].get("type")) for line in fixture_rollout(run)}


def test_a_commands_exit_code_is_in_the_rollout_before_post_tool_use(run: Recorded) -> None:
    """(d) PostToolUse's `tool_response` has no exit code, but the rollout as it stood when the hook ran holds the
    command's `item_completed` record with it: what server/clients.py reads for a Codex PostToolUse."""
    (post,) = [r for r in run.records if r["payload"]["hook_event_name"] == "PostToolUse"]
    assert "exit_code" not in json.dumps(post["payload"])
    completed = [json.loads(line)["payload"]["item"] for line in post["transcript"]
                 if '"item_completed"' in line and '"CommandExecution"' in line]
    assert [(i["id"], i["exit_code"]) for i in completed] == [(post["payload"]["tool_use_id"], 2)]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        save_fixtures(record_session(find_codex(), Path(scratch)))
