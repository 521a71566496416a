"""What a feature may touch of a vault and its index, as Protocols: the narrow views of the `Cortex` facade.

Features below the facade (identity, sleep, the doctor, the writing of memories) take one of these instead of
`Cortex`, so their signatures say what they read and write and the imports point one way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Protocol

from vault_cortex.config import Settings
from vault_cortex.files.vault import NoteDoc
from vault_cortex.index.activity import Event
from vault_cortex.index.db import IndexDB
from vault_cortex.index.embed import Embedder
from vault_cortex.index.sync import Progress, SyncReport
from vault_cortex.index.vectors import Vector, Vectors


class Store(Protocol):
    """A vault's notes and index: read and write notes (atomic, checked, re-indexed), sync, log activity."""

    @property
    def root(self) -> Path: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> IndexDB: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...

    def writing(self) -> AbstractContextManager[None]:
        """Hold the vault's write lock."""
        ...

    def sync(self, progress: Progress | None = None) -> SyncReport: ...
    def sync_paths(self, paths: Sequence[str]) -> SyncReport:
        """Re-index just these vault paths (the notes a write changed)."""
        ...
    def read_note(self, path: str) -> NoteDoc: ...
    def read_bytes(self, path: str) -> bytes: ...
    def write_note(self, path: str, content: str, if_match: str | None) -> NoteDoc: ...
    def write_bytes(self, path: str, data: bytes, if_match: str | None) -> NoteDoc: ...

    def edit_text(self, path: str, edit: Callable[[str], str], if_match: str | None = None) -> NoteDoc:
        """Apply an edit of the text to the note's bytes: only the edited lines change, whatever the encoding."""
        ...

    def log(self, event: Event) -> None: ...


class Searchable(Store, Protocol):
    """A store with its embedder and vectors: what features that compare meaning need."""

    @property
    def embedder(self) -> Embedder: ...
    @property
    def vectors(self) -> Vectors: ...

    def similarity(self, qvec: Vector, paths: Sequence[str]) -> dict[str, float]: ...
