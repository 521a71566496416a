"""What a feature may read of a vault and its index, as Protocols: the narrow views of the `Cortex` facade.

Features below the facade that read (session-start context, habits matching, curiosities listing, sleep
planning, the doctor) take one of these instead of `Cortex`, so their signatures say what they read and the
imports point one way. Writes take the `Vault` (store/change.py): the one write path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol

from vault_cortex.config import Settings
from vault_cortex.files.activity import Event
from vault_cortex.files.vault import NoteDoc
from vault_cortex.index.db import IndexDB
from vault_cortex.index.embed import Embedder
from vault_cortex.index.sync import Progress, SyncReport
from vault_cortex.index.vectors import Vector, Vectors


class Store(Protocol):
    """A vault's notes and index, read: the notes, the index (synced first), the settings and clock, the log."""

    @property
    def root(self) -> Path: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> IndexDB: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...

    def sync(self, progress: Progress | None = None) -> SyncReport: ...
    def sync_paths(self, paths: Sequence[str]) -> SyncReport:
        """Re-index just these vault paths (the notes a write changed)."""
        ...
    def read_note(self, path: str) -> NoteDoc: ...
    def read_bytes(self, path: str) -> bytes: ...
    def log(self, event: Event) -> None: ...


class Searchable(Store, Protocol):
    """A store with its embedder and vectors: what features that compare meaning need."""

    @property
    def embedder(self) -> Embedder: ...
    @property
    def vectors(self) -> Vectors: ...

    def similarity(self, qvec: Vector, paths: Sequence[str]) -> dict[str, float]: ...
    def count_tokens(self, text: str) -> int: ...
