"""Routes that edit, move and archive notes, and recent activity: thin handlers over the facade."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Response, get, post
from litestar.params import HeaderParameter, JSONBody, QueryParameter
from msgspec import Meta

from server.routes import CortexDep, NotePath, parse_if_match
from vault_cortex.files.sections import EditOp
from vault_cortex.index.recent import Recent
from vault_cortex.limits import MAX_PATH_CHARS
from vault_cortex.notes import Edited, Moved

NoteName = Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS,
                               description="A vault path (soul/Values.md) or a note's name as a link resolves it")]
IfMatch = Annotated[str | None, HeaderParameter(name="If-Match", description="The ETag the note was read with; "
                                                "the change is refused (409) if the note changed since.")]


class EditBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A note (its vault path, or its name as a link resolves it) and one edit of it."""

    note: NoteName
    edit: EditOp


class MoveBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    note: NoteName
    dest: NotePath


class ArchiveBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    note: NoteName


def _etag(value: str) -> dict[str, str]:
    return {"ETag": f'"{value}"'}


@post("/notes/edit", status_code=200, sync_to_thread=True)
def edit_note(cx: CortexDep, data: JSONBody[EditBody], if_match: IfMatch = None) -> Response[Edited]:
    """One minimal edit of a note: append, prepend, replace_section (by heading path), find_replace (exact, with
    the expected count) or set_property. Only the touched lines change; atomic; logged; 409 on a stale If-Match."""
    result = cx.edit_note(data.note, data.edit, etag=parse_if_match(if_match))
    return Response(result, headers=_etag(result.etag))


@post("/notes/move", status_code=200, sync_to_thread=True)
def move_note(cx: CortexDep, data: JSONBody[MoveBody], if_match: IfMatch = None) -> Response[Moved]:
    """Move (rename) a note; links to it that would break are rewritten in the linking notes and listed in
    `relinked`. 409 if the destination exists or If-Match is stale."""
    result = cx.move_note(data.note, data.dest, etag=parse_if_match(if_match))
    return Response(result, headers=_etag(result.etag))


@post("/notes/archive", status_code=200, sync_to_thread=True)
def archive_note(cx: CortexDep, data: JSONBody[ArchiveBody], if_match: IfMatch = None) -> Response[Moved]:
    """Move a note to archive/ (never deleted; recall finds it with include_archive)."""
    result = cx.archive_note(data.note, etag=parse_if_match(if_match))
    return Response(result, headers=_etag(result.etag))


@get("/recent", sync_to_thread=True)
def recent(
    cx: CortexDep,
    days: Annotated[int, QueryParameter(ge=1, le=3660, description="How many days back.")] = 7,
    kinds: Annotated[list[str] | None, QueryParameter(
        description="Any of created, changed, recalled, opened (default: all).")] = None,
) -> Recent:
    """Notes created, changed, recalled and opened over the last days, grouped by day, newest first."""
    return cx.recent(days=days, kinds=kinds)


HANDLERS = [edit_note, move_note, archive_note, recent]
