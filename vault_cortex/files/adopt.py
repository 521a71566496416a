"""Adopting a folder of notes someone already has (an Obsidian vault, say) as a vault: `.cortex/` and nothing else.

`init_vault` (files/vault.py) copies the starter vault into an empty folder; `adopt_vault` leaves every note,
attachment and setting where it is and adds only `.cortex/`: the settings (the starter vault's config.toml),
the activity log's folder, the relations sidecar (files/relations.py: what a sleep derives between the notes is
kept there, not written into them), and the git rules for them — what is machine-local is ignored
(`.cortex/.gitignore`, so the vault's own .gitignore is never edited) and the activity log and the relations
merge by union (`.cortex/.gitattributes`).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from vault_cortex.errors import VaultExists, VaultNotFound
from vault_cortex.files.relations import MERGE_RULE, RELATIONS_PATH
from vault_cortex.files.vault import is_vault, require_writable, template_dir

log = logging.getLogger(__name__)

# What under .cortex/ is machine-local, in git's words relative to .cortex/: the derived index (and serve's
# lock with its pid and URL), the API token, the agent hooks' session state, and sleep's plans, journals and
# backups (sleep/state.json, where decay counts from, is versioned). The starter vault's .gitignore says the
# same from the vault's root; tests/integration/test_adopt.py checks that both ignore the same files.
MACHINE_LOCAL = """\
# vault-cortex: what is machine-local (rebuilt or recreated on each machine) is never versioned.
# The derived index, rebuilt by `vault-cortex sync` from the notes, config and activity log; also serve.lock.
index/
# The API bearer token, created on the first `vault-cortex serve`. Never commit it.
token
# The agent hooks' per-session state (which memories were already pushed).
hooks/
# Sleep plans, journals and backups; state.json (where decay counts from) is versioned.
sleep/*
!sleep/state.json
"""
MERGE_RULES = f"""\
# The activity log is append-only JSON lines: on a merge, keep the lines of both sides.
activity/*.jsonl merge=union
# The relations sleep derives between your notes (kept here, not in the notes), likewise.
{MERGE_RULE}
"""
NOTE_SUFFIXES = (".md", ".markdown")
LOOK_AT_MOST = 20_000  # entries looked at to find a first note before calling a folder noteless


def holds_notes(root: Path) -> bool:
    """Whether a markdown note is anywhere under root (dot-folders skipped); stops at the first one found."""
    seen = 0
    for _folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(n.lower().endswith(NOTE_SUFFIXES) for n in names):
            return True
        seen += len(names) + len(dirs)
        if seen > LOOK_AT_MOST:
            return False
    return False


def adopt_vault(root: Path) -> list[str]:
    """Make a folder of notes a vault by adding `.cortex/`; returns the files written (vault paths). No note,
    attachment, `.obsidian/` setting or .gitignore of the folder is written, moved or read beyond its names."""
    if is_vault(root):
        raise VaultExists(f"{root} is already a vault (it has .cortex/); serve it: vault-cortex serve --vault {root}")
    if not root.is_dir():
        raise VaultNotFound(f"{root} is not a folder")
    if not holds_notes(root) and not (root / ".obsidian").is_dir():  # a new Obsidian vault may hold no note yet
        raise VaultNotFound(f"{root} holds no markdown notes (.md): give the folder of your notes, or an empty "
                            "folder for a new vault")
    require_writable(root)
    cortex = root / ".cortex"
    staging = root / ".cortex.adopting"  # made whole beside it, then renamed: never a half-made .cortex/
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(template_dir() / ".cortex", staging)
    (staging / ".gitignore").write_text(MACHINE_LOCAL, encoding="utf-8")
    (staging / ".gitattributes").write_text(MERGE_RULES, encoding="utf-8")
    (staging / RELATIONS_PATH.removeprefix(".cortex/")).write_bytes(b"")  # sleep's edges go here, not in notes
    os.rename(staging, cortex)
    log.info("adopted %s as a vault", root)
    return sorted(p.relative_to(root).as_posix() for p in cortex.rglob("*") if p.is_file())
