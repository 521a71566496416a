"""Packing: the budget is never exceeded, no better item loses to a worse one, output is stable."""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.recall.pack import Candidate, Packed, Piece, fit_in_order, pack, render_markdown

REGIONS = ["soul", "long_term", "short_term"]
SECTIONS = ["Pinned", "Habits"]
VAULT = "My Vault"


def words(text: str) -> int:
    """A fake tokenizer: whitespace-separated words plus newlines."""
    return len(text.split()) + text.count("\n")


@functools.cache
def _wordpiece() -> tokenizers.Tokenizer:
    path = Path(__file__).parents[2] / "vault_cortex" / "index" / "data" / "tokenizer.json"
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_padding()  # the bundled file pads and truncates to 128 for the model; counting needs neither
    tok.no_truncation()
    return tok


def wordpiece(text: str) -> int:
    """The model's real token count, without specials."""
    return len(_wordpiece().encode(text, add_special_tokens=False).ids)


def cand(path: str, score: float, text: str = "alpha beta", *, region: str = "long_term", **kw: object) -> Candidate:
    fields: dict[str, object] = {
        "path": path, "title": Path(path).stem, "region": region, "score": score,
        "signals": {"relevance": score}, "reason": "matches the query", "heading": "", "line": 10,
        "chunk_text": text, "chunk_tokens": words(text),
    }
    fields.update(kw)
    return Candidate(**fields)  # type: ignore[arg-type]


def run(cands: Sequence[Candidate], budget: int, *, caps: dict[str, int] | None = None,
        count: Callable[[str], int] = words, section_order: Sequence[str] = ("Pinned", "Habits")) -> Packed:
    return pack(cands, budget_tokens=budget, region_order=REGIONS, caps=caps or {}, count_tokens=count,
                vault_name=VAULT, section_order=section_order)


# --- random candidates --------------------------------------------------------------------------------

_word = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "née", "über", "東京", "x#y", "[[z]]", "**", "-"])
_text = st.lists(st.one_of(_word, st.just("\n"), st.just("\n\n")), max_size=25).map(" ".join)


@st.composite
def candidate_lists(draw: st.DrawFn, text: st.SearchStrategy[str] = _text) -> list[Candidate]:
    n = draw(st.integers(0, 9))
    out = []
    for i in range(n):
        line = draw(st.integers(5, 50))
        neighbours = tuple(
            Piece(text=draw(text), tokens=0, heading="h", line=line + off)
            for off in draw(st.lists(st.sampled_from([-3, 3, -6, 6]), unique=True, max_size=3))
        )
        out.append(Candidate(
            path=f"{draw(st.sampled_from(REGIONS))}/note {i}.md", title=draw(st.sampled_from(["", "T", f"note {i}"])),
            region=draw(st.sampled_from(REGIONS)), score=draw(st.sampled_from([0.1, 0.5, 0.5, 0.9, 1.0])),
            signals={"relevance": 0.5}, reason=draw(st.sampled_from(["", "why\nnot"])),
            heading=draw(st.sampled_from(["", "Intro", "A ## b"])), line=line, chunk_text=draw(text),
            chunk_tokens=0, neighbours=neighbours,
            section=draw(st.sampled_from(["", "", "", *SECTIONS])),
        ))
    return out


_caps = st.dictionaries(st.sampled_from(REGIONS + SECTIONS), st.integers(0, 3), max_size=3)


def _group(c: Candidate) -> str:
    return c.section or c.region


def _tokens_of(cands: Sequence[Candidate], count: Callable[[str], int] = words) -> int:
    """Tokens of the markdown holding exactly these candidates' best chunks."""
    packed = run([msgspec.structs.replace(c, neighbours=()) for c in cands], 10**9, count=count)
    assert len(packed.items) == len(cands)
    return packed.tokens


@settings(max_examples=300, deadline=None)
@given(candidate_lists(), st.integers(0, 200), _caps)
def test_budget_never_exceeded(cands: list[Candidate], budget: int, caps: dict[str, int]) -> None:
    packed = run(cands, budget, caps=caps)
    assert packed.tokens == words(packed.markdown) <= budget
    assert packed.markdown == render_markdown(packed)
    assert packed.tokens == sum(i.tokens for i in packed.items) + sum(
        words(f"## {g.name.replace('_', ' ')}\n") + 1 for g in packed.groups
    )  # accounting is exact: items plus one heading and one blank line per group
    assert packed.dropped == len(cands) - len(packed.items)


@settings(max_examples=30, deadline=None)
@given(candidate_lists(st.text(max_size=60)), st.integers(0, 400), _caps)
def test_budget_never_exceeded_real_tokenizer(cands: list[Candidate], budget: int, caps: dict[str, int]) -> None:
    packed = run(cands, budget, caps=caps, count=wordpiece)
    assert packed.tokens == wordpiece(packed.markdown) <= budget
    assert packed.tokens == sum(i.tokens for i in packed.items) + sum(
        wordpiece(f"## {g.name.replace('_', ' ')}\n") for g in packed.groups
    )  # WordPiece adds up over newline-separated blocks, so the accounting is exact here too


@settings(max_examples=200, deadline=None)
@given(candidate_lists(st.text(max_size=40)), st.integers(0, 300))
def test_budget_holds_for_a_counter_that_does_not_add_up(cands: list[Candidate], budget: int) -> None:
    def lumpy(text: str) -> int:  # the whole costs more than the sum of its parts
        return len(text) // 7

    packed = run(cands, budget, count=lumpy)
    assert lumpy(packed.markdown) <= budget


@settings(max_examples=250, deadline=None)
@given(candidate_lists(), st.integers(0, 200), _caps)
def test_no_better_item_loses_to_a_worse_one(cands: list[Candidate], budget: int, caps: dict[str, int]) -> None:
    """Invariant. Rank = (score desc, path). For every candidate A left out:
    (1) unless A's group already holds cap items, A's best chunk added to the final pack exceeds the budget;
    (2) for every taken B ranked below A, unless A's group holds cap items ranked above A, the pack with
        A's best chunk in place of B's (no widening) exceeds the budget — no single swap improves the pack.
    """
    packed = run(cands, budget, caps=caps)
    by_path = {c.path: c for c in cands}
    rank = {c.path: i for i, c in enumerate(sorted(cands, key=lambda c: (-c.score, c.path)))}
    taken = [by_path[i.path] for i in packed.items]
    final = [msgspec.structs.replace(by_path[i.path], chunk_text=i.text) for i in packed.items]
    full = Counter(_group(c) for c in taken)
    for a in cands:
        if any(i.path == a.path for i in packed.items):
            continue
        cap = caps.get(_group(a), math.inf)
        if full[_group(a)] < cap:
            assert _tokens_of([*final, a]) > budget
        above = sum(1 for c in taken if _group(c) == _group(a) and rank[c.path] < rank[a.path])
        if above >= cap:
            continue
        for b in taken:
            if rank[b.path] > rank[a.path]:
                assert _tokens_of([*(c for c in taken if c is not b), a]) > budget


@settings(max_examples=100, deadline=None)
@given(candidate_lists(), st.integers(0, 200), _caps, st.randoms(use_true_random=False))
def test_deterministic_whatever_the_input_order(
    cands: list[Candidate], budget: int, caps: dict[str, int], rnd: random.Random
) -> None:
    first = msgspec.json.encode(run(cands, budget, caps=caps))
    shuffled = list(cands)
    rnd.shuffle(shuffled)
    assert msgspec.json.encode(run(shuffled, budget, caps=caps)) == first


@settings(max_examples=100, deadline=None)
@given(candidate_lists(), st.integers(0, 200), _caps)
def test_caps_and_group_order(cands: list[Candidate], budget: int, caps: dict[str, int]) -> None:
    packed = run(cands, budget, caps=caps)
    for group in packed.groups:
        assert len(group.items) <= caps.get(group.name, math.inf)
        assert [(-i.score, i.path) for i in group.items] == sorted((-i.score, i.path) for i in group.items)
    order = ["Pinned", "Habits", *REGIONS]
    names = [g.name for g in packed.groups]
    assert names == sorted(names, key=order.index)
    assert packed.items == [i for g in packed.groups for i in g.items]


def test_greedy_skips_what_does_not_fit_and_fills_with_smaller_items() -> None:
    big = cand("long_term/big.md", 0.9, " ".join(["w"] * 50))
    small = cand("long_term/small.md", 0.5, "tiny")
    packed = run([small, big], 30)
    assert [i.path for i in packed.items] == ["long_term/small.md"]
    assert packed.dropped == 1


def test_ties_are_broken_by_path() -> None:
    a, b = cand("long_term/a.md", 0.5), cand("long_term/b.md", 0.5)
    room = run([a], 10**6).tokens
    assert [i.path for i in run([b, a], room).items] == ["long_term/a.md"]


def test_per_region_caps() -> None:
    cands = [cand(f"soul/{i}.md", 1 - i / 10, region="soul") for i in range(5)]
    cands += [cand(f"long_term/{i}.md", 0.5, region="long_term") for i in range(3)]
    packed = run(cands, 10**6, caps={"soul": 2})
    assert [i.path for i in packed.groups[0].items] == ["soul/0.md", "soul/1.md"]
    assert len(packed.groups[1].items) == 3
    assert packed.dropped == 3


def test_groups_follow_sections_then_regions_then_the_rest_alphabetically() -> None:
    cands = [
        cand("a.md", 0.9, region="zeta"), cand("b.md", 0.8, region="short_term"), cand("c.md", 0.7, region="alpha"),
        cand("d.md", 0.1, region="soul", section="Handoff"), cand("e.md", 0.2, region="soul"),
        cand("f.md", 0.3, region="soul", section="Pinned"),
    ]
    packed = run(cands, 10**6, section_order=("Pinned", "Handoff"))
    assert [g.name for g in packed.groups] == ["Pinned", "Handoff", "soul", "short_term", "alpha", "zeta"]
    headings = [line for line in packed.markdown.splitlines() if line.startswith("## ")]
    assert headings == ["## Pinned", "## Handoff", "## Soul", "## Short term", "## Alpha", "## Zeta"]


def test_markdown_block_shape() -> None:
    c = cand("long_term/Trip notes.md", 0.8234, "line one\n\n\n\nline two\n", title="The trip",
             heading="Day 1", reason="mentions\nKyoto")
    packed = run([c], 10**6)
    assert packed.markdown == (
        "## Long term\n"
        "- **[[long_term/Trip notes|The trip]]** › Day 1 · score 0.82 · "
        "[open](obsidian://open?vault=My%20Vault&file=long_term%2FTrip%20notes)\n"
        "  why: mentions Kyoto\n"
        "  line one\n"
        "\n"
        "  line two\n"
        "\n"
    )
    item = packed.items[0]
    assert item.tokens == words(packed.markdown) - words("## Long term\n") - 1


def test_obsidian_uri_encodes_spaces_hash_and_unicode() -> None:
    c = cand("long_term/C# & café/東京 100%?.md", 0.5, title="x")
    item = run([c], 10**6).items[0]
    assert item.obsidian_uri == (
        "obsidian://open?vault=My%20Vault&file="
        "long_term%2FC%23%20%26%20caf%C3%A9%2F%E6%9D%B1%E4%BA%AC%20100%25%3F"
    )
    assert item.wikilink == "[[long_term/C# & café/東京 100%?|x]]"
    assert run([cand("a/b.md", 0.5, title="b")], 999).items[0].wikilink == "[[a/b]]"
    assert run([cand("a/b.md", 0.5, title="x|[y]")], 999).items[0].wikilink == "[[a/b|xy]]"


def test_widening_only_when_the_budget_allows() -> None:
    best = cand("long_term/n.md", 0.9, "middle", line=20, neighbours=(
        Piece(text="before", tokens=1, heading="h", line=10),
        Piece(text="after", tokens=1, heading="h", line=30),
        Piece(text="way before " * 20, tokens=40, heading="h", line=5),
        Piece(text="way after", tokens=2, heading="h", line=40),
    ))
    bare = run([msgspec.structs.replace(best, neighbours=())], 10**6)
    exact = run([best], bare.tokens)
    assert exact.items[0].text == "middle" and exact.items[0].widened == 0
    one_more = run([best], bare.tokens + 2)  # one word and one newline: the nearest neighbour only
    assert one_more.items[0].text == "before\nmiddle" and one_more.items[0].widened == 1
    # "way before" is too big, which blocks that side only; "way after" still joins on the other side
    some = run([best], bare.tokens + 10)
    assert some.items[0].text == "before\nmiddle\nafter\nway after"
    everything = run([best], 10**6)
    assert everything.items[0].text.startswith("way before") and everything.items[0].widened == 4


def test_widening_goes_to_the_better_item_first() -> None:
    hi = cand("long_term/hi.md", 0.9, "hi", neighbours=(Piece(text="more hi", tokens=2, heading="", line=11),))
    lo = cand("long_term/lo.md", 0.4, "lo", neighbours=(Piece(text="more lo", tokens=2, heading="", line=11),))
    bare = run([msgspec.structs.replace(c, neighbours=()) for c in (hi, lo)], 10**6).tokens
    packed = run([lo, hi], bare + 3)
    assert [i.widened for i in packed.items] == [1, 0]


def test_empty_candidates_and_tiny_budgets_give_valid_empty_context() -> None:
    for cands, budget in (([], 100), ([cand("long_term/a.md", 0.5)], 3), ([cand("long_term/a.md", 0.5)], 0)):
        packed = run(cands, budget)
        assert packed.items == [] and packed.groups == [] and packed.markdown == "" and packed.tokens == 0
        assert packed.dropped == len(cands)
        assert msgspec.json.decode(msgspec.json.encode(packed), type=Packed) == packed


def test_one_item_per_note_and_negative_budget_refused() -> None:
    packed = run([cand("long_term/a.md", 0.9), cand("long_term/a.md", 0.5, "other")], 10**6)
    assert [i.text for i in packed.items] == ["alpha beta"] and packed.dropped == 1
    try:
        run([], -1)
    except ValueError:
        pass
    else:
        raise AssertionError("a negative budget must be refused")


def test_json_field_names_are_stable() -> None:
    packed = run([cand("long_term/a.md", 0.5, section="Pinned")], 10**6)
    data = msgspec.json.decode(msgspec.json.encode(packed))
    assert list(data) == ["items", "groups", "tokens", "budget_tokens", "dropped", "markdown"]
    assert list(data["items"][0]) == [
        "path", "title", "region", "section", "score", "signals", "reason", "heading", "line", "text",
        "widened", "tokens", "wikilink", "obsidian_uri",
    ]
    assert list(data["groups"][0]) == ["name", "items"]


def test_fit_in_order_keeps_each_block_that_still_fits() -> None:
    """The prompt hook's packing: in rank order, a block too big is skipped and a later smaller one still fits."""
    chars = len  # one token per character keeps the arithmetic visible
    blocks = [("a.md", "x" * 40), ("b.md", "x" * 70), ("c.md", "x" * 50), ("d.md", "x" * 10)]
    assert fit_in_order(blocks, 100, chars) == {"a.md": "x" * 40, "c.md": "x" * 50, "d.md": "x" * 10}
    assert list(fit_in_order(blocks, 100, chars)) == ["a.md", "c.md", "d.md"]
    assert fit_in_order(blocks, 9, chars) == {} and fit_in_order(blocks, -5, chars) == {}
    assert fit_in_order([], 100, chars) == {}
