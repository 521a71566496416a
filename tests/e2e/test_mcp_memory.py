"""The habit, resonance, curiosity and sleep tools through the real MCP client (streamable HTTP at /mcp).

test_mcp.py's stdio test calls `habits` over stdio as well.
"""

from __future__ import annotations

from typing import Any

from harness import LiveServer, over_http
from mcp.client import Client

from vault_cortex.cortex import Cortex

HABIT = "habits/Write the test first.md"


def test_the_memory_tools_say_when_to_call_them(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return {t.name: t for t in (await client.list_tools()).tools}

    tools = over_http(live, body)
    when = {"habits": "call it BEFORE a kind of task", "resonance": "truly engages", "curiosity": "worth answering",
            "sleep": "changes nothing"}
    for name, phrase in when.items():
        assert phrase in tools[name].description, name
    for name in ("habits", "resonance", "curiosity", "sleep"):  # each has an op that writes: not read-only
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["sleep"].annotations.destructive_hint is True
    assert set(tools["sleep"].input_schema["properties"]["mode"]["enum"]) == {"full", "light", "save"}
    assert tools["sleep"].input_schema["properties"]["op"]["enum"] == ["plan", "apply", "rollback"]


def test_habits_then_reinforce(live: LiveServer, cx: Cortex) -> None:
    async def body(client: Client) -> Any:
        found = await client.call_tool("habits", {"op": "match", "text": "fix the flaky regression in the collector"})
        done = await client.call_tool("habits", {"op": "reinforce", "habit": HABIT, "text": "fixed the flaky test"})
        wrong = await client.call_tool("habits", {"op": "reinforce", "habit": "scientific/SQLite WAL mode.md"})
        return found, done, wrong

    found, done, wrong = over_http(live, body)
    assert not found.is_error and found.structured_content["habits"][0]["path"] == HABIT
    assert "Write the test first" in found.structured_content["markdown"]
    assert not done.is_error
    assert (done.structured_content["before"], done.structured_content["after"]) == (0.7, 0.8)
    assert "weight: 0.8\n" in (cx.root / HABIT).read_text(encoding="utf-8")
    assert wrong.is_error and "InvalidRequest" in wrong.content[0].text


def test_resonate_then_report(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        touched = await client.call_tool("resonance", {"op": "touch", "concept": "wonder"})
        report = await client.call_tool("resonance", {"op": "report", "days": 7})
        unknown = await client.call_tool("resonance", {"op": "touch", "concept": "astrology"})
        return touched, report, unknown

    touched, report, unknown = over_http(live, body)
    assert not touched.is_error and touched.structured_content["path"] == "resonance/Curiosity.md"
    rows = {r["name"]: r for r in report.structured_content["concepts"]}
    assert rows["Curiosity"]["touches"] == 1 and report.structured_content["days"] == 7
    assert unknown.is_error and "NoteNotFound" in unknown.content[0].text


def test_wonder_list_explore(live: LiveServer) -> None:
    question = "Why does the greenhouse fan hum at night?"

    async def body(client: Client) -> Any:
        asked = await client.call_tool("curiosity", {"op": "wonder", "question": question,
                                                    "text": "Only after midnight."})
        listed = await client.call_tool("curiosity", {"op": "list", "text": "fan noise in the greenhouse at night"})
        answer = await client.call_tool("remember", {
            "text": "The fan hums at night because the PWM frequency drops to 100 Hz when the controller idles.",
            "title": "Fan hum comes from low PWM frequency", "region": "scientific"})
        explored = await client.call_tool("curiosity", {"op": "explore", "question": asked.structured_content["path"],
                                                        "answer": answer.structured_content["path"]})
        after = await client.call_tool("curiosity", {"op": "list"})
        return asked, listed, explored, after

    asked, listed, explored, after = over_http(live, body)
    path = asked.structured_content["path"]
    assert path == "curiosities/Why does the greenhouse fan hum at night.md"
    assert listed.structured_content["items"][0]["path"] == path
    assert not explored.is_error
    assert explored.structured_content["question"]["status"] == "explored"
    assert explored.structured_content["question"]["answered_by"] == "[[Fan hum comes from low PWM frequency]]"
    assert path not in [c["path"] for c in after.structured_content["items"]]


def test_sleep_plan_then_apply(live: LiveServer, cx: Cortex) -> None:
    async def body(client: Client) -> Any:
        plan = await client.call_tool("sleep", {"op": "plan", "mode": "light"})
        applied = await client.call_tool("sleep", {"op": "apply", "plan_id": plan.structured_content["id"]})
        unknown = await client.call_tool("sleep", {"op": "apply", "plan_id": "20000101T000000Z"})
        malformed = await client.call_tool("sleep", {"op": "apply", "plan_id": "../../x"})
        bad_mode = await client.call_tool("sleep", {"op": "plan", "mode": "deep"})
        return plan, applied, unknown, malformed, bad_mode

    plan, applied, unknown, malformed, bad_mode = over_http(live, body)
    assert not plan.is_error
    out = plan.structured_content
    assert out["mode"] == "light" and out["operations"] > 0 and out["saved"] is True
    assert out["markdown"].startswith(f"# Sleep plan {out['id']} (light)")
    assert not applied.is_error
    report = applied.structured_content
    assert report["plan"] == out["id"] and len(report["applied"]) == out["operations"] and report["skipped"] == []
    assert "<!-- vault-cortex:sleep:start -->" in (cx.root / "HANDOFF.md").read_text(encoding="utf-8")
    assert unknown.is_error and "no saved sleep plan" in unknown.content[0].text
    assert malformed.is_error and bad_mode.is_error


def test_sleep_rollback_undoes_the_sleep_an_agent_applied(live: LiveServer, cx: Cortex) -> None:
    """An agent that can apply a sleep over MCP can undo it there too: every note back as it was."""
    before = {p.relative_to(cx.root).as_posix(): p.read_bytes() for p in cx.root.rglob("*.md")
              if not p.relative_to(cx.root).parts[0].startswith(".")}

    async def body(client: Client) -> Any:
        plan = await client.call_tool("sleep", {"op": "plan"})
        applied = await client.call_tool("sleep", {"op": "apply", "plan_id": plan.structured_content["id"]})
        undone = await client.call_tool("sleep", {"op": "rollback"})
        again = await client.call_tool("sleep", {"op": "rollback"})
        return plan, applied, undone, again

    plan, applied, undone, again = over_http(live, body)
    assert plan.structured_content["mode"] == "full"  # the one default: the CLI's and GET /v1/sleep/plan's too
    assert not applied.is_error and applied.structured_content["applied"]
    assert not undone.is_error and undone.structured_content["rolled_back"] is True
    assert sorted(undone.structured_content["undone"]) == sorted(applied.structured_content["applied"])
    after = {p.relative_to(cx.root).as_posix(): p.read_bytes() for p in cx.root.rglob("*.md")
             if not p.relative_to(cx.root).parts[0].startswith(".")}
    assert after == before
    assert again.is_error and "already rolled back" in again.content[0].text
