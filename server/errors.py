"""One JSON error shape for every error the HTTP API returns: `{"error": ..., "detail": ..., "status": ...}`."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, Scope, Send
from litestar.utils.scope.state import ScopeState

from vault_cortex.errors import (
    Broken,
    Conflict,
    DiskFull,
    IndexUnavailable,
    ModelUnavailable,
    NoteParseError,
    NotFound,
    RequestRefused,
    TryLater,
    VaultCortexError,
    VaultReadOnly,
)
from vault_cortex.index.dbfile import is_corruption, is_index_lost

if TYPE_CHECKING:
    from vault_cortex.cortex import Cortex

log = logging.getLogger(__name__)


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """What every error response carries: the error's name, a readable detail and the HTTP status."""

    error: str
    detail: str
    status: int


def status_name(status: int) -> str:
    """`404` → `NotFound`: the HTTP reason phrase as one CamelCase word."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return "Error"
    return "".join(word.capitalize() if word.islower() else word for word in phrase.replace("-", " ").split())


# The HTTP status of each family of errors, and of the few errors a client should tell apart from their family's.
STATUS: dict[type[VaultCortexError], int] = {
    RequestRefused: 400, NoteParseError: 422, VaultReadOnly: 403,
    NotFound: 404,
    Conflict: 409,
    TryLater: 503,
    Broken: 500, ModelUnavailable: 503, DiskFull: 507,
}


def error_status(exc: VaultCortexError) -> int:
    """The status of the nearest class of `exc` in STATUS (an error's own entry before its family's)."""
    return next((STATUS[cls] for cls in type(exc).__mro__ if cls in STATUS), 500)


def error_body(exc: BaseException) -> ErrorBody:
    """Map any exception to the error shape; unexpected ones become a 500 without internals."""
    if isinstance(exc, VaultCortexError):
        return ErrorBody(error=type(exc).__name__, detail=str(exc), status=error_status(exc))
    if isinstance(exc, ValidationException):
        return ErrorBody(error="ValidationError", detail=_validation_detail(exc), status=exc.status_code)
    if isinstance(exc, HTTPException):
        return ErrorBody(error=status_name(exc.status_code), detail=exc.detail, status=exc.status_code)
    return ErrorBody(error="InternalServerError", detail="unexpected error; see the server log", status=500)


def _validation_detail(exc: ValidationException) -> str:
    problems = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            where = " ".join(str(getattr(item[k], "value", item[k])) for k in ("key", "source") if item.get(k))
            problems.append(f"{where}: {item.get('message', '')}" if where else str(item.get("message", "")))
    return f"{exc.detail}: {'; '.join(problems)}" if problems else exc.detail


_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![0-9a-fA-F]{4})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_BIG_NUMBER = re.compile(rb'"([^"\\]{1,64})"\s*:\s*-?[0-9]{20,}')


def _json_detail(detail: str, raw: object) -> str | None:
    """A clearer detail for the JSON decoder's terse messages, from the body it choked on."""
    if not isinstance(raw, bytes) or not raw:
        return None
    if detail == "Input data was truncated" or "surrogate" in detail:
        found = _LONE_SURROGATE.search(raw)
        if found:
            return (f"the JSON body holds a lone surrogate escape ({found.group().decode()}); "
                    "text must be valid Unicode")
    if detail.startswith(("Integer value out of range", "Number out of range")):
        big = _BIG_NUMBER.search(raw)
        name = big.group(1).decode("utf-8", "replace") if big else "a number"
        return f"{name}: the number is out of range (too many digits)"
    return None


def json_error(body: ErrorBody, headers: dict[str, str] | None = None) -> Response[ErrorBody]:
    return Response(content=body, status_code=body.status, media_type=MediaType.JSON, headers=headers)


def index_trouble(exc: BaseException, cx: Cortex | None, request_sync: Callable[[], None] | None
                  ) -> IndexUnavailable | None:
    """The error to answer with when `exc` says the index is damaged or gone (None: it does not).

    The index is derived data: a sync moves the damaged or lost file aside and rebuilds it, so one is asked for
    now. A deleted or replaced file needs no word (the sync sees it); an error that says the file is damaged is
    the only sign of it, so the index is marked suspect for that sync."""
    lost = is_index_lost(exc) or (isinstance(exc, sqlite3.Error) and cx is not None and cx.index.index_file_lost())
    if not lost:
        return None
    if cx is not None and is_corruption(exc):
        cx.index.suspect = f"{type(exc).__name__}: {exc}"
    if request_sync is not None:
        request_sync()
    return IndexUnavailable("the index is damaged or was deleted: it is being rebuilt from the files; "
                            "retry in a moment")


def handle_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    """The app's one exception handler (registered for `Exception`, so Litestar's 404/405/400s come here too)."""
    watcher = request.app.state.get("watcher")
    exc = index_trouble(exc, request.app.state.get("cortex"), watcher and watcher.request_sync) or exc
    body = error_body(exc)
    if body.status == 400 and isinstance(exc, HTTPException):
        clearer = _json_detail(body.detail, ScopeState.from_scope(request.scope).body)
        body = msgspec.structs.replace(body, detail=clearer) if clearer else body
    if isinstance(exc, IndexUnavailable):  # expected while the index is built or rebuilt: no traceback
        log.warning("%s %s: %s", request.method, request.url.path, exc)
    elif body.status >= 500:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    if body.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="vault-cortex"'
    return json_error(body, headers or None)


def json_errors(app: ASGIApp) -> ASGIApp:
    """Wrap a mounted ASGI app so its plain-text errors (bad Host, bad Content-Type, unknown path) come in the
    one JSON shape; its JSON errors (MCP's JSON-RPC errors belong to the protocol) pass through untouched."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        held: HTTPResponseStartEvent | None = None
        body = bytearray()

        async def reshape(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] >= 400:
                types = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
                if not any(t.startswith(b"application/json") for t in types):
                    held = message
                    return
            if held is not None and message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if message.get("more_body", False):
                    return
                status = held["status"]
                detail = body.decode("utf-8", errors="replace").strip()[:500] or status_name(status)
                data = msgspec.json.encode(ErrorBody(error=status_name(status), detail=detail, status=status))
                headers = [(k, v) for k, v in held.get("headers", [])
                           if k.lower() not in (b"content-type", b"content-length")]
                headers += [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": data, "more_body": False})
                return
            await send(message)

        await app(scope, receive, reshape)

    return wrapped
