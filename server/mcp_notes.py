"""The MCP tools that read, edit, move and archive notes, and list recent activity (the same facade calls as
the /v1/notes/* and /v1/recent routes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
from mcp_types import ToolAnnotations
from pydantic import Field

from vault_cortex.cortex import Cortex
from vault_cortex.files.sections import EditOp, Operation
from vault_cortex.limits import MAX_PATH_CHARS
from vault_cortex.privacy import agent_text

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
EDITS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
MOVES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

Note = Annotated[str, Field(description="The note: its vault path ('scientific/SQLite WAL mode.md') or its name "
                                        "as you would link it ('SQLite WAL mode').",
                            min_length=1, max_length=MAX_PATH_CHARS)]
Etag = Annotated[str | None, Field(description="The `etag` read_note returned: the change is refused if the note "
                                               "changed since (read it again then). Strongly advised.",
                                   max_length=64)]


def note_tools(tool: Callable[[ToolAnnotations], Callable[[Any], Any]], cx: Cortex,
               call: Callable[[Callable[[], Any]], Any]) -> None:
    """Register read_note, edit_note, move_note, archive_note and recent with `tool` (build_mcp's registrar)."""

    def out(value: Callable[[], Any]) -> dict[str, Any]:
        built = msgspec.to_builtins(call(value))
        return built if isinstance(built, dict) else {"result": built}

    @tool(READ_ONLY)
    def read_note(note: Note) -> dict[str, Any]:
        """Read a whole note: its text and `etag`. Call this when a recalled snippet is not enough (you need
        the full note), BEFORE editing a note (pass its `etag` to edit_note), or when the user names a note.
        Names resolve as Obsidian resolves a [[link]]. Use this instead of reading the file directly: the
        open is logged and feeds ranking."""
        return out(lambda: cx.open_note(note))

    @tool(EDITS)
    def edit_note(
        note: Note,
        operation: Annotated[Operation,
                             Field(description="append / prepend: add `content` at the end / after the "
                                               "frontmatter; replace_section: replace what is under `heading`; "
                                               "find_replace: replace `find` by `replace`, which must occur "
                                               "exactly `count` times; set_property: set `key` to `value` "
                                               "(a value is required); remove_property: remove `key`.")],
        content: Annotated[str | None, Field(description="Text to add, or the section's new text (markdown).",
                                             max_length=200_000)] = None,
        heading: Annotated[str | None, Field(description="Heading path of the section, e.g. 'Setup/Install' or "
                                                         "'Setup#Install' (nested headings).", max_length=1000)] = None,
        find: Annotated[str | None, Field(description="Exact text to find (whitespace and case matter).",
                                          max_length=100_000)] = None,
        replace: Annotated[str | None, Field(description="Its replacement.", max_length=200_000)] = None,
        count: Annotated[int, Field(description="How many times `find` occurs; the edit is refused otherwise.",
                                    ge=1, le=10_000)] = 1,
        key: Annotated[str | None, Field(description="Property name, e.g. 'status'.", max_length=200)] = None,
        value: Annotated[str | float | bool | list[str] | None,
                         Field(description="Property value for set_property: text, number, true/false or a "
                                           "list (required there; remove_property removes a property).")] = None,
        etag: Etag = None,
    ) -> dict[str, Any]:
        """Change part of an existing note without rewriting it: append a new finding, replace one section,
        fix a passage, set a property (status, importance, tags). Call this instead of writing the file: only
        the touched lines change, the write is atomic, refused if the note changed since you read it (pass
        `etag`), and logged. A missing heading or a `find` that occurs a different number of times is an
        error and nothing changes. For a new memory, call `remember` instead."""
        said = [agent_text(v) for v in value] if isinstance(value, list) else (
            agent_text(value) if isinstance(value, str) else value)
        op = EditOp(op=operation, content=agent_text(content), heading=heading, find=find,
                    replace=agent_text(replace), count=count, key=key, value=said)
        return out(lambda: cx.edit_note(note, op, etag=etag))

    @tool(MOVES)
    def move_note(
        note: Note,
        dest: Annotated[str, Field(description="The new vault path, e.g. 'scientific/ESP32 brown-out.md'.",
                                   min_length=1, max_length=MAX_PATH_CHARS)],
        etag: Etag = None,
    ) -> dict[str, Any]:
        """Move or rename a note. Call this when the user asks to rename or refile a note, or a note sits in
        the wrong region folder. Links to it in other notes are rewritten as Obsidian would (each listed in
        `relinked`); the destination must not exist."""
        return out(lambda: cx.move_note(note, dest, etag=etag))

    @tool(MOVES)
    def archive_note(note: Note, etag: Etag = None) -> dict[str, Any]:
        """Retire a note that is obsolete, wrong or superseded: moves it to archive/ (nothing is deleted; its
        links keep working and recall finds it with include_archive). Call this instead of deleting a file,
        and only when the user agrees or the note is clearly superseded."""
        return out(lambda: cx.archive_note(note, etag=etag))

    @tool(READ_ONLY)
    def recent(
        days: Annotated[int, Field(description="How many days back (default 7).", ge=1, le=3660)] = 7,
        kinds: Annotated[list[Literal["created", "changed", "recalled", "opened"]] | None,
                         Field(description="Which kinds of activity (default: all).")] = None,
    ) -> dict[str, Any]:
        """What happened in memory lately: notes created, changed, recalled and opened, grouped by day, newest
        first. Call this when the user asks what they (or you) worked on recently, to resume after a break,
        or before a review or a handoff."""
        return out(lambda: cx.recent(days=days, kinds=kinds))
