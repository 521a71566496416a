"""Merging near-duplicates, pure: one note that keeps each member's distinct lines, `derived_from` them all."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.links import parse_linktext, unwrap
from vault_cortex.files.yamltext import render_new_note
from vault_cortex.sleep.operations import Memo, stamp


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.casefold()).split())


def merged_note(group: Sequence[Memo], region: str, importance: float, created: datetime,
                archived: Mapping[str, str]) -> str:
    """One note holding every member's distinct lines and sentences, `derived_from` all of them.

    `created` is the earliest member's: a merge is not a new memory, and decay counts from it.
    """
    seen: set[str] = set()
    titles = {m.title.casefold() for m in group}
    parts: list[str] = []
    for i, m in enumerate(group):
        lines = body_text(m.text or "").strip("\n").splitlines()
        if lines and lines[0].lstrip("# ").strip().casefold() == m.title.casefold():
            lines = lines[1:]
        kept: list[str] = []
        for line in lines:
            units = [u for u in re.split(r"(?<=[.!?])\s+", line.strip()) if u]
            fresh = [u for u in units if _norm(u) not in seen or not _norm(u)]
            seen |= {_norm(u) for u in units}
            if not units or len(fresh) == len(units):
                kept.append(line)
            elif fresh and not line.lstrip().startswith("#"):
                indent = line[: len(line) - len(line.lstrip())]
                kept.append(indent + " ".join(fresh))
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept).strip("\n"))
        if i and text.strip():
            parts.append(f"## From [[{archived[m.path].removesuffix('.md')}]]\n\n{text}")
        elif text.strip():
            parts.append(text)
    relations: dict[str, list[str]] = {"derived_from": [f"[[{archived[m.path].removesuffix('.md')}]]" for m in group]}
    for m in group:
        for rel, targets in m.relations.items():
            for t in targets:
                name = parse_linktext(unwrap(t))[0].rsplit("/", 1)[-1].casefold()
                if name not in titles and t not in relations.setdefault(rel, []):
                    relations[rel].append(t)
    props = {
        "cortex": region, "importance": importance, "created": stamp(created),
        "tags": list(dict.fromkeys(t for m in group for t in m.tags)) or None,
        "project": group[0].project if len({m.project for m in group}) == 1 else None,
        "aliases": list(dict.fromkeys(a for m in group for a in m.aliases)) or None,
        "relations": {k: v for k, v in relations.items() if v},
    }
    body = f"# {group[0].title}\n\n" + "\n\n".join(parts) + "\n"
    return render_new_note(title=None, body=body, properties=props)
