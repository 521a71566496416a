"""The MCP tools: the same facade calls as the HTTP routes, few and tersely described, since a client that loads
tools eagerly sends every name, description and schema with every request (tests/e2e/test_mcp_surface.py
holds them to a budget). Tools that do one job share one tool with an `op`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial, wraps
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, TypeVar

import anyio.from_thread
import msgspec
from mcp.server.context import ServerMiddleware
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import Field

from server.mcp_args import (
    ADDITIVE,
    READ_ONLY,
    Budget,
    Call,
    Captures,
    K,
    Mode,
    NotePath,
    PathPrefix,
    Query,
    Regions,
    Tags,
    When,
    builtins,
)
from server.mcp_memory import memory_tools
from server.mcp_notes import note_tools
from vault_cortex import __version__
from vault_cortex.errors import VaultCortexError
from vault_cortex.files.activity import acting_as
from vault_cortex.index.progress import Indexing
from vault_cortex.privacy import agent_text
from vault_cortex.recall import brief
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.gate import ASKED_FLOOR
from vault_cortex.recall.request import RecallRequest

if TYPE_CHECKING:
    from server.watch import Watcher
    from vault_cortex.cortex import Cortex

T = TypeVar("T")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])
MCP_CLIENT = "mcp"  # the activity log's client for everything a tool does
OPEN_WAIT_S = 120.0  # how long a tool called while the stdio server still opens the vault waits for it


Register = Callable[[ToolAnnotations], Callable[[F], F]]

INSTRUCTIONS = """\
vault-cortex is your long-term memory: markdown notes (memories) linked into a graph.
- Start a task with `context` (task, project); before answering from memory, call `recall`.
- Keep what you learn with `remember` (one idea a note); relate two notes with `link`.
- `note` reads a whole note and changes it in place (edit ops, move, archive), never rewrite the file.
- `habits` op=match before a kind of task or tool call: follow what it returns, then op=reinforce.
- `curiosity`: wonder (save an open question), list, explore (close it with its answer).
- `sleep`: op=plan, show the plan, op=apply only once approved; op=rollback undoes it.
- `overview`: recent activity or the graph's health; `resonance`: what matters to the user.
A recalled item says why it was chosen; a score is a ranking, not proof of relevance."""

class Opened:
    """The Cortex (and its watcher) the tools call: given at once (`serve`), or set once the stdio server has
    opened the vault after its handshake; a tool called before then waits, at most OPEN_WAIT_S."""

    def __init__(self, cx: Cortex | None = None, watcher: Watcher | None = None) -> None:
        self._cx, self._watcher = cx, watcher
        self._error: BaseException | None = None
        self._done = threading.Event()
        if cx is not None:
            self._done.set()

    def set(self, cx: Cortex, watcher: Watcher | None) -> None:
        self._cx, self._watcher = cx, watcher
        self._done.set()

    def failed(self, error: BaseException) -> None:
        self._error = error
        self._done.set()

    @property
    def current(self) -> Cortex | None:
        """The Cortex if it is open, without waiting."""
        return self._cx

    @property
    def indexing(self) -> Indexing | None:
        return None if self._cx is None else self._cx.indexing

    def cortex(self) -> Cortex:
        if not self._done.wait(OPEN_WAIT_S):
            raise ToolError("TryLater: vault-cortex is still opening the vault; retry in a moment")
        if self._cx is None:
            raise ToolError(f"{type(self._error).__name__}: {self._error}")
        return self._cx

    def call(self, fn: Callable[[Cortex], T]) -> T:
        """Run a facade call (in a worker thread), turning our errors into tool errors the agent can read and act
        on; a damaged or lost index is answered as over HTTP (being rebuilt: retry) and its rebuild started."""
        cx = self.cortex()
        try:
            return fn(cx)
        except Exception as exc:
            from server.errors import index_trouble  # it imports Litestar: not on the stdio server's way to its tools

            watcher = self._watcher
            sync_soon = None if watcher is None else partial(anyio.from_thread.run_sync, watcher.request_sync)
            lost = index_trouble(exc, cx, sync_soon)
            if lost is not None:
                raise ToolError(f"{type(lost).__name__}: {lost}") from exc
            if isinstance(exc, VaultCortexError):
                raise ToolError(f"{type(exc).__name__}: {exc}") from exc
            raise


def indexing_line(now: Indexing) -> str:
    """What `context` says first while the index is being built."""
    how = f"{now.done} of {now.total} chunks" if now.total else "scanning the files"
    return (f"_vault-cortex is still indexing the vault ({how}): what follows comes from what is indexed so far, "
            "and may lack notes; ask again in a moment for the whole picture._\n\n")


def reporting(fn: Callable[P, T], progress: Callable[[], Indexing | None]) -> Callable[P, T]:
    """The tool `fn`, whose answer carries `indexing: {done, total}` while the index is being built (a text
    answer says so in its first line), so that an agent never takes a half-built index for an empty memory."""
    @wraps(fn)
    def answer(*args: P.args, **kwargs: P.kwargs) -> T:
        result = fn(*args, **kwargs)
        now = progress()
        if now is None:
            return result
        if isinstance(result, dict):
            return {**result, "indexing": {"done": now.done, "total": now.total}}  # type: ignore[return-value]
        if isinstance(result, CallToolResult):  # a text for the model and the fields for programs: both say it
            said: list[ContentBlock] = [TextContent(type="text", text=indexing_line(now) + getattr(c, "text", ""))
                                        for c in result.content]
            fields = {**(result.structured_content or {}), "indexing": {"done": now.done, "total": now.total}}
            return CallToolResult(content=said, structured_content=fields)  # type: ignore[return-value]
        if isinstance(result, str):
            return indexing_line(now) + result  # type: ignore[return-value]
        return result
    return answer


def recall_text(cx: Cortex, request: RecallRequest) -> str:
    """A recall in the one text form (recall/brief.py): when no memory's chance reaches `gate.ASKED_FLOOR`, one line
    saying so; else each hit's path, why in words and the passage that bears."""
    gate = cx.push_gate()
    probe = msgspec.structs.replace(request, k=1, gate=True, budget_tokens=None)
    best = cx.recall(probe, push=msgspec.structs.replace(gate, threshold=0.0, floor=0.0, most=1),
                     log_activity=False).hits
    if not best or (best[0].push_probability or 0.0) < ASKED_FLOOR:
        return brief.nothing(best[0].path, best[0].push_probability or 0.0) if best else "The vault holds no notes."
    hits = cx.recall(request).hits
    return brief.items(brief.item(h.path, brief.in_words(h.reason), brief.passage(h.snippet, request.query,
                                                                          brief.RECALL_PASSAGE_CHARS))
                       for h in hits)


_UNSAID = frozenset({"title", "properties", "maxLength", "minLength"})  # "properties": names, not keywords


def compact(schema: Any) -> Any:
    """A tool's input schema without what costs a model tokens and tells it little: pydantic's titles, string
    lengths and the `null` branch (and `default: null`) of an optional argument. The tool still checks all of it
    (a too long string is an error naming the argument) and still accepts null."""
    if isinstance(schema, list):
        return [compact(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact(v) for k, v in schema.items() if k not in _UNSAID}
    if "properties" in schema:
        out["properties"] = {name: compact(prop) for name, prop in schema["properties"].items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches and "default" in out and out["default"] is None:
        rest = [b for b in branches if b != {"type": "null"}]
        del out["anyOf"], out["default"]
        out = {**(rest[0] if len(rest) == 1 else {"anyOf": rest}), **out}
    return out


def build_mcp(cx: Cortex | Opened, *, watcher: Watcher | None = None,
              middleware: list[ServerMiddleware[Any]] | None = None) -> MCPServer:
    """An MCP server whose tools call the Cortex in-process (one per app: its session manager runs once); `cx` is
    the Cortex, or an `Opened` the stdio server sets once the vault is open. `watcher` is asked to sync when a
    tool finds the index damaged or gone. Every tool's answer says how far indexing is while the index is being
    built (`reporting`), and everything a tool logs is the MCP client's (`acting_as` around each tool)."""
    opened = cx if isinstance(cx, Opened) else Opened(cx, watcher)
    tools: list[Tool] = []

    def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            made = Tool.from_function(reporting(acting_as(MCP_CLIENT)(fn), lambda: opened.indexing),
                                      annotations=annotations, description=" ".join((fn.__doc__ or "").split()))
            tools.append(made.model_copy(update={"parameters": compact(made.parameters)}))
            return fn
        return register

    _recall_tools(tool, opened.call)
    note_tools(tool, opened.call)
    memory_tools(tool, opened.call)
    return MCPServer(name="vault-cortex", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING",
                     tools=tools, middleware=middleware)


def _recall_tools(tool: Register[Any], call: Call) -> None:
    """recall, context, remember and link."""

    @tool(READ_ONLY)
    def recall(query: Query, k: K = None, mode: Mode = None, budget_tokens: Budget = None,
               regions: Regions = None,
               include_archive: Annotated[bool, Field(description="Search archive/ too.")] = False,
               tags: Tags = None,
               project: Annotated[str | None, Field(description="Only this project.")] = None,
               created_after: When = None, created_before: When = None,
               modified_after: When = None,
               path_prefix: PathPrefix = None, captures: Captures = None,
               format: Annotated[Literal["text", "json"], Field(  # noqa: A002 - the tool's parameter name
                   description="text: path, why, the passage; json: every field.")] = "text",
               ) -> str | dict[str, Any]:
        """Search memory: call BEFORE answering from memory, or when the user mentions earlier work, a person,
        project or decision. Returns notes best first, each with why it was chosen and the passage that bears, or
        says nothing bears. Captured sessions (what was said, not what is true) are left out unless captures is
        include or only."""
        request = RecallRequest(query=query, k=k, mode=mode, budget_tokens=budget_tokens, regions=regions,
                                include_archive=include_archive, tags=tags, project=project,
                                created_after=created_after, created_before=created_before,
                                modified_after=modified_after, path_prefix=path_prefix, captures=captures)
        if format == "json":
            return builtins(call(lambda cx: cx.recall(request)))
        return call(lambda cx: recall_text(cx, request))

    @tool(READ_ONLY)
    def context(task: Annotated[str | None, Field(description="The task, in a sentence.")] = None,
                project: Annotated[str | None, Field(description="The project.")] = None,
                active_note: Annotated[str | None, Field(description="The note worked on.")] = None,
                recent: Annotated[list[str] | None, Field(description="Notes used lately.")] = None,
                budget_tokens: Budget = None, mode: Mode = None, tags: Tags = None, regions: Regions = None,
                created_after: When = None, created_before: When = None,
                modified_after: When = None,
                path_prefix: PathPrefix = None, captures: Captures = None) -> str:
        """Call at the START of a task or session: identity notes, memories of the task and project, matching
        habits, open questions and the last handoff that bear on it, in one short text; with no arguments, identity
        and handoff. Filters narrow only the memories."""
        filters = call(lambda cx: Filters.build(tags=tags, regions=regions, created_after=created_after,
                                                created_before=created_before, modified_after=modified_after,
                                                path_prefix=path_prefix, captures=captures))
        result = call(lambda cx: cx.context(task=task, project=project, active_note=active_note, recent=recent,
                                            budget_tokens=budget_tokens, mode=mode, filters=filters))
        return result.markdown or call(empty_context)

    @tool(ADDITIVE)
    def remember(
        text: Annotated[str, Field(description="The memory: what, why, the evidence.", min_length=1,
                                   max_length=200_000)],
        title: Annotated[str | None, Field(description="Short title (file name).")] = None,
        region: Annotated[str | None, Field(description="e.g. scientific (default short_term).")] = None,
        tags: Annotated[list[str] | None, Field(description="Tags, no '#'.")] = None,
        importance: Annotated[float | None, Field(description="0-1: how much it matters.", ge=0.0, le=1.0)] = None,
        project: Annotated[str | None, Field(description="Its project.")] = None,
        relations: Annotated[dict[str, list[str]] | None,
                             Field(description="Links, e.g. {\"supports\": [\"SQLite WAL mode\"]}.")] = None,
    ) -> dict[str, Any]:
        """Save a new memory: call AFTER learning something worth keeping (a decision and why, a fix and its
        cause, a preference, a fact), one idea each. Returns its path and etag."""
        doc = call(lambda cx: cx.remember(agent_text(text), title=agent_text(title), region=region, tags=tags,
                                          importance=importance, project=project, relations=relations))
        return {"path": doc.path, "etag": doc.etag}

    @tool(ADDITIVE)
    def link(src: NotePath,
             rel: Annotated[str, Field(description="supports, contradicts, leads_to, depends_on, related_to, etc.")],
             dst: NotePath) -> dict[str, Any]:
        """Add a typed relation src -> dst (in src's frontmatter): call when one memory supports, contradicts,
        depends on or leads to another."""
        doc = call(lambda cx: cx.link(src, rel, dst))
        return {"path": doc.path, "etag": doc.etag, "warnings": doc.warnings}


def empty_context(cx: Cortex) -> str:
    """What `context` says when memory holds nothing for it (no identity note, handoff or match): never nothing."""
    notes = cx.index.db.note_count()
    return (f"Memory holds no identity notes, handoff or open questions yet ({notes} note{'' if notes == 1 else 's'} "
            "indexed). Call `recall` with a question, or `context` with the task, for the memories of it.")
