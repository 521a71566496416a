"""MCP through the real `mcp` client: streamable HTTP at /mcp (live uvicorn) and stdio (`vault-cortex mcp`)."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from harness import AUTH, TOKEN, LiveServer, assert_error_shape, over_http, wait_for
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from server.app import create_app
from server.watch import Watcher
from vault_cortex.cortex import Cortex

TOOLS = {"recall", "context", "remember", "link", "note", "overview", "habits", "resonance", "curiosity", "sleep"}


def test_tools_tell_an_agent_when_to_call_them(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools, client.instructions

    tools, instructions = over_http(live, body)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    assert "START" in by_name["context"].description
    assert "BEFORE answering from memory" in by_name["recall"].description
    assert "AFTER learning something worth keeping" in by_name["remember"].description
    assert by_name["recall"].annotations.read_only_hint is True
    assert by_name["remember"].annotations.read_only_hint is False
    assert by_name["recall"].input_schema["properties"]["query"]["description"]
    assert "`context`" in instructions and "`remember`" in instructions


def test_recall_remember_context_related_link_graph(live: LiveServer) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["remember"] = await client.call_tool("remember", {
            "text": "The greenhouse vent motor stalls below 9 V; power it from the 12 V rail.",
            "title": "Vent motor needs 12 V", "region": "scientific", "tags": ["greenhouse"]})
        out["recall"] = await client.call_tool("recall", {"query": "why does the vent motor stall", "k": 3})
        out["context"] = await client.call_tool("context", {"task": "fix the greenhouse vent",
                                                            "budget_tokens": 500})
        out["related"] = await client.call_tool("note", {"note": "scientific/SQLite WAL mode.md", "op": "related",
                                                         "k": 5})
        out["link"] = await client.call_tool("link", {"src": "scientific/Vent motor needs 12 V.md", "rel": "depends_on",
                                                      "dst": "scientific/ESP32 deep sleep current.md"})
        out["graph"] = await client.call_tool("overview", {"op": "graph"})
        return out

    out = over_http(live, body)
    for name, result in out.items():
        assert not result.is_error, (name, result.content)
    path = out["remember"].structured_content["path"]
    assert path == "scientific/Vent motor needs 12 V.md"
    assert out["recall"].content[0].text.startswith(f"## {path} — ")
    assert out["context"].content[0].text.startswith("## soul/")
    assert "scientific/SQLite WAL mode.md" not in {h["path"] for h in out["related"].structured_content["hits"]}
    assert out["link"].structured_content["path"] == path
    assert out["link"].structured_content["warnings"] == []  # the target exists: not dangling
    assert out["graph"].structured_content["notes"] >= 20


def test_tool_errors_are_readable(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return [await client.call_tool("note", {"note": "../../etc/passwd.md", "op": "related"}),
                await client.call_tool("recall", {"query": "x", "mode": "nonsense"}),
                await client.call_tool("recall", {"query": "x", "k": 0})]

    unsafe, mode, k = over_http(live, body)
    assert unsafe.is_error and "UnsafePath" in unsafe.content[0].text
    assert mode.is_error and "InvalidRequest" in mode.content[0].text
    assert k.is_error


def test_mcp_needs_the_token(live: LiveServer) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx.post(f"{live.url}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert response.status_code == 401
        assert_error_shape(response)
    with pytest.raises(BaseException):  # noqa: B017 - the client raises an ExceptionGroup around the 401
        over_http(live, lambda client: client.list_tools(), token="wrong")
    ok = httpx.get(f"{live.url}/v1/status", headers=AUTH)
    assert ok.status_code == 200


def test_stdio(synced_template: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)  # its own copy: one process per index
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)])

    async def main() -> Any:
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            recalled = await client.call_tool("recall", {"query": "node battery ran flat", "k": 2})
            habits = await client.call_tool("habits", {"op": "match", "tool": "Bash(pytest -q)"})
            return tools, recalled, habits

    tools, recalled, habits = anyio.run(main)
    assert {t.name for t in tools} == TOOLS
    assert not recalled.is_error
    assert recalled.content[0].text.startswith("## short_term/2026-11-29 node 3 battery ran flat.md — ")
    assert not habits.is_error
    assert [h["path"] for h in habits.structured_content["habits"]] == ["habits/Write the test first.md"]


def test_a_damaged_index_is_a_readable_tool_error_and_the_call_starts_its_rebuild(
        synced_template: Path, tmp_path: Path, embedder: Any) -> None:
    """An agent calling a tool on a damaged index gets what an HTTP client gets (IndexUnavailable: being rebuilt,
    retry), and the call itself starts the rebuild: no note has to change first. Before, the raw sqlite error
    came back and nothing was rebuilt until a file changed."""
    vault = tmp_path / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        with LiveServer(create_app(cx, token=TOKEN, watcher=Watcher(cx, debounce_ms=50))) as server:
            async def recall(client: Client) -> Any:
                return await client.call_tool("recall", {"query": "SQLite WAL mode", "k": 1})

            assert not over_http(server, recall).is_error
            conn = sqlite3.connect(vault / ".cortex/index/index.db")
            conn.execute("DROP TABLE meta")  # damage every read meets first
            conn.close()
            broken = over_http(server, recall)
            assert broken.is_error, broken.content
            text = broken.content[0].text
            assert "IndexUnavailable: the index is damaged" in text and "being rebuilt" in text, text
            assert wait_for(lambda: not over_http(server, recall).is_error, 120)  # a deadline, not a figure
            assert cx.index.recovered is not None and "no such table: meta" in cx.index.recovered
            hit = over_http(server, recall).content[0].text
            assert hit.startswith("## scientific/SQLite WAL mode.md — ")


def test_what_an_agent_writes_over_mcp_passes_the_privacy_gate(live: LiveServer, cx: Cortex) -> None:
    """An agent's own words are session text: `remember`, `note` edits and `curiosity` wonder leave out `<private>`
    spans and redact secrets before anything is written (a person's own edits, over HTTP, are theirs and
    untouched)."""
    key = "AKIAZ3MHQWERTY7EXAMP"

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["remember"] = await client.call_tool("remember", {
            "text": f"The backup bucket uses key {key} <private>and my PIN is 4921</private>; it syncs at 02:00.",
            "title": "Backup bucket sync", "region": "scientific"})
        out["edit"] = await client.call_tool("note", {
            "note": "scientific/Backup bucket sync.md", "op": "append",
            "content": "Login: https://admin:S3cr3t/pa#ss@backup.example.com/ <private>home alarm 7788</private>"})
        out["wonder"] = await client.call_tool("curiosity", {
            "op": "wonder", "question": "Why does the backup stall?",
            "text": "password=Hunter2Secret! <private>PIN 4921</private>"})
        return out

    out = over_http(live, body)
    assert not any(r.is_error for r in out.values()), out
    written = b"".join(p.read_bytes() for p in cx.root.rglob("*.md") if ".cortex" not in p.parts)
    for needle in (key, "4921", "S3cr3t", "7788", "Hunter2Secret"):
        assert needle.encode() not in written, needle
    note = (cx.root / "scientific" / "Backup bucket sync.md").read_text()
    assert "it syncs at 02:00" in note and "[private]" in note and "[redacted" in note
