"""The HTTP routes under /v1: thin handlers over the facade (sync calls run in a worker thread)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import msgspec
from litestar import Response, get, post, put
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter
from msgspec import Meta

from server.auth import PUBLIC
from server.hooks import HOOK_EVENTS, run_hook
from server.nightly import Nightly, NightlyStatus
from server.watch import Watcher, WatchStatus
from vault_cortex import __version__
from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.vault import NoteDoc
from vault_cortex.files.walk import Skipped
from vault_cortex.identity.context import Context
from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_K, MAX_PATH_CHARS, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.health import GraphHealth
from vault_cortex.recall.request import Budget, FilterFields, RecallRequest
from vault_cortex.recall.scored import Recall

CortexDep = NamedDependency[Cortex]
WatcherDep = NamedDependency[Watcher | None]
NightlyDep = NamedDependency[Nightly | None]
NotePath = Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS)]
PathQuery = Annotated[str, QueryParameter(min_length=1, max_length=MAX_PATH_CHARS,
                                          description="Vault-relative path of a note, e.g. soul/Values.md")]
Captures = Annotated[str | None, QueryParameter(
    description="Captured sessions (notes of `layer: raw`, what was said): exclude (the default) leaves them out, "
                "include keeps them, only returns nothing else.")]


class ContextBody(FilterFields, frozen=True, kw_only=True, forbid_unknown_fields=True):
    task: Annotated[str, Meta(max_length=MAX_QUERY_CHARS)] | None = None
    project: str | None = None  # also the project the context is about (not a filter here)
    active_note: NotePath | None = None
    recent: list[NotePath] | None = None
    budget_tokens: Budget | None = None
    mode: str | None = None
    regions: list[str] | None = None


class RememberBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: Annotated[str, Meta(min_length=1)]
    title: str | None = None
    region: str | None = None
    tags: list[str] | None = None
    importance: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    project: str | None = None
    relations: dict[str, list[str]] | None = None


class NoteBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    content: str


class LinkBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    src: NotePath
    rel: Annotated[str, Meta(min_length=1, max_length=64)]
    dst: NotePath


class Health(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    version: str


class Status(msgspec.Struct, frozen=True, kw_only=True):
    """The index (counts, model, last sync), the watcher (index lag), the files the index left out, the vault's
    regions and modes, and the nightly sleep."""

    index: dict[str, Any]
    watch: WatchStatus | None
    skipped: list[Skipped]
    # Always sent; optional in the schema so that a newer plugin still reads an older server's status.
    regions: list[str] = msgspec.field(default_factory=list)  # the configured region order, for grouping
    modes: list[str] = msgspec.field(default_factory=list)  # the ranking modes the vault knows, sorted
    nightly: NightlyStatus | None = None  # None when this server runs no nightly schedule


def etag_header(doc: NoteDoc) -> dict[str, str]:
    return {"ETag": f'"{doc.etag}"'}


def parse_if_match(value: str | None) -> str | None:
    """The ETag in an If-Match header (None when absent); `*` is refused: send the ETag you read."""
    if value is None:
        return None
    value = value.strip()
    if value == "*" or "," in value:
        raise InvalidRequest("If-Match must be the one ETag returned when the note was read, not '*' or a list")
    if value.startswith("W/"):
        raise InvalidRequest("If-Match needs the strong ETag returned when the note was read")
    return value.strip('"')


@get("/health", opt={PUBLIC: True}, sync_to_thread=False)
def health() -> Health:
    """Liveness, without a token: the hooks use it to find a running server."""
    return Health(ok=True, version=__version__)


@get("/status", sync_to_thread=True)
def status(cx: CortexDep, watcher: WatcherDep, nightly: NightlyDep) -> Status:
    """Counts, model, last sync, index lag, the files the index skipped (with why), the region order, the
    modes and the nightly sleep."""
    return Status(index=cx.status(), watch=watcher.status() if watcher else None, skipped=cx.db.skipped(),
                  regions=list(cx.settings.regions.order), modes=sorted(cx.settings.modes),
                  nightly=nightly.status() if nightly else None)


@get("/recall", sync_to_thread=True)
def recall_get(
    cx: CortexDep,
    q: Annotated[str, QueryParameter(min_length=1, max_length=MAX_QUERY_CHARS, description="The query.")],
    k: Annotated[int | None, QueryParameter(ge=MIN_K, le=MAX_K)] = None,
    mode: FromQuery[str | None] = None,
    budget_tokens: Annotated[int | None, QueryParameter(ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS)] = None,
    regions: FromQuery[list[str] | None] = None,
    include_archive: FromQuery[bool] = False,
    tags: Annotated[list[str] | None, QueryParameter(
        description="Only notes with every tag given; nested: `a` matches `a/b`.")] = None,
    project: Annotated[str | None, QueryParameter(description="Only notes of this project.")] = None,
    created_after: Annotated[str | None, QueryParameter(
        description="Only notes created since: an ISO date or an age (7d, 12h, 2w).")] = None,
    created_before: Annotated[str | None, QueryParameter(description="Only notes created before.")] = None,
    modified_after: Annotated[str | None, QueryParameter(description="Only files changed since.")] = None,
    path_prefix: Annotated[str | None, QueryParameter(description="Only notes under this path.")] = None,
    captures: Captures = None,
    gate: Annotated[bool, QueryParameter(description="Only the hits the push gate passes (none when nothing is "
                                         "close enough to push unasked), each with push_probability.")] = False,
) -> Recall:
    """Notes that answer a query, best first, each with the reason it was chosen; filters apply inside the
    search, so k results come back whenever k notes match."""
    return cx.recall(RecallRequest(query=q, k=k, mode=mode, budget_tokens=budget_tokens, regions=regions,
                                   include_archive=include_archive, gate=gate, tags=tags, project=project,
                                   created_after=created_after, created_before=created_before,
                                   modified_after=modified_after, path_prefix=path_prefix, captures=captures))


@post("/recall", status_code=200, sync_to_thread=True)
def recall_post(cx: CortexDep, data: JSONBody[RecallRequest]) -> Recall:
    """The same as GET /v1/recall, for long queries and lists in a JSON body."""
    return cx.recall(data)


@post("/context", status_code=200, sync_to_thread=True)
def context(cx: CortexDep, data: JSONBody[ContextBody]) -> Context:
    """A token-budgeted context block for a task (markdown plus the items, grouped by region); the filters
    (tags, regions, dates, path prefix) narrow its recall part. `project` names the task's project."""
    filters = Filters.build(tags=data.tags, regions=data.regions, created_after=data.created_after,
                            created_before=data.created_before, modified_after=data.modified_after,
                            path_prefix=data.path_prefix, captures=data.captures)
    return cx.context(task=data.task, project=data.project, active_note=data.active_note, recent=data.recent,
                      budget_tokens=data.budget_tokens, mode=data.mode, filters=filters)


@get("/related", sync_to_thread=True)
def related(
    cx: CortexDep,
    path: PathQuery,
    k: Annotated[int | None, QueryParameter(ge=MIN_K, le=MAX_K)] = None,
    mode: FromQuery[str | None] = None,
    captures: Captures = None,
) -> Recall:
    """Memories related to a note, from its content, leaving out the note, the notes it already links and the
    captures (unless `captures` asks for them)."""
    return cx.related(path, k=k, mode=mode, captures=captures)


@get("/notes", sync_to_thread=True)
def read_note(
    cx: CortexDep,
    path: Annotated[str | None, QueryParameter(min_length=1, max_length=MAX_PATH_CHARS,
                                               description="Vault-relative path of a note, e.g. soul/Values.md")]
    = None,
    name: Annotated[str | None, QueryParameter(min_length=1, max_length=MAX_PATH_CHARS,
                                               description="Or a note's name, resolved as Obsidian resolves a "
                                                           "link: Values, [[Folder/Values]]")] = None,
) -> Response[NoteDoc]:
    """A note's text, by `path` or by `name` (resolved as Obsidian resolves a link), with its ETag (also in the
    ETag header) for a later PUT or edit with If-Match. Logged as an open."""
    if (path is None) == (name is None):
        raise InvalidRequest("give either path (a vault path) or name (a note's name), not both or neither")
    # a path is a path, never resolved as a name
    doc = cx.open_note(path or name or "", exact=path is not None)
    return Response(doc, headers=etag_header(doc))


@put("/notes", sync_to_thread=True)
def write_note(
    cx: CortexDep,
    path: PathQuery,
    data: JSONBody[NoteBody],
    if_match: Annotated[str | None, HeaderParameter(name="If-Match")] = None,
) -> Response[NoteDoc]:
    """Replace a note whose ETag still matches If-Match (409 if it changed); without If-Match, create it
    (201; 409 if it exists). Never overwrites what the caller has not seen."""
    expected = parse_if_match(if_match)
    doc = cx.write_note(path, data.content, expected)
    return Response(doc, status_code=201 if expected is None else 200, headers=etag_header(doc))


@post("/notes", status_code=201, sync_to_thread=True)
def remember(cx: CortexDep, data: JSONBody[RememberBody]) -> Response[NoteDoc]:
    """Save a new memory as a note (path chosen from the title and region); 201 with its ETag and Location."""
    doc = cx.remember(data.text, title=data.title, region=data.region, tags=data.tags, importance=data.importance,
                      project=data.project, relations=data.relations)
    return Response(doc, status_code=201,
                    headers={**etag_header(doc), "Location": f"/v1/notes?path={quote(doc.path, safe='/')}"})


@post("/links", status_code=200, sync_to_thread=True)
def link(cx: CortexDep, data: JSONBody[LinkBody]) -> Response[NoteDoc]:
    """Add a typed relation from one note to another (a minimal edit of the source note's frontmatter)."""
    doc = cx.link(data.src, data.rel, data.dst)
    return Response(doc, headers=etag_header(doc))


@get("/graph/health", sync_to_thread=True)
def graph_health(cx: CortexDep) -> GraphHealth:
    """Hubs, islands, bridges, articulation points and dangling links of the note graph."""
    return cx.graph_health()


@post("/hooks/{event:str}", status_code=200, sync_to_thread=True)
def hook(cx: CortexDep, event: FromPath[str], data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
    """Claude Code hook I/O: the hook's input object in, its output object out (`{}` = nothing to add).
    `event` is one of server.hooks.HOOK_EVENTS; `vault-cortex hook EVENT` posts here when the server runs."""
    if event not in HOOK_EVENTS:
        raise NotFoundException(f"no hook {event!r}; hooks: {', '.join(HOOK_EVENTS)}")
    return run_hook(lambda: cx, event, data)


HANDLERS = [health, status, recall_get, recall_post, context, related, read_note, write_note, remember, link,
            graph_health, hook]
