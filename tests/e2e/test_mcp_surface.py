"""What the MCP tools cost a client before any work, through the real `mcp` client: the tool list an eager client
sends with every request fits its budget, the stdio server lists its tools at once (the vault opens after the
handshake; a tool called before then waits for it), an op missing an argument names it, and `context` with no
arguments is never empty."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from harness import LiveServer, over_http
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from server.hook_socket import live_sockets
from vault_cortex.files.adopt import adopt_vault

BUDGET_TOKENS = 2500  # every tool's name, description and input schema, at 4 characters a token
SLOW_START_S = 10.0  # a deadline, an order of magnitude above the figure (tests/bench/mcp_surface.py)


def surface_chars(tools: list[Any]) -> int:
    """Characters of the tool list as a client sends it to the model: name, description and input schema."""
    return len(json.dumps([{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                           for t in tools]))


def test_every_tool_fits_the_context_budget_and_says_what_it_may_change(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in over_http(live, body)}
    assert surface_chars(list(tools.values())) <= BUDGET_TOKENS * 4
    read_only = {name for name, t in tools.items() if t.annotations.read_only_hint}
    assert read_only == {"recall", "context", "overview"}  # every other tool has an op that writes
    assert tools["note"].annotations.destructive_hint and tools["sleep"].annotations.destructive_hint


def test_an_op_missing_its_argument_is_an_error_naming_it(live: LiveServer) -> None:
    calls = [("note", {"note": "HANDOFF", "op": "move"}, "move needs `dest`"),
             ("note", {"note": "HANDOFF", "op": "find_replace", "find": "x"}, "find_replace needs `content`"),
             ("note", {"note": "HANDOFF", "op": "append"}, "append needs `content`"),
             ("habits", {"op": "reinforce"}, "reinforce needs `habit`"),
             ("resonance", {"op": "touch"}, "touch needs `concept`"),
             ("curiosity", {"op": "wonder"}, "wonder needs `question`"),
             ("curiosity", {"op": "explore", "question": "curiosities/x.md"}, "explore needs `answer`"),
             ("sleep", {"op": "apply"}, "apply needs `plan_id`"),
             ("sleep", {"op": "nap"}, "op")]

    async def body(client: Client) -> list[Any]:
        return [await client.call_tool(name, args) for name, args, _ in calls]

    for (name, args, said), result in zip(calls, over_http(live, body), strict=True):
        assert result.is_error, (name, args)
        assert said in result.content[0].text, (name, args, result.content[0].text)


def test_context_without_arguments_is_the_identity_and_handoff_or_says_memory_is_empty(
        live: LiveServer, tmp_path: Path) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("context", {})

    starter = over_http(live, body)
    assert not starter.is_error
    said_first = starter.content[0].text
    assert "## soul/Build things that last.md — pinned identity note" in said_first and "## HANDOFF.md" in said_first
    vault = tmp_path / "adopted"  # an Obsidian vault adopted as it is: no identity note, no handoff
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "Garden.md").write_text("# Garden\nTomatoes need eight hours of sun.\n", encoding="utf-8")
    adopt_vault(vault)
    said = _stdio(vault, lambda client: _context_once_indexed(client))
    assert said.startswith("Memory holds no identity notes, handoff or open questions yet (1 note indexed)"), said


async def _context_once_indexed(client: Client) -> str:
    with anyio.fail_after(120):  # a deadline for the start-up sync of one note, not a figure
        while (recalled := await client.call_tool("recall", {"query": "tomatoes", "format": "json"})
               ).structured_content["result"]["indexing"]:
            await anyio.sleep(0.1)
    assert not recalled.is_error
    result = await client.call_tool("context", {})
    assert not result.is_error, result.content
    return str(result.content[0].text)


def test_the_stdio_server_lists_its_tools_at_once_and_a_first_call_waits_for_the_vault(
        synced_template: Path, short_tmp: Path) -> None:
    """The tools are listed before the vault is opened (an agent offers its model only the tools listed by its
    first request); a recall made at once waits for the vault instead of failing, and the hooks' socket comes up."""
    vault = short_tmp / "vault"  # its hook socket fits in a Unix socket path
    shutil.copytree(synced_template, vault, symlinks=True)
    started = time.monotonic()

    async def body(client: Client) -> dict[str, Any]:
        tools = (await client.list_tools()).tools
        listed = time.monotonic() - started
        recalled = await client.call_tool("recall", {"query": "node battery ran flat", "k": 1})
        with anyio.fail_after(60):
            while not live_sockets(vault, {}):
                await anyio.sleep(0.05)
        return {"tools": tools, "listed": listed, "recalled": recalled}

    seen = _stdio(vault, body)
    assert len(seen["tools"]) == 10 and seen["listed"] < SLOW_START_S, seen["listed"]
    assert not seen["recalled"].is_error, seen["recalled"].content
    assert seen["recalled"].content[0].text.startswith("## short_term/2026-11-29 node 3 battery ran flat.md — ")


def _stdio(vault: Path, body: Any) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)])

    async def main() -> Any:
        async with Client(params) as client:
            return await body(client)

    return anyio.run(main)
