"""Graph maths: edges and weights, proximity, and health (bridges, articulation points, hubs, islands)."""

from __future__ import annotations

import gc
import random
import time
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.recall.edges import Edge, EdgeWeights
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import Hub, health
from vault_cortex.recall.proximity import proximity, relative_to_prior


def links(*pairs: str, rel: str = "links_to") -> list[tuple[str, str | None, str]]:
    """'a-b' strings as links a → b."""
    out: list[tuple[str, str | None, str]] = []
    for p in pairs:
        a, b = p.split("-")
        out.append((a, b, rel))
    return out


def graph(nodes: str, *pairs: str) -> Graph:
    return Graph(list(nodes), links(*pairs))


# -- construction ------------------------------------------------------------------------------------

def test_edges_keep_direction_relation_and_weight() -> None:
    g = Graph(
        ["a", "b", "c", "d"],
        [("a", "b", "links_to"), ("a", "b", "links_to"), ("b", "a", "supports"), ("a", "c", "embeds"),
         ("a", None, "links_to"), ("a", "pic.png", "embeds"), ("a", "a", "links_to")],
        projects={"a": "x", "b": "x", "d": None},
        co_retrieved=[("c", "d", 2), ("b", "c", 50)],
    )
    assert g.edges == (
        Edge(src="a", dst="b", rel="links_to", weight=1.0),
        Edge(src="a", dst="c", rel="embeds", weight=0.8),
        Edge(src="a", dst="project:x", rel="project", weight=0.5),
        Edge(src="b", dst="a", rel="supports", weight=1.0),
        Edge(src="b", dst="c", rel="co_retrieved", weight=0.6),
        Edge(src="b", dst="project:x", rel="project", weight=0.5),
        Edge(src="c", dst="d", rel="co_retrieved", weight=0.6 * 2 / 5),
    )
    assert (g.dangling_count, g.outside_count) == (1, 1)
    assert g.names[-1] == "project:x" and g.n_notes == 4
    assert g.degree("a") == 2 and g.neighbours("a") == ["b", "c"]  # file links only, both directions
    assert g.degree("d") == 0 and g.degree("nope") == 0 and g.neighbours("project:x") == []


def test_weights_are_configurable() -> None:
    w = EdgeWeights(rels={"links_to": 0.3}, typed=0.9, project=0.2)
    g = Graph(["a", "b"], [("a", "b", "links_to"), ("b", "a", "evokes")], projects={"a": "p"}, weights=w)
    assert [e.weight for e in g.edges] == [0.3, 0.2, 0.9]


# -- health ------------------------------------------------------------------------------------------

def test_path_every_edge_is_a_bridge_inner_nodes_are_articulation_points() -> None:
    h = health(graph("abcd", "a-b", "b-c", "c-d"), [])
    assert h.bridges == [("a", "b"), ("b", "c"), ("c", "d")]
    assert h.articulation_points == ["b", "c"]
    assert (h.notes, h.edges, h.components, h.largest_component, h.islands) == (4, 3, 1, 4, [])


def test_cycle_has_no_bridges_and_no_articulation_points() -> None:
    h = health(graph("abcde", "a-b", "b-c", "c-d", "d-e", "e-a"), [])
    assert (h.bridges, h.articulation_points, h.hubs) == ([], [], [])


def test_two_triangles_joined_by_one_edge() -> None:
    h = health(graph("abcdef", "a-b", "b-c", "c-a", "d-e", "e-f", "f-d", "c-d"), [])
    assert h.bridges == [("c", "d")]
    assert h.articulation_points == ["c", "d"]


def test_bowtie_shares_a_node_without_a_bridge() -> None:
    h = health(graph("abcde", "a-b", "b-c", "c-a", "c-d", "d-e", "e-c"), [])
    assert (h.bridges, h.articulation_points) == ([], ["c"])


def test_star_centre_is_hub_and_articulation_point() -> None:
    leaves = "bcdefghijk"
    h = health(graph("a" + leaves, *(f"a-{x}" for x in leaves)), [])
    assert h.hubs == [Hub(path="a", degree=10)]
    assert h.articulation_points == ["a"]
    assert len(h.bridges) == 10


def test_double_link_is_still_one_connection() -> None:
    h = health(Graph(["a", "b"], [("a", "b", "links_to"), ("b", "a", "supports")]), [])
    assert (h.bridges, h.edges) == ([("a", "b")], 1)


def test_islands_components_dangling_and_what_health_ignores() -> None:
    g = Graph(
        ["a", "b", "c", "d", "e"],
        [("a", "b", "links_to"), ("c", None, "links_to")],
        projects={"c": "p", "d": "p"},
        co_retrieved=[("d", "e", 9)],
    )
    h = health(g, [("c", "Missing note")])
    assert h.islands == ["c", "d", "e"]  # project membership and replayed co-retrieval are not links
    assert h.dangling == [("c", "Missing note")]
    assert (h.components, h.largest_component, h.edges) == (4, 2, 1)


def test_long_chain_needs_no_recursion() -> None:
    n = 100_000
    names = [f"n{i:06d}" for i in range(n)]
    g = Graph(names, [(names[i], names[i + 1], "links_to") for i in range(n - 1)])
    h = health(g, [])
    assert len(h.bridges) == n - 1
    assert len(h.articulation_points) == n - 2
    assert h.components == 1


def test_a_chain_of_follows_is_read_back_nearest_first_and_ends_where_the_chain_does() -> None:
    # the exchanges of a conversation: each follows the one before; a link of another relation is not the chain
    g = Graph(list("abcdefx"), [*links("b-a", "c-b", "d-c", "e-d", "f-e", rel="follows"), *links("c-x"),
                                ("a", None, "follows")])
    assert g.followed("e", "follows", 3) == ["d", "c", "b"]
    assert g.followed("c", "follows", 9) == ["b", "a"], "a dangling link ends it"
    assert g.followed("a", "follows", 2) == [] and g.followed("x", "follows", 2) == []
    assert g.followed("e", "supports", 2) == [] and g.followed("nowhere", "follows", 2) == []
    loop = Graph(list("pq"), links("p-q", "q-p", rel="follows"))
    assert loop.followed("p", "follows", 5) == ["q"], "a loop ends the chain"


def _brute_force(nodes: list[str], edges: set[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[str]]:
    def components(keep: set[str], es: set[tuple[str, str]]) -> int:
        seen: set[str] = set()
        count = 0
        for start in keep:
            if start in seen:
                continue
            count += 1
            todo = [start]
            seen.add(start)
            while todo:
                v = todo.pop()
                for a, b in es:
                    for x, y in ((a, b), (b, a)):
                        if x == v and y in keep and y not in seen:
                            seen.add(y)
                            todo.append(y)
        return count

    base = components(set(nodes), edges)
    bridges = {e for e in edges if components(set(nodes), edges - {e}) > base}
    points = {
        v for v in nodes
        if components(set(nodes) - {v}, {e for e in edges if v not in e}) > base
    }
    return bridges, points


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 9).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=14))
))
def test_tarjan_agrees_with_brute_force(case: tuple[int, set[tuple[int, int]]]) -> None:
    n, raw = case
    nodes = [f"v{i}" for i in range(n)]
    edges = {(nodes[min(a, b)], nodes[max(a, b)]) for a, b in raw if a != b}
    h = health(Graph(nodes, [(a, b, "links_to") for a, b in edges]), [])
    bridges, points = _brute_force(nodes, edges)
    assert set(h.bridges) == bridges
    assert set(h.articulation_points) == points


# -- proximity ---------------------------------------------------------------------------------------

def test_neighbour_beats_two_hops_and_unconnected_is_zero() -> None:
    g = graph("sabcxyz", "s-a", "a-b", "b-c", "s-x", "y-z")
    p = proximity(g, {"s": 1.0})
    assert p["a"] == 1.0  # the best non-seed note
    assert 0 < p["c"] < p["b"] < p["x"] <= p["a"]
    assert "y" not in p and "z" not in p
    assert all(0.0 <= v <= 1.0 for v in p.values())


def test_top_seed_and_weights_matter() -> None:
    g = Graph(list("stabc"), [("s", "a", "links_to"), ("t", "b", "links_to"), ("s", "c", "follows")])
    p = proximity(g, {"s": 1.0, "t": 0.4})
    assert p["a"] == 1.0 and p["a"] > p["c"] > 0 and p["a"] > p["b"] > 0


def test_seeds_score_only_for_being_near_other_seeds() -> None:
    g = graph("stab", "s-t", "s-a", "t-b")
    p = proximity(g, {"s": 1.0, "t": 1.0})
    assert p["s"] > 0 and p["t"] > 0
    assert proximity(graph("sa", "s-a"), {"s": 1.0})["s"] > 0  # the walk comes back to it
    assert proximity(graph("sab", "a-b"), {"s": 1.0}) == {}
    assert proximity(graph("sa", "s-a"), {"unknown": 1.0, "s": 0.0}) == {}


def test_a_shared_project_brings_its_members_near_the_fewer_the_nearer() -> None:
    g = Graph(["s", "a", "m", "far"], [("s", "a", "links_to")], projects={"s": "p", "m": "p"})
    p = proximity(g, {"s": 1.0})
    assert 0.1 < p["m"] < p["a"] and "project:p" not in p and "far" not in p
    crowd = [f"c{i}" for i in range(20)]
    big = Graph(["s", "a", "m", *crowd], [("s", "a", "links_to")], projects=dict.fromkeys(["s", "m", *crowd], "p"))
    assert 0 < proximity(big, {"s": 1.0})["m"] < p["m"]


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 40), st.randoms(use_true_random=False))
def test_in_a_tree_every_neighbour_beats_every_second_neighbour(n: int, rnd: random.Random) -> None:
    names = [f"v{i}" for i in range(n)]
    parent = {i: rnd.randrange(i) for i in range(1, n)}
    g = Graph(names, [(names[i], names[j], "links_to") for i, j in parent.items()])
    seed = rnd.randrange(n)
    near = {j for i, j in parent.items() if i == seed} | ({parent[seed]} if seed in parent else set())
    second = {
        k for j in near for i2, j2 in parent.items() for k in ((i2,) if j2 == j else (j2,) if i2 == j else ())
    } - near - {seed}
    p = proximity(g, {names[seed]: 1.0})
    if near and second:
        assert min(p[names[j]] for j in near) > max(p[names[k]] for k in second)


def test_proximity_is_fast_on_a_vault_sized_graph() -> None:
    rnd = random.Random(7)
    names = [f"note {i}.md" for i in range(2000)]
    edges = [(rnd.choice(names), rnd.choice(names), rnd.choice(["links_to", "supports", "embeds"]))
             for _ in range(10_000)]
    projects = {p: f"proj{rnd.randrange(40)}" for p in rnd.sample(names, 600)}
    co = [(rnd.choice(names), rnd.choice(names), rnd.randrange(1, 9)) for _ in range(500)]
    t0 = time.perf_counter()
    g = Graph(names, edges, projects=projects, co_retrieved=co)
    built = time.perf_counter() - t0
    seeds = {names[i]: 1.0 - i / 20 for i in range(0, 100, 10)}
    runs = 200
    t0 = time.perf_counter()
    for _ in range(runs):
        p = proximity(g, seeds)
    per_call = (time.perf_counter() - t0) / runs
    t0 = time.perf_counter()
    h = health(g, [])
    healthy = time.perf_counter() - t0
    print(f"\ngraph: {len(g.names)} nodes, {len(g.edges)} edges; build {built * 1e3:.1f} ms; "
          f"proximity {per_call * 1e3:.3f} ms/call ({len(p)} notes scored); health {healthy * 1e3:.1f} ms")
    assert len(p) > 100 and h.notes == 2000


def test_a_hub_linked_from_thousands_passes_on_no_mass_below_the_tolerance() -> None:
    # s → h, h linked from 20,000 leaves, each leaf → its own tail: the exact walk reaches every tail at the third
    # hop (20,000 more edges gathered); a leaf holds 1/80,000 of the seeds' mass, so it keeps it and passes none on.
    n = 20_000
    leaves, tails = [f"l{i}" for i in range(n)], [f"t{i}" for i in range(n)]
    g = Graph(["s", "h", "x", *leaves, *tails],
              [("s", "h", "links_to"), ("s", "x", "links_to")]
              + [(leaf, "h", "links_to") for leaf in leaves]
              + [(a, b, "links_to") for a, b in zip(leaves, tails, strict=True)])
    exact = proximity(g, {"s": 1.0}, raw=True, tolerance=0.0)
    pruned = proximity(g, {"s": 1.0}, raw=True)
    assert all(t in exact for t in tails) and not any(t in pruned for t in tails)
    assert all(pruned[k] <= v + 1e-15 for k, v in exact.items() if k in pruned)  # mass is only ever held back
    assert pruned["x"] == exact["x"]  # what the seed reaches directly is exact
    assert abs(pruned["l0"] - exact["l0"]) < 1e-12  # and so is what the hub hands on
    assert 0.85 * exact["h"] < pruned["h"] < exact["h"]  # only the leaves' echo back to the hub is missing


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=5, max_value=60).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n))))
def test_on_a_small_graph_the_tolerance_changes_nothing(case: tuple[int, set[tuple[int, int]]]) -> None:
    n, pairs = case
    g = Graph([f"n{i}" for i in range(n)], [(f"n{a}", f"n{b}", "links_to") for a, b in pairs if a != b])
    seeds = {"n0": 1.0, "n1": 0.5}
    assert proximity(g, seeds, raw=True) == proximity(g, seeds, raw=True, tolerance=0.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=5, max_value=60).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n),
                        st.sets(st.integers(0, n - 1), max_size=8), st.integers(0, 12))))
def test_asking_for_some_notes_and_the_nearest_gives_the_same_values(
        case: tuple[int, set[tuple[int, int]], set[int], int]) -> None:
    n, pairs, among, top = case
    g = Graph([f"n{i}" for i in range(n)], [(f"n{a}", f"n{b}", "links_to") for a, b in pairs if a != b])
    seeds = {"n0": 1.0, "n1": 0.5}
    full = relative_to_prior(g, seeds)
    asked = {f"n{i}" for i in among}
    some = relative_to_prior(g, seeds, among=asked, top=top)
    nearest = sorted(full.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    assert some.items() <= full.items()  # the same values
    assert {p for p, _ in nearest} | (asked & full.keys()) <= some.keys()  # all that was asked for
    last = nearest[-1][1] if nearest else float("inf")
    assert all(v >= last for p, v in some.items() if p not in asked)  # and nothing further (ties at the last place)


def test_relative_to_prior_takes_the_hub_bias_out_of_proximity() -> None:
    # h is linked from every note; s's own neighbour n is linked from s alone.
    leaves = [f"l{i}" for i in range(20)]
    g = Graph(["h", "s", "t", "n", *leaves],
              [(x, "h", "links_to") for x in ["s", "t", "n", *leaves]] + [("s", "n", "links_to")])
    seeds = {"s": 1.0, "t": 0.8}
    assert proximity(g, seeds)["h"] == 1.0  # the plain walk: the hub is nearest to any seeds
    lifted = relative_to_prior(g, seeds)
    assert lifted["n"] == max(lifted.values()) > 0.5
    assert lifted.get("h", 0.0) < 0.1
    assert relative_to_prior(g, {}) == {}


def test_the_graph_keeps_no_python_object_per_link() -> None:
    """Issue 13: at 100k notes and 570k links the graph held ~710 MiB (dicts and sets of path strings per edge).
    Now links and pairs live in numpy arrays over integer node ids: what a built graph keeps (path strings
    included) stays far below the old ~1,300 bytes a link, and so does the build's transient peak."""
    rnd = random.Random(3)
    names = [f"region {i % 7}/a note with a long enough title {i}.md" for i in range(5000)]
    links = [(rnd.choice(names), rnd.choice([*names[:50], *names]), rnd.choice(["links_to", "supports", "embeds"]))
             for _ in range(30_000)]
    projects = {p: f"proj{rnd.randrange(40)}" for p in rnd.sample(names, 1500)}
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    g = Graph(names, iter(links), projects=projects)
    proximity(g, {names[0]: 1.0})  # the walk's cached arrays count too
    kept, peak = (m - before for m in tracemalloc.get_traced_memory())
    tracemalloc.stop()
    assert g.link_count > 25_000
    print(f"\nkept {kept / len(links):.0f} B a link, peak {peak / len(links):.0f} B a link")
    assert kept / len(links) < 300, kept / len(links)
    assert peak / len(links) < 450, peak / len(links)
