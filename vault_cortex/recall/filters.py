"""Filters on recall and context: tags, regions, project, dates, a path prefix and captures, turned into the notes
the candidate search may return (so k results come back whenever k notes match, not k minus those filtered).

Captures (`properties.is_capture`: a session's words as they were said) are left out unless a request asks for
them: what was said is not what is true, so nothing offers one as a memory unasked."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import msgspec

from vault_cortex import clock
from vault_cortex.errors import InvalidRequest
from vault_cortex.index.db import IndexDB
from vault_cortex.recall.pipeline import parse_time

__all__ = ["CAPTURES", "Filters", "Scope", "allowed_notes", "parse_when", "scope"]

_RELATIVE = re.compile(r"(\d{1,6})\s*(h|d|w)", re.IGNORECASE)
_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
CAPTURES = ("exclude", "include", "only")  # captures left out (the default), kept among the notes, or alone


class Filters(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which notes a recall may return. Every filter given must hold (tags: each tag given must be on the note).

    tags: Obsidian's nested semantics, `#a` (or `a`) matches `a` and `a/b`; case-insensitive.
    created_after / created_before / modified_after: an ISO date or date-time, or relative: `7d`, `12h`, `2w`.
    created is the note's `created:` property (notes without one never pass a created filter); modified is
    the file's modification time.
    captures: `exclude` (the default) leaves the captures out, `include` keeps them, `only` returns nothing else.
    """

    tags: list[str] | None = None
    regions: list[str] | None = None
    project: str | None = None
    created_after: str | None = None
    created_before: str | None = None
    modified_after: str | None = None
    path_prefix: str | None = None
    captures: str = "exclude"

    def __post_init__(self) -> None:
        if self.captures not in CAPTURES:
            raise InvalidRequest(f"captures must be one of {', '.join(CAPTURES)}, not {self.captures!r}")

    @classmethod
    def build(cls, *, tags: list[str] | None = None, regions: list[str] | None = None, project: str | None = None,
              created_after: str | None = None, created_before: str | None = None,
              modified_after: str | None = None, path_prefix: str | None = None,
              captures: str | None = None) -> Filters:
        """Filters from a surface's raw inputs (HTTP, MCP, CLI), checked at once: a tag that is not one or a
        date that is neither ISO nor an age is an InvalidRequest naming it, before any search runs."""
        for tag in tags or ():
            _tag(tag)
        for field, value in (("created_after", created_after), ("created_before", created_before),
                             ("modified_after", modified_after)):
            if value:
                parse_when(value, clock.now(), field)
        return cls(tags=tags, regions=regions, project=project, created_after=created_after,
                   created_before=created_before, modified_after=modified_after, path_prefix=path_prefix,
                   captures=(captures or "exclude").strip().lower())

    def active(self) -> bool:
        """Whether a filter on the notes' facts is given (captures are told by an index of their own)."""
        return any(v not in (None, [], "") for k, v in msgspec.structs.asdict(self).items() if k != "captures")


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """The notes a recall may return: only those of `among` (None: any), never those of `without`. Captures
    left out are `without`: a set the size of the captures, where `among` would be the size of the vault."""

    among: frozenset[int] | None = None
    without: frozenset[int] = frozenset()


def scope(db: IndexDB, filters: Filters, now: datetime, exclude: frozenset[str] = frozenset()) -> Scope:
    """The notes that pass the filters: their facts read only when a filter on them is given, the captures
    by their own index (`IndexDB.capture_notes`) unless they are included."""
    among = allowed_notes(db, filters, now, exclude) if filters.active() else None
    if filters.captures == "include":
        return Scope(among=among)
    captures = db.capture_notes()
    if filters.captures == "only":
        return Scope(among=captures if among is None else among & captures)
    return Scope(among=among - captures) if among is not None else Scope(without=captures)


def parse_when(value: str, now: datetime, field: str) -> float:
    """Epoch seconds of an ISO date/date-time or a relative age (`7d` = seven days before now)."""
    text = value.strip()
    rel = _RELATIVE.fullmatch(text)
    if rel:
        return (now - int(rel[1]) * _UNIT[rel[2].lower()]).timestamp()
    when = parse_time(text)
    if when is None:
        raise InvalidRequest(f"{field} must be an ISO date (2026-11-30), a date-time or an age like 7d, 12h, 2w; "
                             f"not {value!r}")
    return when


def _tag(t: str) -> str:
    tag = t.strip().lstrip("#").strip().lower()
    if not tag or " " in tag:
        raise InvalidRequest(f"not a tag: {t!r}")
    return tag.rstrip("/")


def allowed_notes(db: IndexDB, filters: Filters, now: datetime,
                  exclude: frozenset[str] = frozenset()) -> frozenset[int]:
    """Ids of the indexed notes that pass every filter (and are not excluded)."""
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    after = parse_when(filters.created_after, now, "created_after") if filters.created_after else None
    before = parse_when(filters.created_before, now, "created_before") if filters.created_before else None
    modified = parse_when(filters.modified_after, now, "modified_after") if filters.modified_after else None
    prefix = (filters.path_prefix or "").strip().lstrip("/")
    project = (filters.project or "").strip().casefold()
    regions = set(filters.regions or ())
    tags = [_tag(t) for t in filters.tags or ()]
    scan = bool(regions or prefix or project or exclude) or any(v is not None for v in (after, before, modified))
    keep: set[int] | None = None
    if scan or not tags:
        keep = set()
        for note_id, path, region, created_text, proj, mtime_ns in db.note_facts():
            if path in exclude or (regions and region not in regions):
                continue
            if prefix and not path.startswith(prefix):
                continue
            if project and (proj or "").strip().casefold() != project:
                continue
            if after is not None or before is not None:
                created = parse_time(created_text)
                if created is None or (after is not None and created < after) or (
                        before is not None and created > before):
                    continue
            if modified is not None and mtime_ns / 1e9 < modified:
                continue
            keep.add(note_id)
    for tag in tags:
        tagged = db.notes_tagged(tag)
        keep = tagged if keep is None else keep & tagged
    return frozenset(keep or ())
