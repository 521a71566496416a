"""Importing another tool's memory into the vault: which format a file is, and the importer for it.

`claude-code`: a Claude Code JSONL transcript or a markdown chat (`transcript`), into `raw/`.
`chatgpt`: ChatGPT's `conversations.json` export (`chatgpt`), into `raw/`.
`mcp-memory`: the MCP reference memory server's `memory.json` (`mcp_memory`), one note per entity.
Every importer streams its file and is idempotent (`importlog`); none indexes: the caller syncs.
"""

from __future__ import annotations

import json
from pathlib import Path

from vault_cortex.errors import InvalidRequest
from vault_cortex.importers.capture import capture_transcript
from vault_cortex.importers.chatgpt import import_chatgpt
from vault_cortex.importers.mcp_memory import import_mcp_memory
from vault_cortex.importers.transcript import Imported
from vault_cortex.store.change import Vault

FORMATS = ("claude-code", "chatgpt", "mcp-memory")
PEEK = 1 << 16


def detect_format(file: str | Path) -> str:
    """The format of a file from its first bytes: an array is a ChatGPT export, an object a line is a memory
    graph when it has an entity or relation `type`, a Claude Code transcript otherwise; anything else a chat."""
    path = Path(file).expanduser()
    try:
        with path.open("rb") as fh:
            head = fh.read(PEEK).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    except OSError as exc:
        raise InvalidRequest(f"cannot read {path}: {exc}") from exc
    if head.startswith("["):
        return "chatgpt"
    if head.startswith("{"):
        first = head.split("\n", 1)[0]
        try:
            rec = json.loads(first)
        except (ValueError, RecursionError):  # an object over many lines: one pretty-printed conversation
            return "chatgpt" if '"mapping"' in head else "claude-code"
        if isinstance(rec, dict) and rec.get("type") in ("entity", "relation"):
            return "mcp-memory"
        if isinstance(rec, dict) and "mapping" in rec:
            return "chatgpt"
    return "claude-code"


def import_file(vault: Vault, file: str | Path, *, fmt: str | None = None, session: str | None = None,
                folder: str = "short_term", index: bool = True) -> Imported:
    """Import a file of any supported format (detected when fmt is None) in one change of the vault, which
    indexes just the notes it wrote (the cost follows the import; `index=False` leaves that to a sync)."""
    fmt = fmt or detect_format(file)
    if fmt not in FORMATS:
        raise InvalidRequest(f"unknown import format {fmt!r}; formats: {', '.join(FORMATS)}")
    if session is not None and fmt != "claude-code":
        raise InvalidRequest("--session names a single transcript; a ChatGPT export or a memory graph has its own")
    with vault.change("import", index=index) as tx:
        if fmt == "chatgpt":
            return import_chatgpt(tx, file)
        if fmt == "mcp-memory":
            return import_mcp_memory(tx, file, folder)
        return capture_transcript(tx, Path(file).expanduser().resolve(), session)  # named by the user: links followed
