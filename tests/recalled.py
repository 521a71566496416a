"""Recall as a ranking test asks it: a small vault written from a dict, its hits with some cue shares of the
ranking model or recall settings changed, and a digest of its notes to check that recall wrote none (shared by the
tests of each ranking mechanism)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from vault_cortex import Cortex
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.model import Cues, load_model
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import Hit


def write_vault(root: Path, notes: dict[str, str]) -> Path:
    """A vault at `root` holding `notes` (path: text) and an empty `.cortex/`; returns `root`."""
    (root / ".cortex").mkdir(parents=True)
    for name, text in notes.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def recall(root: Path, embedder: Embedder, query: str, mode: str | None = None,
           **changed: float | bool | str) -> list[Hit]:
    """The top six hits for `query` after a sync, with the ranking model's cue shares in `changed` replaced
    (`company=0`: the company lift off) and any other recall setting set through its variable
    (`conversation=True`: VAULT_CORTEX_RECALL_CONVERSATION=true), in `mode` (the vault's default when None);
    captured sessions ranked among the other notes (`captures=include`), as the ranking's cues are about them too."""
    shipped = load_model()
    cues = {k: float(v) for k, v in changed.items() if k in Cues.__struct_fields__}
    model = msgspec.structs.replace(shipped, cues=msgspec.structs.replace(shipped.cues, **cues))
    env = {f"VAULT_CORTEX_RECALL_{k.upper()}": str(v).lower() for k, v in changed.items() if k not in cues}
    with Cortex.open(root, env=env, embedder=embedder, model=model) as cx:
        cx.sync()
        return cx.recall(RecallRequest(query=query, k=6, mode=mode, captures="include"), log_activity=False).hits


def digest(root: Path) -> dict[str, str]:
    """sha256 of every note under `root`, by path: equal before and after means no note was written."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.md"))}
