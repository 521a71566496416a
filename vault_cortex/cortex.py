"""The facade: one `Cortex` per vault, which every adapter (CLI, HTTP, MCP, hooks) calls in-process."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

import msgspec
import numpy as np

from vault_cortex import notes
from vault_cortex.config import Settings, load_settings
from vault_cortex.errors import (
    IndexUnavailable,
    InvalidRequest,
    NoteNotFound,
    VaultNotFound,
)
from vault_cortex.files.activity import Event, OpenEvent, RecallEvent, read_since
from vault_cortex.files.paths import note_name
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
from vault_cortex.index.sync import Indexing, Progress, SyncReport
from vault_cortex.index.upkeep import Index
from vault_cortex.index.vectors import EmbeddingCache, Vector, Vectors
from vault_cortex.limits import check_budget
from vault_cortex.recall.filters import Filters, allowed_notes
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import GraphHealth, health
from vault_cortex.recall.live import AccessView, LiveGraph
from vault_cortex.recall.pack import Candidate, Packed, pack
from vault_cortex.recall.pipeline import Concept, Recall, Scored, rank, to_candidate, to_hit
from vault_cortex.recall.pipeline import gate as gate_verdicts
from vault_cortex.sleep import cycle as sleep
from vault_cortex.store.change import Vault

log = logging.getLogger(__name__)


class Cortex:
    """A vault and its derived index: the composition root every adapter calls.

    It composes the services and is their adapter-facing API: `index` (index/upkeep.py: the database, vectors,
    embedding cache, model, locks, sync), `vault` (store/change.py: reading notes and the one write path), and
    the features below, each given what it uses."""

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None,
                 index_dir: Path | None = None, cache: EmbeddingCache | None = None) -> None:
        self.root = root
        self.settings = settings
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._live = LiveGraph()
        self._generation: str | None = None
        self._concept_cache: list[Concept] | None = None
        self.index = Index(root, settings, embedder, index_dir, cache, on_replaced=self._index_replaced)
        self.vault = Vault(root, settings, self.index, lambda: self.clock())

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
    def cache(self) -> EmbeddingCache:
        return self.index.cache

    @property
    def indexing(self) -> Indexing | None:
        return self.index.indexing

    def sync(self, progress: Progress | None = None) -> SyncReport:
        """Re-index what changed since the last sync; never writes a note."""
        return self.index.sync(progress)

    def sync_paths(self, paths: Sequence[str]) -> SyncReport:
        """Re-index just these vault paths: the cost follows the change."""
        return self.index.sync_paths(paths)

    def status(self) -> dict[str, object]:
        return self.index.status()

    def close(self) -> None:
        self.index.close()

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
             embedder: Embedder | None = None) -> Cortex:
        """Open a vault (a folder holding `.cortex/`; its config.toml is optional) and its index."""
        root = Path(path).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"no vault at {root}: run `vault-cortex init {root}` to create one")
        if not (root / ".cortex").is_dir():
            raise VaultNotFound(
                f"{root} is not a vault (it has no .cortex/ folder): run `vault-cortex init DIR` for a new vault, "
                f"or `mkdir {root / '.cortex'}` to index an existing Obsidian vault there")
        return cls(root.resolve(), load_settings(root, env), embedder)

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _index_replaced(self) -> None:
        """The index was set aside for an empty one: the concepts read from it are read again."""
        self._concept_cache = None

    # -- recall --------------------------------------------------------------------------------------
    def recall(self, query: str, *, k: int | None = None, mode: str | None = None,
               budget_tokens: int | None = None, regions: list[str] | None = None,
               include_archive: bool = False, client: str = "api", log_activity: bool = True,
               filters: Filters | None = None, gate: bool = False) -> Recall:
        """Notes for a query, ranked by the mode's signals; with a budget, also the packed context.

        filters (tags, regions, project, dates, path prefix) are applied inside the candidate search, so k
        results come back whenever k notes match. With `gate`, only the hits the push gate passes, each with its
        `push_probability`: none at all unless the best reaches `push.threshold`, and then those at or above
        `push.floor`. Empty means nothing is close enough to push unasked.
        """
        started = time.perf_counter()
        query = self._check_query(query)
        k = self._check_k(k)
        mode_name, weights = self.mode(mode)
        self._check_regions(regions)
        exclude = frozenset() if include_archive or self.settings.index.include_archive else self.archived()
        allowed = self.allowed(filters, regions, exclude)
        qvec = self.embedder.embed([query])[0]
        ranked = self.ranked(query, qvec, weights, regions=regions, exclude=exclude, allowed=allowed)
        if gate:
            push = self.settings.push
            verdicts = list(zip(ranked, gate_verdicts(ranked, query, push), strict=False))
            fire = max((v.probability for _, v in verdicts), default=0.0) >= push.threshold
            passed = [(s, v) for s, v in verdicts if fire and v.probability >= push.floor][:k]
            top = [s for s, _ in passed]
            hits = [to_hit(s, query, v) for s, v in passed]
        else:
            top = ranked[:k]
            hits = [to_hit(s, query) for s in top]
        packed = self.pack(top, budget_tokens) if budget_tokens is not None else None
        if log_activity:
            self.log(RecallEvent(ts=self.clock(), client=client, query=query, mode=mode_name,
                                 paths=tuple(h.path for h in hits)))
        return Recall(query=query, mode=mode_name, hits=hits, context=packed,
                      took_ms=round((time.perf_counter() - started) * 1000, 2), indexing=self.indexing)

    def ranked(self, query: str, qvec: Vector, weights: dict[str, float], *, regions: list[str] | None = None,
               exclude: frozenset[str] = frozenset(), allowed: frozenset[int] | None = None) -> list[Scored]:
        """Every candidate for a query, scored by the given signal weights, best first (only `allowed` notes)."""
        graph = self.graph()
        concepts = self._concepts()
        with self._live.lock.reading():  # the graph is updated in place: no update while it is walked
            return rank(query=query, qvec=qvec, db=self.db, vectors=self.vectors, graph=graph,
                        concepts=concepts, access=AccessView(self.db), pairs=self._live.pairs,
                        settings=self.settings, weights=weights, now=self.clock().timestamp(), regions=regions,
                        exclude=exclude, allowed=allowed)

    def allowed(self, filters: Filters | None, regions: list[str] | None = None,
                exclude: frozenset[str] = frozenset()) -> frozenset[int] | None:
        """The note ids recall may return under filters and regions (None: no filter, every note)."""
        filters = filters or Filters()
        self._check_regions(filters.regions)
        if regions:
            both = [r for r in filters.regions if r in regions] if filters.regions else list(regions)
            if not both:
                return frozenset()
            filters = msgspec.structs.replace(filters, regions=both)
        if not filters.active():
            return None
        return allowed_notes(self.db, filters, self.clock(), exclude)

    def similarity(self, qvec: Vector, paths: Sequence[str]) -> dict[str, float]:
        """Best cosine similarity between a query vector and any chunk of each note."""
        ids = self.db.note_ids(paths)
        chunks = self.db.chunks_of(ids.values())
        return {path: max(self.vectors.similarity(qvec, [c.id for c in chunks.get(i, [])]).values(), default=0.0)
                for path, i in ids.items()}

    def related(self, path: str, *, k: int | None = None, mode: str | None = None, client: str = "api") -> Recall:
        """Notes related to a note (a path or a name) by its content, leaving out itself and the notes it already
        links to."""
        started = time.perf_counter()
        path = self.resolve(path)
        k = self._check_k(k)
        mode_name, weights = self.mode(mode)
        ids = self.db.note_ids([path])
        if path not in ids:
            if self.indexing is not None:
                raise IndexUnavailable(f"the index is still being built ({self.indexing.done} of "
                                       f"{self.indexing.total} chunks); {path!r} is not in it yet")
            raise NoteNotFound(f"no indexed note at {path!r} (is it saved and synced?)")
        chunks = self.db.chunks_of([ids[path]])[ids[path]]
        vecs = list(self.vectors.get([c.id for c in chunks]).values())
        if not vecs:
            return Recall(query=path, mode=mode_name, hits=[], took_ms=0.0, indexing=self.indexing)
        qvec = np.mean(np.stack(vecs), axis=0).astype(np.float32)
        qvec /= float(np.linalg.norm(qvec)) or 1.0
        text = " ".join([note_name(path), *(c.text for c in chunks)])[:2000]
        linked = {ln.dst for ln in self.db.links(src=path) if ln.dst}
        exclude = frozenset({path, *linked}) | self.archived()
        top = self.ranked(text, qvec, weights, exclude=exclude)[:k]
        hits = [to_hit(s, text) for s in top]
        self.log(OpenEvent(ts=self.clock(), client=client, path=path))
        return Recall(query=path, mode=mode_name, hits=hits, took_ms=round((time.perf_counter() - started) * 1000, 2),
                      indexing=self.indexing)

    def context(self, *, task: str | None = None, project: str | None = None, active_note: str | None = None,
                recent: list[str] | None = None, budget_tokens: int | None = None, mode: str | None = None,
                client: str = "api", filters: Filters | None = None) -> Context:
        """Session-start context: pinned notes, habits and open questions that match, the handoff, then recall
        (the recall part narrowed by filters, if any)."""
        ctx = build_context(self, task=task, project=project, active_note=active_note, recent=recent,
                            budget_tokens=budget_tokens, mode=mode, client=client, filters=filters)
        return msgspec.structs.replace(ctx, indexing=self.indexing) if self.indexing else ctx

    # -- writes ---------------------------------------------------------------------------------------
    def remember(self, text: str, *, title: str | None = None, region: str | None = None,
                 tags: list[str] | None = None, importance: float | None = None, project: str | None = None,
                 relations: dict[str, list[str]] | None = None, client: str = "api") -> NoteDoc:
        """Write a new memory note (atomically, never over an existing file) and index it at once."""
        return notes.remember(self.vault, text, title=title, region=region, tags=tags, importance=importance,
                              project=project, relations=relations, client=client)

    def link(self, src: str, rel: str, dst: str, client: str = "api") -> NoteDoc:
        """Add a typed relation `rel` from note src to dst (each a path or a name), as one minimal frontmatter
        change."""
        return notes.link(self.vault, self.resolve(src), rel, dst, client)

    def pack(self, scored: list[Scored], budget_tokens: int, extra: Sequence[Candidate] = (),
              section_order: Sequence[str] = ()) -> Packed:
        check_budget(budget_tokens)
        chunks = self.db.chunks_of({s.note.id for s in scored})
        candidates = [*extra, *(to_candidate(s, chunks.get(s.note.id, [])) for s in scored)]
        order = self.settings.regions.order
        scale = max(1.0, budget_tokens / 1000)  # caps are per 1,000 tokens of budget
        caps = {name: max(1, round(self.settings.region(name).cap * scale)) for name in order}
        return pack(candidates, budget_tokens=budget_tokens, region_order=order, caps=caps,
                    count_tokens=self.embedder.count_tokens, vault_name=self.root.name,
                    section_order=section_order)

    def mode(self, mode: str | None) -> tuple[str, dict[str, float]]:
        name = mode or "balanced"
        if name not in self.settings.modes:
            raise InvalidRequest(f"unknown mode {name!r}; modes: {', '.join(sorted(self.settings.modes))}")
        return name, self.settings.modes[name]

    def _check_regions(self, regions: list[str] | None) -> None:
        unknown = sorted(set(regions or ()) - set(self.settings.regions.order))
        if unknown:
            raise InvalidRequest(f"unknown region {unknown[0]!r}; regions: {', '.join(self.settings.regions.order)}")

    def archived(self) -> frozenset[str]:
        self.graph()
        return self._live.archived

    def graph(self) -> Graph:
        """The note graph (links, relations, projects, co-retrieval), updated in place for what changed."""
        generation = self.db.get_meta("generation") or "0"
        if generation != self._generation:
            self._generation = generation
            self._concept_cache = None
        return self._live.refresh(self.db, self.clock().timestamp())

    def _concepts(self) -> list[Concept]:
        if self._concept_cache is None:
            by_path: dict[str, set[str]] = {}
            for path, title, name in self.db.aliases_of(resonance.RESONANCE_DIR + "/"):
                by_path.setdefault(path, {title.lower()}).add(name.lower())
            concepts = []
            for path, names in sorted(by_path.items()):
                fm = self.db.frontmatter(path) or {}
                weight = fm.get("weight", 0.5)
                w = float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else 0.5
                concepts.append(Concept(path=path, names=tuple(sorted(n for n in names if len(n) > 2)),
                                        weight=min(1.0, max(0.0, w))))
            self._concept_cache = concepts
        return self._concept_cache

    def graph_health(self) -> GraphHealth:
        """Hubs, islands, bridges, articulation points and dangling links of the vault's link graph."""
        dangling = [(ln.src, ln.target) for ln in self.db.links(dangling_only=True)]
        graph = self.graph()
        with self._live.lock.reading():  # a consistent graph: no update applied meanwhile
            return health(graph, dangling)

    def log(self, event: Event) -> None:
        """Append to the activity log; a failure to log never fails the caller's request."""
        self.vault.log(event)

    def _check_query(self, query: str) -> str:
        query = (query or "").strip()
        if not query:
            raise InvalidRequest("the query is empty")
        if len(query) > self.settings.recall.max_query_chars:
            raise InvalidRequest(
                f"the query is {len(query)} characters; the limit is {self.settings.recall.max_query_chars}")
        return query

    def _check_k(self, k: int | None) -> int:
        k = self.settings.recall.k if k is None else k
        if not 1 <= k <= self.settings.recall.max_k:
            raise InvalidRequest(f"k must be between 1 and {self.settings.recall.max_k}, not {k}")
        return k

    # -- notes ---------------------------------------------------------------------------------------
    def read_note(self, path: str) -> NoteDoc:
        """A note's text and ETag; the path must be a vault-relative .md path outside dot-folders."""
        return self.vault.read_note(path)

    def read_bytes(self, path: str) -> bytes:
        """A note's bytes as they are on disk (for edits that must keep every byte they do not change)."""
        return self.vault.read_bytes(path)

    def write_note(self, path: str, content: str, if_match: str | None, client: str = "api") -> NoteDoc:
        """Create (if_match None: the note must not exist) or replace a note whose ETag still matches."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest("the note's text is not valid Unicode (it holds a lone surrogate)") from None
        return notes.write(self.vault, path, data, if_match, client)

    def write_bytes(self, path: str, data: bytes, if_match: str | None, client: str = "api") -> NoteDoc:
        """write_note for exact bytes (an edit or an undo keeps a body that is not UTF-8 as it was)."""
        return notes.write(self.vault, path, data, if_match, client)

    def resolve(self, name: str) -> str:
        """A note's path from its path or a link target (`Title`, `[[Folder/Title]]`), as Obsidian resolves it."""
        return notes.resolve(self.vault, name)

    def open_note(self, name: str, *, client: str = "api", exact: bool = False) -> NoteDoc:
        """Read a note named by path or title (exact: by its vault path only), with its ETag, and log the open."""
        doc = self.read_note(name if exact else self.resolve(name))
        self.log(OpenEvent(ts=self.clock(), client=client, path=doc.path))
        return doc

    def edit_note(self, name: str, op: EditOp, *, etag: str | None = None, client: str = "api") -> notes.Edited:
        """One minimal edit (append, prepend, replace_section, find_replace, set_property), atomic, logged;
        refused when `etag` is given and the note changed since."""
        return notes.edit(self.vault, self.resolve(name), op, etag=etag, client=client)

    def move_note(self, name: str, dest: str, *, etag: str | None = None, client: str = "api") -> notes.Moved:
        """Move a note; links that would no longer reach it are rewritten (minimal edits, reported)."""
        return notes.move(self.vault, self.resolve(name), dest, etag=etag, client=client)

    def archive_note(self, name: str, *, etag: str | None = None, client: str = "api") -> notes.Moved:
        """Move a note to archive/ (never deleted; recall finds it with include_archive)."""
        return notes.archive(self.vault, self.resolve(name), etag=etag, client=client)

    def recent(self, *, days: int = 7, kinds: Sequence[str] | None = None) -> recent_activity.Recent:
        """Notes created, changed, recalled and opened over the last days, grouped by day, newest first."""
        days, chosen = recent_activity.check(days, kinds)
        now = self.clock()
        events = read_since(self.root, now - timedelta(days=days)) if set(chosen) - {"created"} else []
        return recent_activity.recent(self.db.all_notes(), events, now=now, days=days, kinds=chosen)

    # -- health --------------------------------------------------------------------------------------
    def doctor(self) -> Doctor:
        """Parse problems, skipped files, dangling and ambiguous links, and index/file drift."""
        self.index.check_index()
        return doctor.doctor(self)

    def verify(self, progress: Progress | None = None) -> Verify:
        """Rebuild the index into a temporary folder and compare it with the live one."""
        self.index.check_index()
        return doctor.verify(self, progress)

    # -- habits, resonance, curiosity (issue 6) --
    def habits_for_context(self, text: str, *, tool: str | None = None,
                           tool_input: Mapping[str, object] | None = None) -> habits.Habits:
        """Habits matching a context or tool call (trigger, meaning, tool pattern), strongest first, capped."""
        return habits.habits_for_context(self, text, tool=tool, tool_input=tool_input)

    def reinforce(self, path: str, *, context: str | None = None, client: str = "api") -> resonance.WeightChange:
        """A habit was followed: raise its weight by one line and log it."""
        return habits.reinforce(self.vault, self.resolve(path), context=context, client=client)

    def decay_habits(self, *, dry_run: bool = True) -> resonance.DecayPlan:
        """Preview (or apply) habit weights decaying toward their baselines."""
        return habits.decay_habits(self.vault, dry_run=dry_run)

    def touch(self, concept: str, *, by: str | None = None, client: str = "api") -> resonance.WeightChange:
        """Raise a resonance concept's weight by one line and log the touch."""
        return resonance.touch(self.vault, concept, by=by, client=client)

    def decay_resonance(self, *, dry_run: bool = True) -> resonance.DecayPlan:
        """Preview (or apply) resonance weights decaying toward their baselines."""
        return resonance.decay(self.vault, dry_run=dry_run)

    def resonance_report(self, *, days: int | None = None) -> resonance.ResonanceReport:
        """Claimed (baseline) vs actual use (touches, mentions) of each concept over the last days."""
        return resonance.report(self.vault, days)

    def wonder(self, question: str, *, context: str | None = None, client: str = "api") -> curiosity.Curiosity:
        """Create an open question in curiosities/ (asking again returns the existing one)."""
        return curiosity.wonder(self.vault, question, context=context, client=client)

    def list_curiosities(self, text: str | None = None) -> curiosity.Curiosities:
        """Open questions, or those relevant to a text, best first."""
        return curiosity.list_curiosities(self, text)

    def explore(self, path: str, answer_path: str, client: str = "api") -> curiosity.Explored:
        """Close a question with the memory that answers it (each a path or a name), linked both ways."""
        return curiosity.explore(self.vault, self.resolve(path), self.resolve(answer_path), client)

    # -- sleep (issue 5) --
    def sleep_plan(self, mode: str = "full") -> sleep.Plan:
        """Plan a sleep (full, light or save) for review, saved under .cortex/sleep/; no note changes."""
        return sleep.plan(self, mode)

    def sleep_apply(self, plan: sleep.Plan, commit: bool = False) -> sleep.ApplyReport:
        """Apply exactly a plan, journalled; files changed since planning are skipped and reported."""
        return sleep.apply(self.vault, plan, commit=commit)

    def sleep_resume(self, commit: bool = False) -> sleep.ApplyReport:
        """Finish a sleep that was interrupted, from its journal."""
        return sleep.resume(self.vault, commit=commit)

    def sleep_rollback(self) -> sleep.ApplyReport:
        """Undo the last sleep (finished or interrupted) from its journal and backups."""
        return sleep.rollback(self.vault)

    def import_transcript(self, file: str | os.PathLike[str], session: str | None = None) -> transcript.Imported:
        """Import a Claude Code JSONL or markdown chat as raw notes, one per prompt→answer exchange."""
        return transcript.import_transcript(self.vault, Path(file), session)

    def import_file(self, file: str | os.PathLike[str], fmt: str | None = None,
                    session: str | None = None) -> transcript.Imported:
        """Import a Claude Code transcript, a ChatGPT export or an MCP memory graph (detected), then index it."""
        return imports.import_file(self.vault, Path(file), fmt=fmt, session=session,
                                   folder=self.settings.regions.default)
