"""A sleep plan as data: its inputs and settings, file operations chained by content hash, and their helpers.

Pure: `Draft` tracks each file's planned text so every operation names the hash its file must have first;
`apply_edit` is the one function that both plans and applies a frontmatter edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import msgspec

from vault_cortex.errors import InvalidRequest, NoteParseError
from vault_cortex.files.edit import add_relation, add_to_list, set_property
from vault_cortex.files.paths import note_name, top_folder
from vault_cortex.files.relations import RELATIONS_PATH, with_relation
from vault_cortex.files.vault import ARCHIVE, content_hash
from vault_cortex.recall.edges import CO_RETRIEVED
from vault_cortex.recall.health import GraphHealth
from vault_cortex.sleep.dream import Findings, Handoff, findings_markdown

SPECIAL = frozenset({"habits", "resonance", "curiosities", "dreams", "raw", ARCHIVE, "summaries", "_templates"})
HANDOFF = "HANDOFF.md"
STATE_PATH = ".cortex/sleep/state.json"


class State(msgspec.Struct, frozen=True, kw_only=True):
    """`.cortex/sleep/state.json`: when sleep last ran, where each note's decay counts from, what was skipped."""

    last_sleep: datetime | None = None
    anchors: dict[str, datetime] = msgspec.field(default_factory=dict)
    conflicts: list[str] = msgspec.field(default_factory=list)
    weight_anchors: dict[str, datetime] = msgspec.field(default_factory=dict)  # habit/resonance weight decay


# -- inputs ------------------------------------------------------------------------------------------------

class Memo(msgspec.Struct, frozen=True, kw_only=True):
    """One note as sleep sees it: facts from the index and activity log, and its current text and hash."""

    path: str
    title: str
    region: str
    hash: str
    mtime: datetime
    text: str | None = None  # None when the file is not valid UTF-8 (never edited)
    cortex: str | None = None
    importance: float | None = None
    created: datetime | None = None
    layer: str | None = None
    pinned: bool = False
    status: str | None = None
    session: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    relations: dict[str, list[str]] = msgspec.field(default_factory=dict)  # frontmatter relations as written
    degree: int = 0
    neighbours: tuple[str, ...] = ()  # notes linked to or from it, any relation
    co_listed: tuple[str, ...] = ()  # notes its `co_retrieved:` already names
    derived_from: tuple[str, ...] = ()
    accesses: int = 0  # accesses since it was created
    last_access: datetime | None = None
    weight: float | None = None  # habits/ and resonance/ notes with a `weight:`, read as a weight in [0, 1]
    baseline: float | None = None  # ... and where decay pulls it (0.5 when unset)


class World(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a plan is computed from."""

    now: datetime
    notes: tuple[Memo, ...]
    taken: frozenset[str]  # every vault path in use, notes or not
    health: GraphHealth
    co_pairs: tuple[tuple[str, str, int], ...] = ()
    pair_last: dict[str, datetime] = msgspec.field(default_factory=dict)  # "a|b" → last retrieved together
    events_since: int = 0
    recalls_since: int = 0
    opens_since: int = 0
    state: State = msgspec.field(default_factory=State)
    state_hash: str | None = None  # of state.json as read (None: no file yet)
    weight_use: dict[str, datetime] = msgspec.field(default_factory=dict)  # last reinforcement or touch
    # the relations sidecar's text and hash (files/relations.py); None: the vault has none, so the edges a sleep
    # derives go into the notes' frontmatter
    relations: str | None = None
    relations_hash: str | None = None


# -- the plan ------------------------------------------------------------------------------------------

class Op(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One file operation, with why, the hash each file must have first (None: must not exist) and after."""

    step: int
    phase: str  # merge, decay, wire, promote, prune, tier, dream, handoff, state
    action: str  # create, write, move, set_property, add_to_list, add_relation, add_edge (to the sidecar)
    path: str
    reason: str
    hashes: dict[str, str | None]
    result: str  # hash of the file the operation leaves (a move's destination)
    dest: str | None = None
    key: str | None = None
    value: str | float | None = None
    content: str | None = None
    before: str | None = None
    after: str | None = None
    requires: tuple[int, ...] = ()
    src: str | None = None  # add_edge: the note the edge is from


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """A sleep's reviewable plan: operations in order, and the findings that explain them."""

    id: str
    mode: str
    created: datetime
    ops: list[Op]
    findings: Findings
    handoff: Handoff | None = None
    state: State | None = None  # what state.json becomes when the plan is applied


# -- small pure helpers ----------------------------------------------------------------------------------

def special(path: str) -> bool:
    """Folders and files sleep never merges, triages, prunes or wires."""
    return path == HANDOFF or top_folder(path) in SPECIAL


def stamp(now: datetime) -> str:
    """A `created:` value as Obsidian writes it."""
    return now.strftime("%Y-%m-%dT%H:%M")


def apply_edit(text: str, action: str, key: str, value: str | float | None) -> str:
    """One minimal frontmatter edit; the same function plans it and applies it."""
    if action == "set_property":
        return set_property(text, key, value)
    if action == "add_to_list" and isinstance(value, str):
        return add_to_list(text, key, value)
    if action == "add_relation" and isinstance(value, str):
        return add_relation(text, key, value)
    raise InvalidRequest(f"unknown edit {action!r}")


class Links:
    """Wikilinks to notes as they will be after the plan: by title when unambiguous, else by path."""

    def __init__(self, paths: set[str]) -> None:
        self.paths: set[str] = set()
        self._count: dict[str, int] = {}
        for p in paths:
            self.add(p)

    def add(self, path: str) -> None:
        if path in self.paths:
            return
        self.paths.add(path)
        self._count[note_name(path).casefold()] = self._count.get(note_name(path).casefold(), 0) + 1

    def target(self, path: str) -> str:
        title = note_name(path)
        if top_folder(path) == ARCHIVE or self._count.get(title.casefold(), 0) > 1:
            return path.removesuffix(".md")
        return title

    def __call__(self, path: str) -> str:
        return f"[[{self.target(path)}]]"


def edge_of(action: str, key: str, value: str | float | None) -> tuple[str, str] | None:
    """The edge (relation, link target) a frontmatter edit adds, if it adds one: a relation or a co_retrieved link."""
    if not isinstance(value, str):
        return None
    if action == "add_relation" or (action == "add_to_list" and key == CO_RETRIEVED):
        return (key, value.strip("[] "))
    return None


class Draft:
    """Operations under construction; tracks each file's planned text so hashes chain through the plan.

    With a relations sidecar (`sidecar`), an edge from a note the plan did not make goes to the sidecar, not into
    the note: in an adopted vault the notes are the user's."""

    def __init__(self, texts: Mapping[str, str | None], hashes: Mapping[str, str],
                 sidecar: tuple[str, str | None] | None = None) -> None:
        self.text: dict[str, str | None] = dict(texts)
        self.hash: dict[str, str | None] = dict(hashes)
        self.ops: list[Op] = []
        self.warnings: list[str] = []
        self.made: set[str] = set()  # notes the plan creates: vault-cortex's own, their edges in their frontmatter
        self.sidecar = sidecar is not None
        if sidecar is not None:
            self.text[RELATIONS_PATH], self.hash[RELATIONS_PATH] = sidecar

    def _push(self, **kw: object) -> int:
        step = len(self.ops) + 1
        self.ops.append(msgspec.convert({"step": step, **kw}, Op))
        return step

    def edit(self, phase: str, path: str, action: str, key: str, value: str | float | None, reason: str,
             before: str | None = None, after: str | None = None) -> int | None:
        old = self.text.get(path)
        if old is None:
            self.warnings.append(f"{path}: not valid UTF-8 or gone; {phase} left it alone")
            return None
        edge = edge_of(action, key, value) if self.sidecar and path not in self.made else None
        try:
            new = apply_edit(old, action, key, value)
        except (NoteParseError, InvalidRequest) as exc:
            if edge is not None:  # the note's frontmatter need not take an edit for the sidecar to hold the edge
                return self.relate(phase, path, edge, reason)
            self.warnings.append(f"{path}: {exc}; {phase} left it alone")
            return None
        if new == old:
            return None  # the note says it already
        if edge is not None:
            return self.relate(phase, path, edge, reason)
        h = content_hash(new.encode())
        step = self._push(phase=phase, action=action, path=path, key=key, value=value, reason=reason,
                          before=before, after=after, hashes={path: self.hash.get(path)}, result=h)
        self.text[path], self.hash[path] = new, h
        return step

    def relate(self, phase: str, src: str, edge: tuple[str, str], reason: str) -> int | None:
        """Add an edge from `src` to the relations sidecar (None when it holds it already)."""
        rel, dst = edge
        old = self.text[RELATIONS_PATH] or ""
        new = with_relation(old, src, rel, dst)
        if new == old:
            return None
        h = content_hash(new.encode())
        step = self._push(phase=phase, action="add_edge", path=RELATIONS_PATH, src=src, key=rel, value=dst,
                          reason=reason, hashes={RELATIONS_PATH: self.hash.get(RELATIONS_PATH)}, result=h)
        self.text[RELATIONS_PATH], self.hash[RELATIONS_PATH] = new, h
        return step

    def create(self, phase: str, path: str, content: str, reason: str, requires: tuple[int, ...] = (),
               action: str = "create") -> int:
        if action == "create":
            self.made.add(path)
        h = content_hash(content.encode())
        step = self._push(phase=phase, action=action, path=path, content=content, reason=reason,
                          hashes={path: self.hash.get(path)}, result=h, requires=requires)
        self.text[path], self.hash[path] = content, h
        return step

    def move(self, phase: str, path: str, dest: str, reason: str, requires: tuple[int, ...] = ()) -> int:
        h = self.hash.get(path)
        assert h is not None, path
        step = self._push(phase=phase, action="move", path=path, dest=dest, reason=reason,
                          hashes={path: h, dest: None}, result=h, requires=requires)
        self.text[dest], self.hash[dest] = self.text.pop(path, None), h
        self.hash.pop(path, None)
        return step



def state_json(state: State) -> str:
    return msgspec.json.format(msgspec.json.encode(state), indent=2).decode() + "\n"


def plan_markdown(plan: Plan) -> str:
    """The plan for review: its findings, then every operation with its reason."""
    out = [f"# Sleep plan {plan.id} ({plan.mode})", "",
           f"{len(plan.ops)} operations" + ("; nothing to do." if not plan.ops else "."), "",
           findings_markdown(plan.findings, lambda p: f"`{p}`"), "## Operations"]
    for op in plan.ops:
        what = {"move": f"move `{op.path}` → `{op.dest}`",
                "set_property": f"`{op.path}`: {op.key}: {op.before or '∅'} → {op.after or op.value}",
                "add_to_list": f"`{op.path}`: {op.key} += {op.value}",
                "add_relation": f"`{op.path}`: relations.{op.key} += [[{op.value}]]",
                "add_edge": f"`{op.src}` {op.key} [[{op.value}]] (in `{op.path}`)",
                "create": f"create `{op.path}`", "write": f"write `{op.path}`"}[op.action]
        out.append(f"{op.step}. **{op.phase}** {what} — {op.reason}")
    return "\n".join(out) + "\n"
