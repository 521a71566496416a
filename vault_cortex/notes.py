"""Writing memories: a new note from text, and a typed relation between two notes — minimal and atomic."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

from vault_cortex.errors import InvalidRequest
from vault_cortex.files.edit import add_relation
from vault_cortex.files.frontmatter import normalise_tag
from vault_cortex.files.yamltext import note_filename, render_new_note

if TYPE_CHECKING:
    from vault_cortex.cortex import Cortex, NoteDoc


def remember(cx: Cortex, text: str, *, title: str | None = None, region: str | None = None,
             tags: list[str] | None = None, importance: float | None = None, project: str | None = None,
             relations: dict[str, list[str]] | None = None, client: str = "api") -> NoteDoc:
    """Write a new memory note (atomically, never over an existing file) and index it at once."""
    if not text or not text.strip():
        raise InvalidRequest("nothing to remember: the text is empty")
    for name, value in (("text", text), ("title", title), ("project", project), *(("tags", t) for t in tags or ())):
        if value and re.search("[\ud800-\udfff]", value):
            raise InvalidRequest(f"the {name} is not valid Unicode text (it holds a lone surrogate)")
    region = region or cx.settings.regions.default
    if region not in cx.settings.regions.order:
        raise InvalidRequest(f"unknown region {region!r}; regions: {', '.join(cx.settings.regions.order)}")
    if importance is not None and not 0 <= importance <= 1:
        raise InvalidRequest("importance must be between 0 and 1")
    title = (title or _title_from(text)).strip()
    stem = note_filename(title)
    props: dict[str, object] = {"cortex": region}
    if importance is not None:
        props["importance"] = importance
    props["created"] = cx.clock().astimezone().strftime("%Y-%m-%dT%H:%M")
    if tags:
        props["tags"] = _tags(tags)
    if project:
        props["project"] = project
    content = render_new_note(title=None, body=text.strip() + "\n", properties=props)
    for rel, targets in (relations or {}).items():
        _check_rel(rel)
        for target in targets:
            content = add_relation(content, rel, target.removeprefix("[[").removesuffix("]]"))
    with cx.writing():
        for n in range(1, 1000):
            rel_path = f"{region}/{stem}{'' if n == 1 else f' {n}'}.md"
            if not (cx.root / rel_path).exists():
                break
        doc = cx.write_note(rel_path, content, None)
    return doc


def link(cx: Cortex, src: str, rel: str, dst: str) -> NoteDoc:
    """Add a typed relation `rel` from note src to dst, as one minimal frontmatter change."""
    _check_rel(rel)
    target = dst.strip().removeprefix("[[").removesuffix("]]").removesuffix(".md")
    if not target.strip():
        raise InvalidRequest("the link target is empty")
    if re.search(r"[\[\]|\x00-\x1f\x7f]", target):
        raise InvalidRequest(f"a link target is a note name or path, without brackets, '|' or line breaks: {dst!r}")
    doc = cx.edit_note(src, lambda text: add_relation(text, rel, target))
    if any(ln.dst is None and ln.rel == rel and ln.target == target for ln in cx.db.links(src=src)):
        doc = msgspec.structs.replace(
            doc, warnings=[f"{target!r} is not a note in the vault yet: the link is dangling"])
    return doc


def _tags(tags: list[str]) -> list[str]:
    """Tags as Obsidian reads them: '#' dropped, spaces become '-', duplicates (any case) once; else refused."""
    out: list[str] = []
    for raw in tags:
        tag = normalise_tag(raw)
        if tag is None:
            raise InvalidRequest(f"{raw!r} is not a valid tag (letters, digits, _ - / and at least one non-digit)")
        if tag.casefold() not in {t.casefold() for t in out}:
            out.append(tag)
    return out


def _title_from(text: str) -> str:
    """A title from the first line of a memory's text, cut at a word boundary."""
    first = next((line.strip(" #-*>\t") for line in text.strip().splitlines() if line.strip()), "memory")
    if len(first) <= 60:
        return first
    cut = first[:60].rfind(" ")
    return first[: cut if cut > 20 else 60]


def _check_rel(rel: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", rel or ""):
        raise InvalidRequest(f"a relation type is lower-case letters, digits and _ (e.g. supports), not {rel!r}")
