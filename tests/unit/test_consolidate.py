"""Sleep planning, pure: merge, triage, decay, wiring, prune guards, tiers, the dream log and handoff, transcripts.

Notes are built in memory with hand-made vectors (one axis per topic), so every decision here is exact.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.config import SleepSettings, parse_settings
from vault_cortex.files.edit import get_frontmatter_span
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.vault import content_hash
from vault_cortex.importers.transcript import parse_transcript, render
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import health
from vault_cortex.sleep.consolidate import make_plan
from vault_cortex.sleep.cycle import next_nightly
from vault_cortex.sleep.dream import Handoff, handoff_text
from vault_cortex.sleep.operations import (
    HANDOFF,
    STATE_PATH,
    Memo,
    Plan,
    State,
    World,
    apply_edit,
    plan_markdown,
)
from vault_cortex.sleep.phases import natural_region
from vault_cortex.sleep.tiers import Source, select, sentences, summarise, unit_rows

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SETTINGS = parse_settings({})
FAKE = FakeEmbedder()
AXES = ["soul", "personality", "artistic", "linguistic", "scientific", "long_term", "a", "b", "c", "d"]
TEMPLATE = Path(__file__).resolve().parents[2] / "vault_template"


def axis(name: str, wobble: float = 0.0, other: str = "d") -> np.ndarray:
    v = np.zeros(len(AXES), dtype=np.float32)
    v[AXES.index(name)] = 1.0
    v[AXES.index(other)] += wobble
    return v / np.linalg.norm(v)


def memo(path: str, body: str = "Some text about a thing that happened.", *, importance: float | None = 0.5,
         cortex: str | None = None, created: datetime | None = None, fm: str = "", **kw: object) -> Memo:
    lines = [f"cortex: {cortex}" if cortex else "", f"importance: {importance}" if importance is not None else "",
             f"created: {(created or NOW - timedelta(days=2)):%Y-%m-%dT%H:%M}", fm]
    text = "---\n" + "".join(line + "\n" for line in lines if line) + "---\n" + body + "\n"
    top = path.split("/")[0] if "/" in path else ""
    region = cortex if cortex in SETTINGS.regions.order else top if top in SETTINGS.regions.order else "short_term"
    return Memo(path=path, title=path.rsplit("/", 1)[-1][:-3], region=region, hash=content_hash(text.encode()),
                mtime=NOW - timedelta(days=1), text=text, cortex=cortex, importance=importance,
                created=created or NOW - timedelta(days=2), **kw)  # type: ignore[arg-type]


def world(notes: list[Memo], links: list[tuple[str, str]] = (), **kw: object) -> World:  # type: ignore[assignment]
    paths = [m.path for m in notes]
    graph = Graph(paths, [(a, b, "links_to") for a, b in links])
    degree = {p: graph.degree(p) for p in paths}
    notes = [Memo(**{**{f: getattr(m, f) for f in m.__struct_fields__}, "degree": degree[m.path],  # type: ignore[arg-type]
                     "neighbours": tuple(graph.neighbours(m.path))}) for m in notes]
    return World(now=kw.pop("now", NOW), notes=tuple(notes), taken=frozenset(paths),  # type: ignore[arg-type]
                 health=health(graph, []), **kw)  # type: ignore[arg-type]


def plan(w: World, vectors: dict[str, np.ndarray], mode: str = "full", settings: object = SETTINGS) -> Plan:
    return make_plan(w, vectors, settings=settings, mode=mode, embed=FAKE.embed,  # type: ignore[arg-type]
                     count_tokens=FAKE.count_tokens)


def simulate(w: World, p: Plan) -> dict[str, str]:
    """Apply a plan in memory, checking every hash it names, as `journal` does on disk."""
    files = {m.path: m.text or "" for m in w.notes}
    for op in p.ops:
        for path, h in op.hashes.items():
            if path == STATE_PATH:
                continue
            assert (content_hash(files[path].encode()) if path in files else None) == h, (op.step, path)
        if op.action == "move":
            assert op.dest is not None
            files[op.dest] = files.pop(op.path)
        elif op.content is not None:
            files[op.path] = op.content
        else:
            assert op.key is not None
            files[op.path] = apply_edit(files[op.path], op.action, op.key, op.value)
        target = op.dest or op.path
        if target != STATE_PATH:
            assert content_hash(files[target].encode()) == op.result or op.phase == "handoff"
    files.pop(STATE_PATH, None)
    return files


def fm_of(text: str) -> str:
    span = get_frontmatter_span(text)
    assert span is not None
    return text[span[0]:span[1]]


REFS = {f"{r}/Ref {r}.md": axis(r) for r in AXES[:6]}


def refs() -> list[Memo]:
    return [memo(p, importance=None, created=NOW - timedelta(days=300)) for p in REFS]


# -- settings ---------------------------------------------------------------------------------------------

def test_sleep_defaults_are_the_template_values() -> None:
    raw = tomllib.loads((TEMPLATE / ".cortex" / "config.toml").read_text(encoding="utf-8"))
    assert parse_settings(raw).sleep == SleepSettings() == parse_settings({}).sleep
    assert parse_settings({"sleep": {"merge_threshold": "0.9"}}).sleep.merge_threshold == 0.9  # env: strings


def test_next_nightly() -> None:
    on = parse_settings({"sleep": {"nightly": True, "nightly_at": "03:30"}})
    assert next_nightly(SETTINGS, NOW) is None
    assert next_nightly(on, NOW) == datetime(2026, 12, 1, 3, 30, tzinfo=UTC)
    assert next_nightly(on, datetime(2026, 12, 1, 1, 0, tzinfo=UTC)) == datetime(2026, 12, 1, 3, 30, tzinfo=UTC)


# -- merge ------------------------------------------------------------------------------------------------

def test_three_near_duplicates_merge_at_their_highest_importance() -> None:
    bodies = ["The Pi's SD card died. Backups had failed silently.",
              "The Pi's SD card died. Backups had failed silently. We lost two days of readings.",
              "The Pi's SD card died. Backups had failed silently. Boot from a disk next time."]
    notes = [memo(f"short_term/SD {i}.md", body, importance=0.5, created=NOW - timedelta(days=5 - i))
             for i, body in enumerate(bodies)]
    vecs = {m.path: axis("a", 0.05 * i) for i, m in enumerate(notes)} | REFS
    p = plan(world([*notes, *refs()]), vecs)
    (merge,) = p.findings.merges
    # the highest member importance, decayed to now (the newest, 3 days at a 14-day half-life)
    assert merge.importance == 0.43 and sorted(merge.sources) == [m.path for m in notes]
    assert merge.agree == ["Pi", "SD"]
    create = next(op for op in p.ops if op.phase == "merge" and op.action == "create")
    assert f"created: {NOW - timedelta(days=5):%Y-%m-%dT%H:%M}\n" in (create.content or "")  # the earliest, kept
    moves = [op for op in p.ops if op.phase == "merge" and op.action == "move"]
    assert {op.dest for op in moves} == {f"archive/{m.path}" for m in notes}
    assert all(op.requires == (create.step,) and op.step > create.step for op in moves)
    content = create.content or ""
    for sentence in ("SD card died", "Backups had failed silently", "lost two days", "Boot from a disk"):
        assert content.count(sentence) == 1, sentence
    assert all(f'"[[archive/short_term/SD {i}]]"' in fm_of(content) for i in range(3))
    files = simulate(world([*notes, *refs()]), p)
    assert all(f"archive/{m.path}" in files and m.path not in files for m in notes)


@pytest.mark.parametrize(("a", "b", "merged"), [(0.8, 0.4, 0.8), (0.9, 0.9, 0.9), (0.3, 0.5, 0.5)])
def test_pair_merge_importance(a: float, b: float, merged: float) -> None:
    """A merge is never more important than its most important member: saying a thing twice is not evidence."""
    notes = [memo("long_term/A.md", "The tank sensor reads the water level.", importance=a),
             memo("long_term/B.md", "The tank sensor reads the water level.", importance=b)]
    p = plan(world(notes), {"long_term/A.md": axis("a"), "long_term/B.md": axis("a", 0.1)})
    assert [m.importance for m in p.findings.merges] == [merged]


def test_identity_pinned_and_layered_notes_never_merge() -> None:
    notes = [memo("soul/A.md", importance=0.9), memo("soul/B.md", importance=0.9),
             memo("long_term/C.md", fm="pinned: true"), memo("long_term/D.md", fm="layer: daily")]
    notes = [Memo(**{**{f: getattr(m, f) for f in m.__struct_fields__}, "pinned": m.path.endswith("C.md"),  # type: ignore[arg-type]
                     "layer": "daily" if m.path.endswith("D.md") else None}) for m in notes]
    p = plan(world(notes), {m.path: axis("a") for m in notes})
    assert p.findings.merges == []


# -- triage and prune -------------------------------------------------------------------------------------

def test_triage_promotes_decays_and_prunes_with_care() -> None:
    notes = [
        memo("short_term/Measured wake current.md", "Measured 48 mA.", importance=0.9),
        memo("short_term/Middling.md", importance=0.5),
        memo("short_term/Forgettable.md", importance=0.1),
        memo("short_term/Pinned.md", importance=0.1, pinned=True),
        memo("short_term/Bridge.md", importance=0.1),
        memo("short_term/Soulful.md", importance=0.1, cortex="soul"),
        memo("root note.md", importance=0.95, cortex="short_term"),
        *refs(),
    ]
    links = [("short_term/Bridge.md", "soul/Ref soul.md"), ("short_term/Bridge.md", "artistic/Ref artistic.md")]
    vecs = REFS | {"short_term/Measured wake current.md": axis("scientific", 0.3),
                   "root note.md": axis("artistic", 0.2)}
    vecs |= {m.path: axis(x) for m, x in zip(notes[1:6], "abcda", strict=True)}
    p = plan(world(notes, links), vecs)
    got = {t.path: (t.decision, t.region, t.dest) for t in p.findings.triage}
    promoted = ("promote", "scientific", "scientific/Measured wake current.md")
    assert got["short_term/Measured wake current.md"] == promoted
    assert got["root note.md"] == ("promote", "artistic", "artistic/root note.md")
    assert got["short_term/Middling.md"][0] == "stay"
    assert got["short_term/Forgettable.md"] == ("prune", None, "archive/short_term/Forgettable.md")
    keep = {t.path: t.why for t in p.findings.triage if t.decision == "keep"}
    assert "pinned" in keep["short_term/Pinned.md"]
    assert "bridges" in keep["short_term/Bridge.md"]
    assert "identity" in keep["short_term/Soulful.md"]
    files = simulate(world(notes, links), p)
    assert "cortex: scientific" in files["scientific/Measured wake current.md"]
    assert "cortex: artistic" in files["artistic/root note.md"]
    assert "archive/short_term/Forgettable.md" in files
    dream = next(v for k, v in files.items() if k.startswith("dreams/"))
    assert "[[archive/short_term/Forgettable]]" in dream and "[[Measured wake current]]" in dream


def test_accesses_boost_a_note_over_the_promotion_line() -> None:
    notes = [memo("short_term/Used.md", importance=0.6, accesses=6), memo("short_term/Unused.md", importance=0.6),
             *refs()]
    vecs = REFS | {"short_term/Used.md": axis("long_term", 0.2), "short_term/Unused.md": axis("long_term", 0.2)}
    got = {t.path: t.decision for t in plan(world(notes), vecs, mode="light").findings.triage}
    assert got == {"short_term/Used.md": "promote", "short_term/Unused.md": "stay"}


def test_natural_region_prefers_own_cortex_then_centroids_leaned_by_keywords() -> None:
    centroids = {r: axis(r) for r in ("soul", "linguistic", "scientific")}
    order = SETTINGS.regions.order
    kw = SleepSettings().keywords
    own = memo("short_term/x.md", cortex="linguistic")
    assert natural_region(own, axis("scientific"), centroids, kw, order)[0] == "linguistic"
    plain = memo("short_term/y.md", "I measured the voltage in an experiment and read the datasheet.")
    between = unit_rows([axis("soul") + axis("scientific")])[0]
    region, why = natural_region(plain, between, centroids, kw, order)
    assert region == "scientific" and "keywords: measured, experiment, datasheet, voltage" in why
    assert natural_region(memo("short_term/z.md", "nothing"), None, {}, kw, order)[0] is None


# -- decay -------------------------------------------------------------------------------------------------

def test_decay_per_region_half_life_identity_exempt_and_idempotent() -> None:
    old = NOW - timedelta(days=180)
    notes = [memo("scientific/Old.md", importance=0.8, created=old), memo("soul/Core.md", importance=0.8, created=old),
             memo("long_term/Fresh.md", importance=0.8, created=NOW - timedelta(hours=3))]
    p = plan(world(notes), {})
    assert [(d.path, d.before, d.after) for d in p.findings.decay] == [("scientific/Old.md", 0.8, 0.4)]
    op = next(o for o in p.ops if o.phase == "decay")
    assert (op.key, op.value, op.before, op.after) == ("importance", 0.4, "0.80", "0.40")
    assert p.state is not None and set(p.state.anchors) == {"scientific/Old.md"}
    files = simulate(world(notes), p)
    assert files["scientific/Old.md"].replace("importance: 0.4\n", "importance: 0.8\n") == notes[0].text
    again = [memo("scientific/Old.md", importance=0.4, created=old), *notes[1:]]
    assert plan(world(again, state=p.state, now=NOW + timedelta(minutes=1)), {}).ops == []


def test_small_decay_accumulates_until_it_reaches_a_hundredth() -> None:
    notes = [memo("long_term/Slow.md", importance=0.5, created=NOW - timedelta(days=3))]
    p = plan(world(notes), {})
    assert p.findings.decay == [] and p.ops == []
    later = plan(world(notes, now=NOW + timedelta(days=30)), {})
    assert [d.after for d in later.findings.decay] == [0.47]


# -- wiring -------------------------------------------------------------------------------------------------

def test_co_retrieved_and_related_to_are_one_line_edits() -> None:
    notes = [memo("long_term/A.md", importance=None), memo("long_term/B.md", importance=None),
             memo("long_term/C.md", "The tank sensor drifts in cold weather.", importance=None),
             memo("long_term/D.md", "In cold weather the tank sensor drifts; recalibrate it.", importance=None,
                  co_listed=("long_term/E.md",)),
             memo("long_term/E.md", importance=None)]
    pairs = (("long_term/A.md", "long_term/B.md", 3), ("long_term/A.md", "long_term/C.md", 2),
             ("long_term/D.md", "long_term/E.md", 9))
    vecs = {"long_term/A.md": axis("a"), "long_term/B.md": axis("b"), "long_term/C.md": axis("c"),
            "long_term/D.md": axis("c", 0.62, "b"), "long_term/E.md": axis("d")}
    w = world(notes, co_pairs=pairs)
    p = plan(w, vecs, settings=parse_settings({"sleep": {"merge_threshold": 0.95}}))  # C and D stay two notes
    assert [(x.src, x.rel, x.dst) for x in p.findings.wires] == [
        ("long_term/A.md", "co_retrieved", "long_term/B.md"), ("long_term/C.md", "related_to", "long_term/D.md")]
    files = simulate(w, p)
    for path, added in (("long_term/A.md", ["co_retrieved:", '  - "[[B]]"']),
                        ("long_term/C.md", ["relations:", "  related_to:", '    - "[[D]]"'])):
        before, after = (notes[[m.path for m in notes].index(path)].text or "").splitlines(), files[path].splitlines()
        ops = difflib.SequenceMatcher(a=before, b=after).get_opcodes()
        assert [tag for tag, *_ in ops if tag != "equal"] == ["insert"]  # only added lines, nothing else moves
        assert [after[j] for tag, _, _, j1, j2 in ops if tag == "insert" for j in range(j1, j2)] == added


PAGE = """Plugin ID: `{id}`
Developed by: [[{author}]]
Mobile compatible: [[Mobile-compatible plugins|Yes]]
Links: the GitHub repository or Open in Obsidian

{text}

%% ----- Do not edit anything above this line ----- %%
# This note in GitHub
Edit In GitHub | Copy this note | Download this vault"""


def test_pages_of_one_template_close_in_vectors_are_neither_merged_superseded_nor_wired() -> None:
    """Similarity from a shared skeleton is no evidence: what each page says of its own decides."""
    pages = [memo(f"Plugins/{i}.md", PAGE.format(id=i, author=a, text=t), importance=None)
             for i, a, t in (("calendar", "Mira", "Shows a small month calendar in the sidebar."),
                             ("tags", "Jon", "Rename and merge tags from the tag pane."),
                             ("kanban", "Osei", "Turns a list into a board of cards."),
                             ("sprint", "Lucia", "Counts the words written in a timed sprint."),
                             ("pdf", "Hana", "Extracts the highlights of a PDF into a note."))]
    vecs = {m.path: axis("a", 0.1 * i) for i, m in enumerate(pages)}  # all above 0.95 with each other
    p = plan(world(pages), vecs)
    assert p.findings.merges == [] and p.findings.supersedes == []
    assert [w for w in p.findings.wires if w.rel == "related_to"] == []
    assert not [op for op in p.ops if op.path.startswith("Plugins/")]


PERSON = """- GitHub: [{handle}](https://github.com/{handle})
%% Feel free to add a bio below this comment %%
## Author of
%% Begin Hub: Released contributions %%
### Plugins
- [[{plugin}]], which syncs reading highlights into daily notes
%% End Hub: Released contributions %%
## Sponsor this author
# This note in GitHub"""


def test_two_pages_of_one_template_are_never_merged_even_when_they_say_the_same() -> None:
    """Two authors of one plugin: their pages share the plugin and agree on every point, but a template makes one
    page per thing, so they are two people, not one written twice."""
    people = [memo(f"People/{h}.md", PERSON.format(handle=h, plugin="Highlights Sync"), importance=None)
              for h in ("0xbolt", "0xpapercut")]
    others = [memo(f"People/{h}.md", PERSON.format(handle=h, plugin=f"Plugin {h}"), importance=None)
              for h in ("ann", "bo", "cy")]
    vecs = {m.path: axis("a", 0.01 * i) for i, m in enumerate([*people, *others])}
    p = plan(world([*people, *others]), vecs)
    assert p.findings.merges == []


def test_related_to_needs_shared_distinctive_words_or_a_link_path() -> None:
    notes = [memo("long_term/Pump.md", "The greenhouse pump primes slowly after a dry night.", importance=None),
             memo("long_term/Priming.md", "Priming the greenhouse pump after a dry night takes a minute.",
                  importance=None),
             memo("long_term/Bread.md", "Rye bread needs a long cold proof.", importance=None),
             memo("long_term/Valves.md", "Brass valves seize in winter.", importance=None),
             memo("long_term/Workshop.md", "Links to [[Bread]] and [[Valves]].", importance=None),
             memo("long_term/Other.md", "Something else entirely, about tea.", importance=None)]
    vecs = {"long_term/Pump.md": axis("a"), "long_term/Priming.md": axis("a", 0.6, "b"),
            "long_term/Bread.md": axis("c"), "long_term/Valves.md": axis("c", 0.6, "b"),
            "long_term/Workshop.md": axis("d"), "long_term/Other.md": axis("c", 0.6, "d")}
    w = world(notes, [("long_term/Workshop.md", "long_term/Bread.md"),
                      ("long_term/Workshop.md", "long_term/Valves.md")])
    p = plan(w, vecs, settings=parse_settings({"sleep": {"merge_threshold": 0.95}}))
    wires = {(x.src, x.dst): x.why for x in p.findings.wires if x.rel == "related_to"}
    assert set(wires) == {("long_term/Priming.md", "long_term/Pump.md"), ("long_term/Bread.md", "long_term/Valves.md")}
    assert "share " in wires["long_term/Priming.md", "long_term/Pump.md"]
    assert "greenhouse" in wires["long_term/Priming.md", "long_term/Pump.md"]
    assert "both linked with Workshop" in wires["long_term/Bread.md", "long_term/Valves.md"]


# -- the plan as a whole ----------------------------------------------------------------------------------

def test_hashes_chain_through_the_plan_and_modes_limit_phases() -> None:
    notes = [memo("short_term/Hot.md", importance=0.95), memo("short_term/Cold.md", importance=0.05),
             memo("scientific/Old.md", importance=0.8, created=NOW - timedelta(days=400)), *refs(),
             memo(HANDOFF, "# Handoff\n\nMine.", importance=None),
             memo("curiosities/Why.md", "Why?", importance=None, status="open")]
    vecs = REFS | {"short_term/Hot.md": axis("scientific", 0.1), "short_term/Cold.md": axis("b")}
    w = world(notes)
    full = plan(w, vecs)
    current: dict[str, str | None] = {m.path: m.hash for m in notes}
    for op in full.ops:
        for path, h in op.hashes.items():
            assert h == current.get(path), op.step
        if op.dest:
            current[op.path] = None
        current[op.dest or op.path] = op.result
    assert [op.phase for op in full.ops][-3:] == ["dream", "handoff", "state"]
    light = plan(w, vecs, mode="light")
    assert "promote" in {op.phase for op in light.ops} <= {"promote", "wire", "dream", "handoff", "state"}
    save = plan(w, vecs, mode="save")
    assert [op.phase for op in save.ops] == ["handoff"]
    text = save.ops[0].content or ""
    assert text.startswith("---\n") and "\n# Handoff\n\nMine.\n\n<!-- vault-cortex:sleep:start -->" in text
    assert "[[Why]]" in text and "[[Hot]]" in text
    md = plan_markdown(full)
    assert "move `short_term/Cold.md` → `archive/short_term/Cold.md`" in md and "## Operations" in md
    assert json.loads(json.dumps(msgspec_builtins(full)))["ops"][0]["hashes"]


def msgspec_builtins(p: Plan) -> object:
    import msgspec

    return msgspec.to_builtins(p)


def test_handoff_section_is_replaced_in_place_and_keeps_line_endings() -> None:
    h = Handoff(curiosities=["[[Q]]"], short_term=[("[[N]]", 0.5)], conflicts=[])
    crlf = "# Handoff\r\n\r\nMy own words.\r\n"
    once = handoff_text(crlf, h)
    assert once.startswith(crlf) and "\n" not in once.replace("\r\n", "")
    twice = handoff_text(once + "After.\r\n", Handoff(curiosities=[], short_term=[], conflicts=["`x.md`: changed"]))
    assert twice.startswith(crlf) and twice.endswith("After.\r\n") and "[[Q]]" not in twice and "`x.md`" in twice
    assert handoff_text(None, h).startswith("# Handoff\n\n<!-- vault-cortex:sleep:start -->")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["short_term", "long_term", "scientific", "soul", "habits"]),
                          st.floats(0, 1), st.sampled_from(["a", "b", "c", "soul", "scientific"]),
                          st.integers(0, 400), st.integers(0, 8)), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=8))
def test_plans_never_lose_a_note_and_touch_only_what_they_name(spec: list[tuple[str, float, str, int, int]],
                                                              edges: list[tuple[int, int]]) -> None:
    notes = [memo(f"{folder}/N{i}.md", f"Note {i} about {topic}.", importance=round(imp, 2),
                  created=NOW - timedelta(days=age), accesses=uses)
             for i, (folder, imp, topic, age, uses) in enumerate(spec)]
    paths = [m.path for m in notes]
    links = [(paths[a], paths[b]) for a, b in edges if a < len(paths) and b < len(paths) and a != b]
    vecs = {m.path: axis(t, 0.05 * i) for i, (m, (_, _, t, _, _)) in enumerate(zip(notes, spec, strict=True))}
    w = world(notes, links)
    p = plan(w, vecs)
    files = simulate(w, p)
    assert len(files) >= len(notes)
    touched = {x for op in p.ops for x in (op.path, op.dest) if x}
    for m in notes:
        assert m.path in touched or files.get(m.path) == m.text
    bodies = [body_text(text) for text in files.values()]
    for m in notes:  # every body survives byte for byte: kept, edited (frontmatter only) or moved to archive/
        assert body_text(m.text or "") in bodies


# -- tiers ---------------------------------------------------------------------------------------------------

def test_sentences_skip_structure_tool_noise_and_questions() -> None:
    body = ("# Title\n\nThe first real sentence is here. The second one follows it.\n\n```\ncode = 1\n```\n"
            "- A list item that is long enough.\n*(tool: Bash `ls` → 3 lines of output)*\nfollows:: [[X]]\n"
            "Is this a question worth keeping?\n| a | b |\n")
    assert sentences(body) == ["The first real sentence is here.", "The second one follows it.",
                               "A list item that is long enough."]


def test_select_keeps_within_budget_and_prefers_central_diverse_sentences() -> None:
    texts = ["alpha beta gamma delta", "alpha beta gamma epsilon", "zeta eta theta iota", "alpha beta kappa"]
    vecs = unit_rows([axis("a"), axis("a", 0.1), axis("b"), axis("a", 0.3)])
    picked = select(texts, vecs, budget=12, count_tokens=FAKE.count_tokens)
    assert picked and sum(FAKE.count_tokens(texts[i]) for i in picked) <= 12 and 0 in picked or 1 in picked


def test_summaries_cascade_over_closed_periods_with_lineage() -> None:
    def raw(n: int, day: int, session: str) -> Source:
        return Source(path=f"raw/{session} {n}.md", title=f"{session} {n}", layer="raw", session=session,
                      created=datetime(2026, 10, day, 9, n, tzinfo=UTC),
                      body=f"The collector now batches writes number {n}. The backup uses a busy timeout of {n} s.")
    sources = [raw(1, 5, "s1"), raw(2, 5, "s1"), raw(1, 6, "s2"), raw(1, 29, "open")]
    taken: set[str] = set()

    def claim(path: str) -> str:
        taken.add(path)
        return path

    today = datetime(2026, 10, 29, tzinfo=UTC).date()  # the 29th is still open
    made = summarise(sources, today=today, embed=FAKE.embed, count_tokens=FAKE.count_tokens,
                     link=lambda p: f"[[{p[:-3]}]]", claim=claim)
    assert [(s.tier, s.path) for s in made] == [
        ("session", "summaries/session/open (session).md"), ("session", "summaries/session/s1 (session).md"),
        ("session", "summaries/session/s2 (session).md"), ("daily", "summaries/daily/2026-10-05 (daily).md"),
        ("daily", "summaries/daily/2026-10-06 (daily).md"), ("weekly", "summaries/weekly/2026-W41 (weekly).md")]
    s1 = made[1]
    assert s1.sources == ("raw/s1 1.md", "raw/s1 2.md") and '"[[raw/s1 1]]"' in s1.content
    assert f"tokens: {s1.tokens}\n" in s1.content and s1.tokens == FAKE.count_tokens(s1.content.split("---\n")[2])
    assert "layer: session" in s1.content and "layer: weekly" in made[-1].content


# -- transcripts ------------------------------------------------------------------------------------------

def test_jsonl_transcript_keeps_prompts_and_answers_and_reduces_tools_to_a_line() -> None:
    lines = [
        {"type": "summary", "summary": "x"},
        {"type": "user", "timestamp": "2026-10-05T09:00:00Z", "message": {"content": "Fix the tests please."}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Running them."},
                                                      {"type": "tool_use", "id": "t1", "name": "Bash",
                                                       "input": {"command": "pytest -q"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "E" * 50 + "\nline 2\nline 3"}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "All green now."}]}},
        {"type": "user", "isMeta": True, "message": {"content": "<command-name>/clear</command-name>"}},
        {"type": "user", "timestamp": "2026-10-05T09:05:00Z",
         "message": {"content": [{"type": "text", "text": "Thanks!"}]}},
        {"type": "assistant", "message": {"content": "You're welcome."}},
    ]
    t = parse_transcript("\n".join(json.dumps(x) for x in lines), "s")
    assert t.format == "jsonl" and len(t.exchanges) == 2
    first = t.exchanges[0]
    assert first.prompt == "Fix the tests please." and first.answer == "Running them.\n\nAll green now."
    assert first.tools == ("*(tool: Bash `pytest -q` → 3 lines of output)*",)
    notes = render(t, fallback=NOW, source="s.jsonl")
    assert [p for p, _ in notes] == ["raw/s 01.md", "raw/s 02.md"]
    one, two = notes[0][1], notes[1][1]
    assert "layer: raw\nsession: s\nexchange: 1\ncreated: 2026-10-05T09:00\n" in one and "EEEE" not in one
    assert "answer_to:: [[#Prompt]]" in one and "follows:: [[s 01]]" in two


@pytest.mark.parametrize("text", [
    "**User:** Hello there.\n\n**Assistant:** Hi, how can I help?\n\n**User:** Bye.\n\n**Assistant:** Bye!\n",
    "## User\n\nHello there.\n\n## Assistant\n\nHi, how can I help?\n\n## User\nBye.\n\n## Assistant\nBye!\n",
])
def test_markdown_chats(text: str) -> None:
    t = parse_transcript(text, "chat")
    assert t.format == "markdown"
    assert [(x.prompt, x.answer) for x in t.exchanges] == [("Hello there.", "Hi, how can I help?"), ("Bye.", "Bye!")]


def test_state_round_trips() -> None:
    import msgspec

    s = State(last_sleep=NOW, anchors={"a.md": NOW}, conflicts=["x"])
    assert msgspec.json.decode(msgspec.json.encode(s), type=State) == s
