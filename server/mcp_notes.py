"""The MCP tools over notes: `note` reads, relates, edits, moves and archives one note (the /v1/notes/* and
/v1/related routes), and `overview` lists recent activity or the graph's health (/v1/recent, /v1/graph/health)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from server.mcp_args import READ_ONLY, REWRITES, Call, Captures, K, Mode, builtins, needs, told
from vault_cortex.files.sections import EditOp
from vault_cortex.limits import MAX_PATH_CHARS
from vault_cortex.privacy import agent_text
from vault_cortex.recall import brief

NoteOp = Literal["read", "related", "append", "prepend", "replace_section", "find_replace", "set_property",
                 "remove_property", "move", "archive"]
Note = Annotated[str, Field(description="Its path or [[link]] name.",
                            min_length=1, max_length=MAX_PATH_CHARS)]
Value = str | float | bool | list[str] | None


def note_tools(tool: Callable[[ToolAnnotations], Callable[[Any], Any]], call: Call) -> None:
    """Register `note` and `overview` with `tool` (build_mcp's registrar)."""

    @tool(REWRITES)
    def note(
        note: Note,
        op: Annotated[NoteOp, Field(description="What to do (default read).")] = "read",
        content: Annotated[str | None, Field(description="Text to add; replace_section's new text; find_replace's "
                                                         "replacement.", max_length=200_000)] = None,
        heading: Annotated[str | None, Field(description="replace_section: e.g. 'Setup/Install'.",
                                             max_length=1000)] = None,
        find: Annotated[str | None, Field(description="find_replace: exact text.", max_length=100_000)] = None,
        count: Annotated[int, Field(description="find_replace: how often `find` occurs.", ge=1, le=10_000)] = 1,
        key: Annotated[str | None, Field(description="The property.", max_length=200)] = None,
        value: Annotated[Value, Field(description="set_property: its value.")] = None,
        dest: Annotated[str | None, Field(description="move: the new path.", max_length=MAX_PATH_CHARS)] = None,
        etag: Annotated[str | None, Field(description="From read: refused if the note changed since.",
                                          max_length=64)] = None,
        k: K = None, mode: Mode = None, captures: Captures = None,
    ) -> CallToolResult:
        """One note. read: its text and etag; call it when a snippet is not enough, before an edit, or when the
        user names a note. related: notes it should link to. Edits (append, prepend, replace_section,
        find_replace, set_property, remove_property) change only their lines, atomically: never rewrite the file.
        move: rename, links rewritten. archive: retire it to archive/ instead of deleting."""
        if op == "read":
            doc = call(lambda cx: cx.open_note(note))
            return told(doc, f"{doc.path} (etag {doc.etag})\n\n{doc.content}")
        if op == "related":
            found = call(lambda cx: cx.related(note, k=k, mode=mode, captures=captures))
            return told(found, brief.items(
                brief.item(h.path, brief.in_words(h.reason), brief.passage(h.snippet, found.query,
                                                                           brief.RECALL_PASSAGE_CHARS))
                for h in found.hits) or "No other note relates to it.")
        if op == "move":
            needs(op, dest=dest)
            return told(call(lambda cx: cx.move_note(note, dest or "", etag=etag)))
        if op == "archive":
            return told(call(lambda cx: cx.archive_note(note, etag=etag)))
        edit = _edit(op, content, heading, find, count, key, value)
        return told(call(lambda cx: cx.edit_note(note, edit, etag=etag)))

    @tool(READ_ONLY)
    def overview(
        op: Annotated[Literal["recent", "graph"], Field(description="recent or graph.")],
        days: Annotated[int, Field(description="recent: days back.", ge=1, le=3660)] = 7,
        kinds: Annotated[list[Literal["created", "changed", "recalled", "opened"]] | None,
                         Field(description="recent: which (default all).")] = None,
    ) -> dict[str, Any]:
        """recent: notes created, changed, recalled, opened, by day; call it to resume or when asked what was done
        lately. graph: hubs, islands, bridges, dangling links; call it to tidy the vault."""
        if op == "graph":
            return builtins(call(lambda cx: cx.graph_health()))
        return builtins(call(lambda cx: cx.recent(days=days, kinds=kinds)))


def _edit(op: str, content: str | None, heading: str | None, find: str | None, count: int, key: str | None,
          value: Value) -> EditOp:
    """The edit an op names, with the agent's words through the privacy gate (`content` is find_replace's
    replacement here; the edit itself names any other field its op lacks)."""
    if op == "find_replace":
        needs(op, content=content)
    said = [agent_text(v) for v in value] if isinstance(value, list) else (
        agent_text(value) if isinstance(value, str) else value)
    text = agent_text(content)
    return EditOp(op=op, content=None if op == "find_replace" else text, heading=heading,  # type: ignore[arg-type]
                  find=find, replace=text if op == "find_replace" else None, count=count, key=key, value=said)
