"""Sleep planning, pure: a vault's notes, vectors and activity in, a reviewable `Plan` of file operations out.

Every operation names the hash each file must still have when it runs, chained through the plan, so
applying it (in `sleep`) is mechanical: re-check, write atomically, journal. Nothing here touches the disk.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from functools import partial
from typing import Literal

import numpy as np

from vault_cortex.config import Settings
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import note_name, top_folder, unique_path
from vault_cortex.files.vault import ARCHIVE
from vault_cortex.identity.habits import HABITS_DIR
from vault_cortex.identity.habits import half_life as habit_half_life
from vault_cortex.identity.resonance import RESONANCE_DIR, decay_step
from vault_cortex.identity.resonance import half_life as resonance_half_life
from vault_cortex.recall.edges import CO_RETRIEVED, EdgeWeights
from vault_cortex.recall.rank import halved
from vault_cortex.sleep.agree import agreement, complete_groups
from vault_cortex.sleep.distinct import TEMPLATE_LINES, Distinct, Evidence, shared_neighbours
from vault_cortex.sleep.dream import (
    PATTERN_DAYS,
    Decay,
    EdgeDecay,
    Findings,
    Handoff,
    Merge,
    Supersede,
    Survey,
    Triage,
    WeightDecay,
    Wire,
    dream_log,
    find_patterns,
    handoff_text,
)
from vault_cortex.sleep.merge import merged_note
from vault_cortex.sleep.operations import (
    HANDOFF,
    STATE_PATH,
    Draft,
    Links,
    Memo,
    Plan,
    State,
    World,
    special,
    state_json,
)
from vault_cortex.sleep.tiers import Source, TierReport, summarise, unit_rows
from vault_cortex.sleep.tiers import report as tier_report

Vector = np.ndarray  # unit-length float32 note or sentence vector
Embed = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]

SleepMode = Literal["full", "light", "save"]
MODES: tuple[SleepMode, ...] = ("full", "light", "save")
DEFAULT_MODE: SleepMode = "full"  # every surface's default (CLI, HTTP, MCP): a plan shows all; applying is asked for
SHORT_TERM = "short_term"
DAY = 86400.0
ACCESS_BOOST = 0.3  # the most accesses can add to a short-term note's importance at triage
KEYWORD_WEIGHT = 0.06  # a keyword hit's pull toward its region, on the cosine scale of centroid similarity
EDGE_WEIGHT = EdgeWeights().of(CO_RETRIEVED)
CO_RETRIEVED_MIN = 3  # distinct queries recalling two notes together before a co_retrieved edge is written
RELATED_THRESHOLD = 0.8  # least cosine of two unlinked notes for a suggested related_to link (MiniLM's scale)
PRUNE_MIN_CONNECTIONS = 5  # a note with at least this many links is never pruned
RELATED_PER_NOTE = 3  # most related_to links suggested from one note in one sleep
# Similarity proposes; what each note says of its own must back it (sleep/distinct.py: boilerplate lines out,
# words weighed by how few notes use them). EVIDENCE: the share of the larger note's distinctive weight two notes
# must have in common to merge, supersede or be suggested related_to (on the development set, true paraphrased
# duplicates share 0.36-0.78, a reversal or a correction 0.48-0.75, two bugs with one symptom 0.24-0.33, two
# pages of one template at most 0.32), with at least EVIDENCE_WORDS shared words in neither title (a page and the
# page naming it share only names). A related_to may instead rest on a link path.
EVIDENCE = 0.35
EVIDENCE_WORDS = 2
PATH_MAX_DEGREE = 8  # a note linking both ends is a link path between them unless it links more notes (a hub)
WEIGHT_STEP = 0.01  # least habit or resonance weight change worth a written line; smaller ones accumulate


def backed(e: Evidence) -> bool:
    """Whether what two similar notes share of their own is enough to merge, supersede or relate them."""
    return e.overlap >= EVIDENCE and e.untitled >= EVIDENCE_WORDS


def _sides(point: str) -> str:
    """A differing point with the older note read first: "older ≠ newer"."""
    return point.replace("(first only)", "(older only)").replace("(second only)", "(newer only)")


def keyword_hits(text: str, words: Sequence[str]) -> list[str]:
    """The configured words a text mentions (case-insensitive, whole words)."""
    return [w for w in words if re.search(r"(?<!\w)" + re.escape(w) + r"(?!\w)", text, re.I)]


def natural_region(memo: Memo, vec: Vector | None, centroids: Mapping[str, Vector],
                   keywords: Mapping[str, Sequence[str]], order: Sequence[str]) -> tuple[str | None, str]:
    """Where a short-term note belongs: its own `cortex:`, else centroid similarity leaned by keyword rules."""
    if memo.cortex and memo.cortex != SHORT_TERM and memo.cortex in order:
        return memo.cortex, f"its own cortex: {memo.cortex}"
    body = body_text(memo.text or "")
    scores: dict[str, float] = {}
    why: dict[str, str] = {}
    for region in order:
        if region == SHORT_TERM:
            continue
        hits = keyword_hits(body, keywords.get(region, ()))
        sim = float(np.dot(vec, centroids[region])) if vec is not None and region in centroids else None
        if sim is None and not hits:
            continue
        scores[region] = (sim or 0.0) + KEYWORD_WEIGHT * min(len(hits), 3)
        parts = [f"centroid {sim:.2f}"] if sim is not None else []
        parts += [f"keywords: {', '.join(hits)}"] if hits else []
        why[region] = "; ".join(parts)
    if not scores:
        return None, "no region centroid or keyword to go by"
    best = max(scores, key=lambda r: (scores[r], -order.index(r)))
    return best, why[best]


# -- planning ------------------------------------------------------------------------------------------

class _Sleep:
    """One plan under construction: the world, the decisions so far and the draft of operations."""

    def __init__(self, world: World, vectors: Mapping[str, Vector], settings: Settings) -> None:
        self.world, self.settings, self.cfg = world, settings, settings.sleep
        self.now = world.now
        self.notes = {m.path: m for m in world.notes}
        self.live = {p: m for p, m in self.notes.items() if top_folder(p) != ARCHIVE}
        self.vec = {p: v for p, v in vectors.items() if p in self.live}
        self.distinct = Distinct({p: (m.title, body_text(m.text)) for p, m in self.live.items()
                                  if m.text is not None and not special(p)})
        self.draft = Draft({p: m.text for p, m in self.notes.items()}, {p: m.hash for p, m in self.notes.items()},
                           None if world.relations is None else (world.relations, world.relations_hash))
        self.draft.hash[STATE_PATH] = world.state_hash
        self.taken = set(world.taken)
        self.gone: set[str] = set()  # leaving the live vault: merged originals and pruned notes
        self.importance: dict[str, float] = {}  # after decay
        self.promoted: dict[str, str] = {}  # path → the region triage promotes it into
        self.moved: dict[str, str] = {}  # path → where the plan moves it
        self.anchors = dict(world.state.anchors)
        self.weight_anchors = dict(world.state.weight_anchors)

    def region(self, name: str) -> tuple[float, bool]:
        r = self.settings.region(name)
        return r.half_life_days, r.identity

    def claim(self, path: str) -> str:
        path = unique_path(path, self.taken)
        self.taken.add(path)
        return path

    def survey(self) -> Survey:
        w, order = self.world, self.settings.regions.order
        counts = Counter(m.region for p, m in self.live.items() if not special(p))
        folders = Counter(top_folder(p) or p for p in self.live if special(p))
        return Survey(
            notes=len(self.live), by_region={r: counts[r] for r in sorted(counts, key=lambda r: (
                order.index(r) if r in order else len(order), r))}, folders=dict(sorted(folders.items())),
            archived=len(self.notes) - len(self.live),
            short_term=sorted(p for p, m in self.live.items()
                              if not special(p) and (top_folder(p) == SHORT_TERM or m.cortex == SHORT_TERM)),
            last_sleep=w.state.last_sleep, events_since=w.events_since, recalls_since=w.recalls_since,
            opens_since=w.opens_since)

    # -- merge ---------------------------------------------------------------------------------------
    def words(self, path: str) -> str:
        """What the agreement check reads: a note's distinctive lines (sleep/distinct.py) without its title heading."""
        m = self.live[path]
        lines = self.distinct.body.get(path, "").strip("\n").splitlines()
        if lines and lines[0].lstrip("# ").strip().casefold() == m.title.casefold():
            lines = lines[1:]
        return "\n".join(lines)

    def merges(self) -> tuple[list[tuple[Merge, str]], list[Supersede]]:
        """Near-duplicates per region that agree on every checkable point, merged (complete linkage), each with
        the merged note's content; similar pairs that disagree, the newer superseding the older."""
        out, supersedes = [], []
        by_region: dict[str, list[str]] = {}
        for p, m in sorted(self.live.items()):
            if p in self.vec and m.text is not None and not special(p) and not m.layer and not m.pinned \
                    and not self.region(m.region)[1]:
                by_region.setdefault(m.region, []).append(p)
        for region, paths in sorted(by_region.items()):
            sims = unit_rows([self.vec[p] for p in paths])
            sims = sims @ sims.T
            proposed = [(float(sims[i, j]), i, j) for i in range(len(paths)) for j in range(i + 1, len(paths))
                        if sims[i, j] >= self.cfg.merge_threshold]
            evidence = {(i, j): self.distinct.evidence(paths[i], paths[j]) for _, i, j in proposed}
            close = [(s, i, j) for s, i, j in proposed if backed(evidence[i, j])]
            verdict = {(i, j): agreement(self.words(paths[i]), self.words(paths[j])) for _, i, j in close}
            kin = {(i, j) for _, i, j in close if evidence[i, j].template >= TEMPLATE_LINES}  # two things of a kind
            for sim, i, j in close:
                v = verdict[i, j]
                if v.agree:
                    continue
                a, b = self.live[paths[i]], self.live[paths[j]]
                ta, tb = a.created or a.mtime, b.created or b.mtime
                if ta != tb:
                    newer, older = (a, b) if ta > tb else (b, a)
                    differ = agreement(self.words(older.path), self.words(newer.path)).differ
                    supersedes.append(Supersede(newer=newer.path, older=older.path, similarity=round(sim, 3),
                                                differ=[_sides(x) for x in differ], shared=evidence[i, j].shared))
            for idx in complete_groups(len(paths), [(s, i, j) for s, i, j in close
                                                    if verdict[i, j].agree and (i, j) not in kin]):
                members = [paths[i] for i in idx]
                low = round(min(float(sims[i, j]) for i in idx for j in idx if i < j), 3)
                points = list(dict.fromkeys(x for i in idx for j in idx if i < j for x in verdict[i, j].same))
                shared = [w for w in evidence[idx[0], idx[1]].shared
                          if all(w in evidence[i, j].shared for i in idx for j in idx if i < j)]
                group = sorted((self.live[p] for p in members), key=lambda m: (-(m.importance or 0.5), m.path))
                imp = max(self.decayed(m, region)[0] for m in group)
                created = min(m.created or m.mtime for m in group)
                first = group[0]
                into = self.claim(f"{first.path.removesuffix('.md')} (merged).md")
                self.gone |= set(members)
                self.moved |= {m.path: self.claim(f"{ARCHIVE}/{m.path}") for m in group}
                self.anchors[into] = self.now  # decayed up to now, so decay counts on from here
                merge = Merge(into=into, sources=[m.path for m in group], similarity=low, importance=imp,
                              archived=[self.moved[m.path] for m in group], agree=points, shared=shared)
                out.append((merge, merged_note(group, region, imp, created, self.moved)))
                self.vec[into] = unit_rows([np.mean(unit_rows([self.vec[p] for p in members]), axis=0)])[0]
                self.distinct.join(into, members)
        return out, supersedes

    # -- decay -----------------------------------------------------------------------------------------
    def decay(self) -> list[Decay]:
        """Importance lowered for the time since a note's last use or creation, at the half-life of the region
        triage leaves it in (so it runs after triage: what the user wrote decides promotion)."""
        out = []
        for p, m in sorted(self.live.items()):
            half_life, identity = self.region(self.promoted.get(p, m.region))
            if m.importance is None or identity or half_life <= 0 or p in self.gone or m.text is None:
                continue
            after, days = self.decayed(m, self.promoted.get(p, m.region))
            if m.importance - after >= 0.01 - 1e-9:
                self.importance[p] = after
                out.append(Decay(path=p, before=m.importance, after=after, days=round(days, 1),
                                 half_life=half_life))
        return out

    def decayed(self, m: Memo, region: str) -> tuple[float, float]:
        """A note's importance decayed at `region`'s half-life since its last use, creation or last decay."""
        imp = m.importance if m.importance is not None else 0.5
        half_life, identity = self.region(region)
        marks = [t for t in (self.anchors.get(m.path), m.last_access, m.created) if t is not None]
        days = max(0.0, (self.now - (max(marks) if marks else m.mtime)).total_seconds() / DAY)
        return (imp if identity or half_life <= 0 else round(imp * halved(days, half_life), 2)), days

    def weight_decay(self) -> list[WeightDecay]:
        """Habit and resonance weights pulled toward their baselines, for the time since each was last used.

        Counts from the latest of the last reinforcement or touch, the last write of the note and the last
        sleep that decayed it, so planning twice (or after `resonance decay --apply`) never decays twice.
        """
        kinds = {HABITS_DIR: ("habit", habit_half_life(self.settings)),
                 RESONANCE_DIR: ("resonance", resonance_half_life(self.settings))}
        out = []
        for p, m in sorted(self.live.items()):
            kind = kinds.get(top_folder(p))
            if kind is None or m.weight is None or m.text is None:
                continue
            name, half_life = kind
            since = max(t for t in (m.mtime, self.weight_anchors.get(p), self.world.weight_use.get(p)) if t is not None)
            props = {"weight": m.weight} | ({"baseline": m.baseline} if m.baseline is not None else {})
            change = decay_step(p, props, since, self.now, half_life)
            if abs(change.before - change.after) >= WEIGHT_STEP - 1e-9:
                days = max(0.0, (self.now - since).total_seconds() / DAY)
                out.append(WeightDecay(path=p, kind=name, before=change.before, after=change.after,
                                       baseline=change.baseline, days=round(days, 1), half_life=half_life))
        return out

    def edge_decay(self) -> list[EdgeDecay]:
        """co_retrieved edges weaken with time since the pair was last recalled together (preview only)."""
        out, last_sleep = [], self.world.state.last_sleep
        for a, m in sorted(self.live.items()):
            for b in m.co_listed:
                other = self.live.get(b)
                lives = [hl for hl, ident in (self.region(m.region), self.region(other.region if other else ""))
                         if hl > 0 and not ident]
                key = "|".join(sorted((a, b)))
                used = self.world.pair_last.get(key) or max(
                    [t for t in (m.last_access, other.last_access if other else None) if t], default=None)
                if not lives or used is None:
                    continue
                days = max(0.0, (self.now - used).total_seconds() / DAY)
                prior = max(0.0, (last_sleep - used).total_seconds() / DAY) if last_sleep and last_sleep > used else 0
                before, after = (round(EDGE_WEIGHT * halved(d, min(lives)), 2) for d in (prior, days))
                if before - after >= 0.01:
                    out.append(EdgeDecay(a=a, b=b, before=before, after=after, days=round(days, 1)))
        return out

    # -- triage and prune ------------------------------------------------------------------------------
    def triage(self, prune: bool) -> list[Triage]:
        """Short-term notes by importance boosted by accesses: promote, stay, or prune (unless protected)."""
        order = self.settings.regions.order
        regular = [p for p, m in self.live.items() if not special(p) and p not in self.gone and not m.layer
                   and p in self.vec and m.region != SHORT_TERM and top_folder(p) != SHORT_TERM]
        centroids = {}
        for region in order:
            mine = [self.vec[p] for p in regular if self.live[p].region == region]
            if mine and region != SHORT_TERM:
                centroids[region] = unit_rows([np.mean(unit_rows(mine), axis=0)])[0]
        h = self.world.health
        bridging = set(h.articulation_points) | {
            p for edge in h.bridges for p in edge if self.live.get(p) and self.live[p].degree > 1}
        out = []
        for p, m in sorted(self.live.items()):
            if special(p) or p in self.gone or not (top_folder(p) == SHORT_TERM or m.cortex == SHORT_TERM):
                continue
            imp = m.importance if m.importance is not None else 0.5  # as written: decay comes after
            boost = ACCESS_BOOST * (1 - halved(m.accesses, 3))
            score = round(min(1.0, imp + boost), 3)
            row = partial(Triage, path=p, importance=imp, accesses=m.accesses, score=score)
            if score > self.cfg.promote_above:
                target, why = natural_region(m, self.vec.get(p), centroids, self.cfg.keywords, order)
                if target is None or m.text is None:
                    out.append(row(decision="stay", why=f"worth promoting but {why}"))
                    continue
                if self.region(target)[1]:
                    out.append(row(decision="ask", region=target, why=f"its natural region is {target} ({why})"))
                    continue
                rest = p[len(SHORT_TERM) + 1:] if top_folder(p) == SHORT_TERM else p
                dest = self.moved[p] = self.claim(f"{target}/{rest}")
                self.promoted[p] = target
                out.append(row(decision="promote", region=target, dest=dest,
                               why=f"above {self.cfg.promote_above}; natural region {target} ({why})"))
            elif score < self.cfg.prune_below and prune:
                guards = [why for cond, why in (
                    (self.region(m.region)[1] or self.region(m.cortex or "")[1], "an identity note"),
                    (m.pinned, "pinned"), (p in bridging, "it bridges parts of the graph"),
                    (m.degree >= PRUNE_MIN_CONNECTIONS, f"{m.degree} connections")) if cond]
                if guards:
                    out.append(row(decision="keep", why=f"below {self.cfg.prune_below} but "
                                   + ", ".join(guards)))
                    continue
                dest = self.moved[p] = self.claim(f"{ARCHIVE}/{p}")
                self.gone.add(p)
                out.append(row(decision="prune", dest=dest, why=f"below {self.cfg.prune_below}; "
                               f"{m.degree} connections, not pinned, not a bridge"))
            else:
                out.append(row(decision="stay", why="decays and stays in short-term"))
        return out

    # -- wiring ----------------------------------------------------------------------------------------
    def wires(self, fresh: Sequence[str], apart: set[frozenset[str]]) -> list[Wire]:
        """co_retrieved edges from the activity log and related_to links between close, unlinked notes that share
        distinctive words or a link path through a note that is not a hub (not between the pairs in `apart`,
        already related by supersedes)."""
        out = []
        ok = {p for p in self.live if not special(p) and p not in self.gone} | set(fresh)
        for a, b, n in sorted(self.world.co_pairs):
            if n >= CO_RETRIEVED_MIN and a in ok and b in ok and a in self.live and b in self.live \
                    and b not in self.live[a].co_listed and a not in self.live[b].co_listed:
                out.append(Wire(src=a, rel="co_retrieved", dst=b, why=f"recalled together by {n} distinct queries"))
        cands = sorted(p for p in ok if p in self.vec and not (self.live.get(p) and self.live[p].layer))
        if len(cands) < 2:
            return out
        sims = unit_rows([self.vec[p] for p in cands])
        sims = sims @ sims.T
        pairs = sorted(((float(sims[i, j]), i, j) for i in range(len(cands)) for j in range(i + 1, len(cands))
                        if sims[i, j] >= RELATED_THRESHOLD), reverse=True)
        used: dict[str, int] = {}
        degree = {p: m.degree for p, m in self.live.items()}
        for sim, i, j in pairs:
            a, b = cands[i], cands[j]
            ma, mb = self.live.get(a), self.live.get(b)
            if (ma and b in ma.neighbours) or frozenset((a, b)) in apart \
                    or max(used.get(a, 0), used.get(b, 0)) >= RELATED_PER_NOTE:
                continue
            why = self.related_evidence(a, b, ma.neighbours if ma else (), mb.neighbours if mb else (), degree)
            if why is None:
                continue
            used[a], used[b] = used.get(a, 0) + 1, used.get(b, 0) + 1
            out.append(Wire(src=a, rel="related_to", dst=b, why=f"similar ({sim:.2f}), not linked; {why}"))
        return out

    def related_evidence(self, a: str, b: str, na: Sequence[str], nb: Sequence[str],
                         degree: Mapping[str, int]) -> str | None:
        """Why two similar notes are related beyond their similarity (shared distinctive words, or a link path
        through a note that is not a hub), or None: similarity alone (a shared template) proposes no link."""
        e = self.distinct.evidence(a, b)
        if backed(e):
            return f"share {', '.join(e.shared)} ({e.overlap:.0%} of what is distinctive)"
        via = shared_neighbours(na, nb, degree, PATH_MAX_DEGREE)
        if via:
            return f"both linked with {', '.join(note_name(p) for p in via[:3])}"
        return None


def make_plan(world: World, vectors: Mapping[str, Vector], *, settings: Settings, mode: str, embed: Embed,
              count_tokens: CountTokens) -> Plan:
    """The plan for one sleep in a mode: full (every phase), light (promote and wire) or save (handoff only)."""
    if mode not in MODES:
        raise InvalidRequest(f"unknown sleep mode {mode!r}; modes: {', '.join(MODES)}")
    s = _Sleep(world, vectors, settings)
    full, save = mode == "full", mode == "save"
    merges, supersedes = s.merges() if full else ([], [])
    triage = [] if save else s.triage(prune=full)
    decay = s.decay() if full else []
    weights = s.weight_decay() if full else []
    wires = [] if save else s.wires([m.into for m, _ in merges], {frozenset((x.newer, x.older)) for x in supersedes})
    moved = dict(s.moved)
    links = Links({p for p in world.taken if p.endswith(".md") and p not in moved} | set(moved.values())
                  | {m.into for m, _ in merges})
    d = s.draft
    made = {m.into: d.create("merge", m.into, content, f"merges {len(m.sources)} near-duplicates in "
                             f"{s.live[m.sources[0]].region} (similarity ≥ {m.similarity:.2f}) that agree on "
                             + ("; ".join(m.agree) if m.agree else "every point checked (no number, date, "
                                "negation or name in them)")
                             + (f"; they share {', '.join(m.shared)}" if m.shared else ""))
            for m, content in merges}
    supersedes = [x for x in supersedes if d.edit(
        "supersede", x.newer, "add_relation", "supersedes", links.target(x.older),
        f"newer than {x.older} and similar ({x.similarity:.2f}"
        + (f"; both about {', '.join(x.shared)}" if x.shared else "") + "), but they differ (older ≠ newer): "
        + "; ".join(x.differ))]
    for x in decay:
        if d.edit("decay", x.path, "set_property", "importance", x.after, f"unused {x.days:g} days, half-life "
                  f"{x.half_life:g} days", f"{x.before:.2f}", f"{x.after:.2f}"):
            s.anchors[x.path] = world.now
    for wd in weights:
        if d.edit("decay", wd.path, "set_property", "weight", wd.after, f"{wd.kind} weight toward its baseline "
                  f"{wd.baseline:g}: {wd.days:g} days since last used, half-life {wd.half_life:g} days",
                  f"{wd.before:g}", f"{wd.after:g}"):
            s.weight_anchors[wd.path] = world.now
    for w in wires:
        target = links.target(w.dst)
        if w.rel == "co_retrieved":
            d.edit("wire", w.src, "add_to_list", "co_retrieved", f"[[{target}]]", w.why)
        else:
            d.edit("wire", w.src, "add_relation", "related_to", target, w.why)
    for t in triage:
        memo = s.live[t.path]
        if t.decision == "promote" and t.region and memo.cortex != t.region and not d.edit(
                "promote", t.path, "set_property", "cortex", t.region, t.why, memo.cortex, t.region):
            moved.pop(t.path)
    for m, _ in merges:
        for src in m.sources:
            d.move("merge", src, moved[src], f"merged into {m.into}", (made[m.into],))
    for t in triage:
        if t.dest and t.path in moved:
            d.move("promote" if t.decision == "promote" else "prune", t.path, t.dest, t.why)
    reports: list[TierReport] = []
    if full:
        def claim(path: str) -> str:
            path = s.claim(path)
            links.add(path)
            return path

        sources = [Source(path=moved.get(p, p), title=note_name(moved.get(p, p)), layer=m.layer, body=body_text(m.text),
                          created=m.created, session=m.session, project=m.project,
                          derived_from=tuple(moved.get(x, x) for x in m.derived_from))
                   for p, m in sorted(s.live.items()) if m.layer and m.text is not None and p not in s.gone]
        made_tiers = summarise(sources, today=world.now.date(), embed=embed, count_tokens=count_tokens,
                               link=links, claim=claim)
        for summary in made_tiers:
            d.create("tier", summary.path, summary.content, f"{summary.tier} summary of {len(summary.sources)} "
                     f"notes: {summary.source_tokens} → {summary.tokens} tokens")
        reports = tier_report(made_tiers)
    recent_cut = world.now.timestamp() - PATTERN_DAYS * DAY
    everyday = [p for p, m in s.live.items() if not special(p) and p not in s.gone and not m.layer]
    findings = Findings(
        survey=s.survey(), merges=[m for m, _ in merges], supersedes=supersedes, triage=triage, decay=decay,
        edges=s.edge_decay() if full else [], weights=weights, wires=wires, tiers=reports, warnings=d.warnings,
        health=None if save else world.health,
        patterns=find_patterns(
            [p for p in everyday if (c := s.live[p].created) and c.timestamp() >= recent_cut],
            [p for p in everyday if s.live[p].region != SHORT_TERM
             and not ((c := s.live[p].created) and c.timestamp() >= recent_cut)], s.vec) if full else [])
    state = None
    if d.ops:
        dream = s.claim(f"dreams/{world.now:%Y-%m-%d}.md")
        links.add(dream)
        d.create("dream", dream, dream_log(world.now, mode, findings, links), "the dream log of this sleep")
        anchors = {moved.get(p, p): t for p, t in s.anchors.items()
                   if p not in s.gone and moved.get(p, p) in links.paths}
        weighted = {p: t for p, t in s.weight_anchors.items() if p in links.paths}
        state = State(last_sleep=world.now, anchors=dict(sorted(anchors.items())), conflicts=[],
                      weight_anchors=dict(sorted(weighted.items())))
    left = {t.path: s.importance.get(t.path, t.importance) for t in triage
            if t.decision in ("stay", "keep", "ask")} if triage else {
        p: s.importance.get(p, s.live[p].importance or 0.5) for p in s.survey().short_term}
    left |= {m.into: m.importance for m, _ in merges if s.live[m.sources[0]].region == SHORT_TERM}
    handoff = Handoff(
        curiosities=[links(p) for p, m in sorted(s.live.items())
                     if top_folder(p) == "curiosities" and (m.status or "open").lower() == "open"],
        short_term=[(links(p), imp) for p, imp in sorted(left.items())], conflicts=list(world.state.conflicts))
    current = s.live.get(HANDOFF)
    new_handoff = handoff_text(current.text if current else None, handoff)
    if state is not None or (current is None and save) or (current and new_handoff != current.text):
        d.create("handoff", HANDOFF, new_handoff, "what is unfinished: open questions, short-term notes left, "
                 "conflicts skipped", action="write")
    if state is not None:
        d.create("state", STATE_PATH, state_json(state), "when this sleep ran and where decay counts from",
                 action="write")
    return Plan(id=f"{world.now.astimezone(UTC):%Y%m%dT%H%M%SZ}", mode=mode, created=world.now, ops=d.ops,
                findings=findings, handoff=handoff, state=state)

