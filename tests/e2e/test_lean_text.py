"""What a model is handed carries the point (recall/brief.py): no link it cannot open, no score or per-signal figure,
a start context gated on what bears on the project, and a recall that says when nothing in the vault bears."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import msgspec
from harness import LiveServer, over_http
from mcp.client import Client

from server.hooks import run_hook
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

UNUSABLE = re.compile(r"obsidian://|score 0\.|\(\d\.\d\d\)|\bp 0\.\d")
FIX_NOTE = "scientific/2026-11-20 collector database is locked.md"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tool_result" / Path(FIX_NOTE).name
LOCKED = ('Traceback (most recent call last):\n  File "collector/store.py", line 41, in write\n'
          "sqlite3.OperationalError: database is locked")
ANSWER = "Node 3 should run for about 300 days on one 18650 cell in deep sleep, so no battery change this year."


def tokens(text: str) -> float:
    """Tokens as the task counts them: characters / 4."""
    return len(text) / 4


def said(cx: Cortex, event: str, payload: dict[str, Any]) -> str:
    out = run_hook(lambda: cx, event, payload)
    return str(out.get("reason") or out.get("hookSpecificOutput", {}).get("additionalContext") or "")


def with_fix_note(cx: Cortex) -> None:
    if not (cx.root / FIX_NOTE).exists():
        shutil.copy(FIXTURE, cx.root / FIX_NOTE)
        cx.sync()


def test_no_hook_event_hands_the_model_a_link_or_a_score(cx: Cortex) -> None:
    with_fix_note(cx)
    base = {"session_id": "s-lean-text", "cwd": "/home/me/greenhouse-sensor"}
    texts = {
        "session-start": said(cx, "session-start", {**base, "source": "startup"}),
        "prompt": said(cx, "prompt", {**base, "session_id": "s-lean-text-prompt",
                                      "prompt": "Why did node 3's battery run flat so soon?"}),
        "tool": said(cx, "tool", {**base, "tool_name": "Bash", "tool_input": {"command": "pytest -q"}}),
        "tool-failure": said(cx, "tool-failure", {**base, "tool_name": "Bash", "error": LOCKED}),
        "tool-result": said(cx, "tool-result", {**base, "tool_name": "Bash", "tool_response": {
            "stdout": "", "stderr": LOCKED, "interrupted": False, "exit_code": 1}}),
        "stop": said(cx, "stop", {**base, "session_id": "s-lean-text-stop", "last_assistant_message": ANSWER}),
    }
    assert texts["session-start"] and texts["prompt"] and texts["tool-failure"], texts
    for event, text in texts.items():
        assert not UNUSABLE.search(text), (event, UNUSABLE.search(text), text)


def test_an_unrelated_project_gets_the_identity_block_alone_and_the_own_project_its_notes(cx: Cortex) -> None:
    other = said(cx, "session-start", {"session_id": "s-tax", "cwd": "/home/me/tax-website", "source": "startup"})
    assert tokens(other) <= 150, other
    assert other.startswith("## soul/Build things that last.md — pinned identity note")
    heads = [line for line in other.splitlines() if line.startswith("## ")]
    # the identity block and the handoff, which says whose it is; nothing else bears
    assert heads == ["## soul/Build things that last.md — pinned identity note",
                     "## HANDOFF.md — the last handoff, of project greenhouse-sensor"], other
    own = said(cx, "session-start", {"session_id": "s-own", "cwd": "/home/me/greenhouse-sensor", "source": "startup"})
    assert tokens(own) <= 700, tokens(own)
    heads = [line.split(" — ")[0][3:] for line in own.splitlines() if line.startswith("## ")]
    assert heads[0] == "soul/Build things that last.md" and "HANDOFF.md" in heads
    assert "long_term/greenhouse-sensor architecture.md" in heads and "scientific/SQLite WAL mode.md" in heads
    # the open questions of the project, named one line each
    assert "## curiosities/Why does the WAL file grow during long reads.md — an open question on this\n" in own


def test_a_failure_matching_a_start_context_note_points_back_to_it(cx: Cortex, embedder: Embedder,
                                                                   tmp_path: Path) -> None:
    with_fix_note(cx)
    shutil.copytree(cx.root, tmp_path / "vault", symlinks=True)
    more = msgspec.structs.replace(cx.settings, recall=msgspec.structs.replace(cx.settings.recall, k=20))
    with Cortex.open(tmp_path / "vault", embedder=embedder, settings=more) as wide:  # every project note at start
        base = {"session_id": "s-remind", "cwd": "/home/me/greenhouse-sensor"}
        start = said(wide, "session-start", {**base, "source": "startup"})
        assert f"## {FIX_NOTE}" in start  # the project's note, shown at session start
        failure = said(wide, "tool-failure", {**base, "tool_name": "Bash", "error": LOCKED})
        assert f"## {FIX_NOTE}" not in failure  # never in full again
        assert f"The fix may be in [[{FIX_NOTE.removesuffix('.md')}]], shown earlier in this session." in failure


def test_mcp_recall_is_short_text_says_when_nothing_bears_and_json_on_request(live: LiveServer) -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {"text": await client.call_tool("recall", {"query": "why did node 3's battery run flat", "k": 3}),
                "nonsense": await client.call_tool("recall", {"query": "qwzx nonsense flibber"}),
                "json": await client.call_tool("recall", {"query": "why did node 3's battery run flat", "k": 3,
                                                          "format": "json"}),
                "context": await client.call_tool("context", {"task": "plan the greenhouse node batteries"})}

    out = over_http(live, body)
    text = out["text"].content[0].text
    hits = text.split("\n\n")
    assert len(hits) == 3 and hits[0].startswith("## short_term/2026-11-29 node 3 battery ran flat.md — ")
    assert all(tokens(hit) <= 70 for hit in hits), [tokens(h) for h in hits]
    nonsense = out["nonsense"].content[0].text
    assert nonsense.startswith("Nothing in the vault bears on this") and tokens(nonsense) <= 60, nonsense
    first = out["json"].structured_content["result"]["hits"][0]  # today's dict, every field
    assert first["path"] == "short_term/2026-11-29 node 3 battery ran flat.md" and "score" in first
    for name in ("text", "nonsense", "context"):
        assert not UNUSABLE.search(out[name].content[0].text), (name, out[name].content[0].text)


def test_no_mcp_tool_hands_the_model_a_link_or_a_score(live: LiveServer) -> None:
    """What every tool's text says (what a model reads; programs read the structured content): memories in the one
    text form, no link and no score. A sleep plan is the exception: a plan the person reviews, whose merges give
    their similarity."""
    calls = [("recall", {"query": "why did the dashboard freeze"}), ("context", {}),
             ("context", {"project": "greenhouse-sensor"}), ("note", {"note": "SQLite WAL mode"}),
             ("note", {"note": "SQLite WAL mode", "op": "related", "k": 3}),
             ("habits", {"op": "match", "text": "download a firmware image and flash it"}),
             ("curiosity", {"op": "list", "text": "battery life of a node"}), ("overview", {"op": "recent"}),
             ("overview", {"op": "graph"}), ("resonance", {"op": "report"})]

    async def body(client: Client) -> list[Any]:
        return [await client.call_tool(name, args) for name, args in calls]

    for (name, args), result in zip(calls, over_http(live, body), strict=True):
        text = "".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error and text, (name, args, text)
        assert not UNUSABLE.search(text), (name, args, UNUSABLE.search(text), text)
        if args.get("op") in ("related", "list") or name == "recall":
            assert text.startswith("## "), (name, args, text)  # memories in the one text form
    related = over_http(live, lambda client: client.call_tool("note", {"note": "SQLite WAL mode", "op": "related"}))
    assert related.structured_content["hits"][0]["signals"]  # the fields stay for programs
