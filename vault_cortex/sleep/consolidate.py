"""Sleep planning, pure: a vault's notes, vectors and activity in, a reviewable `Plan` of file operations out.

Every operation names the hash each file must still have when it runs, chained through the plan, so
applying it (in `sleep`) is mechanical: re-check, write atomically, journal. Nothing here touches the disk.
`make_plan` is short steps: each phase decides (`phases.py`), then the decisions are drafted as operations, the
summaries, the dream log, the handoff and the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from typing import Literal

import msgspec
import numpy as np

from vault_cortex.config import Settings
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import note_name, top_folder
from vault_cortex.sleep.dream import (
    PATTERN_DAYS,
    Decay,
    Findings,
    Handoff,
    Merge,
    Supersede,
    Triage,
    WeightDecay,
    Wire,
    dream_log,
    find_patterns,
    handoff_text,
)
from vault_cortex.sleep.operations import (
    HANDOFF,
    STATE_PATH,
    Links,
    Plan,
    State,
    World,
    special,
    state_json,
)
from vault_cortex.sleep.phases import DAY, SHORT_TERM, Sleep
from vault_cortex.sleep.tiers import Source, TierReport, summarise
from vault_cortex.sleep.tiers import report as tier_report

Vector = np.ndarray  # unit-length float32 note or sentence vector
Embed = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]

SleepMode = Literal["full", "light", "save"]
MODES: tuple[SleepMode, ...] = ("full", "light", "save")
DEFAULT_MODE: SleepMode = "full"  # every surface's default (CLI, HTTP, MCP): a plan shows all; applying is asked for
def make_plan(world: World, vectors: Mapping[str, Vector], *, settings: Settings, mode: str, embed: Embed,
              count_tokens: CountTokens) -> Plan:
    """The plan for one sleep in a mode: full (every phase), light (promote and wire) or save (handoff only)."""
    if mode not in MODES:
        raise InvalidRequest(f"unknown sleep mode {mode!r}; modes: {', '.join(MODES)}")
    s = Sleep(world, vectors, settings)
    full, save = mode == "full", mode == "save"
    decided = _decide(s, full, save)
    moved = dict(s.moved)
    links = Links({p for p in world.taken if p.endswith(".md") and p not in moved} | set(moved.values())
                  | {m.into for m, _ in decided.merges})
    decided.supersedes = _draft_changes(s, decided, links, moved)
    reports = _draft_tiers(s, links, moved, embed, count_tokens) if full else []
    findings = _findings(s, decided, reports, full, save)
    state = _draft_dream(s, links, moved, mode, findings)
    handoff = _draft_handoff(s, links, decided, state, save)
    return Plan(id=f"{world.now.astimezone(UTC):%Y%m%dT%H%M%SZ}", mode=mode, created=world.now, ops=s.draft.ops,
                findings=findings, handoff=handoff, state=state)


class _Decided(msgspec.Struct, kw_only=True):
    """What a sleep decided, before any of it is drafted as operations."""

    merges: list[tuple[Merge, str]]  # each merge with the merged note's content
    supersedes: list[Supersede]
    triage: list[Triage]
    decay: list[Decay]
    weights: list[WeightDecay]
    wires: list[Wire]


def _decide(s: Sleep, full: bool, save: bool) -> _Decided:
    """Each phase's decisions, in the order they depend on one another (merges first: wiring sees merged notes)."""
    merges, supersedes = s.merges() if full else ([], [])
    triage = [] if save else s.triage(prune=full)
    decay = s.decay() if full else []
    weights = s.weight_decay() if full else []
    wires = [] if save else s.wires([m.into for m, _ in merges], {frozenset((x.newer, x.older)) for x in supersedes})
    return _Decided(merges=merges, supersedes=supersedes, triage=triage, decay=decay, weights=weights, wires=wires)


def _draft_changes(s: Sleep, decided: _Decided, links: Links, moved: dict[str, str]) -> list[Supersede]:
    """The decisions drafted as operations: merged notes made, supersessions, decay, wiring, promotions, then the
    moves. Returns the supersessions the draft took."""
    d, now = s.draft, s.world.now
    made = {m.into: d.create("merge", m.into, content, f"merges {len(m.sources)} near-duplicates in "
                             f"{s.live[m.sources[0]].region} (similarity ≥ {m.similarity:.2f}) that agree on "
                             + ("; ".join(m.agree) if m.agree else "every point checked (no number, date, "
                                "negation or name in them)")
                             + (f"; they share {', '.join(m.shared)}" if m.shared else ""))
            for m, content in decided.merges}
    supersedes = [x for x in decided.supersedes if d.edit(
        "supersede", x.newer, "add_relation", "supersedes", links.target(x.older),
        f"newer than {x.older} and similar ({x.similarity:.2f}"
        + (f"; both about {', '.join(x.shared)}" if x.shared else "") + "), but they differ (older ≠ newer): "
        + "; ".join(x.differ))]
    for x in decided.decay:
        if d.edit("decay", x.path, "set_property", "importance", x.after, f"unused {x.days:g} days, half-life "
                  f"{x.half_life:g} days", f"{x.before:.2f}", f"{x.after:.2f}"):
            s.anchors[x.path] = now
    for wd in decided.weights:
        if d.edit("decay", wd.path, "set_property", "weight", wd.after, f"{wd.kind} weight toward its baseline "
                  f"{wd.baseline:g}: {wd.days:g} days since last used, half-life {wd.half_life:g} days",
                  f"{wd.before:g}", f"{wd.after:g}"):
            s.weight_anchors[wd.path] = now
    for w in decided.wires:
        target = links.target(w.dst)
        if w.rel == "co_retrieved":
            d.edit("wire", w.src, "add_to_list", "co_retrieved", f"[[{target}]]", w.why)
        else:
            d.edit("wire", w.src, "add_relation", "related_to", target, w.why)
    for t in decided.triage:
        memo = s.live[t.path]
        if t.decision == "promote" and t.region and memo.cortex != t.region and not d.edit(
                "promote", t.path, "set_property", "cortex", t.region, t.why, memo.cortex, t.region):
            moved.pop(t.path)
    for m, _ in decided.merges:
        for src in m.sources:
            d.move("merge", src, moved[src], f"merged into {m.into}", (made[m.into],))
    for t in decided.triage:
        if t.dest and t.path in moved:
            d.move("promote" if t.decision == "promote" else "prune", t.path, t.dest, t.why)
    return supersedes


def _draft_tiers(s: Sleep, links: Links, moved: Mapping[str, str], embed: Embed,
                 count_tokens: CountTokens) -> list[TierReport]:
    """The summaries of the layered notes (where the plan leaves them), drafted; their report."""
    def claim(path: str) -> str:
        path = s.claim(path)
        links.add(path)
        return path

    sources = [Source(path=moved.get(p, p), title=note_name(moved.get(p, p)), layer=m.layer, body=body_text(m.text),
                      created=m.created, session=m.session, project=m.project,
                      derived_from=tuple(moved.get(x, x) for x in m.derived_from))
               for p, m in sorted(s.live.items()) if m.layer and m.text is not None and p not in s.gone]
    made_tiers = summarise(sources, today=s.world.now.date(), embed=embed, count_tokens=count_tokens,
                           link=links, claim=claim)
    for summary in made_tiers:
        s.draft.create("tier", summary.path, summary.content, f"{summary.tier} summary of {len(summary.sources)} "
                       f"notes: {summary.source_tokens} → {summary.tokens} tokens")
    return tier_report(made_tiers)


def _findings(s: Sleep, decided: _Decided, reports: list[TierReport], full: bool, save: bool) -> Findings:
    """What the dream log reports: the survey, each phase's decisions, the warnings, the patterns."""
    recent_cut = s.world.now.timestamp() - PATTERN_DAYS * DAY
    everyday = [p for p, m in s.live.items() if not special(p) and p not in s.gone and not m.layer]
    return Findings(
        survey=s.survey(), merges=[m for m, _ in decided.merges], supersedes=decided.supersedes,
        triage=decided.triage, decay=decided.decay, edges=s.edge_decay() if full else [], weights=decided.weights,
        wires=decided.wires, tiers=reports, warnings=s.draft.warnings, health=None if save else s.world.health,
        patterns=find_patterns(
            [p for p in everyday if (c := s.live[p].created) and c.timestamp() >= recent_cut],
            [p for p in everyday if s.live[p].region != SHORT_TERM
             and not ((c := s.live[p].created) and c.timestamp() >= recent_cut)], s.vec) if full else [])


def _draft_dream(s: Sleep, links: Links, moved: Mapping[str, str], mode: str, findings: Findings) -> State | None:
    """When the plan changes anything: its dream log drafted, and the state it leaves (None: nothing to do)."""
    if not s.draft.ops:
        return None
    now = s.world.now
    dream = s.claim(f"dreams/{now:%Y-%m-%d}.md")
    links.add(dream)
    s.draft.create("dream", dream, dream_log(now, mode, findings, links), "the dream log of this sleep")
    anchors = {moved.get(p, p): t for p, t in s.anchors.items() if p not in s.gone and moved.get(p, p) in links.paths}
    weighted = {p: t for p, t in s.weight_anchors.items() if p in links.paths}
    return State(last_sleep=now, anchors=dict(sorted(anchors.items())), conflicts=[],
                 weight_anchors=dict(sorted(weighted.items())))


def _draft_handoff(s: Sleep, links: Links, decided: _Decided, state: State | None, save: bool) -> Handoff:
    """What is left unfinished (open questions, short-term notes left, conflicts), drafted as HANDOFF.md with
    the state when it changed."""
    d, triage = s.draft, decided.triage
    left = {t.path: s.importance.get(t.path, t.importance) for t in triage
            if t.decision in ("stay", "keep", "ask")} if triage else {
        p: s.importance.get(p, s.live[p].importance or 0.5) for p in s.survey().short_term}
    left |= {m.into: m.importance for m, _ in decided.merges if s.live[m.sources[0]].region == SHORT_TERM}
    handoff = Handoff(
        curiosities=[links(p) for p, m in sorted(s.live.items())
                     if top_folder(p) == "curiosities" and (m.status or "open").lower() == "open"],
        short_term=[(links(p), imp) for p, imp in sorted(left.items())], conflicts=list(s.world.state.conflicts))
    current = s.live.get(HANDOFF)
    new_handoff = handoff_text(current.text if current else None, handoff)
    if state is not None or (current is None and save) or (current and new_handoff != current.text):
        d.create("handoff", HANDOFF, new_handoff, "what is unfinished: open questions, short-term notes left, "
                 "conflicts skipped", action="write")
    if state is not None:
        d.create("state", STATE_PATH, state_json(state), "when this sleep ran and where decay counts from",
                 action="write")
    return handoff
