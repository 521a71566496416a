"""The hooks of a session with no `serve`: the stdio MCP server Claude Code started for it answers them on its
socket (server/hook_socket.py), with the model already loaded, instead of each hook loading the library and the
model in its own process; when that server is gone, a hook opens the vault itself as before."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from server import hooks, status
from server.hook_socket import live_sockets, socket_path
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

PROMPT = {"session_id": "socket-1", "prompt": "What is my convention for writing commit messages in this repo?"}
PUSHED = "linguistic/Commit messages.md"
# What a hook that opens the vault itself loads; one answered elsewhere loads at most the settings loader
# (vault_cortex.config, to find the server: tests/integration/test_hooks_find_serve.py)
LIBRARY = {"vault_cortex.cortex", "numpy", "onnxruntime"}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}


def hook_command(vault: Path, event: str, payload: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The real hook command, as Claude Code runs it: its output and the modules its process imported (`-X
    importtime` lists every import on stderr). How long it takes is a figure: tests/bench/push.py --server."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "server.cli", "hook", event, "--vault",
                           str(vault)], input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                          env=clean_env())
    assert done.returncode == 0, done.stderr
    imported = {m.group(1) for m in re.finditer(r"^import time:[^|]*\|[^|]*\| *([\w.]+)", done.stderr, re.M)}
    assert "json" in imported, done.stderr[-2000:]  # the listing was read
    return (json.loads(done.stdout) if done.stdout.strip() else {}), imported


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid



def test_a_hook_is_answered_by_the_sessions_stdio_mcp_server(synced_template: Path, short_tmp: Path,
                                                             embedder: Embedder,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    vault = short_tmp / "vault"
    shutil.copytree(synced_template, vault, symlinks=True)
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
    index = vault / ".cortex" / "index"
    stale = socket_path(index, dead_pid())  # left by an MCP server that was killed
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(stale))
    assert live_sockets(vault, clean_env()) == []  # its process is gone: not asked
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)],
                                   env=clean_env())

    def direct(*_: object) -> dict[str, Any]:
        raise AssertionError("the hook opened the vault itself")

    async def session() -> tuple[list[Path], dict[str, Any], dict[str, Any], set[str]]:
        async with Client(params) as client:
            await client.call_tool("recall", {"query": "commit messages", "k": 1})  # the server is up
            deadline = time.monotonic() + 180  # a hang guard: it is there in a second (a swapping CI took >60 s)
            while not (sockets := live_sockets(vault, clean_env())):
                assert time.monotonic() < deadline, "no hook socket"
                await anyio.sleep(0.1)
            assert not stale.exists()  # the killed server's socket was cleared at start
            assert len(sockets) == 1 and sockets[0].parent == index and sockets[0].name.startswith("hooks-")
            shown = status.gather(vault, clean_env())  # `vault-cortex status` names it
            assert shown.mcp == [int(sockets[0].stem.removeprefix("hooks-"))]
            assert f"mcp          stdio server answering the hooks: pid {shown.mcp[0]}\n" in status.render(shown)
            assert oct(sockets[0].stat().st_mode & 0o777) == "0o600"
            with monkeypatch.context() as m:  # answered over the socket, or this fails
                m.setattr(hooks, "run_direct", direct)
                out = await anyio.to_thread.run_sync(
                    lambda: hooks.dispatch("prompt", dict(PROMPT), str(vault), None, clean_env()))
            command, imported = await anyio.to_thread.run_sync(
                lambda: hook_command(vault, "prompt", {**PROMPT, "session_id": "socket-cmd"}))
        return sockets, out, command, imported

    sockets, out, command, imported = anyio.run(session)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert f"## {PUSHED}" in context
    # the real command was answered over the socket: the memory came back, and neither the library nor the model
    # (numpy, onnxruntime) was loaded in the hook's process (that costs ~1 s a hook: tests/bench/push.py --server)
    assert f"## {PUSHED}" in command["hookSpecificOutput"]["additionalContext"]
    assert not imported & LIBRARY, sorted(imported & LIBRARY)
    assert not sockets[0].exists()  # the server stopped with its session and took its socket away
    assert status.gather(vault, clean_env()).mcp == []
    again, loaded = hook_command(vault, "prompt", {**PROMPT, "session_id": "socket-2"})  # no server: the vault itself
    assert f"## {PUSHED}" in again["hookSpecificOutput"]["additionalContext"]
    assert loaded >= LIBRARY  # which the probe above sees
