"""What the index's reads return and its file bookkeeping stores: a note, a chunk, a link, a file's state."""

from __future__ import annotations

from typing import Any

import msgspec


class NoteRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    path: str
    title: str
    region: str
    importance: float | None
    created: str | None
    project: str | None
    layer: str | None
    pinned: bool
    mtime_ns: int


class ChunkRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    note_id: int
    ord: int
    heading: str
    text: str
    start_line: int
    end_line: int
    tokens: int


class LinkRow(msgspec.Struct, frozen=True, kw_only=True):
    src: str
    target: str
    subpath: str
    kind: str
    rel: str
    line: int
    dst: str | None
    ambiguous: tuple[str, ...]


class FileState(msgspec.Struct, frozen=True, kw_only=True):
    fs_path: str
    size: int
    mtime_ns: int
    hash: str


def note_row(r: Any) -> NoteRow:
    """A `NoteRow` from the columns id, path, title, region, importance, created, project, layer, pinned,
    mtime_ns."""
    return NoteRow(id=r[0], path=r[1], title=r[2], region=r[3], importance=r[4], created=r[5], project=r[6],
                   layer=r[7], pinned=bool(r[8]), mtime_ns=r[9])


def chunk_row(r: Any) -> ChunkRow:
    """A `ChunkRow` from the columns id, note_id, ord, heading, text, start_line, end_line, tokens."""
    return ChunkRow(id=r[0], note_id=r[1], ord=r[2], heading=r[3], text=r[4], start_line=r[5], end_line=r[6],
                    tokens=r[7])
