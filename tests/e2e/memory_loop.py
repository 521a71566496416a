"""The memory loop's scenario, the same for every real agent client (tests/e2e/test_claude_code.py,
tests/e2e/test_codex_loop.py): the starter vault plus the note about an earlier fix, the prompts, the failing
command, the answers and the memories each step must bring back."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from vault_cortex.cortex import Cortex
from vault_cortex.files.activity import HOOK_CLIENT, acting_as
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
# The start context's budget in this scenario: the second look offers only what the session was not shown, so the
# memory it must find has to stay out of the start context, as must the prompt's and the failure's (all three are
# the project's notes, which the gated start context holds when the budget allows: at 500 tokens, the second look's).
START_BUDGET = 400
REPO = Path(__file__).resolve().parents[2]


def scenario_vault(synced_template: Path, dest: Path, embedder: Embedder) -> Path:
    """The synced starter vault copied to `dest`, plus the note about the earlier fix, indexed."""
    shutil.copytree(synced_template, dest, symlinks=True)
    shutil.copy(FIX_SOURCE, dest / FIX)
    config = dest / ".cortex" / "config.toml"  # a start context that leaves the second look's memory for it to find
    text = re.sub(r"(?m)^session_budget_tokens = \d+$", "", config.read_text(encoding="utf-8"))
    config.write_text(text.replace("\n[hooks]\n", f"\n[hooks]\nsession_budget_tokens = {START_BUDGET}\n", 1),
                      encoding="utf-8")
    with Cortex.open(dest, embedder=embedder) as cx:
        cx.sync()
        with acting_as(HOOK_CLIENT):  # as the session-start hook asks
            shown = cx.context(project=PROJECT, budget_tokens=cx.settings.hooks.session_budget_tokens)
    assert cx.settings.hooks.session_budget_tokens == START_BUDGET
    assert SECOND_LOOK not in {item.path for item in shown.context.items}, "the scenario needs it left out"
    return dest


def raw_notes(vault: Path) -> dict[str, str]:
    """The raw notes the sessions captured (the starter vault's own raw note left out)."""
    return {p.relative_to(vault).as_posix(): p.read_text(encoding="utf-8") for p in (vault / "raw").rglob("*.md")
            if "debugging session" not in p.name}
