"""The memory loop's scenario, the same for every real agent client (tests/e2e/test_claude_code.py,
tests/e2e/test_codex_loop.py): the starter vault plus the note about an earlier fix, the prompts, the failing
command, the answers and the memories each step must bring back."""

from __future__ import annotations

import shutil
from pathlib import Path

from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

PROJECT = "greenhouse-sensor"  # the starter vault's project: the start context is about it
PROMPT = "What is my convention for writing commit messages in this repo?"
PUSHED = "linguistic/Commit messages.md"  # not in the start context; the prompt pulls it
FAILING = "echo 'sqlite3.OperationalError: database is locked' >&2; exit 1"
FIX = "scientific/2026-11-20 collector database is locked.md"  # the earlier fix, added to the vault
FIX_SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "tool_result" / Path(FIX).name
ANSWER = "Imperative subject under 50 characters, a body that says why; the lock came from the report's long read."
SHORT_PROMPT = "and node 3?"  # under the prompt hook's 12 characters: no prompt push, only the answer meets memory
COMPOSED = "Node 3 should run about ten months on one 18650 cell, as the paper estimate says."
REVISED = "Checked the notes: node 3 ran flat after 43 days, far short of the ten-month estimate."
SECOND_LOOK = "short_term/2026-11-29 node 3 battery ran flat.md"  # not in the start context; contradicts the answer
REPO = Path(__file__).resolve().parents[2]


def scenario_vault(synced_template: Path, dest: Path, embedder: Embedder) -> Path:
    """The synced starter vault copied to `dest`, plus the note about the earlier fix, indexed."""
    shutil.copytree(synced_template, dest, symlinks=True)
    shutil.copy(FIX_SOURCE, dest / FIX)
    with Cortex.open(dest, embedder=embedder) as cx:
        cx.sync()
    return dest


def raw_notes(vault: Path) -> dict[str, str]:
    """The raw notes the sessions captured (the starter vault's own raw note left out)."""
    return {p.relative_to(vault).as_posix(): p.read_text(encoding="utf-8") for p in (vault / "raw").rglob("*.md")
            if "debugging session" not in p.name}
