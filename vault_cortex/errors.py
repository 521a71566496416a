"""Every error vault-cortex raises on purpose, grouped by what the caller should do about it.

    VaultCortexError
    ├── RequestRefused           change the request: it cannot be done as asked
    │   ├── InvalidRequest       a caller passed a bad argument (empty query, k out of range, unknown mode)
    │   ├── UnsafePath           a path escapes the vault, is absolute, not .md, or inside a dot-folder
    │   ├── NoteParseError       a note could not be parsed where parsing is required (e.g. for a write)
    │   └── VaultReadOnly        the vault is read-only (a backup, a read-only share): it is searched, never written
    ├── NotFound                 name something that exists
    │   ├── NoteNotFound         no note at that path
    │   └── VaultNotFound        the folder is not a vault (no .cortex/) or does not exist
    ├── Conflict                 read again (or pick another name): something changed or exists already
    │   ├── WriteConflict        the file changed on disk since it was read; the write was refused
    │   └── VaultExists          `init` refused to overwrite an existing vault
    ├── TryLater                 ask again in a moment: it is being fixed or the process is stopping
    │   ├── IndexUnavailable     the derived index cannot be opened or is being rebuilt
    │   │   └── IndexCorrupt     the index file is damaged (it is moved aside and rebuilt from the files)
    │   └── SyncCancelled        a sync stopped early because the process is stopping (its finished work is kept)
    └── Broken                   a person must fix the setup; asking again will not help
        ├── ConfigError          the vault's config.toml or an environment setting is invalid
        ├── ModelUnavailable     the ONNX model or tokenizer is missing, corrupt or the wrong file
        └── DiskFull             no space left on the vault's disk: the write stopped, nothing half-written

The library knows nothing of HTTP: the server maps these to statuses in one table (server/errors.py).
Expected outcomes are values, not exceptions: an unresolved link is `Dangling`, a skipped file `Skipped`.
"""

from __future__ import annotations


class VaultCortexError(Exception):
    """Root of every error vault-cortex raises on purpose."""


# -- the families: what the caller should do ------------------------------------------------------------

class RequestRefused(VaultCortexError):
    """The request cannot be done as asked: change it."""


class NotFound(VaultCortexError):
    """What the request names does not exist."""


class Conflict(VaultCortexError):
    """Something changed underneath or exists already: read again, or choose another name."""


class TryLater(VaultCortexError):
    """Not now: the index is being rebuilt or the process is stopping. Ask again in a moment."""


class Broken(VaultCortexError):
    """The setup needs a person (settings, the model, the disk); asking again will not help."""


# -- the errors raised ---------------------------------------------------------------------------------

class InvalidRequest(RequestRefused):
    pass


class UnsafePath(RequestRefused):
    pass


class NoteParseError(RequestRefused):
    pass


class VaultReadOnly(RequestRefused):
    pass


class NoteNotFound(NotFound):
    pass


class VaultNotFound(NotFound):
    pass


class WriteConflict(Conflict):
    pass


class VaultExists(Conflict):
    pass


class IndexUnavailable(TryLater):
    pass


class IndexCorrupt(IndexUnavailable):
    pass


class SyncCancelled(TryLater):
    pass


class ConfigError(Broken):
    pass


class ModelUnavailable(Broken):
    pass


class DiskFull(Broken):
    pass
