"""The stdio server's front: it answers the MCP handshake (`initialize`, `tools/list`) before the SDK is imported.

Importing the `mcp` SDK (its pydantic models) and the library takes about a second, and an agent that starts its
MCP servers while its first request is on its way offers the model only the tools listed by then. So
`vault-cortex mcp` starts this front first (standard library only): a thread reads the client's JSON-RPC lines
and answers `initialize` and `tools/list` from the answers the SDK server gives, shipped with the package
(`data/mcp-tools.json`, written by `python -m server.mcp_shipped`; a test holds it equal to the live server's).
Every other line is queued for the SDK server. Once that server runs (server/mcp_stdio.py), it takes the queue in
order, beginning with the client's `initialize` replayed under the front's own request id (its answer is
dropped), and from then on the front answers nothing: every message goes through, both ways.

Protocol versions are negotiated as the SDK does (mcp/server/runner.py, `_negotiate_initialize`): the client's
version when the SDK speaks it over the handshake, else the SDK's newest. A client that skips the handshake (the
stateless 2026 era: a version in each request's `_meta`) is answered by the SDK server alone. Without the shipped
answers, or with answers shipped for another version of the SDK or of vault-cortex, there is no front: the SDK
answers everything, as it always can.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

SHIPPED = Path(__file__).parent / "data" / "mcp-tools.json"
FRONT_ID = "vault-cortex-front-initialize"  # the id of the client's initialize replayed to the SDK server
MODERN_KEY = "io.modelcontextprotocol/protocolVersion"  # in a request's _meta: the stateless era, no handshake
_DISTRIBUTIONS = ("mcp", "vault-cortex")  # the shipped answers are those of these versions

_running: Front | None = None


def load(path: Path = SHIPPED) -> dict[str, Any] | None:
    """The shipped answers, or None if they are missing, unreadable or made by another version of the SDK or of
    vault-cortex than the ones installed."""
    try:
        shipped = json.loads(path.read_text(encoding="utf-8"))
        made_by, versions, latest = shipped["made_by"], shipped["versions"], shipped["latest"]
        if latest not in versions or not all({"initialize", "tools/list"} <= set(v) for v in versions.values()):
            return None
        if not all({"server/discover", "tools/list"} <= set(v) for v in shipped["modern"].values()):
            return None
        if any(made_by.get(name) != metadata.version(name) for name in _DISTRIBUTIONS):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, metadata.PackageNotFoundError):
        return None
    return dict(shipped)


class Front:
    """Reads the client's lines (`wire_in`) in a thread; answers the handshake from `shipped` until the SDK server
    runs (`go_live`), queueing every other line for it (`next_line`). `write` sends a line to the client."""

    def __init__(self, shipped: dict[str, Any], wire_in: BinaryIO, wire_out: BinaryIO) -> None:
        self._shipped, self._in, self._out = shipped, wire_in, wire_out
        self._lock, self._out_lock = threading.Lock(), threading.Lock()
        self._queue: queue.Queue[bytes | None] = queue.Queue()  # None: the client closed stdin
        self._live = False
        self._era: str | None = None  # "handshake" or "modern": what the client's first request opened
        self._version: str | None = None  # the protocol version the front negotiated in the handshake
        self._listed = False

    def start(self) -> None:
        threading.Thread(target=self._read, name="mcp-front", daemon=True).start()

    def go_live(self) -> bool:
        """From now on every line goes to the SDK server; True if the front has listed the tools."""
        with self._lock:
            self._live = True
            return self._listed

    def next_line(self) -> bytes | None:
        """The next line for the SDK server, in the client's order; None once the client has closed stdin."""
        return self._queue.get()

    def write(self, line: bytes) -> None:
        with self._out_lock:
            try:
                self._out.write(line.rstrip(b"\n") + b"\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):  # the client is gone: its stdin's end tells the server
                pass

    def _read(self) -> None:
        try:
            for line in self._in:
                if line.strip():
                    self._take(line)
        finally:
            self._queue.put(None)

    def _take(self, line: bytes) -> None:
        with self._lock:  # held while answering, so that the SDK server's output never comes before it
            answer = None if self._live else self._answer(line)
            if answer is None:
                self._queue.put(line)
            else:
                self.write(answer)

    def _answer(self, line: bytes) -> bytes | None:
        """The front's answer to a handshake request, or None if the line is the SDK server's to answer."""
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "id" not in message:
            return None
        method, params = message.get("method"), message.get("params", {})
        if not isinstance(params, dict) or not isinstance(method, str):
            return None
        meta = params.get("_meta")
        modern = isinstance(meta, dict) and MODERN_KEY in meta and method != "initialize"
        if self._era is None:  # the client's first request opens the era, as in the SDK's serve_dual_era_loop
            self._era = "modern" if modern else "handshake"
        if modern:
            return self._modern(message["id"], method, params)
        versions: dict[str, Any] = self._shipped["versions"]
        if method == "initialize" and self._version is None and meta is None and _whole(
                params.get("protocolVersion"), params.get("clientInfo"), params.get("capabilities")):
            asked = params["protocolVersion"]
            self._version = asked if asked in versions else self._shipped["latest"]
            self._queue.put(json.dumps({**message, "id": FRONT_ID}).encode())  # for the SDK server, in its place
            return _result(message["id"], versions[self._version]["initialize"])
        if method == "tools/list" and self._version is not None and meta is None and "cursor" not in params:
            self._listed = True
            return _result(message["id"], versions[self._version]["tools/list"])
        return None

    def _modern(self, request_id: Any, method: str, params: dict[str, Any]) -> bytes | None:
        """The answer to `server/discover` or `tools/list` in the stateless era, whose every request names its
        protocol version, client and client capabilities in `_meta`."""
        meta = {key.removeprefix("io.modelcontextprotocol/"): value for key, value in params["_meta"].items()}
        if not _whole(meta.get("protocolVersion"), meta.get("clientInfo"), meta.get("clientCapabilities")):
            return None
        shipped = self._shipped["modern"].get(meta["protocolVersion"]) if self._era == "modern" else None
        if shipped is None or method not in shipped or "cursor" in params:
            return None
        self._listed = self._listed or method == "tools/list"
        return _result(request_id, shipped[method])


def _whole(version: Any, client: Any, capabilities: Any) -> bool:
    """Whether a handshake names the protocol version, the client and its capabilities (else the SDK server
    answers, with the error it finds)."""
    return (isinstance(version, str) and isinstance(capabilities, dict) and isinstance(client, dict)
            and isinstance(client.get("name"), str) and isinstance(client.get("version"), str))


def _result(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")).encode()


def start() -> Front | None:
    """Start the front on this process's stdin and stdout, if the answers are shipped. As the SDK's stdio transport
    does, fd 0 then reads nothing and fd 1 goes to stderr, so that stray output never reaches the client."""
    global _running
    shipped = load()
    if shipped is None:
        return None
    wire_in, wire_out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)
    _running = Front(shipped, wire_in, wire_out)
    _running.start()
    return _running


def running() -> Front | None:
    """The front started in this process, if any."""
    return _running
