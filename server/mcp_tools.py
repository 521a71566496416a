"""The MCP tools: the same facade calls as the HTTP routes, described so an agent knows when to call each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from vault_cortex import __version__
from vault_cortex.cortex import Cortex
from vault_cortex.errors import VaultCortexError

T = TypeVar("T")

INSTRUCTIONS = """\
vault-cortex is your long-term memory: a markdown vault of notes (memories) linked into a graph.
- At the start of a task, call `context` (with the task and project) to load what you already know.
- Before answering from memory, or when the user refers to earlier work, call `recall`.
- After learning something worth keeping (a decision, a fix, a preference, a fact), call `remember`.
- When one memory supports, contradicts or leads to another, call `link`.
Every recalled item says why it was chosen; a score is a ranking, not proof of relevance."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                           open_world_hint=False)

Query = Annotated[str, Field(description="What you want to remember: a question, topic or task, in words.",
                             min_length=1, max_length=10_000)]
K = Annotated[int | None, Field(description="How many notes at most (default: the vault's recall.k).",
                                ge=1, le=1000)]
Mode = Annotated[str | None, Field(description="Ranking mode: balanced (default), focus, explore, identity, "
                                               "recent, or one the vault configures.")]
Budget = Annotated[int | None, Field(description="Token budget of the returned text (default: the vault's).",
                                     ge=0, le=100_000)]
NotePath = Annotated[str, Field(description="Vault-relative path of a note, e.g. 'scientific/SQLite WAL mode.md'.",
                                min_length=1, max_length=1024)]


def _builtins(value: Any) -> dict[str, Any]:
    out = msgspec.to_builtins(value)
    return out if isinstance(out, dict) else {"result": out}


def _call(fn: Callable[[], T]) -> T:
    """Run a facade call, turning our errors into tool errors the agent can read and act on."""
    try:
        return fn()
    except VaultCortexError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def build_mcp(cx: Cortex, *, client: str = "mcp") -> MCPServer:
    """An MCP server whose tools call `cx` in-process (one per app: its session manager runs once)."""
    mcp: MCPServer = MCPServer(name="vault-cortex", version=__version__, instructions=INSTRUCTIONS,
                               log_level="WARNING")

    @mcp.tool(annotations=READ_ONLY)
    def recall(query: Query, k: K = None, mode: Mode = None, budget_tokens: Budget = None,
               regions: Annotated[list[str] | None, Field(description="Only these regions (cortices).")] = None,
               include_archive: Annotated[bool, Field(description="Also search archived notes.")] = False,
               ) -> dict[str, Any]:
        """Search long-term memory. Call this BEFORE answering from memory, when the user mentions earlier
        work, a person, a project or a decision, or when you are unsure what was decided. Returns notes best
        first, each with its path, score, the reason it was chosen and the passage that matched."""
        return _builtins(_call(lambda: cx.recall(query, k=k, mode=mode, budget_tokens=budget_tokens,
                                                 regions=regions, include_archive=include_archive,
                                                 client=client)))

    @mcp.tool(annotations=READ_ONLY)
    def context(task: Annotated[str | None, Field(description="The task you are starting, in a sentence.")] = None,
                project: Annotated[str | None, Field(description="The project's name, if any.")] = None,
                active_note: Annotated[str | None, Field(description="Path of the note being worked on.")] = None,
                recent: Annotated[list[str] | None, Field(description="Paths of notes used recently.")] = None,
                budget_tokens: Budget = None, mode: Mode = None) -> str:
        """Load what memory holds for a task. Call this ONCE AT THE START of a task or session: it returns a
        token-budgeted markdown block with identity notes, memories of the project and task, matching habits,
        open questions and the last handoff, grouped by region."""
        result = _call(lambda: cx.context(task=task, project=project, active_note=active_note, recent=recent,
                                          budget_tokens=budget_tokens, mode=mode, client=client))
        return result.markdown

    @mcp.tool(annotations=READ_ONLY)
    def related(path: NotePath, k: K = None, mode: Mode = None) -> dict[str, Any]:
        """Memories related to one note, found from its content; the note itself and the notes it already
        links are left out. Call this when working on a note to find what it should connect to."""
        return _builtins(_call(lambda: cx.related(path, k=k, mode=mode, client=client)))

    @mcp.tool(annotations=ADDITIVE)
    def remember(
        text: Annotated[str, Field(description="The memory in your own words: what, why, and the evidence.",
                                   min_length=1, max_length=200_000)],
        title: Annotated[str | None, Field(description="A short title; it becomes the file name.")] = None,
        region: Annotated[str | None, Field(description="Region (cortex) for it, e.g. scientific; default: "
                                                        "short_term, promoted later by consolidation.")] = None,
        tags: Annotated[list[str] | None, Field(description="Tags, without '#'.")] = None,
        importance: Annotated[float | None, Field(description="0.0–1.0: how much it matters later.",
                                                  ge=0.0, le=1.0)] = None,
        project: Annotated[str | None, Field(description="The project it belongs to.")] = None,
        relations: Annotated[dict[str, list[str]] | None,
                             Field(description="Typed links to existing notes, e.g. "
                                               "{\"supports\": [\"SQLite WAL mode\"]}.")] = None,
    ) -> dict[str, Any]:
        """Save a new memory as a note. Call this AFTER learning something worth keeping across sessions: a
        decision and its reason, a fix and its cause, a preference, a fact that was hard to find. One idea per
        memory. Returns the new note's path and ETag."""
        doc = _call(lambda: cx.remember(text, title=title, region=region, tags=tags, importance=importance,
                                        project=project, relations=relations, client=client))
        return {"path": doc.path, "etag": doc.etag}

    @mcp.tool(annotations=ADDITIVE)
    def link(src: NotePath,
             rel: Annotated[str, Field(description="Relation type: supports, contradicts, leads_to, reminds_of, "
                                                   "derived_from, example_of, related_to, evokes, depends_on, or "
                                                   "one the vault configures.")],
             dst: NotePath) -> dict[str, Any]:
        """Record a typed relation from one note to another (written into the source note's frontmatter).
        Call this when you notice that one memory supports, contradicts, depends on or leads to another."""
        doc = _call(lambda: cx.link(src, rel, dst))
        return {"path": doc.path, "etag": doc.etag}

    @mcp.tool(annotations=READ_ONLY)
    def graph_health() -> dict[str, Any]:
        """How well the memory graph is wired: hubs, islands (unlinked notes), bridges and dangling links.
        Call this when asked to tidy or review the vault, or before suggesting links to add."""
        return _builtins(_call(cx.graph_health))

    return mcp
