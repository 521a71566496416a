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
        serve.recall("sensor battery", log_activity=False)  # its vectors are in memory now
        with Cortex.open(root, embedder=embedder) as cli:
            cli.remember("The greenhouse fan bearing squeals above 40 degrees.", title="Fan bearing")
        serve.remember("Node 3 reboots when the solar charger browns out.", title="Node 3 reboots")
        hits = serve.recall("which bearing makes a noise when it is hot", log_activity=False).hits
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
        serve.recall("sensor battery", log_activity=False)
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
