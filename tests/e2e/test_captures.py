"""Captures are what was said, not what is true: after an earlier session in which the agent made a wrong claim
was captured (by the real `hook session-end` command), the second look, the prompt push, the failure push and
the session-start context (through the real server and the real hook command) never offer that capture as a
memory; `related` and plain recall leave captures out on HTTP, MCP and the CLI, and `captures=only` finds them."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import TEST_HOSTS, TOKEN, LiveServer, checked_client, over_http
from litestar.testing import TestClient
from mcp.client import Client

from server import hooks
from server.app import create_app
from server.bearer import TOKEN_ENV
from server.watch import Watcher
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

DEAD_URL = "http://127.0.0.1:9"  # nothing listens: the hook command opens the vault itself
SID = "9f3c2a71-5d4e-4b8a-9c21-7e6f0d1b2a93"
CALIBRATION = "scientific/Capacitive soil moisture calibration.md"
FIX_NOTE = "scientific/2026-11-20 collector database is locked.md"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tool_result"
SENT = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"  # what the real client sent
PROMPT = "What values should I use for the soil probes?"
WRONG = "Use 3000 for dry and 1000 for wet on every probe; they are all the same."  # the note says otherwise
LOCKED = "The collector stopped with sqlite3.OperationalError: database is locked. How do I fix it?"
WRONG_FIX = ("The database is locked because the WAL file is stale: delete greenhouse.db-wal while the collector "
             "runs and the lock goes away.")  # the fix note says otherwise
TRACEBACK = """Traceback (most recent call last):
  File "/home/me/greenhouse-sensor/collector/main.py", line 88, in <module>
    store.write(reading)
  File "/home/me/greenhouse-sensor/collector/store.py", line 41, in write
    self.conn.execute("INSERT INTO readings VALUES (?, ?, ?)", row)
sqlite3.OperationalError: database is locked
"""


def rec(kind: str, text: str, ts: str) -> str:
    """One record as Claude Code writes it to the session's JSONL."""
    content: Any = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "sessionId": SID, "timestamp": ts, "uuid": f"u{ts}{kind}",
                       "message": {"role": kind, "content": content}}) + "\n"


def projects(home: Path) -> Path:
    folder = home / ".claude/projects/-home-me-greenhouse-sensor"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_hook(event: str, payload: dict[str, Any], vault: Path, home: Path, url: str = DEAD_URL,
             token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, as Claude Code runs it (HOME: where its transcripts are)."""
    env = {**os.environ, "HOME": str(home), hooks.VAULT_ENV: str(vault), hooks.URL_ENV: url}
    env.pop(TOKEN_ENV, None)
    if token:
        env[TOKEN_ENV] = token
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", event], input=json.dumps(payload),
                          text=True, capture_output=True, env=env, timeout=180)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(autouse=True)
def home_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's HOME too: the stop hook reads the session's transcript under it."""
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture(scope="module")
def cx(synced_template: Path, tmp_path_factory: pytest.TempPathFactory, embedder: Embedder,
       home: Path) -> Iterator[Cortex]:
    """The starter vault with the fix note, after an earlier session was captured by the real session-end hook:
    in it the agent answered the probe question and the locked database wrongly."""
    vault = tmp_path_factory.mktemp("captures") / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)
    shutil.copy(FIXTURE / Path(FIX_NOTE).name, vault / FIX_NOTE)
    earlier = projects(home) / f"{SID}.jsonl"
    earlier.write_text(rec("user", PROMPT, "2026-11-30T09:00:00Z") + rec("assistant", WRONG, "2026-11-30T09:00:20Z")
                       + rec("user", LOCKED, "2026-11-30T09:05:00Z")
                       + rec("assistant", WRONG_FIX, "2026-11-30T09:05:30Z"), encoding="utf-8")
    done = run_hook("session-end", {"session_id": SID, "transcript_path": str(earlier), "reason": "exit",
                                    "cwd": "/home/me/greenhouse-sensor", "hook_event_name": "SessionEnd"},
                    vault, home)
    assert "2 new" in done.stderr, done.stderr
    with Cortex.open(vault, embedder=embedder) as cortex:
        cortex.sync()
        yield cortex


@pytest.fixture(scope="module")
def live(cx: Cortex) -> Iterator[LiveServer]:
    with LiveServer(create_app(cx, token=TOKEN, watcher=Watcher(cx, debounce_ms=100))) as server:
        yield server


@pytest.fixture(scope="module")
def client(cx: Cortex) -> Iterator[TestClient[Any]]:
    with checked_client(create_app(cx, token=TOKEN, allowed_hosts=TEST_HOSTS)) as c:
        yield c


def captures(cx: Cortex) -> list[str]:
    return sorted(str(p.relative_to(cx.root)) for p in (cx.root / "raw").glob("*.md"))


def test_the_earlier_session_was_captured_with_its_wrong_claims(cx: Cortex) -> None:
    mine = [p for p in captures(cx) if "greenhouse-sensor 9f3c2a71" in p]
    assert len(mine) == 2
    said = "".join((cx.root / p).read_text(encoding="utf-8") for p in mine)
    assert WRONG in said and WRONG_FIX in said


def stop_input(session: str, prompt: str, answer: str, home: Path) -> dict[str, Any]:
    path = projects(home) / f"{session}.jsonl"
    path.write_text(rec("user", prompt, "2026-12-02T10:00:00Z") + rec("assistant", answer, "2026-12-02T10:00:30Z"),
                    encoding="utf-8")
    return {"session_id": session, "transcript_path": str(path), "cwd": "/home/me/greenhouse-sensor",
            "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": answer}


def memories(reason: str) -> list[str]:
    return [line[3:].split(" — ")[0] for line in reason.splitlines() if line.startswith("## ")]


def test_the_second_look_never_offers_the_capture_of_the_same_wrong_claim(live: LiveServer, cx: Cortex,
                                                                          home: Path) -> None:
    """The agent makes again the claim it made in the captured session: the second look brings the curated note,
    never the capture (which would present its own mistake as a corroborating memory)."""
    out = hooks.post_hook(live.url, TOKEN, "stop", stop_input("s-again", PROMPT, WRONG, home))  # the real route
    assert out.get("decision") == "block", out
    shown = memories(out["reason"])
    assert shown and shown[0] == CALIBRATION and not any(p.startswith("raw/") for p in shown), shown
    # the real command, finding the running server
    done = run_hook("stop", stop_input("s-again-cmd", PROMPT, WRONG, home), cx.root, home, live.url, TOKEN)
    shown = memories(json.loads(done.stdout)["reason"])
    assert shown[0] == CALIBRATION and not any(p.startswith("raw/") for p in shown), shown


def push_text(done: subprocess.CompletedProcess[str] | dict[str, Any]) -> str:
    out = json.loads(done.stdout) if isinstance(done, subprocess.CompletedProcess) else done
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", "")) if out else ""


def test_the_prompt_push_never_offers_a_capture(live: LiveServer, cx: Cortex, home: Path) -> None:
    payload = {"session_id": "s-prompt", "cwd": "/home/me/greenhouse-sensor", "hook_event_name": "UserPromptSubmit",
               "prompt": PROMPT,
               "transcript_path": str(projects(home) / "s-prompt.jsonl")}
    text = push_text(hooks.post_hook(live.url, TOKEN, "prompt", payload))  # the captured prompt, word for word
    assert "raw/" not in text and WRONG not in text, text
    asked = {**payload, "session_id": "s-prompt-2",
             "prompt": "How should I calibrate the capacitive soil moisture sensors?"}
    text = push_text(hooks.post_hook(live.url, TOKEN, "prompt", asked))
    assert CALIBRATION in text and "raw/" not in text, text


def test_the_failure_push_never_offers_a_capture(live: LiveServer, cx: Cortex) -> None:
    sent = json.loads((SENT / "post_tool_use_failure.json").read_text())
    payload = {**sent, "session_id": "s-failure", "tool_name": "Bash", "error": TRACEBACK, "is_interrupt": False}
    text = push_text(hooks.post_hook(live.url, TOKEN, "tool-failure", payload))
    assert FIX_NOTE in text and "raw/" not in text, text


def test_the_session_start_context_shows_no_capture_as_a_memory(cx: Cortex, home: Path) -> None:
    start = {"session_id": "s-start", "cwd": "/home/me/greenhouse-sensor", "hook_event_name": "SessionStart",
             "source": "startup"}
    out = io.StringIO()
    assert hooks.main("session-start", str(cx.root), DEAD_URL, stdin=io.StringIO(json.dumps(start)), stdout=out,
                      env={}) == 0
    text = push_text(json.loads(out.getvalue()))
    assert "## short_term/" in text or "## scientific/" in text, text  # memories of the project are there
    assert "raw/" not in text and WRONG not in text and "Transcript of the evening" not in text, text


def test_related_leaves_captures_out_unless_asked(client: TestClient[Any], live: LiveServer, cx: Cortex) -> None:
    """The pane's request (GET /v1/related?path=...) and `related` on MCP and the CLI."""
    plain = client.get("/v1/related", params={"path": CALIBRATION, "k": 10})
    assert plain.status_code == 200
    paths = [h["path"] for h in plain.json()["hits"]]
    assert paths and not any(p.startswith("raw/") for p in paths), paths
    asked = client.get("/v1/related", params={"path": CALIBRATION, "k": 10, "captures": "include"}).json()
    assert any(h["path"].startswith("raw/") for h in asked["hits"])  # there are captures to leave out
    bad = client.get("/v1/related", params={"path": CALIBRATION, "captures": "some"})
    assert bad.status_code == 400 and "captures must be one of exclude, include, only" in bad.json()["detail"]

    async def mcp(session: Client) -> list[list[str]]:
        out = []
        for args in ({"note": CALIBRATION, "k": 10}, {"note": CALIBRATION, "k": 10, "captures": "only"}):
            result = await session.call_tool("note", {"op": "related", **args})
            assert not result.is_error, result.content
            out.append([h["path"] for h in result.structured_content["hits"]])
        return out

    over_mcp, only = over_http(live, mcp)
    assert over_mcp and not any(p.startswith("raw/") for p in over_mcp), over_mcp
    assert only and all(p.startswith("raw/") for p in only), only
    cli = subprocess.run([sys.executable, "-m", "server.cli", "related", "--vault", str(cx.root), CALIBRATION,
                          "-k", "10", "--json"], capture_output=True, text=True, timeout=180)
    assert cli.returncode == 0, cli.stderr
    paths = [h["path"] for h in json.loads(cli.stdout)["hits"]]
    assert paths and not any(p.startswith("raw/") for p in paths), paths


def test_recall_finds_captures_only_when_asked(client: TestClient[Any], live: LiveServer, cx: Cortex) -> None:
    query = "soil probe values dry wet"
    plain = [h["path"] for h in client.get("/v1/recall", params={"q": query, "k": 10}).json()["hits"]]
    assert plain and not any(p.startswith("raw/") for p in plain), plain
    only = [h["path"] for h in client.get("/v1/recall", params={"q": query, "k": 3, "captures": "only"}).json()["hits"]]
    assert only and all(p.startswith("raw/") for p in only) and "greenhouse-sensor 9f3c2a71 01" in only[0], only
    both = client.post("/v1/recall", json={"query": query, "k": 10, "captures": "include"}).json()["hits"]
    assert {h["path"] for h in both} & set(only) and CALIBRATION in {h["path"] for h in both}
    bad = client.post("/v1/recall", json={"query": query, "captures": "yes"})
    assert bad.status_code == 400 and "captures must be one of" in bad.json()["detail"]

    async def mcp(session: Client) -> list[str]:
        result = await session.call_tool("recall", {"query": query, "k": 3, "captures": "only", "format": "json"})
        assert not result.is_error, result.content
        return [h["path"] for h in result.structured_content["result"]["hits"]]

    assert all(p.startswith("raw/") for p in over_http(live, mcp))
    cli = subprocess.run([sys.executable, "-m", "server.cli", "recall", "--vault", str(cx.root), query, "-k", "3",
                          "--captures", "only", "--json"], capture_output=True, text=True, timeout=180)
    assert cli.returncode == 0, cli.stderr
    assert all(h["path"].startswith("raw/") for h in json.loads(cli.stdout)["hits"])
    wrong = subprocess.run([sys.executable, "-m", "server.cli", "recall", "--vault", str(cx.root), query,
                            "--captures", "all"], capture_output=True, text=True, timeout=180)
    assert wrong.returncode == 1 and "error: captures must be one of exclude, include, only" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1 and "Traceback" not in wrong.stderr
