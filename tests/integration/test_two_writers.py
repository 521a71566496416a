"""Two writers of one vault's index (a `serve` and a CLI command, or the stdio MCP server beside it): every chunk
keeps a vector that a rebuild would make, whoever saves the vector file last. Each `Cortex` here has its own
index connection and its own vectors in memory, as a second process does (the write lock is a file lock, which
two opens in one process contend for exactly as two processes do); the CLI test runs a real second process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vault_cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.index.restore import save_vectors
from vault_cortex.recall.request import RecallRequest


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


def _missing_vectors(root: Path, embedder: Embedder) -> tuple[int, int]:
    """(chunks without a vector, vectors without a chunk) as a fresh process sees them after a sync."""
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        chunks = set(cx.db.chunk_hashes())
        held = cx.vectors.keys()
        return len(chunks - held), len(held - chunks)


def test_a_second_writer_never_costs_the_first_a_vector(tmp_path: Path, embedder: Embedder) -> None:
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as serve:
        serve.sync()
        serve.recall(RecallRequest(query="sensor battery"), log_activity=False)  # its vectors are in memory now
        with Cortex.open(root, embedder=embedder) as cli:
            cli.remember("The greenhouse fan bearing squeals above 40 degrees.", title="Fan bearing")
        serve.remember("Node 3 reboots when the solar charger browns out.", title="Node 3 reboots")
        hits = serve.recall(RecallRequest(query="which bearing makes a noise when it is hot"), log_activity=False).hits
        assert "long_term/Fan bearing.md" in [h.path for h in hits[:3]] or \
            "short_term/Fan bearing.md" in [h.path for h in hits[:3]], "serve never saw the other writer's note"
    assert _missing_vectors(root, embedder) == (0, 0)
    with Cortex.open(root, embedder=embedder) as cx:
        verify = cx.verify()
        assert verify.ok, verify.differences


def test_a_cli_write_beside_a_running_index_keeps_its_vector(tmp_path: Path, embedder: Embedder) -> None:
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as serve:
        serve.sync()
        serve.recall(RecallRequest(query="sensor battery"), log_activity=False)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX")}
        done = subprocess.run([sys.executable, "-m", "server.cli", "remember", "--vault", str(root), "--title",
                               "Fan bearing", "The greenhouse fan bearing squeals above 40 degrees."],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        written = [p.relative_to(root).as_posix() for p in root.rglob("Fan bearing.md")]
        serve.sync_paths(written)  # what serve's watcher does when it sees the file
        serve.remember("Node 3 reboots when the solar charger browns out.", title="Node 3 reboots")
    assert _missing_vectors(root, embedder) == (0, 0)


def test_doctor_counts_chunks_without_a_vector(tmp_path: Path, embedder: Embedder) -> None:
    """A vector file saved by an older version that lost another writer's vectors: doctor names it, and the next
    sync repairs it."""
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        some = sorted(cx.db.chunk_hashes())[:3]
        cx.vectors.remove(some)
        assert any("3 chunks have no vector" in d for d in cx.doctor().drift)
        save_vectors(cx.db, cx.vectors)  # what an older version left: a file short of vectors, marked current
        with cx.db.write():
            cx.db.delete_meta("vectors_audit")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert not [d for d in cx.doctor().drift if d.startswith("vectors:")]


# (note written, how, a paraphrase that must find it)
WRITES = {
    "fan": ("The greenhouse fan bearing squeals above 40 degrees; grease it every spring.",
            "which bearing makes a noise when it is hot"),
    "vent": ("The vent motor stalls below 9 volts; power it from the 12 V rail instead of the battery.",
             "why does the window opener motor stop at low voltage"),
    "barrel": ("The rain barrel overflow pipe freezes every January; wrap it in heat tape before the frost.",
               "rain barrel pipe ices up in winter"),
    "compost": ("The compost heap reaches 65 C when it is turned twice a week.",
                "how hot does the compost pile get"),
    "coop": ("The chicken coop door sensor drains its coin cell in three weeks.",
             "hen house door sensor battery life"),
    "solenoid": ("The irrigation solenoid valve leaks once the mains pressure exceeds 4 bar.",
                 "irrigation valve drips under high pressure"),
    "hive": ("The beehive scale drifts 200 grams each night as the temperature drops.",
             "bee hive weight changes overnight"),
    "pond": ("The pond pump impeller clogs with duckweed every August.",
             "pond pump blocked by weeds in summer"),
}


def _cli(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX")}
    done = subprocess.run([sys.executable, "-m", "server.cli", *args, "--vault", str(root)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def test_serve_the_cli_and_a_stdio_mcp_server_write_in_both_orders_across_restarts(
        tmp_path: Path, embedder: Embedder) -> None:
    """Issue 21: the real processes, as a user runs them. A `serve` (uvicorn and its watcher) with CLI writes
    (`remember`, `edit`) and a stdio `vault-cortex mcp` writing through the real MCP client beside it; writes
    while serve is down; an MCP session opened before serve starts and still writing after; serve restarted
    between. Afterwards `verify` (every row and vector against a rebuild) is clean and a paraphrase of each
    written note finds it."""
    import signal
    from contextlib import ExitStack

    import anyio
    import httpx
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters
    from serving import serve

    root = _vault(tmp_path)
    (root / "long_term" / "Rain barrel.md").write_text("# Rain barrel\n\nThe barrel holds 300 litres.\n",
                                                       encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "mcp", "--vault", str(root)],
                                   env={k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX")})
    paths: dict[str, str] = {}

    async def mcp_remember(client: Client, key: str) -> None:
        result = await client.call_tool("remember", {"text": WRITES[key][0], "title": key.title()})
        assert not result.is_error, result.content
        paths[key] = result.structured_content["path"]

    def cli_remember(key: str) -> None:
        _cli(root, "remember", "--title", key.title(), WRITES[key][0])
        paths[key] = next(p.relative_to(root).as_posix() for p in root.rglob(f"{key.title()}.md"))

    # 1. serve first; the CLI and a stdio MCP server write beside it; the API writes too
    with serve(root, tmp_path / "serve-1.log") as server:
        cli_remember("fan")
        _cli(root, "edit", "Rain barrel", "append", "--content", WRITES["barrel"][0])
        paths["barrel"] = "long_term/Rain barrel.md"

        async def beside_serve() -> None:
            async with Client(params) as client:
                await mcp_remember(client, "vent")

        anyio.run(beside_serve)
        put = httpx.put(f"{server.url}/v1/notes", params={"path": "long_term/Compost.md"},
                        json={"content": f"# Compost\n\n{WRITES['compost'][0]}\n"}, headers=server.auth, timeout=60)
        assert put.status_code == 201, put.text
        paths["compost"] = "long_term/Compost.md"
        server.stop(signal.SIGTERM)

    # 2. serve down: the MCP server and the CLI write alone
    async def while_down() -> None:
        async with Client(params) as client:
            await mcp_remember(client, "coop")

    anyio.run(while_down)
    cli_remember("solenoid")

    # 3. an MCP session opened first; serve starts while it runs; both write; serve restarts once more
    async def mcp_then_serve() -> None:
        async with Client(params) as client:
            with ExitStack() as stack:
                server = await anyio.to_thread.run_sync(stack.enter_context, serve(root, tmp_path / "serve-2.log"))
                await mcp_remember(client, "hive")
                await anyio.to_thread.run_sync(server.stop, signal.SIGTERM)

    anyio.run(mcp_then_serve)
    with serve(root, tmp_path / "serve-3.log") as server:
        cli_remember("pond")
        server.stop(signal.SIGTERM)

    for log in tmp_path.glob("serve-*.log"):
        assert "Traceback" not in log.read_text(), log.name
    assert _missing_vectors(root, embedder) == (0, 0)
    with Cortex.open(root, embedder=embedder) as cx:
        verify = cx.verify()
        assert verify.ok, verify.differences
        missed = {key: [h.path for h in cx.recall(RecallRequest(query=paraphrase, k=3), log_activity=False).hits]
                  for key, (_, paraphrase) in WRITES.items()}
        assert not {key: hits for key, hits in missed.items() if paths[key] not in hits}
