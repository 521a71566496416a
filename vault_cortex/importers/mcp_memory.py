"""Importing the MCP reference memory server's knowledge graph (`memory.json`) as notes.

The file holds one JSON object a line: entities `{"type": "entity", "name", "entityType", "observations"}`
and relations `{"type": "relation", "from", "to", "relationType"}` (relation types in active voice). Each
entity becomes one note named after it, its observations a list in the body, its type `entity_type`, and
each relation from it a typed relation in its frontmatter (`relations: {works_at: ["[[Anthropic]]"]}`),
so the graph carries over as links. The file is read twice, line by line: first the relations and the
names (small), then each entity is written as it comes; an entity that occurs on several lines is held
until its last one and its observations merged.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_cortex.errors import InvalidRequest
from vault_cortex.files.yamltext import note_filename, render_new_note
from vault_cortex.importers.importlog import ImportLog
from vault_cortex.importers.transcript import Imported, Tally
from vault_cortex.store.change import Change

ORIGIN = "mcp-memory"
TAG = "mcp-memory"


def records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line of a memory.json; a line that is not a JSON object is an error."""
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InvalidRequest(f"cannot read {path}: {exc}") from exc
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise InvalidRequest(f"{path.name} line {n} is not JSON (memory.json has one object a line)") from None
            except RecursionError:
                raise InvalidRequest(f"{path.name} line {n} is JSON nested too deeply to read") from None
            if not isinstance(rec, dict):
                raise InvalidRequest(f"{path.name} line {n} is not a JSON object")
            yield n, rec


def relation_key(kind: str) -> str:
    """A relation type as a property name: `works at` and `works-at` become `works_at`."""
    key = re.sub(r"[^\w]+", "_", kind.strip().lower()).strip("_")
    return key or "related_to"


def render_entity(name: str, entity_type: str, observations: list[str], relations: dict[str, list[str]],
                  titles: dict[str, str], source: str) -> tuple[str, str]:
    """An entity's note text (and its title) from its observations and the relations it starts."""
    title = titles[name]
    props: dict[str, object] = {"entity_type": entity_type or None, "source": source, "tags": [TAG]}
    rels: dict[str, list[str]] = {}
    for kind, targets in relations.items():
        rels[relation_key(kind)] = [f"[[{titles.get(t) or note_filename(t)}]]" for t in targets]
    if rels:
        props["relations"] = rels
    body = "\n".join(f"- {' '.join(o.split())}" for o in observations if o.strip()) or "(no observations)"
    heading = f"# {name}\n\n" if title != name else ""
    return title, render_new_note(title=title, body=heading + body + "\n", properties=props)


def import_mcp_memory(tx: Change, file: str | Path, folder: str) -> Imported:
    """Write one note per entity in `folder`; re-importing adds nothing, an edited note is kept."""
    path = Path(file).expanduser()
    names: Counter[str] = Counter()
    relations: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    n_relations = 0
    for _, rec in records(path):  # pass 1: names and relations
        if rec.get("type") == "entity" and isinstance(rec.get("name"), str) and rec["name"].strip():
            names[rec["name"]] += 1
        elif rec.get("type") == "relation" and all(isinstance(rec.get(k), str) for k in ("from", "to", "relationType")):
            targets = relations[rec["from"]][rec["relationType"]]
            if rec["to"] not in targets:
                targets.append(rec["to"])
                n_relations += 1
    if not names:
        raise InvalidRequest(f"no entity in {path} (expected lines like {{\"type\": \"entity\", \"name\": …}})")
    titles: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:  # two names that make the same file name get distinct notes
        base = note_filename(name)
        title, k = base, 1
        while title.lower() in taken:
            k += 1
            title = f"{base} {k}"
        taken.add(title.lower())
        titles[name] = title
    dangling = sum(len(t) for src, kinds in relations.items() if src not in names for t in kinds.values())
    n_relations -= dangling
    log = ImportLog(tx, ORIGIN)
    tally = Tally()
    held: dict[str, tuple[str, list[str]]] = {}
    seen: Counter[str] = Counter()
    try:
        for _, rec in records(path):  # pass 2: one note per entity
            if rec.get("type") != "entity" or not isinstance(rec.get("name"), str) or rec["name"] not in names:
                continue
            name = str(rec["name"])
            seen[name] += 1
            kind, obs = held.pop(name, (str(rec.get("entityType") or ""), []))
            obs += [str(o) for o in rec.get("observations") or [] if str(o) not in obs]
            if seen[name] < names[name]:
                held[name] = (kind, obs)
                continue
            title, text = render_entity(name, kind, obs, relations.get(name, {}), titles, path.name)
            rel = f"{folder}/{title}.md"
            tally.add(log.write(rel, text), rel)
    finally:
        log.save()
    return tally.result("", "mcp-memory", counts={"entities": len(names), "relations": n_relations,
                                                   "relations from unknown entities": dangling})
