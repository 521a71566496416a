"""Packing, pure: ranked notes into one token-budgeted context, grouped by section and region."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

import msgspec

CountTokens = Callable[[str], int]
Render = Callable[["PackedItem"], str]  # one item's block, whose tokens it costs in the budget


class Piece(msgspec.Struct, frozen=True, kw_only=True):
    """One chunk of a note: its text, token count, heading and first line."""

    text: str
    tokens: int
    heading: str
    line: int


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A ranked note offered to the packer: its best chunk, the chunks around it and why it ranked."""

    path: str
    title: str
    region: str
    score: float
    signals: dict[str, float]
    reason: str
    heading: str
    line: int
    chunk_text: str
    chunk_tokens: int
    neighbours: tuple[Piece, ...] = ()  # chunks before/after the best one, nearest first
    section: str = ""  # a group placed before the regions ("Pinned", "Habits", ...); "" = by region


class PackedItem(msgspec.Struct, frozen=True, kw_only=True):
    """One note in the packed context, with its source links and the tokens its markdown block costs."""

    path: str
    title: str
    region: str
    section: str
    score: float
    signals: dict[str, float]
    reason: str
    heading: str
    line: int
    text: str  # the best chunk, widened with neighbour chunks when the budget allowed
    widened: int  # how many neighbour chunks were added
    tokens: int  # tokens of this item's markdown block
    wikilink: str
    obsidian_uri: str


class Group(msgspec.Struct, frozen=True, kw_only=True):
    """A section or region of the context and its items, best first."""

    name: str
    items: list[PackedItem]


class Packed(msgspec.Struct, frozen=True, kw_only=True):
    """A packed context: items in render order, their groups, and the markdown with its token count."""

    items: list[PackedItem]
    groups: list[Group]
    tokens: int
    budget_tokens: int
    dropped: int
    markdown: str


def _widen(taken: list[tuple[Candidate, PackedItem]], remaining: int, count_tokens: CountTokens,
           vault_name: str, render: Render) -> list[tuple[int, PackedItem]]:
    """Widen each taken item with its neighbours, nearest first, while the budget left allows; returns what was
    widened as (index, item before widening), to back out if need be."""
    undo: list[tuple[int, PackedItem]] = []
    for i, (cand, item) in enumerate(taken):
        pieces = [Piece(text=cand.chunk_text, tokens=cand.chunk_tokens, heading=cand.heading, line=cand.line)]
        blocked: set[bool] = set()  # a side (before / after) whose nearest neighbour did not fit
        for nb in cand.neighbours:
            before = nb.line < cand.line
            if before in blocked:
                continue
            trial = sorted([*pieces, nb], key=lambda p: p.line)
            text = "\n".join(p.text for p in trial)
            wider = _item(cand, text, len(trial) - 1, count_tokens, vault_name, render)
            if wider.tokens - item.tokens <= remaining:
                remaining -= wider.tokens - item.tokens
                undo.append((i, item))
                item, pieces = wider, trial
            else:
                blocked.add(before)
        taken[i] = (cand, item)
    return undo


def pack(
    candidates: Sequence[Candidate],
    *,
    budget_tokens: int,
    region_order: Sequence[str],
    caps: Mapping[str, int],
    count_tokens: CountTokens,
    vault_name: str,
    section_order: Sequence[str] = (),
    render: Render | None = None,
) -> Packed:
    """Greedy by score into the budget, skipping what does not fit, then widen with neighbours.

    Each item costs the tokens of its exact markdown block, plus its group's heading and closing blank
    line when it opens the group; caps are per group name (section or region), absent = uncapped. `render`: the
    block an item is read as, when another than `render_item`'s (the session-start context's text for a model).
    """
    render = render or render_item
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, not {budget_tokens}")
    remaining = budget_tokens
    taken: list[tuple[Candidate, PackedItem]] = []
    per_group: dict[str, int] = {}
    paths: set[str] = set()
    for cand in sorted(candidates, key=_rank):
        group = cand.section or cand.region
        if cand.path in paths or per_group.get(group, 0) >= caps.get(group, math.inf):
            continue
        item = _item(cand, cand.chunk_text, 0, count_tokens, vault_name, render)
        cost = item.tokens + (0 if group in per_group else _group_cost(group, count_tokens))
        if cost <= remaining:
            remaining -= cost
            per_group[group] = per_group.get(group, 0) + 1
            paths.add(cand.path)
            taken.append((cand, item))

    undo = _widen(taken, remaining, count_tokens, vault_name, render)
    order = _order_key(section_order, region_order)
    items = [item for _, item in taken]
    packed = _assemble(items, order, budget_tokens, len(candidates), count_tokens, render)
    # Exact for counters that add up over whitespace-separated text (WordPiece, word counts); for any
    # other counter, back out widenings, then the lowest-ranked items, until the whole text fits.
    while packed.tokens > budget_tokens and items:
        if undo:
            i, previous = undo.pop()
            items[i] = previous
        else:
            items.pop()
        packed = _assemble(items, order, budget_tokens, len(candidates), count_tokens, render)
    return packed


def fit_in_order(blocks: Iterable[tuple[str, str]], budget_tokens: int,
                 count_tokens: CountTokens) -> dict[str, str]:
    """Rendered blocks by key, in order, each kept when its tokens still fit the budget (greedy, skipping
    what does not fit, as `pack` does); for callers that render their own blocks, such as the prompt hook."""
    kept: dict[str, str] = {}
    remaining = budget_tokens
    for key, block in blocks:
        cost = count_tokens(block)
        if cost <= remaining:
            remaining -= cost
            kept[key] = block
    return kept


def render_markdown(packed: Packed) -> str:
    """The context as compact markdown: a `##` heading per group, a short block per item."""
    return "".join(_group_text(group.name, group.items) for group in packed.groups)


def render_item(item: PackedItem) -> str:
    """One item's block: link line, why line, then the text indented; ends with a newline."""
    head = f"- **{item.wikilink}**"
    if _one_line(item.heading):
        head += f" › {_one_line(item.heading)}"
    lines = [f"{head} · score {item.score:.2f} · [open]({item.obsidian_uri})"]
    if _one_line(item.reason):
        lines.append(f"  why: {_one_line(item.reason)}")
    lines.extend(f"  {line}" if line else "" for line in _body(item.text))
    return "\n".join(lines) + "\n"


def wikilink(path: str, title: str) -> str:
    """`[[path-without-.md]]`, aliased with the title when it differs from the file name."""
    target = path[:-3] if path.endswith(".md") else path
    alias = _one_line("".join(ch for ch in title if ch not in "[]|"))
    if not alias or alias == target.rsplit("/", 1)[-1]:
        return f"[[{target}]]"
    return f"[[{target}|{alias}]]"


def obsidian_uri(vault_name: str, path: str) -> str:
    """`obsidian://open` URI for a vault file, every reserved character percent-encoded."""
    target = path[:-3] if path.endswith(".md") else path
    return f"obsidian://open?vault={quote(vault_name, safe='')}&file={quote(target, safe='')}"


def _rank(cand: Candidate) -> tuple[float, str, str, str, int, str]:
    score = -math.inf if math.isnan(cand.score) else cand.score
    return (-score, cand.path, cand.section, cand.region, cand.line, cand.chunk_text)


def _item(cand: Candidate, text: str, widened: int, count_tokens: CountTokens, vault: str,
          render: Render) -> PackedItem:
    item = PackedItem(
        path=cand.path,
        title=cand.title,
        region=cand.region,
        section=cand.section,
        score=cand.score,
        signals=dict(cand.signals),
        reason=cand.reason,
        heading=cand.heading,
        line=cand.line,
        text=text,
        widened=widened,
        tokens=0,
        wikilink=wikilink(cand.path, cand.title),
        obsidian_uri=obsidian_uri(vault, cand.path),
    )
    return msgspec.structs.replace(item, tokens=count_tokens(render(item)))


def _heading(name: str) -> str:
    label = _one_line(name.replace("_", " "))
    return f"## {label[:1].upper()}{label[1:]}\n"


def _group_text(name: str, items: Sequence[PackedItem], render: Render = render_item) -> str:
    return _heading(name) + "".join(render(item) for item in items) + "\n"


def _group_cost(name: str, count_tokens: CountTokens) -> int:
    return count_tokens(_heading(name)) + count_tokens("\n")


def _order_key(section_order: Sequence[str], region_order: Sequence[str]) -> Callable[[str], tuple[int, str]]:
    ranks: dict[str, int] = {}
    for name in [*section_order, *region_order]:
        ranks.setdefault(name, len(ranks))
    return lambda name: (ranks.get(name, len(ranks)), name)


def _assemble(
    items: Sequence[PackedItem],
    order: Callable[[str], tuple[int, str]],
    budget_tokens: int,
    offered: int,
    count_tokens: CountTokens,
    render: Render,
) -> Packed:
    by_group: dict[str, list[PackedItem]] = {}
    for item in items:
        by_group.setdefault(item.section or item.region, []).append(item)
    groups = [Group(name=name, items=by_group[name]) for name in sorted(by_group, key=order)]
    flat = [item for group in groups for item in group.items]
    markdown = "".join(_group_text(group.name, group.items, render) for group in groups)
    return Packed(
        items=flat,
        groups=groups,
        tokens=count_tokens(markdown),
        budget_tokens=budget_tokens,
        dropped=offered - len(flat),
        markdown=markdown,
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _body(text: str) -> list[str]:
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line or (out and out[-1]):  # no leading blank lines, runs of blanks collapsed to one
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return out
