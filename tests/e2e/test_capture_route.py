"""The capture hooks over HTTP: POST /v1/hooks/session-end imports the transcript the input names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from vault_cortex.cortex import Cortex


def test_session_end_route_captures_and_refuses_what_is_no_transcript(
        client: TestClient[Litestar], cx: Cortex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # the server's: Claude Code keeps its transcripts under it
    transcript = tmp_path / ".claude/projects/-home-me-greenhouse/5e6f7a8b-route.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(
        json.dumps({"type": "user", "timestamp": "2026-11-29T08:00:00Z",
                    "message": {"content": "How do we keep the WAL small during reports?"}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"content": "Page the report and close each cursor."}}) + "\n")
    payload = {"session_id": "5e6f7a8b", "transcript_path": str(transcript), "cwd": "/home/me/greenhouse",
               "hook_event_name": "SessionEnd", "reason": "exit"}
    for event in ("pre-compact", "session-end"):
        got = client.post(f"/v1/hooks/{event}", json=payload)
        assert got.status_code == 200 and got.json() == {}
    assert [p.name for p in (cx.root / "raw").glob("2026-11-29 greenhouse *.md")] == [
        "2026-11-29 greenhouse 5e6f7a8b 01.md"]
    for elsewhere in ("/etc/passwd", str(tmp_path / "5e6f7a8b-route.jsonl")):
        bad = client.post("/v1/hooks/session-end", json={**payload, "transcript_path": elsewhere})
        assert bad.status_code == 400 and bad.json()["error"] == "InvalidRequest"
