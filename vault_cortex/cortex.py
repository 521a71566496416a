"""The facade: one `Cortex` per vault, which every adapter (CLI, HTTP, MCP, hooks) calls in-process."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType

import msgspec

from vault_cortex import clock, notes
from vault_cortex.config import Settings, load_settings
from vault_cortex.errors import (
    InvalidRequest,
    VaultNotFound,
)
from vault_cortex.files.activity import OpenEvent, current_client, read_since
from vault_cortex.files.activity_files import pending_lines
from vault_cortex.files.sections import EditOp
from vault_cortex.files.vault import NoteDoc
from vault_cortex.identity import curiosity, habits, resonance
from vault_cortex.identity.context import Context, build_context
from vault_cortex.importers import imports, transcript
from vault_cortex.index import doctor
from vault_cortex.index import recent as recent_activity
from vault_cortex.index.db import IndexDB
from vault_cortex.index.doctor import Doctor, Verify
from vault_cortex.index.embed import Embedder
from vault_cortex.index.location import index_location
from vault_cortex.index.sync import Indexing, Progress, SyncReport
from vault_cortex.index.upkeep import Index
from vault_cortex.index.vectors import EmbeddingCache, Vectors
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.gate import PushGate
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import GraphHealth
from vault_cortex.recall.model import RankingModel, load_model
from vault_cortex.recall.recaller import Recaller
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import Recall
from vault_cortex.sleep import cycle as sleep
from vault_cortex.store.change import Vault

log = logging.getLogger(__name__)
_now = clock.now  # the default clock (the name `clock` is the constructor's argument, below)


class Cortex:
    """A vault and its derived index: the composition root every adapter calls.

    It composes the services and is their adapter-facing API: `index` (index/upkeep.py: the database, vectors,
    embedding cache, model, locks, sync), `vault` (store/change.py: reading notes and the one write path), and
    the features below, each given what it uses."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 index_dir: Path | None = None, cache: EmbeddingCache | None = None, *,
                 read_only: bool = False, model: RankingModel | None = None,
                 clock: Callable[[], datetime] = _now) -> None:
        """Build the parts in order, each given what it uses: the index, the one write path over it, recall over
        both. `settings` and `clock` are fixed for the Cortex's life (a test builds the Cortex it needs)."""
        self.root = root
        self._settings = settings
        self._clock = clock
        self.read_only = read_only  # a read-only vault: searched, never written (writes raise VaultReadOnly)
        # the ranking model (recall/model.py; the shipped one unless given), read and checked here: a damaged file
        # stops the vault opening rather than a request
        self.model: RankingModel = model or load_model()
        self.index = Index(root, settings, embedder, index_dir, cache)
        self.vault = Vault(root, settings, self.index, clock, read_only=read_only)
        self.recaller = Recaller(self.index, settings, clock=clock, log=self.vault.log,
                                 concept_folder=resonance.RESONANCE_DIR, model=self.model)

    @property
    def settings(self) -> Settings:
        """The vault's settings, read once when it was opened."""
        return self._settings

    # -- the index, as adapters use it ----------------------------------------------------------------
    @property
    def db(self) -> IndexDB:
        return self.index.db

    @property
    def vectors(self) -> Vectors:
        return self.index.vectors

    @property
    def embedder(self) -> Embedder:
        return self.index.embedder

    @property
    def indexing(self) -> Indexing | None:
        return self.index.indexing

    def sync(self, progress: Progress | None = None, *, contents: bool = False, fill: bool = True) -> SyncReport:
        """Re-index what changed since the last sync; never writes a note. `contents`: hash every file too.
        `fill` False: notes are written words first and the vectors left to `fill_vectors` (the server)."""
        return self.index.sync(progress, contents=contents, fill=fill)

    def fill_vectors(self, progress: Progress | None = None, pause: Callable[[], bool] | None = None) -> int:
        """Give the chunks without a vector theirs (see `Index.fill_vectors`); how many still lack one."""
        return self.index.fill_vectors(progress, pause)

    def sync_paths(self, paths: Sequence[str]) -> SyncReport:
        """Re-index just these vault paths: the cost follows the change."""
        return self.index.sync_paths(paths)

    def status(self) -> dict[str, object]:
        return self.index.status()

    def close(self) -> None:
        self.index.close()

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
             embedder: Embedder | None = None, index_dir: Path | None = None,
             model: RankingModel | None = None, settings: Settings | None = None,
             clock: Callable[[], datetime] = _now) -> Cortex:
        """Open a vault (a folder holding `.cortex/`; its config.toml is optional) and its index: in the vault,
        or in `index_dir` / $VAULT_CORTEX_INDEX_DIR, or for a read-only vault in the user cache (said in one
        warning line). `settings`: these instead of the vault's config.toml and environment; `clock`: what
        every part reads the time from."""
        root = Path(path).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"no vault at {root}: run `vault-cortex init {root}` to create one")
        if not (root / ".cortex").is_dir():
            raise VaultNotFound(
                f"{root} is not a vault (it has no .cortex/ folder): `vault-cortex init {root}` adopts a folder of "
                "notes such as an Obsidian vault (it adds .cortex/ and writes no note)")
        env = os.environ if env is None else env
        where = index_location(root.resolve(), index_dir, env)
        if where.notice:  # a read-only vault is said on every command; an index kept elsewhere by choice, quietly
            log.log(logging.WARNING if where.read_only else logging.INFO, "%s", where.notice)
        return cls(root.resolve(), load_settings(root, env) if settings is None else settings, embedder, where.path,
                   read_only=where.read_only, model=model, clock=clock)

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- recall --------------------------------------------------------------------------------------
    def recall(self, request: RecallRequest, *, exclude: frozenset[str] = frozenset(),
               shown: frozenset[str] = frozenset(), push: PushGate | None = None, log_activity: bool = True) -> Recall:
        """Notes for a request (`RecallRequest`: query, k, mode, budget, regions, filters, gate), ranked by the
        mode's signals; with a budget, also the packed context.

        The filters (tags, regions, project, dates, path prefix, captures) are applied inside the candidate
        search, so k results come back whenever k notes match; without filters, the captures are left out. With
        `gate`, only the hits the push gate passes, each with its `push_probability`: each at or above
        `push.floor` on its own, and none at all unless one not in `shown` (the paths an agent session was shown
        already, left out) reaches `push.threshold`. Empty means nothing is close enough to push unasked. `push`
        judges with other gate settings than the vault's (the second look's own threshold). `exclude`: paths
        never returned (a session's own captures, for its hooks). Logged as the client the adapter bound
        (`activity.acting_as`) unless not `log_activity`.
        """
        return self.recaller.recall(request, exclude=exclude, shown=shown, push=push, log_activity=log_activity)

    def push_gate(self) -> PushGate:
        """The push gate as recall applies it: the vault's `[push]` settings and the ranking model's coefficients."""
        return self.recaller.push_gate()

    def related(self, path: str, *, k: int | None = None, mode: str | None = None,
                captures: str | None = None) -> Recall:
        """Notes related to a note (a path or a name) by its content, leaving out itself and the notes it already
        links to, and the captures unless `captures` is `include` or `only` (`Filters.captures`)."""
        return self.recaller.related(self.resolve(path), k=k, mode=mode, captures=captures)

    def context(self, *, task: str | None = None, project: str | None = None, active_note: str | None = None,
                recent: list[str] | None = None, budget_tokens: int | None = None, mode: str | None = None,
                filters: Filters | None = None, exclude: frozenset[str] = frozenset()) -> Context:
        """Session-start context: pinned notes, habits and open questions that match, the handoff, then recall
        (the recall part narrowed by filters, if any, and never returning the `exclude` paths)."""
        ctx = build_context(self.recaller, self.vault, task=task, project=project, active_note=active_note,
                            recent=recent, budget_tokens=budget_tokens, mode=mode, filters=filters, exclude=exclude)
        return msgspec.structs.replace(ctx, indexing=self.indexing) if self.indexing else ctx

    # -- writes ---------------------------------------------------------------------------------------
    def remember(self, text: str, *, title: str | None = None, region: str | None = None,
                 tags: list[str] | None = None, importance: float | None = None, project: str | None = None,
                 relations: dict[str, list[str]] | None = None) -> NoteDoc:
        """Write a new memory note (atomically, never over an existing file) and index it at once."""
        return notes.remember(self.vault, text, title=title, region=region, tags=tags, importance=importance,
                              project=project, relations=relations)

    def link(self, src: str, rel: str, dst: str) -> NoteDoc:
        """Add a typed relation `rel` from note src to dst (each a path or a name), as one minimal frontmatter
        change."""
        return notes.link(self.vault, self.resolve(src), rel, dst)

    def graph(self) -> Graph:
        """The note graph (links, relations, projects, co-retrieval), updated in place for what changed."""
        return self.recaller.graph()

    def graph_health(self) -> GraphHealth:
        """Hubs, islands, bridges, articulation points and dangling links of the vault's link graph."""
        return self.recaller.graph_health()

    def flush_activity(self) -> list[str]:
        """Move what reads logged (pending, machine-local) into the versioned activity log; the files written."""
        return self.vault.flush_activity()

    def pending_activity(self) -> int:
        """How many logged events wait to be flushed into the versioned activity log."""
        return pending_lines(self.root)

    # -- notes ---------------------------------------------------------------------------------------
    def write_note(self, path: str, content: str, if_match: str | None) -> NoteDoc:
        """Create (if_match None: the note must not exist) or replace a note whose ETag still matches."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest("the note's text is not valid Unicode (it holds a lone surrogate)") from None
        return notes.write(self.vault, path, data, if_match)

    def resolve(self, name: str) -> str:
        """A note's path from its path or a link target (`Title`, `[[Folder/Title]]`), as Obsidian resolves it."""
        return notes.resolve(self.vault, name)

    def open_note(self, name: str, *, exact: bool = False) -> NoteDoc:
        """Read a note named by path or title (exact: by its vault path only), with its ETag, and log the open."""
        doc = self.vault.read_note(name if exact else self.resolve(name))
        self.vault.log(OpenEvent(ts=self._clock(), client=current_client(), path=doc.path))
        return doc

    def edit_note(self, name: str, op: EditOp, *, etag: str | None = None) -> notes.Edited:
        """One minimal edit (append, prepend, replace_section, find_replace, set_property), atomic, logged;
        refused when `etag` is given and the note changed since."""
        return notes.edit(self.vault, self.resolve(name), op, etag=etag)

    def move_note(self, name: str, dest: str, *, etag: str | None = None) -> notes.Moved:
        """Move a note; links that would no longer reach it are rewritten (minimal edits, reported)."""
        return notes.move(self.vault, self.resolve(name), dest, etag=etag)

    def archive_note(self, name: str, *, etag: str | None = None) -> notes.Moved:
        """Move a note to archive/ (never deleted; recall finds it with include_archive)."""
        return notes.archive(self.vault, self.resolve(name), etag=etag)

    def recent(self, *, days: int = 7, kinds: Sequence[str] | None = None) -> recent_activity.Recent:
        """Notes created, changed, recalled and opened over the last days, grouped by day, newest first."""
        days, chosen = recent_activity.check(days, kinds)
        now = self._clock()
        events = read_since(self.root, now - timedelta(days=days)) if set(chosen) - {"created"} else []
        return recent_activity.recent(self.index.db.all_notes(), events, now=now, days=days, kinds=chosen)

    # -- health --------------------------------------------------------------------------------------
    def doctor(self) -> Doctor:
        """Parse problems, skipped files, dangling and ambiguous links, and index/file drift."""
        self.index.check_index()
        return doctor.doctor(self.index)

    def verify(self, progress: Progress | None = None) -> Verify:
        """Rebuild the index into a temporary folder and compare it with the live one."""
        self.index.check_index()
        return doctor.verify(self.index, progress)

    # -- habits, resonance, curiosity (issue 6) --
    def habits_for_context(self, text: str, *, tool: str | None = None,
                           tool_input: Mapping[str, object] | None = None) -> habits.Habits:
        """Habits matching a context or tool call (trigger, meaning, tool pattern), strongest first, capped."""
        return habits.habits_for_context(self.recaller, self.vault, text, tool=tool, tool_input=tool_input)

    def reinforce(self, path: str, *, context: str | None = None) -> resonance.WeightChange:
        """A habit was followed: raise its weight by one line and log it."""
        return habits.reinforce(self.vault, self.resolve(path), context=context)

    def touch(self, concept: str, *, by: str | None = None) -> resonance.WeightChange:
        """Raise a resonance concept's weight by one line and log the touch."""
        return resonance.touch(self.vault, concept, by=by)

    def decay_resonance(self, *, dry_run: bool = True) -> resonance.DecayPlan:
        """Preview (or apply) resonance weights decaying toward their baselines."""
        return resonance.decay(self.vault, dry_run=dry_run)

    def resonance_report(self, *, days: int | None = None) -> resonance.ResonanceReport:
        """Claimed (baseline) vs actual use (touches, mentions) of each concept over the last days."""
        return resonance.report(self.vault, days)

    def wonder(self, question: str, *, context: str | None = None) -> curiosity.Curiosity:
        """Create an open question in curiosities/ (asking again returns the existing one)."""
        return curiosity.wonder(self.vault, question, context=context)

    def list_curiosities(self, text: str | None = None) -> curiosity.Curiosities:
        """Open questions, or those relevant to a text, best first."""
        return curiosity.list_curiosities(self.recaller, text)

    def explore(self, path: str, answer_path: str) -> curiosity.Explored:
        """Close a question with the memory that answers it (each a path or a name), linked both ways."""
        return curiosity.explore(self.vault, self.resolve(path), self.resolve(answer_path))

    # -- sleep (issue 5) --
    def sleep_plan(self, mode: str = sleep.DEFAULT_MODE, *, save: bool = True) -> sleep.Plan:
        """Plan a sleep (full, light or save) for review; no note changes. `save` keeps it under .cortex/sleep/
        to apply by id (a preview does not)."""
        return sleep.plan(self.index, self.recaller, self.vault, mode, save=save)

    def sleep_apply(self, plan: sleep.Plan, commit: bool = False) -> sleep.ApplyReport:
        """Apply exactly a plan, journalled; files changed since planning are skipped and reported."""
        return sleep.apply(self.vault, plan, commit=commit)

    def sleep_recover(self, commit: bool = False) -> sleep.ApplyReport | None:
        """Resume an interrupted sleep (or finish its interrupted rollback); None when nothing was interrupted."""
        return sleep.recover(self.vault, commit=commit)

    def sleep_rollback(self) -> sleep.ApplyReport:
        """Undo the last sleep (finished or interrupted) from its journal and backups."""
        return sleep.rollback(self.vault)

    def import_file(self, file: str | os.PathLike[str], fmt: str | None = None,
                    session: str | None = None) -> transcript.Imported:
        """Import a Claude Code transcript, a ChatGPT export or an MCP memory graph (detected), then index it."""
        return imports.import_file(self.vault, Path(file), fmt=fmt, session=session,
                                   folder=self.settings.regions.default)
