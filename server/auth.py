"""Who may call the API: the bearer token (every route but `health` and `proof`), the server's proof that it holds
the token (server/proof.py), loopback binds, and CORS for Obsidian."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import msgspec
from litestar import Request, get
from litestar.connection import ASGIConnection
from litestar.datastructures import Headers, MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException
from litestar.handlers import HTTPRouteHandler
from litestar.handlers.base import BaseRouteHandler
from litestar.params import QueryParameter
from litestar.types import ASGIApp, HTTPResponseBodyEvent, HTTPResponseStartEvent, Message, Receive, Scope, Send

from server.bearer import token_matches
from server.errors import ErrorBody
from server.proof import FORWARDING_HEADERS, NONCE_PATTERN, peer_name, proof
from vault_cortex.errors import InvalidRequest

PUBLIC = "public"  # route opt flag: no token needed

# The Obsidian desktop app, Obsidian mobile on iOS (Capacitor) and on Android.
CORS_ORIGINS = ("app://obsidian.md", "capacitor://localhost", "http://localhost")
CORS_METHODS = "GET, POST, PUT, OPTIONS"
CORS_HEADERS = "authorization, content-type, if-match"


def token_guard(token: str) -> Any:
    """A Litestar guard that refuses requests without the token, except on routes marked `opt={"public": True}`."""

    # async: Litestar runs a sync guard in a worker thread, so every request, /v1/health too, queued behind
    # handlers that held all the threads (45 Stop hooks waiting on a FIFO stopped the whole server)
    async def guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        if handler.opt.get(PUBLIC):
            return
        if not token_matches(connection.headers.get("authorization"), token):
            raise NotAuthorizedException("missing or wrong bearer token (see .cortex/token in the vault)")

    return guard


class Proof(msgspec.Struct, frozen=True, kw_only=True):
    """The server's answer to a client's nonce: HMAC-SHA256(token, "vault-cortex-proof\\n" + nonce + "\\n" + peer)."""

    peer: str  # the client's address and port as the server sees this connection: 127.0.0.1:52114
    proof: str  # hex


def proof_route(token: str) -> HTTPRouteHandler:
    """`GET /v1/proof?nonce=`: proves, without the token crossing, that this server holds it (server/proof.py)."""

    @get("/proof", opt={PUBLIC: True}, sync_to_thread=False)
    def prove(request: Request[Any, Any, Any], nonce: Annotated[str, QueryParameter(
            pattern=NONCE_PATTERN, description="A fresh random value: 32 to 128 lower-case hex digits.")]) -> Proof:
        """That this server holds the vault's token, bound to the nonce and to the connection that asks (no token
        needed): a client sends its token only after checking the proof, so a listener that is not the vault's
        server never receives it. Refused (400) through a proxy that names another client."""
        forwarded = [name for name in FORWARDING_HEADERS if name in request.headers]
        if forwarded:
            raise InvalidRequest(f"a proof is given only to the connection that asks, not through {forwarded[0]}")
        client = request.client
        peer = peer_name(client.host, client.port) if client is not None else ""
        return Proof(peer=peer, proof=proof(token, nonce, peer))

    return prove


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """Whether a Host header matches one of the allowed values (`name:*` = that name on any port, or none)."""
    host = host.strip().lower()
    for pattern in allowed:
        pattern = pattern.lower()
        if host == pattern:
            return True
        if pattern.endswith(":*"):
            name = pattern[:-2]
            if host == name or (host.startswith(name + ":") and host[len(name) + 1 :].isdigit()):
                return True
    return False


def host_middleware(allowed: Sequence[str] | None, *, skip: str = "/mcp") -> Callable[[ASGIApp], ASGIApp]:
    """Refuse (421, the error shape) a request whose Host is not the server's own: a page on evil.example that
    resolves to 127.0.0.1 (DNS rebinding) must not reach /v1. MCP under `skip` checks this itself."""

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if allowed is None or scope["type"] != ScopeType.HTTP or scope["path"].startswith(skip):
                await app(scope, receive, send)
                return
            host = Headers.from_scope(scope).get("host", "")
            if host_allowed(host, allowed):
                await app(scope, receive, send)
                return
            body = msgspec.json.encode(ErrorBody(
                error="MisdirectedRequest", status=421,
                detail=f"Host {host[:100]!r} is not this server (DNS rebinding guard); use 127.0.0.1 or localhost"))
            await send({"type": "http.response.start", "status": 421,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        return middleware

    return factory


def cors_middleware(app: ASGIApp) -> ASGIApp:
    """CORS for the Obsidian origins only; a preflight from any other origin gets a 403 in the error shape."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        headers = Headers.from_scope(scope)
        origin = headers.get("origin")
        if origin is None:
            await app(scope, receive, send)
            return
        allowed = origin in CORS_ORIGINS
        if scope.get("method") == "OPTIONS" and "access-control-request-method" in headers:
            await _preflight(send, origin, allowed)
            return
        if not allowed:
            await app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableScopeHeaders.from_message(message)
                out["Access-Control-Allow-Origin"] = origin
                out["Access-Control-Expose-Headers"] = "ETag, Location"
                out.add("Vary", "Origin")
            await send(message)

        await app(scope, receive, send_with_cors)

    return middleware


async def _preflight(send: Send, origin: str, allowed: bool) -> None:
    if allowed:
        status, body = 204, b""
        headers = [
            (b"access-control-allow-origin", origin.encode()),
            (b"access-control-allow-methods", CORS_METHODS.encode()),
            (b"access-control-allow-headers", CORS_HEADERS.encode()),
            (b"access-control-max-age", b"600"),
            (b"vary", b"Origin"),
        ]
    else:
        status = 403
        body = msgspec.json.encode(ErrorBody(error="Forbidden", detail=f"CORS: origin {origin!r} is not allowed",
                                             status=status))
        headers = [(b"content-type", b"application/json"), (b"vary", b"Origin")]
    headers.append((b"content-length", str(len(body)).encode()))
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": status, "headers": headers}
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)
