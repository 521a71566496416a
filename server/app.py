"""The app factory: the /v1 routes, MCP at /mcp, token, CORS, limits, the watcher and the nightly sleep in one app."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import cast

import anyio
from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.di import Provide
from litestar.handlers import asgi
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import ASGIApp, Receive, Scope, Send
from mcp.server.transport_security import TransportSecuritySettings

from server import routes, routes_habits, routes_notes, routes_sleep
from server.auth import CORS_ORIGINS, cors_middleware, host_middleware, proof_route, token_guard
from server.errors import handle_exception, json_errors
from server.mcp_tools import build_mcp
from server.nightly import Nightly
from server.watch import Watcher
from vault_cortex import __version__
from vault_cortex.cortex import Cortex
from vault_cortex.files.activity import acting_as

log = logging.getLogger(__name__)

HTTP_CLIENT = "http"  # the activity log's client for everything a /v1 route does (the hooks' route: "hook")
MAX_BODY_BYTES = 1 << 20  # 1 MiB: a note, a query or a hook input; larger bodies get a 413
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def http_client(app: ASGIApp) -> ASGIApp:
    """The /v1 routes' middleware binding their client (`acting_as`) once for every request: a handler's worker
    thread (`anyio.to_thread.run_sync`) runs in a copy of the request's context, so it logs as HTTP_CLIENT."""
    async def bound(scope: Scope, receive: Receive, send: Send) -> None:
        with acting_as(HTTP_CLIENT):
            await app(scope, receive, send)
    return bound


async def warm_up(cx: Cortex) -> None:
    """Load the model and read the vector file in the background at start, so the first recall or write does
    not pay for them (a CLI command reads the vector file only when it needs it)."""
    try:
        await anyio.to_thread.run_sync(lambda: cx.embedder)
    except Exception:  # noqa: BLE001 - the first request will report the problem
        log.exception("could not load the embedding model")
    await anyio.to_thread.run_sync(lambda: len(cx.vectors))


def create_app(
    cx: Cortex,
    *,
    token: str,
    watcher: Watcher | None = None,
    nightly: Nightly | None = None,
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> Litestar:
    """A new app serving `cx` (build one per server: the MCP session manager can run only once).

    allowed_hosts: Host header values /v1 and MCP accept (`name:*` = any port), against DNS rebinding; None
    turns the check off (a non-loopback bind, where the token alone guards).
    nightly: runs the nightly sleep in the background while the app runs (when `[sleep] nightly` is on).
    """
    mcp = build_mcp(cx, watcher=watcher)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=allowed_hosts is not None,
        allowed_hosts=list(allowed_hosts or ()),
        allowed_origins=[*CORS_ORIGINS, "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    mcp_app = json_errors(cast("ASGIApp", mcp.streamable_http_app(
        streamable_http_path="/", transport_security=security, max_request_body_size=max_body_bytes)))

    @asgi("/mcp", is_mount=True, copy_scope=True)
    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        """MCP over streamable HTTP (same bearer token as the routes)."""
        await mcp_app(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        cx.index.stopping.clear()
        try:
            async with mcp.session_manager.run(), anyio.create_task_group() as tg:
                tg.start_soon(warm_up, cx)
                if watcher is not None:
                    tg.start_soon(watcher.run)
                if nightly is not None:
                    tg.start_soon(nightly.run)
                try:
                    yield
                finally:
                    # A sync in a worker thread cannot be cancelled: ask it to stop at its next embedding
                    # batch (a fraction of a second), so shutting down never waits for a long embedding.
                    cx.index.stop()
                    tg.cancel_scope.cancel()
        finally:
            cx.index.stopping.clear()

    def provide_cortex() -> Cortex:
        return cx

    def provide_watcher() -> Watcher | None:
        return watcher

    def provide_nightly() -> Nightly | None:
        return nightly

    v1 = Router(path="/v1", route_handlers=[*routes.HANDLERS, proof_route(token), *routes_notes.HANDLERS,
                                            *routes_sleep.HANDLERS, *routes_habits.HANDLERS],
                middleware=[http_client])
    return Litestar(
        route_handlers=[v1, mcp_endpoint],
        dependencies={"cx": Provide(provide_cortex, sync_to_thread=False),
                      "watcher": Provide(provide_watcher, sync_to_thread=False),
                      "nightly": Provide(provide_nightly, sync_to_thread=False)},
        guards=[token_guard(token)],
        middleware=[host_middleware(allowed_hosts), cors_middleware],
        exception_handlers={Exception: handle_exception},
        lifespan=[lifespan],
        state=State({"cortex": cx, "watcher": watcher}),  # for the error handler: a damaged index is rebuilt
        request_max_body_size=max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="vault-cortex", version=__version__, path="/schema",
            description="Long-term memory kept as an Obsidian-style markdown vault. Every route but "
                        "/v1/health and /v1/proof needs `Authorization: Bearer <token>` (the vault's .cortex/token).",
            render_plugins=[JsonRenderPlugin(path=["/", "/openapi.json"])],
            components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
            security=[{"bearer": []}],
        ),
        logging_config=None,
    )
