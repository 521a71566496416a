"""Gemini CLI's chat log read as exchanges (vault_cortex/importers/gemini_chat.py): the real log the harness recorded
(tests/fixtures/gemini/session.jsonl) and hand-made variants for what that session did not do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vault_cortex.errors import InvalidRequest
from vault_cortex.importers.gemini_chat import iter_chat
from vault_cortex.importers.transcript import detect, parse_transcript
from vault_cortex.recall.second_look import HEADER

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gemini" / "session.jsonl"
HEAD = {"sessionId": "5e2b7a10-0000-4000-8000-000000000000", "projectHash": "0" * 64,
        "startTime": "2026-11-30T10:00:00.000Z", "lastUpdated": "2026-11-30T10:00:00.000Z", "kind": "main"}


def user(id_: str, *texts: str, at: str = "2026-11-30T10:00:00.000Z") -> dict[str, Any]:
    return {"id": id_, "timestamp": at, "type": "user", "content": [{"text": t} for t in texts]}


def gemini(id_: str, text: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": id_, "timestamp": "2026-11-30T10:00:01.000Z", "type": "gemini", "content": text,
                           "thoughts": [], "model": "gemini-2.5-flash"}
    return {**rec, "toolCalls": calls} if calls is not None else rec


def shell_call(id_: str, command: str, printed: str) -> dict[str, Any]:
    output = (f"<untrusted_context>\nOutput: {printed}\nExit Code: 1\n</untrusted_context>\n\n"
              "<hook_context>x</hook_context>")
    return {"id": id_, "name": "run_shell_command", "args": {"command": command, "description": "run it"},
            "result": [{"functionResponse": {"id": id_, "name": "run_shell_command", "response": {"output": output}}}],
            "status": "success", "resultDisplay": printed}


def lines(*records: dict[str, Any]) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    for rec in records:
        line = (json.dumps(rec) + "\n").encode()
        out.append((offset, line))
        offset += len(line)
    return out


def test_the_recorded_chat_log_is_detected_and_read_as_its_exchanges() -> None:
    """The prompt without the hooks' context, the answer, the failing command as one tool line with its output's
    size; the AfterAgent block's reason (a hook that is not vault-cortex's) is the next user turn, so a prompt."""
    text = FIXTURE.read_text(encoding="utf-8")
    assert detect(text.splitlines()) == "gemini"
    t = parse_transcript(text, "s")
    assert t.format == "gemini"
    first, second = t.exchanges
    assert first.prompt == "Why does the collector fail?"
    assert first.answer == "The collector's database was locked."
    assert first.tools == ("*(tool: run_shell_command `echo 'sqlite3.OperationalError: database is locked' >&2;…` "
                           "→ 1 line of output)*",)
    assert first.output == "sqlite3.OperationalError: database is locked"
    assert first.at is not None and first.at.isoformat() == "2026-01-02T03:04:05.678000+00:00"
    assert second.prompt == "Check your answer <once more>."
    assert second.answer == "Checked again: a long read held the lock."
    assert "hook_context" not in json.dumps([x.prompt + x.answer + x.output for x in t.exchanges])


def test_a_claude_code_transcript_is_still_read_as_one() -> None:
    line = json.dumps({"type": "user", "sessionId": "x", "message": {"content": "hi"}})
    assert detect([line]) == "jsonl"
    assert detect(["**User:** hi"]) == "markdown"


def test_answers_tool_calls_and_rewrites_of_a_record() -> None:
    """Every answer of an exchange joined; a record written again with its tool calls replaces the first write;
    the function response the CLI records as a user turn, slash commands and the session context are no prompt."""
    call = shell_call("c1", "pytest -x tests/test_db.py", "FAILED tests/test_db.py::test_lock\n1 failed")
    records = [
        HEAD,
        {"$set": {"messages": [user("m0", "<session_context>\nThis is the Gemini CLI.\n</session_context>")]}},
        user("m1", "<hook_context>Remember: [[WAL]]</hook_context>\n\nWhy does the test hang?",
             "<hook_context>more memories</hook_context>"),
        gemini("m2", ""),
        gemini("m2", "", [call]),  # written again once the call is done
        {"id": "m3", "timestamp": "2026-11-30T10:00:02.000Z", "type": "user",
         "content": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "x"}}}]},
        gemini("m4", "The test holds a write lock."),
        gemini("m5", "Close the cursor first."),
        user("m6", "/stats"),
        {"id": "m7", "timestamp": "2026-11-30T10:00:03.000Z", "type": "info", "content": "Session stats"},
        user("m8", "And the fix?", at="2026-11-30T10:05:00.000Z"),
        gemini("m9", "Use a busy timeout."),
    ]
    got = [x for _, x in iter_chat(lines(*records))]
    assert [x.prompt for x in got] == ["Why does the test hang?", "And the fix?"]
    assert got[0].answer == "The test holds a write lock.\n\nClose the cursor first."
    assert got[0].tools == ("*(tool: run_shell_command `pytest -x tests/test_db.py` → 2 lines of output)*",)
    assert got[1].answer == "Use a busy timeout." and got[1].tools == ()


def test_each_exchange_names_the_offset_of_its_prompt_line() -> None:
    """Where a later capture resumes: the line its prompt is on."""
    given = lines(HEAD, user("a", "One?"), gemini("b", "Yes."), user("c", "Two?"), gemini("d", "No."))
    assert [offset for offset, _ in iter_chat(given)] == [given[1][0], given[3][0]]
    assert [x.prompt for _, x in iter_chat(given[3:])] == ["Two?"]  # read from there: the same exchange


def test_a_truncated_last_line_is_left_for_the_next_read_and_a_broken_one_is_an_error() -> None:
    given = lines(HEAD, user("a", "One?"), gemini("b", "Yes."), user("c", "Two?"))
    offset, last = given[-1]
    torn = [*given[:-1], (offset, last[: len(last) // 2])]
    assert [x.prompt for _, x in iter_chat(torn)] == ["One?"]
    with pytest.raises(InvalidRequest, match="line 3 is not JSON"):
        list(iter_chat([*given[:2], (0, b"{oops\n"), *given[2:]]))


def test_a_rewind_forgets_what_it_undid() -> None:
    """`$rewindTo` an answer drops it and what followed; to the prompt, the whole exchange."""
    given = lines(HEAD, user("a", "One?"), gemini("b", "Wrong."), {"$rewindTo": "b"}, gemini("c", "Right."),
                  user("d", "Two?"), gemini("e", "Maybe."), {"$rewindTo": "d"})
    assert [(x.prompt, x.answer) for _, x in iter_chat(given)] == [("One?", "Right.")]


def test_vault_cortex_s_own_second_look_is_no_prompt() -> None:
    """The second look blocks AfterAgent; Gemini sends its reason as the next user turn: the answer it asks for
    belongs to the exchange before it, and the memories it names are never captured as a prompt."""
    reason = f"{HEADER}\n- notes/WAL.md (close to the answer)\n  The checkpoint starves."
    given = lines(HEAD, user("a", "Why is the WAL big?"), gemini("b", "A long read."), user("c", reason),
                  gemini("d", "Confirmed by notes/WAL.md."))
    [x] = [x for _, x in iter_chat(given)]
    assert x.prompt == "Why is the WAL big?"
    assert x.answer == "A long read.\n\nConfirmed by notes/WAL.md."

