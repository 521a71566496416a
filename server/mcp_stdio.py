"""`vault-cortex mcp`: MCP over stdio that answers the handshake and lists its tools at once, then opens the vault.

An agent that connects its MCP servers while its first request is on its way (Claude Code in `-p` mode) offers
the model only the tools listed by then, so the slow parts (opening the index, loading the model, the start-up
sync) wait until the client has listed the tools, and run in the background; a tool called meanwhile waits for the
vault (`Opened`). The hooks' socket is served once the vault is open (a hook that comes first opens it itself).
When `vault-cortex mcp` started the front (server/mcp_front.py: it answers the handshake while the SDK is
imported), the SDK server runs behind it, over in-memory streams (`behind_front`).
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

from server import mcp_front
from server.mcp_shipped import run_server
from server.mcp_tools import Opened, build_mcp
from vault_cortex.cortex import Cortex

log = logging.getLogger("server")
HANDSHAKE_WAIT_S = 5.0  # a client that lists no tools: the vault is opened anyway after this long


class Handshake:
    """MCP middleware noting when the client has listed the tools (or called one): the vault may open then."""

    def __init__(self) -> None:
        self.done = anyio.Event()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method == "tools/call":
            self.done.set()  # the call waits for the vault: it must not wait for the call
        result = await call_next(ctx)
        if ctx.request_id is not None and ctx.method != "initialize":
            self.done.set()
        return result


def open_vault(root: Path, index_dir: Path | None) -> Cortex:
    """The Cortex of a stdio server: the index checked (a damaged one is set aside to rebuild), and marked as
    being synced, so every tool says how far indexing is from the first call until the index is whole."""
    cx = Cortex.open(root, index_dir=index_dir)
    try:
        cx.index.check_index()
        cx.index.expect_sync()
    except BaseException:
        cx.close()
        raise
    return cx


async def serve(root: Path, index_dir: Path | None) -> None:
    """Serve MCP on stdin/stdout until the client goes; the vault opens after the handshake."""
    opened, handshake = Opened(), Handshake()
    mcp = build_mcp(opened, middleware=[handshake])
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_open_later, root, index_dir, opened, handshake, tg)
            front = mcp_front.running()
            await (mcp.run_stdio_async() if front is None else behind_front(mcp, front, handshake))
            if opened.current is not None:
                opened.current.index.stop()  # a sync running in a worker thread returns at its next embedding batch
            tg.cancel_scope.cancel()
    finally:
        if opened.current is not None:
            opened.current.close()


async def behind_front(mcp: MCPServer, front: mcp_front.Front, handshake: Handshake) -> None:
    """Serve `mcp` behind the front until the client closes stdin: the lines the front queued go to the SDK
    server in order (the client's `initialize` replayed first, if the front answered it), and every message
    the server sends goes to the client, but the answer to that replay."""
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)

    async def inbound() -> None:
        async with to_server:
            while (line := await anyio.to_thread.run_sync(front.next_line, abandon_on_cancel=True)) is not None:
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - the SDK server answers it, as over its own stdio
                    await to_server.send(exc)
                    continue
                await to_server.send(SessionMessage(message))

    async def outbound() -> None:
        async with from_server:
            async for sent in from_server:
                message = sent.message
                if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id == mcp_front.FRONT_ID:
                    continue
                line = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                await anyio.to_thread.run_sync(front.write, line)

    if front.go_live():
        handshake.done.set()  # the front has listed the tools: the vault may open
    async with anyio.create_task_group() as tg:
        tg.start_soon(inbound)
        tg.start_soon(outbound)
        await run_server(mcp, server_in, server_out)
        tg.cancel_scope.cancel()


async def _open_later(root: Path, index_dir: Path | None, opened: Opened, handshake: Handshake,
                      tg: TaskGroup) -> None:
    from server import hooks
    from server.app import warm_up  # the HTTP app's module (Litestar): not imported before the handshake
    from server.hook_socket import serve_hooks
    from server.watch import DEBOUNCE_MS, Watcher

    with anyio.move_on_after(HANDSHAKE_WAIT_S):
        await handshake.done.wait()
    try:
        cx = await anyio.to_thread.run_sync(partial(open_vault, root, index_dir))
    except Exception as exc:  # noqa: BLE001 - every tool answers with it; the client is told, not a traceback
        log.error("could not open the vault %s: %s: %s", root, type(exc).__name__, exc)
        opened.failed(exc)
        return
    watcher = Watcher(cx, debounce_ms=DEBOUNCE_MS)
    opened.set(cx, watcher)
    tg.start_soon(warm_up, cx)
    tg.start_soon(watcher.run)  # stdout carries MCP messages only: the watcher logs to stderr
    tg.start_soon(serve_hooks, cx, hooks.answer)  # the session's hooks, with the model loaded here
