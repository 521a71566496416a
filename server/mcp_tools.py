"""The MCP tools: the same facade calls as the HTTP routes, described so an agent knows when to call each."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, Protocol, TypeVar

import anyio.from_thread
import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from server.errors import index_trouble
from server.mcp_notes import note_tools
from server.plans import check_plan, saved_plan
from vault_cortex import __version__
from vault_cortex.cortex import Cortex
from vault_cortex.errors import VaultCortexError
from vault_cortex.files.activity import acting_as
from vault_cortex.index.progress import Indexing
from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_K, MAX_PATH_CHARS, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K
from vault_cortex.privacy import agent_text
from vault_cortex.recall import brief
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.request import RecallRequest
from vault_cortex.sleep.consolidate import DEFAULT_MODE, SleepMode
from vault_cortex.sleep.operations import plan_markdown

if TYPE_CHECKING:
    from server.watch import Watcher

T = TypeVar("T")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])
Register = Callable[[ToolAnnotations], Callable[[F], F]]
MCP_CLIENT = "mcp"  # the activity log's client for everything a tool does


class Call(Protocol):
    """Runs one facade call for a tool (`_call` bound to the server's cortex and watcher)."""

    def __call__(self, fn: Callable[[], T], /) -> T: ...


INSTRUCTIONS = """\
vault-cortex is your long-term memory: a markdown vault of notes (memories) linked into a graph.
- At the start of a task, call `context` (with the task and project) to load what you already know.
- Before answering from memory, or when the user refers to earlier work, call `recall`.
- After learning something worth keeping (a decision, a fix, a preference, a fact), call `remember`.
- When one memory supports, contradicts or leads to another, call `link`.
- Before a kind of task or a tool call, call `habits_for_context` and follow what it returns; after following
  a habit, call `reinforce_habit`.
- To read a note in full, call `read_note` (path or title); change it with `edit_note` (append, replace a
  section, find and replace, set a property), never by rewriting the file; `move_note` and `archive_note`
  keep links intact. `recent` lists what changed, was recalled or opened lately.
- For a question worth answering later, call `wonder`; once a memory answers it, call `explore`.
- To consolidate memory, call `sleep_plan`, show the plan, and call `sleep_apply` only once it is approved;
  `sleep_rollback` undoes the last sleep.
Every recalled item says why it was chosen; a score is a ranking, not proof of relevance."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                           open_world_hint=False)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)
REWRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                           open_world_hint=False)  # moves and edits notes (nothing deleted; reversible)

Query = Annotated[str, Field(description="What you want to remember: a question, topic or task, in words.",
                             min_length=1, max_length=MAX_QUERY_CHARS)]
K = Annotated[int | None, Field(description="How many notes at most (default: the vault's recall.k).",
                                ge=MIN_K, le=MAX_K)]
Mode = Annotated[str | None, Field(description="Ranking mode: balanced (default), focus, explore, identity, "
                                               "recent, or one the vault configures.")]
Budget = Annotated[int | None, Field(description="Token budget of the returned text (default: the vault's).",
                                     ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS)]
NotePath = Annotated[str, Field(description="A note: its vault path, e.g. 'scientific/SQLite WAL mode.md', or its "
                                            "name as a [[link]] resolves, e.g. 'SQLite WAL mode'.",
                                min_length=1, max_length=MAX_PATH_CHARS)]
Text = Annotated[str | None, Field(description="What you are doing or about to do, in words: the task, the "
                                               "prompt, a note's text.", max_length=MAX_QUERY_CHARS)]
Tags = Annotated[list[str] | None, Field(description="Only notes carrying every one of these tags; nested as in "
                                                     "Obsidian: 'hardware' also matches 'hardware/esp32'.")]
Regions = Annotated[list[str] | None, Field(description="Only these regions (cortices), e.g. ['scientific'].")]
When = Annotated[str | None, Field(description="An ISO date (2026-11-01), a date-time, or an age: '7d', '12h', "
                                               "'2w'.", max_length=40)]
PathPrefix = Annotated[str | None, Field(description="Only notes under this folder/path prefix, e.g. "
                                                     "'scientific/' or 'projects/greenhouse'.",
                                         max_length=MAX_PATH_CHARS)]
Captures = Annotated[str | None, Field(description="Captured sessions (`layer: raw`: what was said in a session, "
                                                   "not what is true): 'exclude' (default) leaves them out, "
                                                   "'include' keeps them, 'only' returns nothing else.",
                                       max_length=16)]


def _builtins(value: Any) -> dict[str, Any]:
    out = msgspec.to_builtins(value)
    return out if isinstance(out, dict) else {"result": out}


def _call(fn: Callable[[], T], cx: Cortex, watcher: Watcher | None) -> T:
    """Run a facade call (in a worker thread), turning our errors into tool errors the agent can read and act
    on; a damaged or lost index is answered as over HTTP (being rebuilt: retry) and its rebuild started."""
    try:
        return fn()
    except Exception as exc:
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
        if isinstance(result, str):
            return indexing_line(now) + result  # type: ignore[return-value]
        return result
    return answer


def recall_text(cx: Cortex, request: RecallRequest) -> str:
    """A recall in the one text form (recall/brief.py): when no memory reaches the push gate's floor, one line
    saying so; else each hit's path, why in words and the passage that bears."""
    gate = cx.push_gate()
    probe = msgspec.structs.replace(request, k=1, gate=True, budget_tokens=None)
    best = cx.recall(probe, push=msgspec.structs.replace(gate, threshold=0.0, floor=0.0, most=1),
                     log_activity=False).hits
    if not best or (best[0].push_probability or 0.0) < gate.floor:
        return brief.nothing(best[0].path, best[0].push_probability or 0.0) if best else "The vault holds no notes."
    hits = cx.recall(request).hits
    return brief.items(brief.item(h.path, brief.in_words(h.reason), brief.passage(h.snippet, request.query,
                                                                          brief.RECALL_PASSAGE_CHARS))
                       for h in hits)


def build_mcp(cx: Cortex, *, watcher: Watcher | None = None) -> MCPServer:
    """An MCP server whose tools call `cx` in-process (one per app: its session manager runs once); `watcher`
    is asked to sync when a tool finds the index damaged or gone. Every tool's answer says how far indexing is
    while the index is being built (`reporting`), and everything a tool logs is the MCP client's: `tool` binds
    it around each tool (`acting_as`), so no tool can forget it."""
    mcp: MCPServer = MCPServer(name="vault-cortex", version=__version__, instructions=INSTRUCTIONS,
                               log_level="WARNING")

    def call(fn: Callable[[], T]) -> T:
        return _call(fn, cx, watcher)

    def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            mcp.tool(annotations=annotations)(reporting(acting_as(MCP_CLIENT)(fn), lambda: cx.indexing))
            return fn
        return register

    @tool(READ_ONLY)
    def recall(query: Query, k: K = None, mode: Mode = None, budget_tokens: Budget = None,
               regions: Regions = None,
               include_archive: Annotated[bool, Field(description="Also search archived notes.")] = False,
               tags: Tags = None,
               project: Annotated[str | None, Field(description="Only notes of this project.")] = None,
               created_after: When = None, created_before: When = None,
               modified_after: Annotated[str | None, Field(description="Only notes whose file changed since this "
                                                                       "date or age ('7d').", max_length=40)] = None,
               path_prefix: PathPrefix = None, captures: Captures = None,
               format: Annotated[Literal["text", "json"], Field(  # noqa: A002 - the tool's parameter name
                   description="text (default): each hit's path, why in words and the passage that bears; "
                               "json: every field (scores, signals, snippet).")] = "text",
               ) -> str | dict[str, Any]:
        """Search long-term memory. Call this BEFORE answering from memory, when the user mentions earlier
        work, a person, a project or a decision, or when you are unsure what was decided. Returns notes best
        first, each as its path (for read_note), why in words and the passage that bears (format='json': every
        field); when nothing in the vault bears on the query it says so, so ask again in other words. Narrow it
        with tags, regions, project, created/modified dates or a path prefix when you know where to look:
        the filters apply inside the search, so you still get k notes when k match. Captured sessions (what
        was said, including your own earlier claims) are left out: pass captures='only' to ask what was said
        in earlier sessions, and read them as a record of talk, not as evidence."""
        request = RecallRequest(query=query, k=k, mode=mode, budget_tokens=budget_tokens, regions=regions,
                                include_archive=include_archive, tags=tags, project=project,
                                created_after=created_after, created_before=created_before,
                                modified_after=modified_after, path_prefix=path_prefix, captures=captures)
        if format == "json":
            return _builtins(call(lambda: cx.recall(request)))
        return call(lambda: recall_text(cx, request))

    @tool(READ_ONLY)
    def context(task: Annotated[str | None, Field(description="The task you are starting, in a sentence.")] = None,
                project: Annotated[str | None, Field(description="The project's name, if any.")] = None,
                active_note: Annotated[str | None, Field(description="Path of the note being worked on.")] = None,
                recent: Annotated[list[str] | None, Field(description="Paths of notes used recently.")] = None,
                budget_tokens: Budget = None, mode: Mode = None, tags: Tags = None, regions: Regions = None,
                created_after: When = None, created_before: When = None,
                modified_after: Annotated[str | None, Field(description="Only notes whose file changed since this "
                                                                        "date or age ('7d').", max_length=40)] = None,
                path_prefix: PathPrefix = None, captures: Captures = None) -> str:
        """Load what memory holds for a task. Call this ONCE AT THE START of a task or session: it returns a
        short text with the identity notes and the last handoff, then the memories, habits and open questions
        that bear on the project and task (none when nothing does), each as its path, why and passage. The
        filters (tags, regions, dates, path prefix) narrow only the recalled memories, not the pinned notes,
        habits, questions or handoff."""
        filters = call(lambda: Filters.build(tags=tags, regions=regions, created_after=created_after,
                                             created_before=created_before, modified_after=modified_after,
                                             path_prefix=path_prefix, captures=captures))
        result = call(lambda: cx.context(task=task, project=project, active_note=active_note, recent=recent,
                                         budget_tokens=budget_tokens, mode=mode, filters=filters))
        return result.markdown

    @tool(READ_ONLY)
    def related(path: NotePath, k: K = None, mode: Mode = None, captures: Captures = None) -> dict[str, Any]:
        """Memories related to one note, found from its content; the note itself, the notes it already
        links and captured sessions are left out. Call this when working on a note to find what it should
        connect to."""
        return _builtins(call(lambda: cx.related(path, k=k, mode=mode, captures=captures)))

    @tool(ADDITIVE)
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
        doc = call(lambda: cx.remember(agent_text(text), title=agent_text(title), region=region, tags=tags,
                                       importance=importance, project=project, relations=relations))
        return {"path": doc.path, "etag": doc.etag}

    @tool(ADDITIVE)
    def link(src: NotePath,
             rel: Annotated[str, Field(description="Relation type: supports, contradicts, leads_to, reminds_of, "
                                                   "derived_from, example_of, related_to, evokes, depends_on, or "
                                                   "one the vault configures.")],
             dst: NotePath) -> dict[str, Any]:
        """Record a typed relation from one note to another (written into the source note's frontmatter).
        Call this when you notice that one memory supports, contradicts, depends on or leads to another."""
        doc = call(lambda: cx.link(src, rel, dst))
        return {"path": doc.path, "etag": doc.etag, "warnings": doc.warnings}

    @tool(READ_ONLY)
    def graph_health() -> dict[str, Any]:
        """How well the memory graph is wired: hubs, islands (unlinked notes), bridges and dangling links.
        Call this when asked to tidy or review the vault, or before suggesting links to add."""
        return _builtins(call(cx.graph_health))

    _memory_tools(tool, cx, call)
    note_tools(tool, cx, call)
    _sleep_tools(tool, cx, call)
    return mcp


def _memory_tools(tool: Register[Any], cx: Cortex, call: Call) -> None:
    """Habits, resonance and curiosity."""

    @tool(READ_ONLY)
    def habits_for_context(
        text: Text = None,
        tool: Annotated[str | None, Field(description="A tool call you are about to make, e.g. 'Bash(pytest -q)', "
                                                      "'Edit' or 'mcp__github__create_pr'.", max_length=2000)] = None,
    ) -> dict[str, Any]:
        """The user's habits (how they want things done) that apply to what you are about to do. Call this
        BEFORE starting a kind of task (fixing a bug, downloading, writing, committing) or a tool call, and
        follow what it returns; afterwards call `reinforce_habit` for each habit you followed. Give text,
        tool or both; `markdown` is the habits ready to read."""
        return _builtins(call(lambda: cx.habits_for_context(text or "", tool=tool)))

    @tool(ADDITIVE)
    def reinforce_habit(
        path: Annotated[str, Field(description="The habit: its path as `habits_for_context` returned it, e.g. "
                                               "'habits/Write the test first.md', or its name.",
                                   min_length=1, max_length=MAX_PATH_CHARS)],
        context: Annotated[str | None, Field(description="What you followed it for, in a sentence.",
                                             max_length=MAX_QUERY_CHARS)] = None,
    ) -> dict[str, Any]:
        """Record that you FOLLOWED a habit: raises its weight so it ranks higher next time (unused habits
        decay back toward their baseline). Call it once per habit per task, after acting on it."""
        return _builtins(call(lambda: cx.reinforce(path, context=agent_text(context))))

    @tool(ADDITIVE)
    def resonate(
        concept: Annotated[str, Field(description="The concept's name or alias, e.g. 'craftsmanship', or its "
                                                  "path in resonance/.", min_length=1, max_length=300)],
        by: Annotated[str | None, Field(description="Path of the note that engaged the concept, if any.",
                                        max_length=MAX_PATH_CHARS)] = None,
    ) -> dict[str, Any]:
        """Touch a resonance concept (what matters to the user: identity, relationships, taste, themes; the
        notes in resonance/): raises its weight, which warm recall modes use. Call it when the work or the
        conversation genuinely engages one of these concepts, not to flatter."""
        return _builtins(call(lambda: cx.touch(concept, by=by)))

    @tool(READ_ONLY)
    def resonance_report(
        days: Annotated[int | None, Field(description="The window in days (default: the vault's "
                                                      "resonance.report_days).", ge=1, le=36500)] = None,
    ) -> dict[str, Any]:
        """What the user says matters (each concept's baseline) beside what they actually engaged with lately
        (touches, mentions in recent notes). Call it when asked to reflect, review priorities or say what
        they have been focused on."""
        return _builtins(call(lambda: cx.resonance_report(days=days)))

    @tool(IDEMPOTENT)
    def wonder(
        question: Annotated[str, Field(description="The open question, as a question.", min_length=1,
                                       max_length=300)],
        context: Annotated[str | None, Field(description="Why it came up and what is known so far.",
                                             max_length=MAX_QUERY_CHARS)] = None,
    ) -> dict[str, Any]:
        """Save an OPEN QUESTION worth answering later (a note in curiosities/). Call it when you or the user
        hit something unresolved that is not for now. Asking again returns the existing question; open
        questions come back at session start when they match the task."""
        return _builtins(call(lambda: cx.wonder(agent_text(question), context=agent_text(context))))

    @tool(READ_ONLY)
    def list_curiosities(
        text: Annotated[str | None, Field(description="Only questions relevant to this text, best first.",
                                          max_length=MAX_QUERY_CHARS)] = None,
    ) -> dict[str, Any]:
        """The open questions saved with `wonder`, newest first; with text, those relevant to it. Call it when
        starting on a topic (what is still unanswered about it?) or when looking for something to explore."""
        return _builtins(call(lambda: cx.list_curiosities(text)))

    @tool(ADDITIVE)
    def explore(
        path: Annotated[str, Field(description="The question: its path, e.g. 'curiosities/Why does X happen.md', "
                                               "or its name.",
                                   min_length=1, max_length=MAX_PATH_CHARS)],
        answer_path: NotePath,
    ) -> dict[str, Any]:
        """Close an open question with the memory that answers it, linked both ways. Call it once the answer
        is in memory: `remember` the answer first if it is new, then pass the question's and the answer's paths."""
        return _builtins(call(lambda: cx.explore(path, answer_path)))


def _sleep_tools(tool: Register[Any], cx: Cortex, call: Call) -> None:
    """Consolidation: a plan to review, then exactly that plan applied."""

    @tool(READ_ONLY)
    def sleep_plan(
        mode: Annotated[SleepMode, Field(description="full: merge, promote, link, decay, prune to archive/ and "
                                                "summarise; light: only promote short-term notes and add links; "
                                                "save: only the handoff.")] = DEFAULT_MODE,
    ) -> dict[str, Any]:
        """Plan a consolidation ("sleep") of memory WITHOUT changing any note: every merge, promotion, new
        link, decay and move to archive/, with its reason, as markdown. Call it at the end of a long session
        or when asked to tidy or consolidate memory; show the plan to the user and call `sleep_apply` with its
        `id` only if they approve."""
        plan = call(lambda: cx.sleep_plan(mode))
        return {"id": plan.id, "mode": plan.mode, "operations": len(plan.ops), "saved": bool(plan.ops),
                "markdown": plan_markdown(plan)}

    @tool(REWRITES)
    def sleep_apply(
        plan_id: Annotated[str, Field(description="The `id` that `sleep_plan` returned.", pattern=r"^\d{8}T\d{6}Z$")],
        commit: Annotated[bool, Field(description="Commit the changes when the vault is a git repository.")] = False,
    ) -> dict[str, Any]:
        """Apply a plan `sleep_plan` made, exactly as planned: notes are edited or moved, never deleted, and
        every step is journalled (`sleep_rollback` undoes it). Call it only after the plan was reviewed and
        approved. Files edited since planning are skipped and listed in `skipped`."""
        return _builtins(call(lambda: cx.sleep_apply(check_plan(cx, saved_plan(cx, plan_id)), commit=commit)))

    @tool(REWRITES)
    def sleep_rollback() -> dict[str, Any]:
        """Undo the last sleep that was applied (or interrupted): every step it took is reversed from its journal
        and backups, in reverse order; a note edited since is kept as it is and listed in `skipped`. Call it
        when the user asks to undo a consolidation, or when a sleep just applied went wrong."""
        return _builtins(call(cx.sleep_rollback))
