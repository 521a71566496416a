"""Who asked: every write and read through MCP, HTTP and the CLI logs its own adapter's client in the activity
log, never another's or the library's default (issue 44). Each adapter binds its client once where its calls enter
(`activity.acting_as`); these tests go through the real MCP client (the server's /mcp and a stdio
`vault-cortex mcp`), the real HTTP app and the real `vault-cortex` entry point."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from harness import LiveServer, over_http
from litestar import Litestar
from litestar.testing import TestClient
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from server.cli import main
from vault_cortex.cortex import Cortex
from vault_cortex.files.activity import EditEvent, Event, FeedbackEvent, OpenEvent, RecallEvent, TouchEvent, read_events

HABIT = "habits/Write the test first.md"
WAL = "scientific/SQLite WAL mode.md"


def logged(root: Path, act: Callable[[], Any]) -> tuple[Any, list[Event]]:
    """What `act` returned and the events it added to the activity log."""
    before = Counter(read_events(root)[0])
    out = act()
    return out, list((Counter(read_events(root)[0]) - before).elements())


def what(events: list[Event]) -> set[tuple[str, str]]:
    """Each event as (kind, the note or concept it names, with an edit's op)."""
    out = set()
    for e in events:
        if isinstance(e, EditEvent):
            out.add((f"edit:{e.op}", e.path))
        elif isinstance(e, RecallEvent):
            out.add(("recall", e.query))
        elif isinstance(e, OpenEvent | FeedbackEvent):
            out.add((type(e).__name__, e.path))
        elif isinstance(e, TouchEvent):
            out.add(("touch", e.concept))
    return out


def assert_all_by(client: str, events: list[Event], expected: set[tuple[str, str]]) -> None:
    by = {(type(e).__name__, getattr(e, "path", None) or getattr(e, "query", ""), e.client) for e in events
          if e.client != client}
    assert not by, f"logged as another client than {client!r}: {sorted(by)}"
    missing = expected - what(events)
    assert not missing, f"not logged as {client!r}: {sorted(missing)}"


def test_every_mcp_tool_logs_as_mcp(live: LiveServer, cx: Cortex) -> None:
    async def body(client: Client) -> list[Any]:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("remember", {"text": "The vent motor stalls below 9 V.", "title": "MCP vent motor",
                          "region": "scientific"}),
            ("link", {"src": "scientific/MCP vent motor.md", "rel": "depends_on", "dst": WAL}),
            ("curiosity", {"op": "wonder", "question": "Why does the MCP vent motor stall?"}),
            ("curiosity", {"op": "explore", "question": "curiosities/Why does the MCP vent motor stall.md",
                           "answer": "scientific/MCP vent motor.md"}),
            ("note", {"note": "MCP vent motor", "op": "append", "content": "- seen twice"}),
            ("note", {"note": "MCP vent motor", "op": "move", "dest": "scientific/MCP vent motor moved.md"}),
            ("note", {"note": "scientific/MCP vent motor moved.md", "op": "archive"}),
            ("habits", {"op": "reinforce", "habit": HABIT}),
            ("resonance", {"op": "touch", "concept": "Craftsmanship"}),
            ("recall", {"query": "mcp asks about the vent motor"}),
            ("context", {"task": "mcp fixes the greenhouse vent"}),
            ("note", {"note": WAL}),
            ("note", {"note": WAL, "op": "related", "k": 2}),
        ]
        out = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            out.append(result)
        return out

    _, events = logged(cx.root, lambda: over_http(live, body))
    assert_all_by("mcp", events, {
        ("edit:create", "scientific/MCP vent motor.md"), ("edit:link", "scientific/MCP vent motor.md"),
        ("edit:create", "curiosities/Why does the MCP vent motor stall.md"),
        ("edit:explore", "curiosities/Why does the MCP vent motor stall.md"),
        ("edit:explore", "scientific/MCP vent motor.md"), ("edit:append", "scientific/MCP vent motor.md"),
        ("edit:move", "scientific/MCP vent motor.md"), ("edit:archive", "scientific/MCP vent motor moved.md"),
        ("FeedbackEvent", HABIT), ("touch", "Craftsmanship"), ("recall", "mcp asks about the vent motor"),
        ("OpenEvent", WAL)})
    assert any(isinstance(e, RecallEvent) and e.query.startswith("mcp fixes") for e in events)  # the context


def test_a_stdio_mcp_server_logs_as_mcp_not_as_the_cli_that_started_it(synced_template: Path,
                                                                      tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)  # its own copy: one process per index
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)])

    async def body() -> None:
        async with Client(params) as client:
            for name, args in (("link", {"src": WAL, "rel": "related_to", "dst": "SQLite"}),
                               ("curiosity", {"op": "wonder", "question": "Does stdio log as mcp?"}),
                               ("recall", {"query": "stdio asks about the SQLite WAL checkpoint"})):
                assert not (await client.call_tool(name, args)).is_error, name

    _, events = logged(vault, lambda: anyio.run(body))
    assert_all_by("mcp", events, {("edit:link", WAL), ("edit:create", "curiosities/Does stdio log as mcp.md"),
                                  ("recall", "stdio asks about the SQLite WAL checkpoint")})


def test_every_http_route_logs_as_http(client: TestClient[Litestar], cx: Cortex) -> None:
    def act() -> None:
        def ok(response: Any) -> Any:
            assert response.status_code in (200, 201), response.text
            return response

        ok(client.post("/v1/notes", json={"text": "The fan relay clicks twice.", "title": "HTTP fan relay",
                                          "region": "scientific"}))
        note = "scientific/HTTP fan relay.md"
        ok(client.post("/v1/links", json={"src": note, "rel": "depends_on", "dst": WAL}))
        ok(client.put("/v1/notes", params={"path": "scientific/HTTP put note.md"}, json={"content": "# Put\n"}))
        etag = ok(client.get("/v1/notes", params={"path": "scientific/HTTP put note.md"})).json()["etag"]
        ok(client.put("/v1/notes", params={"path": "scientific/HTTP put note.md"}, json={"content": "# Put 2\n"},
                      headers={"If-Match": f'"{etag}"'}))
        ok(client.post("/v1/curiosities", json={"question": "Why does the HTTP fan relay click?"}))
        ok(client.post("/v1/curiosities/explore", json={"path": "curiosities/Why does the HTTP fan relay click.md",
                                                        "answer_path": note}))
        ok(client.post("/v1/notes/edit", json={"note": note, "edit": {"op": "append", "content": "- twice"}}))
        ok(client.post("/v1/notes/move", json={"note": note, "dest": "scientific/HTTP fan relay moved.md"}))
        ok(client.post("/v1/notes/archive", json={"note": "scientific/HTTP fan relay moved.md"}))
        ok(client.post("/v1/habits/reinforce", json={"path": HABIT}))
        ok(client.post("/v1/resonance/touch", json={"concept": "Craftsmanship"}))
        ok(client.get("/v1/recall", params={"q": "http gets the fan relay"}))
        ok(client.post("/v1/recall", json={"query": "http posts the fan relay", "captures": "include"}))
        ok(client.post("/v1/context", json={"task": "http fixes the fan relay"}))
        ok(client.get("/v1/related", params={"path": WAL}))

    _, events = logged(cx.root, act)
    note = "scientific/HTTP fan relay.md"
    assert_all_by("http", events, {
        ("edit:create", note), ("edit:link", note), ("edit:create", "scientific/HTTP put note.md"),
        ("edit:write", "scientific/HTTP put note.md"), ("OpenEvent", "scientific/HTTP put note.md"),
        ("edit:create", "curiosities/Why does the HTTP fan relay click.md"), ("edit:explore", note),
        ("edit:explore", "curiosities/Why does the HTTP fan relay click.md"), ("edit:append", note),
        ("edit:move", note), ("edit:archive", "scientific/HTTP fan relay moved.md"), ("FeedbackEvent", HABIT),
        ("touch", "Craftsmanship"), ("recall", "http gets the fan relay"), ("recall", "http posts the fan relay"),
        ("OpenEvent", WAL)})
    assert any(isinstance(e, RecallEvent) and e.query.startswith("http fixes") for e in events)  # the context


def test_every_cli_command_logs_as_cli(cx: Cortex, capsys: Any) -> None:
    vault = ["--vault", str(cx.root)]
    note = "scientific/CLI pump.md"
    question = "curiosities/Why does the CLI pump hum.md"

    def act() -> None:
        for argv in (["remember", "The pump hums at night.", "--title", "CLI pump", "--region", "scientific"],
                     ["link", note, "depends_on", WAL],
                     ["wonder", "Why does the CLI pump hum?"],
                     ["explore", question, note],
                     ["edit", note, "append", "--content", "- hums at 2 am"],
                     ["move", note, "scientific/CLI pump moved.md"],
                     ["archive", "scientific/CLI pump moved.md"],
                     ["reinforce", HABIT],
                     ["resonance", "touch", "Craftsmanship"],
                     ["recall", "cli asks about the pump", "-q"],
                     ["context", "--task", "cli fixes the pump", "-q"],
                     ["read", WAL],
                     ["related", WAL]):
            assert main([*argv, *vault]) == 0, argv
        capsys.readouterr()

    _, events = logged(cx.root, act)
    assert_all_by("cli", events, {
        ("edit:create", note), ("edit:link", note), ("edit:create", question), ("edit:explore", question),
        ("edit:explore", note), ("edit:append", note), ("edit:move", note),
        ("edit:archive", "scientific/CLI pump moved.md"), ("FeedbackEvent", HABIT), ("touch", "Craftsmanship"),
        ("recall", "cli asks about the pump"), ("OpenEvent", WAL)})
    assert any(isinstance(e, RecallEvent) and e.query.startswith("cli fixes") for e in events)  # the context
