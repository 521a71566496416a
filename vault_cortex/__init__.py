"""vault-cortex: long-term memory for people and AI agents, kept as an Obsidian-style markdown vault."""

from vault_cortex.cortex import Cortex
from vault_cortex.errors import (
    ConfigError,
    IndexUnavailable,
    InvalidRequest,
    ModelUnavailable,
    NoteNotFound,
    NoteParseError,
    UnsafePath,
    VaultCortexError,
    VaultExists,
    VaultNotFound,
    WriteConflict,
)
from vault_cortex.files.vault import NoteDoc
from vault_cortex.index.doctor import Doctor, Verify
from vault_cortex.index.sync import SyncReport
from vault_cortex.recall.pipeline import Hit, Recall

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Cortex",
    "Doctor",
    "Hit",
    "IndexUnavailable",
    "InvalidRequest",
    "ModelUnavailable",
    "NoteNotFound",
    "NoteDoc",
    "NoteParseError",
    "Recall",
    "SyncReport",
    "UnsafePath",
    "VaultCortexError",
    "VaultExists",
    "VaultNotFound",
    "Verify",
    "WriteConflict",
    "__version__",
]
