"""`vault-cortex mcp` answers the handshake from its shipped answers while the SDK is imported (server/mcp_front.py),
and they are the SDK server's own; then the SDK server answers behind it, the client's calls made meanwhile too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import LATEST_HANDSHAKE_VERSION, OLDEST_SUPPORTED_VERSION

from server import mcp_front
from server.mcp_shipped import live_answers
from vault_cortex.files.vault import init_vault

REGENERATE = "python -m server.mcp_shipped"


def test_the_shipped_answers_are_the_live_servers() -> None:
    shipped = mcp_front.load()
    assert shipped is not None, f"{mcp_front.SHIPPED} is missing or stale: run `{REGENERATE}`"
    assert shipped == anyio.run(live_answers), f"the tools or the SDK changed: run `{REGENERATE}`"


def test_answers_shipped_by_another_sdk_or_none_are_not_used(tmp_path: Path) -> None:
    assert mcp_front.load(tmp_path / "missing.json") is None
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    assert mcp_front.load(tmp_path / "broken.json") is None
    shipped = json.loads(mcp_front.SHIPPED.read_text(encoding="utf-8"))
    (tmp_path / "other.json").write_text(json.dumps({**shipped, "made_by": {**shipped["made_by"], "mcp": "2.0.0"}}))
    assert mcp_front.load(tmp_path / "other.json") is None


def test_the_front_imports_neither_the_sdk_nor_the_library() -> None:
    heavy = "{'mcp', 'mcp_types', 'pydantic', 'numpy', 'anyio', 'vault_cortex.cortex'}"
    loaded = "({m.split('.')[0] for m in sys.modules} | set(sys.modules))"
    probe = subprocess.run([sys.executable, "-c", "import sys, server.cli, server.mcp_front, vault_cortex.files.vault; "
                            f"print(sorted({heavy} & {loaded}))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "[]", probe.stderr


def test_no_vault_no_front(tmp_path: Path) -> None:
    """With no vault, the client is answered nothing, and the command says why (as before the front)."""
    done = subprocess.run([sys.executable, "-m", "server.cli", "mcp", "--vault", str(tmp_path / "none")],
                          input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                            "params": initialize("2025-11-25")}) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert "no vault at" in done.stderr


class Wire:
    """`vault-cortex mcp` driven with raw JSON-RPC lines over its pipes."""

    def __init__(self, vault: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "server.cli", "mcp", "--vault", str(vault)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, method: str, params: dict[str, Any] | None = None, id: int | None = None) -> None:  # noqa: A002
        message = {"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params}),
                   **({} if id is None else {"id": id})}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        return dict(json.loads(line))

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(60)
        self.proc.stdout.close()
        return code


def initialize(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


@pytest.mark.parametrize(("asked", "negotiated"), [(OLDEST_SUPPORTED_VERSION, OLDEST_SUPPORTED_VERSION),
                                                   ("1999-01-01", LATEST_HANDSHAKE_VERSION)])
def test_a_raw_client_negotiates_as_with_the_sdk_and_its_early_call_waits_for_the_vault(
        short_tmp: Path, asked: str, negotiated: str) -> None:
    vault = short_tmp / "vault"
    init_vault(vault)
    wire = Wire(vault)
    try:
        wire.send("initialize", initialize(asked), id=1)
        answer = wire.receive()
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == negotiated
        assert answer["result"]["serverInfo"]["name"] == "vault-cortex"
        wire.send("notifications/initialized")
        wire.send("tools/call", {"name": "note", "arguments": {"note": "Commit messages"}}, id=2)  # before tools/list
        wire.send("tools/list", id=3)
        answers = {a["id"]: a for a in (wire.receive(), wire.receive())}
        listed = answers[3]["result"]["tools"]
        assert "recall" in {t["name"] for t in listed}
        called = answers[2]["result"]
        assert not called.get("isError"), called
        assert called["structuredContent"]["path"] == "linguistic/Commit messages.md"
        wire.send("tools/list", id=4)  # now the SDK server's own answer
        assert wire.receive() == {"jsonrpc": "2.0", "id": 4, "result": {"tools": listed}}
    finally:
        assert wire.close() == 0


def test_the_front_lists_the_tools_before_the_sdk_server_answers_anything(short_tmp: Path) -> None:
    """A ping sent before tools/list waits for the SDK's server, whose import takes about a second; tools/list,
    sent a moment after the front answered `initialize`, is answered by the front before it."""
    vault = short_tmp / "vault"
    init_vault(vault)
    wire = Wire(vault)
    try:
        wire.send("initialize", initialize(LATEST_HANDSHAKE_VERSION), id=1)
        assert wire.receive()["id"] == 1
        wire.send("notifications/initialized")
        wire.send("ping", id=2)
        wire.send("tools/list", id=3)
        assert [wire.receive()["id"], wire.receive()["id"]] == [3, 2]
    finally:
        assert wire.close() == 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_sdk_client_lists_the_tools_and_calls_one(short_tmp: Path, mode: str) -> None:
    """`legacy`: the initialize handshake at the SDK's newest version; `auto`: the SDK client's own default, which
    asks `server/discover` and then speaks the stateless era."""
    vault = short_tmp / "vault"
    init_vault(vault)
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)])

    async def main() -> tuple[list[str], Any, Any]:
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("note", {"note": "Commit messages"})
            return tools, result, await client.list_tools()

    tools, result, again = anyio.run(main)
    assert {"recall", "context", "remember", "note"} <= set(tools)
    assert not result.is_error, result.content
    assert result.structured_content["path"] == "linguistic/Commit messages.md"
    assert [t.name for t in again.tools] == tools
