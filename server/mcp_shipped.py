"""The answers `vault-cortex mcp`'s front ships (server/mcp_front.py): what the SDK's server itself answers to
`initialize` and `tools/list`, for each protocol version of the handshake. After changing a tool, the instructions
or the `mcp` SDK, write them again: `python -m server.mcp_shipped` (tests/e2e/test_mcp_front.py checks them)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from server.mcp_front import _DISTRIBUTIONS, MODERN_KEY, SHIPPED
from server.mcp_tools import Opened, build_mcp

CLIENT = {"name": "vault-cortex-shipped", "version": "1"}


async def run_server(mcp: MCPServer, read: ReadStream[SessionMessage | Exception],
                     write: WriteStream[SessionMessage]) -> None:
    """Serve one connection over these streams, as `MCPServer.run_stdio_async` does over stdin and stdout."""
    lowlevel = mcp._lowlevel_server  # noqa: SLF001 - what run_stdio_async runs; the SDK has no public handle
    await lowlevel.run(read, write, lowlevel.create_initialization_options())


async def live_answers() -> dict[str, Any]:
    """The SDK server's answers, by protocol version, as the front ships them."""
    mcp = build_mcp(Opened())
    versions = {version: await _session(mcp, version, modern=False) for version in HANDSHAKE_PROTOCOL_VERSIONS}
    modern = {version: await _session(mcp, version, modern=True) for version in MODERN_PROTOCOL_VERSIONS}
    return {"made_by": {name: metadata.version(name) for name in _DISTRIBUTIONS},
            "latest": LATEST_HANDSHAKE_VERSION, "versions": versions, "modern": modern}


async def _session(mcp: MCPServer, version: str, *, modern: bool) -> dict[str, Any]:
    """The handshake of one client: `initialize` and `tools/list`, or in the stateless era (`modern`), its
    `server/discover` and `tools/list`, each carrying the version and the client in `_meta`."""
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](4)

    async def send(message: dict[str, Any]) -> None:
        await to_server.send(SessionMessage(jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **message})))

    async def ask(n: int, method: str, params: dict[str, Any]) -> Any:
        await send({"id": n, "method": method, "params": params})
        answer = (await from_server.receive()).message.model_dump(by_alias=True, exclude_unset=True, mode="json")
        return answer["result"]

    envelope = {"_meta": {MODERN_KEY: version, "io.modelcontextprotocol/clientInfo": CLIENT,
                          "io.modelcontextprotocol/clientCapabilities": {}}}
    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(run_server, mcp, server_in, server_out)
        if modern:
            answers = {"server/discover": await ask(1, "server/discover", envelope),
                       "tools/list": await ask(2, "tools/list", envelope)}
        else:
            answers = {"initialize": await ask(1, "initialize", {"protocolVersion": version, "capabilities": {},
                                                                 "clientInfo": CLIENT})}
            await send({"method": "notifications/initialized"})
            answers["tools/list"] = await ask(2, "tools/list", {})
        await to_server.aclose()  # the server's end: it returns
    return answers


def write(path: Path = SHIPPED) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(anyio.run(live_answers), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
    print(f"wrote {SHIPPED}")
