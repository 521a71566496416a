"""What a sleep found and did, in words: the findings it reports, the dream log, the handoff and patterns.

Pure: values in, markdown out. The dream log (`dreams/YYYY-MM-DD.md`) says what moved, merged, connected
and decayed, and why, with a [[link]] to each note; HANDOFF.md gets one managed section of what is unfinished.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import msgspec
import numpy as np

from vault_cortex.files.yamltext import render_new_note
from vault_cortex.recall.health import GraphHealth
from vault_cortex.sleep.tiers import TierReport, clusters, unit_rows

Link = Callable[[str], str]

HANDOFF_START = "<!-- vault-cortex:sleep:start -->"
HANDOFF_END = "<!-- vault-cortex:sleep:end -->"
LIST_CAP = 20  # entries shown per graph-health list
PATTERN_DAYS = 14  # memories created this recently count as recent for patterns
PATTERN_CLUSTER = 0.55  # similarity joining recent memories into a pattern
PATTERN_RELATED = 0.45  # least similarity of an older memory to a pattern's centre


class Survey(msgspec.Struct, frozen=True, kw_only=True):
    notes: int
    by_region: dict[str, int]  # memories (notes outside habits/, resonance/, curiosities/, dreams/, raw/, …)
    folders: dict[str, int]  # notes in those special folders
    archived: int
    short_term: list[str]  # the short-term backlog
    last_sleep: datetime | None
    events_since: int  # activity-log events since the last sleep
    recalls_since: int
    opens_since: int


class Merge(msgspec.Struct, frozen=True, kw_only=True):
    into: str
    sources: list[str]  # original paths
    archived: list[str]  # where each original moves (archive/<path>)
    similarity: float  # the lowest similarity between two members
    importance: float  # the highest of its members': merging never makes a memory more important
    agree: list[str] = msgspec.field(default_factory=list)  # the checked points every pair agrees on
    shared: list[str] = msgspec.field(default_factory=list)  # distinctive words every pair shares (sleep/distinct.py)


class Supersede(msgspec.Struct, frozen=True, kw_only=True):
    """A newer note that disagrees with an older, similar one: it supersedes it; both stay whole."""

    newer: str
    older: str
    similarity: float
    differ: list[str]  # the points that differ (numbers, dates, negation or correction words, names)
    shared: list[str] = msgspec.field(default_factory=list)  # the distinctive words both are about


class Triage(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    importance: float  # after this sleep's decay
    accesses: int  # since the note was created
    score: float  # importance boosted by the accesses
    decision: str  # promote, stay, prune, keep (a prune candidate protected from pruning), ask (identity)
    why: str
    region: str | None = None
    dest: str | None = None


class Decay(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    before: float
    after: float
    days: float
    half_life: float


class EdgeDecay(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    before: float
    after: float
    days: float


class WeightDecay(msgspec.Struct, frozen=True, kw_only=True):
    """A habit's or resonance concept's weight pulled toward its baseline since it was last used."""

    path: str
    kind: str  # habit or resonance
    before: float
    after: float
    baseline: float
    days: float  # since its last use, last write or last decay
    half_life: float


class Wire(msgspec.Struct, frozen=True, kw_only=True):
    src: str
    rel: str  # co_retrieved or related_to
    dst: str
    why: str


class Pattern(msgspec.Struct, frozen=True, kw_only=True):
    recent: list[str]  # recent memories that cluster
    related: list[tuple[str, float]]  # older long-term memories close to the cluster, with similarity


class Findings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a plan reports besides its operations."""

    survey: Survey
    merges: list[Merge] = msgspec.field(default_factory=list)
    supersedes: list[Supersede] = msgspec.field(default_factory=list)
    triage: list[Triage] = msgspec.field(default_factory=list)
    decay: list[Decay] = msgspec.field(default_factory=list)
    edges: list[EdgeDecay] = msgspec.field(default_factory=list)
    weights: list[WeightDecay] = msgspec.field(default_factory=list)
    wires: list[Wire] = msgspec.field(default_factory=list)
    patterns: list[Pattern] = msgspec.field(default_factory=list)
    health: GraphHealth | None = None
    tiers: list[TierReport] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


class Handoff(msgspec.Struct, frozen=True, kw_only=True):
    """What is unfinished, as wikilinks: open questions, short-term notes left, conflicts skipped."""

    curiosities: list[str]
    short_term: list[tuple[str, float]]
    conflicts: list[str]


def find_patterns(recent: Sequence[str], older: Sequence[str], vecs: Mapping[str, np.ndarray]) -> list[Pattern]:
    """Clusters among recent memories, each with the older memories most like it (for review, never merged)."""
    recent = [p for p in recent if p in vecs]
    older = [p for p in older if p in vecs]
    if len(recent) < 2:
        return []
    out = []
    for members, _ in clusters(recent, unit_rows([vecs[p] for p in recent]), PATTERN_CLUSTER):
        centre = unit_rows([np.mean(unit_rows([vecs[p] for p in members]), axis=0)])[0]
        sims = sorted(((round(float(np.dot(centre, vecs[p])), 3), p) for p in older), reverse=True)
        out.append(Pattern(recent=members, related=[(p, s) for s, p in sims[:3] if s >= PATTERN_RELATED]))
    return out


def _survey_markdown(s: Survey) -> list[str]:
    regions = ", ".join(f"{r} {n}" for r, n in s.by_region.items()) or "none"
    folders = ", ".join(f"{r if r.endswith('.md') else r + '/'} {n}" for r, n in s.folders.items()) or "none"
    since = f"since the last sleep ({s.last_sleep:%Y-%m-%d %H:%M})" if s.last_sleep else "so far (first sleep)"
    return ["## Survey", f"- {s.notes} notes. Memories by region: {regions}.",
            f"- Other folders: {folders}; {s.archived} archived.",
            f"- Short-term backlog: {len(s.short_term)} notes.",
            f"- Activity {since}: {s.events_since} events ({s.recalls_since} recalls, {s.opens_since} opens)."]


def _health_markdown(h: GraphHealth, link: Link) -> list[str]:
    return ["", "## Graph health", f"- {h.notes} notes, {h.edges} linked pairs, {h.components} components "
            f"(largest {h.largest_component}).",
            _listed("Hubs", [f"{link(x.path)} ({x.degree})" for x in h.hubs]),
            _listed("Islands", [link(x) for x in h.islands]),
            _listed("Bridges", [f"{link(a)} — {link(b)}" for a, b in h.bridges]),
            _listed("Articulation points", [link(x) for x in h.articulation_points])]


def findings_markdown(f: Findings, link: Link) -> str:
    """The findings as markdown sections, each note written with `link`."""
    out = _survey_markdown(f.survey)
    if f.merges:
        out += ["", "## Merged"]
        out += [f"- {link(m.into)} ← {', '.join(link(x) for x in m.archived)}: near-duplicates (similarity ≥ "
                f"{m.similarity:.2f}); importance {m.importance:.2f}; originals moved to archive."
                + (f" They agree on: {'; '.join(m.agree)}." if m.agree else "")
                + (f" They share: {', '.join(m.shared)}." if m.shared else "") for m in f.merges]
    if f.supersedes:
        out += ["", "## Superseded (both kept)"]
        out += [f"- {link(x.newer)} `supersedes` {link(x.older)}: similar ({x.similarity:.2f}"
                + (f"; both about {', '.join(x.shared)}" if x.shared else "")
                + f") but they differ: {'; '.join(x.differ)}." for x in f.supersedes]
    for decision, heading in (("promote", "Promoted"), ("prune", "Pruned to archive"),
                              ("keep", "Kept though unimportant"), ("stay", "Stayed in short-term")):
        rows = [t for t in f.triage if t.decision == decision]
        if rows:
            out += ["", f"## {heading}"]
            out += [f"- {link(t.dest or t.path)}" + (f" → {t.region}" if decision == "promote" else "")
                    + f": score {t.score:.2f} (importance {t.importance:.2f}, {t.accesses} accesses); {t.why}"
                    for t in rows]
    asks = [t for t in f.triage if t.decision == "ask"]
    if asks:
        out += ["", "## Questions for you"]
        out += [f"- Does {link(t.path)} belong in {t.region}? {t.why}. Identity is yours to move; sleep never "
                "moves a note there." for t in asks]
    if f.wires:
        out += ["", "## Connected"]
        out += [f"- {link(w.src)} `{w.rel}` {link(w.dst)}: {w.why}" for w in f.wires]
    if f.decay or f.edges or f.weights:
        out += ["", "## Decayed"]
        out += [f"- {link(d.path)}: importance {d.before:.2f} → {d.after:.2f} ({d.days:.1f} days unused, "
                f"half-life {d.half_life:g} days)" for d in f.decay]
        out += [f"- {link(w.path)}: {w.kind} weight {w.before:g} → {w.after:g}, toward its baseline {w.baseline:g} "
                f"({w.days:.1f} days since last used, half-life {w.half_life:g} days)" for w in f.weights]
        out += [f"- edge {link(e.a)} — {link(e.b)} (co_retrieved): weight {e.before:.2f} → {e.after:.2f} "
                f"({e.days:.1f} days since recalled together)" for e in f.edges]
    if f.patterns:
        out += ["", "## Patterns (for review)"]
        for p in f.patterns:
            older = ", ".join(f"{link(x)} ({sim:.2f})" for x, sim in p.related) or "nothing older yet"
            out.append(f"- {', '.join(link(x) for x in p.recent)} — relates to: {older}")
    if f.health is not None:
        out += _health_markdown(f.health, link)
    if f.tiers:
        out += ["", "## Summaries", "| tier | summaries | source tokens | summary tokens | compression |",
                "|---|---|---|---|---|"]
        out += [f"| {t.tier} | {len(t.summaries)} | {t.source_tokens} | {t.summary_tokens} | {t.ratio:.1f}× |"
                for t in f.tiers]
        out += [f"- {link(p)}" for t in f.tiers for p in t.summaries]
    if f.warnings:
        out += ["", "## Left alone"] + [f"- {w}" for w in f.warnings]
    return "\n".join(out) + "\n"


def _listed(name: str, items: Sequence[str]) -> str:
    if not items:
        return f"- {name}: none."
    more = f" … and {len(items) - LIST_CAP} more" if len(items) > LIST_CAP else ""
    return f"- {name} ({len(items)}): {', '.join(items[:LIST_CAP])}{more}."


def dream_log(now: datetime, mode: str, findings: Findings, link: Link) -> str:
    """The dream log note: frontmatter, a title, the findings and a pointer to the handoff."""
    body = (f"# Sleep {now:%Y-%m-%d} ({mode})\n\nWhat this sleep moved, merged, connected and decayed, and why. "
            f"Nothing was deleted: moved notes are in `archive/`. Unfinished work is in [[HANDOFF]].\n\n"
            + findings_markdown(findings, link))
    return render_new_note(title=None, body=body, properties={
        "created": now.strftime("%Y-%m-%dT%H:%M"), "tags": ["dream", "sleep"], "mode": mode})


def dream_addendum(content: str, conflicts: Sequence[str]) -> str:
    """The dream log with the operations skipped at apply time appended."""
    if not conflicts:
        return content
    return content.rstrip("\n") + "\n\n## Skipped when applied\n" + "".join(f"- {c}\n" for c in conflicts)


def handoff_section(h: Handoff) -> str:
    lines = [HANDOFF_START, "## Left open by sleep"]
    if not (h.curiosities or h.short_term or h.conflicts):
        lines.append("Nothing is left open.")
    if h.curiosities:
        lines += ["", "### Open questions"] + [f"- {c}" for c in h.curiosities]
    if h.short_term:
        lines += ["", "### Short-term notes left"] + [f"- {n} (importance {i:.2f})" for n, i in h.short_term]
    if h.conflicts:
        lines += ["", "### Skipped at the last sleep (changed by hand since planning)"]
        lines += [f"- {c}" for c in h.conflicts]
    return "\n".join(lines + [HANDOFF_END]) + "\n"


def handoff_text(current: str | None, h: Handoff) -> str:
    """HANDOFF.md with its managed section written or replaced; the rest of the file stays byte for byte."""
    if current is None:
        return "# Handoff\n\n" + handoff_section(h)
    nl = "\r\n" if "\r\n" in current else "\n"
    section = handoff_section(h).replace("\n", nl)
    start, end = current.find(HANDOFF_START), current.find(HANDOFF_END)
    if 0 <= start < end:
        return current[:start] + section.removesuffix(nl) + current[end + len(HANDOFF_END):]
    sep = "" if current.endswith("\n") or not current else nl
    return current + sep + nl + section
