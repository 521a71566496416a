"""vault-cortex: long-term memory for people and AI agents, kept as an Obsidian-style markdown vault.

The public names load on first use (PEP 562): importing a light module such as `vault_cortex.config` (what the hook
command reads the server's address with) does not load the library's index, model and numpy.
"""

import importlib
import typing

if typing.TYPE_CHECKING:
    from vault_cortex.cortex import Cortex as Cortex
    from vault_cortex.errors import Broken as Broken
    from vault_cortex.errors import ConfigError as ConfigError
    from vault_cortex.errors import Conflict as Conflict
    from vault_cortex.errors import IndexUnavailable as IndexUnavailable
    from vault_cortex.errors import InvalidRequest as InvalidRequest
    from vault_cortex.errors import ModelUnavailable as ModelUnavailable
    from vault_cortex.errors import NoteNotFound as NoteNotFound
    from vault_cortex.errors import NoteParseError as NoteParseError
    from vault_cortex.errors import NotFound as NotFound
    from vault_cortex.errors import RequestRefused as RequestRefused
    from vault_cortex.errors import TryLater as TryLater
    from vault_cortex.errors import UnsafePath as UnsafePath
    from vault_cortex.errors import VaultCortexError as VaultCortexError
    from vault_cortex.errors import VaultExists as VaultExists
    from vault_cortex.errors import VaultNotFound as VaultNotFound
    from vault_cortex.errors import VaultReadOnly as VaultReadOnly
    from vault_cortex.errors import WriteConflict as WriteConflict
    from vault_cortex.files.sections import EditOp as EditOp
    from vault_cortex.files.vault import NoteDoc as NoteDoc
    from vault_cortex.index.doctor import Doctor as Doctor
    from vault_cortex.index.doctor import Verify as Verify
    from vault_cortex.index.progress import SyncReport as SyncReport
    from vault_cortex.index.recent import Recent as Recent
    from vault_cortex.notes import Edited as Edited
    from vault_cortex.notes import Moved as Moved
    from vault_cortex.recall.filters import Filters as Filters
    from vault_cortex.recall.request import RecallRequest as RecallRequest
    from vault_cortex.recall.scored import Hit as Hit
    from vault_cortex.recall.scored import Recall as Recall

__version__ = "0.1.0"

# Each public name and the module that defines it.
_WHERE = {
    "Cortex": "vault_cortex.cortex",
    "Broken": "vault_cortex.errors",
    "ConfigError": "vault_cortex.errors",
    "Conflict": "vault_cortex.errors",
    "IndexUnavailable": "vault_cortex.errors",
    "InvalidRequest": "vault_cortex.errors",
    "ModelUnavailable": "vault_cortex.errors",
    "NoteNotFound": "vault_cortex.errors",
    "NoteParseError": "vault_cortex.errors",
    "NotFound": "vault_cortex.errors",
    "RequestRefused": "vault_cortex.errors",
    "TryLater": "vault_cortex.errors",
    "UnsafePath": "vault_cortex.errors",
    "VaultCortexError": "vault_cortex.errors",
    "VaultExists": "vault_cortex.errors",
    "VaultNotFound": "vault_cortex.errors",
    "VaultReadOnly": "vault_cortex.errors",
    "WriteConflict": "vault_cortex.errors",
    "EditOp": "vault_cortex.files.sections",
    "NoteDoc": "vault_cortex.files.vault",
    "Doctor": "vault_cortex.index.doctor",
    "Verify": "vault_cortex.index.doctor",
    "SyncReport": "vault_cortex.index.progress",
    "Recent": "vault_cortex.index.recent",
    "Edited": "vault_cortex.notes",
    "Moved": "vault_cortex.notes",
    "Filters": "vault_cortex.recall.filters",
    "RecallRequest": "vault_cortex.recall.request",
    "Hit": "vault_cortex.recall.scored",
    "Recall": "vault_cortex.recall.scored",
}

__all__ = ["__version__", *_WHERE]


def __getattr__(name: str) -> object:
    """A public name, imported from its module the first time it is asked for."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
