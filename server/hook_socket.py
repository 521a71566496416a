"""The hooks' way into a stdio MCP server: `vault-cortex mcp`, which Claude Code starts for each session with the
model loaded and the index open, answers hooks on a Unix socket in the index folder (`hooks-<pid>.sock`,
machine-local and git-ignored, readable by its user only), so a hook costs a round trip instead of loading the
library and the model in its own process (about a second a prompt and a tool call when no `serve` runs).

One request per connection: the client sends `{"event": ..., "payload": ...}` and closes its side; the server
answers the hook's output object and closes. The client side is standard library only (the hook command reads it
before deciding whether to load the library).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.serve_lock import alive, lock_paths

if TYPE_CHECKING:
    from vault_cortex.cortex import Cortex

log = logging.getLogger("vault_cortex.hooks")

PREFIX = "hooks-"
_NAME = re.compile(rf"^{PREFIX}(\d+)\.sock$")
MAX_REQUEST_BYTES = (1 << 20) + 4096  # the hook's input (at most 1 MiB) and its envelope
MAX_PATH_BYTES = 100  # sun_path holds 108 bytes on Linux: a deeper index folder has no socket (hooks open the vault)


def socket_path(index_dir: Path, pid: int | None = None) -> Path:
    return index_dir / f"{PREFIX}{os.getpid() if pid is None else pid}.sock"


def live_sockets(root: Path, env: Mapping[str, str]) -> list[Path]:
    """The sockets of this vault's running stdio MCP servers, the newest first (a socket left by a process that is
    gone is skipped)."""
    found = [s for lock in lock_paths(root, None, env) for s in _listening(lock.parent)]
    return [path for _, _, path in sorted(found, key=lambda s: -s[0])]


def server_pids(index_dir: Path) -> list[int]:
    """The pids of the stdio MCP servers answering hooks from this index folder (for `vault-cortex status`)."""
    return sorted(pid for _, pid, _ in _listening(index_dir))


def _listening(index_dir: Path) -> list[tuple[float, int, Path]]:
    """(modification time, pid, path) of each socket in the folder whose process runs."""
    out = []
    for pid, entry in _sockets(index_dir):
        if alive(pid):
            with contextlib.suppress(OSError):
                out.append((entry.stat().st_mtime, pid, Path(entry.path)))
    return out


def _sockets(index_dir: Path) -> list[tuple[int, os.DirEntry[str]]]:
    """Each hook socket in the folder, with the pid its name gives."""
    try:
        entries = list(os.scandir(index_dir))
    except OSError:
        return []
    return [(int(m.group(1)), e) for e in entries if (m := _NAME.match(e.name))]


def ask(path: Path, event: str, payload: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """The hook's output object from the MCP server listening at `path`; raises OSError or ValueError when it
    does not answer in time or answers something else."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(json.dumps({"event": event, "payload": payload}).encode())
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    out = json.loads(b"".join(chunks))
    if not isinstance(out, dict) or set(out) == {"error"}:
        raise ValueError(f"the MCP server's hook answer is not an output object: {str(out)[:200]}")
    return out


def remove_stale(index_dir: Path) -> None:
    """Sockets left by MCP servers that were killed (a clean stop removes its own)."""
    for pid, entry in _sockets(index_dir):
        if not alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


async def serve_hooks(cx: Cortex, run: Callable[[Cortex, str, dict[str, Any]], dict[str, Any]]) -> None:
    """Answer hooks on this process's socket until cancelled; the socket is removed when it stops. Any failure to
    listen is logged and leaves the MCP server as it was (the hooks then open the vault themselves)."""
    import anyio
    from anyio.abc import SocketStream

    path = socket_path(cx.index.index_dir)
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        log.info("no hook socket: %s is too long a path for a Unix socket", path)
        return
    remove_stale(path.parent)
    try:
        old = os.umask(0o177)  # the socket file: its user only
        try:
            listener = await anyio.create_unix_listener(path)
        finally:
            os.umask(old)
    except OSError as exc:
        log.warning("no hook socket at %s: %s", path, exc)
        return

    async def handle(stream: SocketStream) -> None:
        async with stream:
            try:
                raw = b""
                with anyio.fail_after(30):
                    while len(raw) <= MAX_REQUEST_BYTES:
                        try:
                            raw += await stream.receive()
                        except anyio.EndOfStream:
                            break
                request = json.loads(raw)
                event, payload = request["event"], request["payload"]
                if not isinstance(event, str) or not isinstance(payload, dict):
                    raise ValueError("a hook request is {\"event\": str, \"payload\": object}")
                out = await anyio.to_thread.run_sync(run, cx, event, payload)
            except Exception as exc:  # noqa: BLE001 - the hook falls back to its own process; this server goes on
                log.warning("hook over the socket failed: %s: %s", type(exc).__name__, exc)
                out = {"error": f"{type(exc).__name__}: {exc}"}
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(json.dumps(out).encode())  # the hook gave up waiting: nothing to tell it

    restore = _unlink_when_terminated(path)
    try:
        async with listener:
            await listener.serve(handle)
    finally:
        restore()
        with contextlib.suppress(OSError):
            path.unlink()


def _unlink_when_terminated(path: Path) -> Callable[[], None]:
    """Claude Code ends its stdio MCP servers with SIGTERM, which ends the process where it stands: the socket is
    removed first, then the signal does what it did before. Returns what puts the previous handler back."""
    import signal

    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            path.unlink()
        restore()
        os.kill(os.getpid(), signum)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    try:
        signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (an embedding application): the next start clears the socket
        return lambda: None
    return restore
