"""A candidate judged in its company (recall/company.py), on pure inputs: which neighbour lifts it, how far, and
the words its why-line gets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vault_cortex.recall.company import NAMED, Lift, Member, lifted, lifts, linked_among, sections_beside
from vault_cortex.recall.graph import Graph


def test_a_weak_memory_is_lifted_by_the_linked_note_that_matches_best() -> None:
    found = lifts([
        Member(path="docs/Deploying.md", relevance=1.0, linked=("docs/Rollback.md",)),
        Member(path="docs/Rollback.md", relevance=0.3, linked=("docs/Deploying.md", "docs/Registry.md")),
        Member(path="docs/Registry.md", relevance=0.6, linked=("docs/Rollback.md",)),
    ])
    assert found["docs/Rollback.md"] == Lift(relevance=1.0, path="docs/Deploying.md")
    assert found["docs/Registry.md"].path == "docs/Rollback.md"
    assert found["docs/Rollback.md"].phrase() == "lifted by its neighbour [[Deploying]] (1.00)"


def test_a_neighbour_that_is_not_a_candidate_lifts_nothing() -> None:
    found = lifts([Member(path="a.md", relevance=0.4, linked=("elsewhere.md",)),
                   Member(path="b.md", relevance=0.9, linked=("a.md",), beside=())])
    assert "a.md" not in found  # elsewhere.md matched nothing: no company to speak of
    assert found["b.md"] == Lift(relevance=0.4, path="a.md")


def test_a_note_never_lifts_itself() -> None:
    assert lifts([Member(path="a.md", relevance=0.9, linked=("a.md",))]) == {}


def test_the_section_beside_the_best_one_lifts_its_note() -> None:
    chunks = [(0, "Sensor calibration", 0.2), (1, "Why the readings drift", 0.9), (2, "What to do", 0.7),
              (3, "Spare probes", 0.95)]
    beside = sections_beside(2, chunks)
    assert beside == (("Why the readings drift", 0.9), ("Spare probes", 0.95))  # ord 1 and 3, not 0
    found = lifts([Member(path="Sensor calibration.md", relevance=0.7, beside=beside)])
    assert found["Sensor calibration.md"] == Lift(relevance=0.95, heading="Spare probes")
    assert found["Sensor calibration.md"].phrase() == 'lifted by the section beside it "Spare probes" (0.95)'


def test_a_linked_note_and_a_section_compete_on_relevance() -> None:
    found = lifts([Member(path="a.md", relevance=0.2, linked=("b.md",), beside=(("Next", 0.5),)),
                   Member(path="b.md", relevance=0.4)])
    assert found["a.md"] == Lift(relevance=0.5, heading="Next")


def test_the_lift_is_a_share_of_what_the_relevance_lacks() -> None:
    strong = Lift(relevance=1.0, path="b.md")
    assert lifted(0.2, strong, 0.15) == 0.2 + 0.15 * 0.8
    assert lifted(0.9, strong, 0.15) < 0.9 + NAMED  # a strong match gains little: not named
    assert lifted(0.2, strong, 0.15) - 0.2 >= NAMED  # a weak one gains enough to be named
    assert lifted(0.5, None, 0.15) == 0.5
    assert lifted(0.5, strong, 0.0) == 0.5  # company = 0 turns it off


@given(own=st.floats(0, 1), other=st.floats(0, 1), stronger=st.floats(0, 1), weight=st.floats(0, 1))
def test_a_lift_never_lowers_never_passes_one_and_grows_with_the_neighbour(
        own: float, other: float, stronger: float, weight: float) -> None:
    low, high = sorted((other, stronger))
    a = lifted(own, Lift(relevance=low, path="x.md"), weight)
    b = lifted(own, Lift(relevance=high, path="x.md"), weight)
    assert own <= a <= b <= 1.0


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.floats(0, 1), st.sets(st.sampled_from("abcdef"))),
                min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_every_lift_comes_from_the_best_linked_candidate(members: list[tuple[str, float, set[str]]]) -> None:
    relevance = {p: r for p, r, _ in members}
    found = lifts([Member(path=p, relevance=r, linked=tuple(sorted(ln))) for p, r, ln in members])
    for path, _, linked in members:
        company = [relevance[o] for o in linked if o in relevance and o != path and relevance[o] > 0]
        if company:
            assert found[path].relevance == max(company) and found[path].path in linked
        else:
            assert path not in found


@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefg")), max_size=14),
       st.sets(st.sampled_from("abcdefg"), min_size=1))
def test_the_linked_candidates_are_the_graphs_neighbours_among_them(pairs: list[tuple[str, str]],
                                                                    candidates: set[str]) -> None:
    graph = Graph(list("abcdefg"), [(a, b, "links_to") for a, b in pairs])
    found = linked_among(graph, sorted(candidates))
    for path in candidates:
        linked, links = found.get(path, ((), 0))
        assert linked == tuple(sorted(set(graph.neighbours(path)) & candidates - {path}))
        assert links == len(graph.neighbours(path))


def test_a_project_is_not_a_linked_neighbour_but_a_co_retrieval_is() -> None:
    graph = Graph(["a", "b", "c"], [], projects={"a": "p", "b": "p"}, co_retrieved=[("a", "c", 5.0)])
    assert linked_among(graph, ["a", "b", "c"]) == {"a": (("c",), 1), "c": (("a",), 1)}


def test_a_hub_shares_its_company_so_the_best_match_barely_lifts_it() -> None:
    pages = [Member(path=f"p{i}.md", relevance=0.9 if i == 0 else 0.2, linked=("Home.md",), links=1)
             for i in range(40)]
    hub = Member(path="Home.md", relevance=0.3, linked=tuple(m.path for m in pages), links=40)
    found = lifts([*pages, hub])
    assert found["Home.md"] == Lift(relevance=0.9, share=2 / 40, path="p0.md")
    assert lifted(0.3, found["Home.md"], 0.15) - 0.3 < 0.01  # not named, no lift to speak of
    assert found["p1.md"].share == 1.0  # a page linked with the hub alone keeps whole company
