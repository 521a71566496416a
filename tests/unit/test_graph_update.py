"""The graph updated in place (issue 13): any sequence of note adds, edits, deletes, renames and co-retrieval
changes gives the graph a build from scratch gives, edges, weights, degrees, proximity, prior and health."""

from __future__ import annotations

import math
import random
import sys
import threading
import time
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.recall import graph as graph_module
from vault_cortex.recall.graph import Graph, NoteEdges
from vault_cortex.recall.health import health
from vault_cortex.recall.live import ReadWriteLock
from vault_cortex.recall.proximity import prior_proximity, proximity, relative_to_prior

PATHS = ["a.md", "b.md", "c.md", "d.md", "e/f.md", "archive/g.md", "h.md", "zz.md"]  # zz: after "project:"
TARGETS = [*PATHS, "pic.png", None]
RELS = ["links_to", "supports", "embeds", "co_retrieved"]

links = st.lists(st.tuples(st.sampled_from(TARGETS), st.sampled_from(RELS)), max_size=5)
note_edges = st.builds(lambda ls, p: NoteEdges(links=tuple(ls), project=p), links,
                       st.sampled_from([None, "x", "y"]))
op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(PATHS), note_edges),  # add or edit
    st.tuples(st.just("delete"), st.sampled_from(PATHS)),
    st.tuples(st.just("rename"), st.sampled_from(PATHS), st.sampled_from(PATHS)),
    st.tuples(st.just("co"), st.sampled_from(PATHS), st.sampled_from(PATHS), st.sampled_from([0, 1, 3, 9])),
)


def scratch(state: dict[str, NoteEdges], co: dict[tuple[str, str], float]) -> Graph:
    return Graph(list(state), [(p, d, r) for p, e in state.items() for d, r in e.links],
                 projects={p: e.project for p, e in state.items()},
                 co_retrieved=[(a, b, n) for (a, b), n in co.items()])


def close(x: dict[str, float], y: dict[str, float]) -> bool:
    return x.keys() == y.keys() and all(math.isclose(x[k], y[k], rel_tol=1e-9, abs_tol=1e-12) for k in x)


def same(g: Graph, h: Graph) -> None:
    assert g.edges == h.edges
    assert g.names == h.names and g.n_notes == h.n_notes and g.link_count == h.link_count
    assert (g.dangling_count, g.outside_count) == (h.dangling_count, h.outside_count)
    assert g.pair_weights() == h.pair_weights()
    for p in PATHS:
        assert (g.degree(p), g.neighbours(p)) == (h.degree(p), h.neighbours(p))
    assert close(prior_proximity(g), prior_proximity(h))
    for seeds in ({"a.md": 1.0}, {"b.md": 0.7, "e/f.md": 0.2}, dict.fromkeys(PATHS, 0.5)):
        assert close(proximity(g, seeds), proximity(h, seeds))
        assert close(relative_to_prior(g, seeds), relative_to_prior(h, seeds))
    assert health(g, []) == health(h, [])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(PATHS), note_edges, max_size=5), st.lists(op, max_size=12))
def test_a_graph_updated_in_place_equals_one_built_from_scratch(
        start: dict[str, NoteEdges], ops: list[tuple]) -> None:  # type: ignore[type-arg]
    replay(start, ops)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(PATHS), note_edges, max_size=5), st.lists(op, max_size=12))
def test_the_walk_kept_across_changes_or_rebuilt_often_walks_as_a_fresh_graph(
        start: dict[str, NoteEdges], ops: list[tuple]) -> None:  # type: ignore[type-arg]
    """Issue 13: the walk's CSR is kept across changes (slots added since are listed per source, strengths and
    degrees kept); rebuilt after every couple of added slots, the answers are the same."""
    with patch.object(graph_module, "WALK_EXTRA", 2):
        replay(start, ops)


def replay(start: dict[str, NoteEdges], ops: list[tuple]) -> None:  # type: ignore[type-arg]
    state = dict(start)
    co: dict[tuple[str, str], float] = {}
    g = scratch(state, co)
    for o in ops:
        if o[0] == "put":
            state[o[1]] = o[2]
            g.update({o[1]: o[2]})
        elif o[0] == "delete":
            state.pop(o[1], None)
            g.update({o[1]: None})
        elif o[0] == "rename":
            old, new = o[1], o[2]
            if old in state and old != new:
                state[new] = state.pop(old)
                g.update({old: None, new: state[new]})
        else:
            _, a, b, n = o
            if a != b:
                key = (a, b) if a < b else (b, a)
                if n:
                    co[key] = n
                else:
                    co.pop(key, None)
                g.update_co_retrieved([(a, b, n)])
        prior_proximity(g)  # a cached prior must not survive a change
        same(g, scratch(state, co))


def test_an_update_touches_only_what_changed() -> None:
    g = Graph(["a.md", "b.md"], [("a.md", "c.md", "links_to")])
    assert g.degree("a.md") == 0 and g.outside_count == 1
    g.update({"c.md": NoteEdges(links=(("b.md", "links_to"),), project="x")})  # a link now reaches a note
    assert g.neighbours("c.md") == ["a.md", "b.md"] and g.outside_count == 0
    g.update({"c.md": None})
    assert g.degree("a.md") == 0 and "project:x" not in g.names


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(PATHS), note_edges, max_size=8),
       st.dictionaries(st.tuples(st.sampled_from(PATHS), st.sampled_from(PATHS)), st.sampled_from([1, 3, 9]),
                       max_size=4))
def test_a_graph_built_from_columns_equals_one_built_from_links(
        state: dict[str, NoteEdges], co: dict[tuple[str, str], float]) -> None:
    """The bulk build a full index read uses (issue 13: no Python object per link) gives the same graph."""
    co = {(a, b): n for (a, b), n in co.items() if a < b}
    paths = list(state)
    g = Graph.from_columns(paths, [len(state[p].links) for p in paths],
                           [d for p in paths for d, _ in state[p].links], [r for p in paths for _, r in state[p].links],
                           projects={p: e.project for p, e in state.items()},
                           co_retrieved=[(a, b, n) for (a, b), n in co.items()])
    same(g, scratch(state, co))


def test_readers_building_the_lazy_caches_while_updates_run_read_what_a_fresh_graph_gives() -> None:
    """The graph's lock rules: readers that find a cache missing (the walk's CSR, the prior, the link CSR, names,
    edges) build it under the graph's lock while a writer updates the graph between their reads (under a write
    lock, as `LiveGraph` does); every value they read equals the one a graph built from scratch at that version
    gives."""
    rng = random.Random(7)
    paths = [f"n{i:02d}.md" for i in range(40)]

    def edges_of() -> NoteEdges:
        return NoteEdges(links=tuple((rng.choice([*paths, None]), rng.choice(RELS)) for _ in range(rng.randrange(4))),
                         project=rng.choice([None, "x", "y"]))

    state = {p: edges_of() for p in paths[:30]}
    versions = [dict(state)]
    changes: list[dict[str, NoteEdges | None]] = []
    for _ in range(25):
        path = rng.choice(paths)
        change: dict[str, NoteEdges | None] = {path: None if path in state and rng.random() < 0.3 else edges_of()}
        changes.append(change)
        state = {p: e for p, e in {**state, **change}.items() if e is not None}
        versions.append(dict(state))
    seeds = {paths[0]: 1.0, paths[5]: 0.5}

    def read(g: Graph) -> tuple[object, ...]:
        return (g.names, g.edges, [g.degree(p) for p in paths], prior_proximity(g), relative_to_prior(g, seeds),
                health(g, []))

    expected = [read(scratch(v, {})) for v in versions]
    g = Graph(list(versions[0]), [(p, d, r) for p, e in versions[0].items() for d, r in e.links],
              projects={p: e.project for p, e in versions[0].items()}, lock=threading.RLock())
    rw = ReadWriteLock()
    version = 0
    done = threading.Event()
    seen: list[tuple[int, tuple[object, ...]]] = []

    def writer() -> None:
        nonlocal version
        for v, change in enumerate(changes, 1):
            with rw.writing():
                g.update(change)
                version = v
            time.sleep(0.001)
        done.set()

    def reader() -> None:
        while not done.is_set():
            with rw.reading():
                seen.append((version, read(g)))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=writer), *(threading.Thread(target=reader) for _ in range(3))]
        with patch.object(graph_module, "WALK_EXTRA", 2):  # the walk's CSR too is dropped and rebuilt by readers
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert len({v for v, _ in seen}) > 5, "the readers ran between the updates"
    for v, got in seen:
        names, edges, degrees, prior, relative, graph_health = got
        e_names, e_edges, e_degrees, e_prior, e_relative, e_health = expected[v]
        assert (names, edges, degrees, graph_health) == (e_names, e_edges, e_degrees, e_health)
        assert close(prior, e_prior) and close(relative, e_relative)  # type: ignore[arg-type]
