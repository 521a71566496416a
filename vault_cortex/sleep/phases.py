"""One sleep's decisions, phase by phase, pure: the survey, merges and supersessions, decay (of importance,
habit and resonance weights, co_retrieved edges), short-term triage and its natural regions, and the wiring
(`wiring.py`). `consolidate.make_plan` drafts them as a plan.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from vault_cortex.config import Settings
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import top_folder, unique_path
from vault_cortex.files.vault import ARCHIVE
from vault_cortex.identity.habits import HABITS_DIR
from vault_cortex.identity.habits import half_life as habit_half_life
from vault_cortex.identity.resonance import RESONANCE_DIR, decay_step
from vault_cortex.identity.resonance import half_life as resonance_half_life
from vault_cortex.recall.edges import CO_RETRIEVED, EdgeWeights
from vault_cortex.recall.rank import halved
from vault_cortex.sleep.agree import agreement, complete_groups
from vault_cortex.sleep.distinct import TEMPLATE_LINES, Distinct, backed
from vault_cortex.sleep.dream import (
    Decay,
    EdgeDecay,
    Merge,
    Supersede,
    Survey,
    Triage,
    WeightDecay,
    Wire,
)
from vault_cortex.sleep.merge import merged_note
from vault_cortex.sleep.operations import (
    STATE_PATH,
    Draft,
    Memo,
    World,
    special,
)
from vault_cortex.sleep.tiers import unit_rows
from vault_cortex.sleep.wiring import wires

Vector = np.ndarray  # unit-length float32 note or sentence vector

SHORT_TERM = "short_term"
DAY = 86400.0
ACCESS_BOOST = 0.3  # the most accesses can add to a short-term note's importance at triage
KEYWORD_WEIGHT = 0.06  # a keyword hit's pull toward its region, on the cosine scale of centroid similarity
EDGE_WEIGHT = EdgeWeights().of(CO_RETRIEVED)
CO_RETRIEVED_MIN = 3  # distinct queries recalling two notes together before a co_retrieved edge is written
RELATED_THRESHOLD = 0.8  # least cosine of two unlinked notes for a suggested related_to link (MiniLM's scale)
PRUNE_MIN_CONNECTIONS = 5  # a note with at least this many links is never pruned
WEIGHT_STEP = 0.01  # least habit or resonance weight change worth a written line; smaller ones accumulate


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

class Sleep:
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

    def wires(self, fresh: Sequence[str], apart: set[frozenset[str]]) -> list[Wire]:
        """The wiring step (`wiring.wires`) over the live notes a sleep keeps and those it makes (`fresh`)."""
        ok = {p for p in self.live if not special(p) and p not in self.gone} | set(fresh)
        return wires(self.live, ok, self.vec, self.distinct, self.world.co_pairs, CO_RETRIEVED_MIN,
                     RELATED_THRESHOLD, apart)
