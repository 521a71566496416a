"""How far indexing is and what a sync did: the phases, the progress callback, `Indexing` and `SyncReport`."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class SyncReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one sync did."""

    notes: int  # notes in the index afterwards
    added: int
    updated: int
    deleted: int
    renamed: int
    unchanged: int
    skipped: int
    chunks_embedded: int
    chunks_cached: int
    noise_blocks: int
    problems: int
    seconds: float
    embed_seconds: float


WORDS, VECTORS = "words", "vectors"  # the phases of indexing: notes written (searchable by words, links and
# properties), then their chunks' vectors filled in behind (searchable by meaning)


class Indexing(msgspec.Struct, frozen=True, kw_only=True):
    """How far a running sync is: in phase "words", notes written of the notes to write; in phase "vectors",
    chunks given their vector of the chunks that lack one (recall finds those by words only meanwhile), or, in a
    sync of a few changed notes (which embeds before it writes), of the chunks it writes."""

    done: int
    total: int
    phase: str = WORDS
