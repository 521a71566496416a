"""The relations sidecar `.cortex/relations.jsonl`, pure: the edges a sleep derives from notes it does not edit.

In an adopted vault (`init` on a folder of notes someone already had) the notes are the user's: a sleep's wiring
(`related_to`, `co_retrieved`) and its `supersedes` go here instead of into their frontmatter. One JSON object a
line, `{"src": "Projects/Greenhouse.md", "rel": "related_to", "dst": "Sensor log"}`: the note the edge is from (a
vault path), the relation, and the link target as a frontmatter link would hold it (what `[[...]]` would say). The
file is versioned and git merges it like the activity log (`merge=union`): an edge is a line, lines only add up,
and the same edge twice counts once. The index reads the edges as the notes' own relations (index/relations.py).

Whether a vault has the file decides where a sleep writes its edges: `adopt_vault` makes it (empty), the starter
vault has none, so its notes — vault-cortex's own — carry their relations in their frontmatter.
"""

from __future__ import annotations

import json
from collections.abc import Callable

RELATIONS_PATH = ".cortex/relations.jsonl"
MERGE_RULE = "relations.jsonl merge=union"  # in `.cortex/.gitattributes`
KIND = "sidecar"  # the index's link kind for an edge read from the file

Relation = tuple[str, str, str]  # (src path, rel, dst link target)


def parse(data: bytes) -> set[Relation]:
    """The edges in the file's bytes; a line that is not one (malformed, a torn last line) is skipped."""
    out: set[Relation] = set()
    for raw in data.split(b"\n"):
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        src, rel, dst = item.get("src"), item.get("rel"), item.get("dst")
        if isinstance(src, str) and isinstance(rel, str) and isinstance(dst, str) and src and rel \
                and dst.strip("[] "):
            out.add((src, rel, dst.strip("[] ")))
    return out


def line(src: str, rel: str, dst: str) -> str:
    """One edge as the file holds it."""
    return json.dumps({"src": src, "rel": rel, "dst": dst}, ensure_ascii=False) + "\n"


def with_relation(text: str, src: str, rel: str, dst: str) -> str:
    """The file's text with one more edge (unchanged when it holds that edge already)."""
    if (src, rel, dst) in parse(text.encode()):
        return text
    return text + ("\n" if text and not text.endswith("\n") else "") + line(src, rel, dst)


def moved(text: str, path: str, dest: str, retarget: Callable[[str, str, str], str | None]) -> str:
    """The file's text after the note at `path` moved to `dest`: an edge from it is from `dest`, and each link
    target becomes `retarget(src before, src after, target)` when that is not None (the move broke it); every
    other line is kept byte for byte."""
    out = []
    for raw in text.splitlines(keepends=True):
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("src", "rel", "dst")):
            out.append(raw)
            continue
        src = dest if item["src"] == path else item["src"]
        dst = retarget(item["src"], src, item["dst"])
        if src == item["src"] and dst is None:
            out.append(raw)
        else:
            out.append(line(src, item["rel"], item["dst"] if dst is None else dst))
    return "".join(out)
