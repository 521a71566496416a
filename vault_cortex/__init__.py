"""vault-cortex: long-term memory for people and AI agents, kept as an Obsidian-style markdown vault."""

from vault_cortex.cortex import Cortex
from vault_cortex.errors import (
    Broken,
    ConfigError,
    Conflict,
    IndexUnavailable,
    InvalidRequest,
    ModelUnavailable,
    NoteNotFound,
    NoteParseError,
    NotFound,
    RequestRefused,
    TryLater,
    UnsafePath,
    VaultCortexError,
    VaultExists,
    VaultNotFound,
    VaultReadOnly,
    WriteConflict,
)
from vault_cortex.files.sections import EditOp
from vault_cortex.files.vault import NoteDoc
from vault_cortex.index.doctor import Doctor, Verify
from vault_cortex.index.progress import SyncReport
from vault_cortex.index.recent import Recent
from vault_cortex.notes import Edited, Moved
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import Hit, Recall

__version__ = "0.1.0"

__all__ = [
    "Broken",
    "ConfigError",
    "Conflict",
    "Cortex",
    "Doctor",
    "EditOp",
    "Edited",
    "Filters",
    "Hit",
    "IndexUnavailable",
    "InvalidRequest",
    "ModelUnavailable",
    "Moved",
    "NoteNotFound",
    "NoteDoc",
    "NoteParseError",
    "NotFound",
    "Recall",
    "RecallRequest",
    "Recent",
    "RequestRefused",
    "SyncReport",
    "TryLater",
    "UnsafePath",
    "VaultCortexError",
    "VaultExists",
    "VaultNotFound",
    "VaultReadOnly",
    "Verify",
    "WriteConflict",
    "__version__",
]
