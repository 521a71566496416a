"""Every error vault-cortex raises on purpose.

    VaultCortexError
    ├── ConfigError          the vault's config.toml or an environment setting is invalid
    ├── VaultExists          `init` refused to overwrite an existing vault
    ├── VaultNotFound        the folder is not a vault (no .cortex/) or does not exist
    ├── VaultReadOnly        the vault is read-only (a backup, a read-only share): it is searched, never written
    ├── ModelUnavailable     the ONNX model or tokenizer is missing, corrupt or the wrong file
    ├── IndexUnavailable     the derived index cannot be opened or is being rebuilt
    │   └── IndexCorrupt     the index file is damaged (it is moved aside and rebuilt from the files)
    ├── SyncCancelled        a sync stopped early because the process is stopping (its finished work is kept)
    ├── NoteNotFound         no note at that path
    ├── NoteParseError       a note could not be parsed where parsing is required (e.g. for a write)
    ├── UnsafePath           a path escapes the vault, is absolute, not .md, or inside a dot-folder
    ├── WriteConflict        the file changed on disk since it was read; the write was refused
    ├── DiskFull             no space left on the vault's disk: the write stopped, nothing half-written
    └── InvalidRequest       a caller passed a bad argument (empty query, k out of range, unknown mode)

Expected outcomes are values, not exceptions: an unresolved link is `Dangling`, a skipped file `Skipped`.
"""

from __future__ import annotations


class VaultCortexError(Exception):
    """Root of every error vault-cortex raises on purpose; `status` is the matching HTTP status."""

    status: int = 500


class ConfigError(VaultCortexError):
    status = 500


class VaultExists(VaultCortexError):
    status = 409


class VaultNotFound(VaultCortexError):
    status = 404


class VaultReadOnly(VaultCortexError):
    status = 403


class ModelUnavailable(VaultCortexError):
    status = 503


class IndexUnavailable(VaultCortexError):
    status = 503


class IndexCorrupt(IndexUnavailable):
    status = 503


class SyncCancelled(VaultCortexError):
    status = 503


class NoteNotFound(VaultCortexError):
    status = 404


class NoteParseError(VaultCortexError):
    status = 422


class UnsafePath(VaultCortexError):
    status = 400


class WriteConflict(VaultCortexError):
    status = 409


class DiskFull(VaultCortexError):
    status = 507


class InvalidRequest(VaultCortexError):
    status = 400
