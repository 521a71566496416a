"""Honest start-up over stdio: while `vault-cortex mcp` builds its index, every tool says so (`indexing`), and
notes are found by name from the files; once the index is whole, the answers are whole and say nothing more."""

from __future__ import annotations

import fcntl
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from vault_cortex.files.vault import init_vault

STARTING = {"done": 0, "total": 0}  # the start-up sync has not counted its chunks yet


def test_every_tool_says_the_index_is_being_built_until_it_is_whole(tmp_path: Path) -> None:
    """The start-up sync is held back deterministically: this test holds the vault's sync lock (what a second
    process indexing the vault would hold) while it calls the tools, then lets it go."""
    vault = tmp_path / "vault"
    init_vault(vault)
    lock_path = vault / ".cortex" / "index" / "sync.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_path.open("a+b")
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(vault)])

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(params) as client:
            async def call(name: str, args: dict[str, Any]) -> Any:
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                return result.structured_content

            async def recall() -> Any:  # the fields (format json), which say how far indexing is
                answer = await call("recall", {"query": "how do I write commit messages", "k": 3, "format": "json"})
                return answer["result"]

            seen["recall"] = await recall()
            seen["read_note"] = await call("note", {"note": "Commit messages"})
            seen["context"] = await call("context", {"task": "write a commit message"})
            seen["habits"] = await call("habits", {"op": "match", "tool": "Bash(git commit)"})
            seen["recent"] = await call("overview", {"op": "recent"})
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)  # now the start-up sync may run
            deadline = time.monotonic() + 120
            while (after := await recall())["indexing"]:
                assert after["indexing"]["done"] <= after["indexing"]["total"] or after["indexing"] == STARTING
                assert time.monotonic() < deadline, after["indexing"]
                await anyio.sleep(0.2)
            seen["after"] = after
            seen["read_after"] = await call("note", {"note": "Commit messages"})
            seen["context_after"] = await call("context", {"task": "write a commit message"})
        return seen

    try:
        seen = anyio.run(main)
    finally:
        lock.close()
    for name in ("recall", "read_note", "habits", "recent"):
        assert seen[name]["indexing"] == STARTING, (name, seen[name])
    assert seen["read_note"]["path"] == "linguistic/Commit messages.md"  # by name, from the files
    assert "Commit messages" in seen["read_note"]["content"]
    assert seen["context"]["result"].startswith("_vault-cortex is still indexing the vault (scanning the files)")
    assert seen["after"]["indexing"] is None  # the index is whole: recall's own field says so
    assert seen["after"]["hits"] and seen["after"]["hits"][0]["path"] == "linguistic/Commit messages.md"
    assert "indexing" not in seen["read_after"] and seen["read_after"]["path"] == "linguistic/Commit messages.md"
    assert "still indexing" not in seen["context_after"]["result"]
