"""Writing memories: a new note from text, and a typed relation between two notes — minimal and atomic."""

from __future__ import annotations

import re

import msgspec

from vault_cortex.errors import InvalidRequest, NoteNotFound, WriteConflict
from vault_cortex.files.edit import add_relation
from vault_cortex.files.links import Dangling, Resolver, parse_linktext
from vault_cortex.files.paths import note_name, top_folder, unique_path
from vault_cortex.files.properties import normalise_tag
from vault_cortex.files.relink import Relinked, relink
from vault_cortex.files.sections import EditOp
from vault_cortex.files.sections import apply as apply_edit
from vault_cortex.files.vault import ARCHIVE, NoteDoc, atomic_write, content_hash, nfc, note_path, walk
from vault_cortex.files.yamltext import note_filename, render_new_note
from vault_cortex.index.activity import EditEvent
from vault_cortex.index.host import Store


def remember(cx: Store, text: str, *, title: str | None = None, region: str | None = None,
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


def link(cx: Store, src: str, rel: str, dst: str) -> NoteDoc:
    """Add a typed relation `rel` from note src to dst, as one minimal frontmatter change."""
    _check_rel(rel)
    target = dst.strip().removeprefix("[[").removesuffix("]]").removesuffix(".md")
    if not target.strip():
        raise InvalidRequest("the link target is empty")
    if re.search(r"[\[\]|\x00-\x1f\x7f]", target):
        raise InvalidRequest(f"a link target is a note name or path, without brackets, '|' or line breaks: {dst!r}")
    doc = cx.edit_text(src, lambda text: add_relation(text, rel, target))
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


# -- reading, editing and moving notes (issue 14) ----------------------------------------------------------

class Edited(msgspec.Struct, frozen=True, kw_only=True):
    """An edit applied: the note, its new ETag, the operation, and whether the text changed at all."""

    path: str
    etag: str
    op: str
    changed: bool


class Moved(msgspec.Struct, frozen=True, kw_only=True):
    """A note moved (or archived): where it went, its ETag, and each link rewritten in the notes linking it."""

    path: str
    dest: str
    etag: str
    relinked: list[Relinked]
    skipped: list[str] = msgspec.field(default_factory=list)  # linking notes changed meanwhile: not rewritten


def resolve(cx: Store, name: str) -> str:
    """A note's vault path from a path or a link target (`Title`, `[[Folder/Title#Heading|x]]`), as Obsidian
    resolves a link written at the vault root; a path outside the vault is refused."""
    raw = name.strip()
    if raw.startswith("[[") and raw.endswith("]]"):
        raw = raw[2:-2]
    target, _, _ = parse_linktext(raw)
    if not target:
        raise InvalidRequest(f"no note named in {name!r}")
    as_path = target if target.lower().endswith(".md") else target + ".md"
    if note_path(cx.root, as_path).is_file():  # raises UnsafePath for anything outside the vault
        return nfc(as_path)
    found = Resolver(cx.db.note_paths()).resolve(target, "")
    if isinstance(found, Dangling) or not (cx.root / found.path).is_file():
        raise NoteNotFound(f"no note {name!r} (by path or by name, as Obsidian resolves a link)")
    return found.path


def edit(cx: Store, path: str, op: EditOp, *, etag: str | None = None, client: str = "api") -> Edited:
    """Apply one minimal edit to a note atomically; refused if `etag` is given and the note changed since."""
    file = note_path(cx.root, path)
    with cx.writing():
        try:
            data = file.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise NoteNotFound(f"no note at {path!r}") from None
        current = content_hash(data)
        if etag is not None and etag != current:
            raise WriteConflict(f"{path} changed since it was read (ETag {etag} is stale); read it again")
        new = apply_edit(data.decode("utf-8", "surrogateescape"), op).encode("utf-8", "surrogateescape")
        if new == data:
            return Edited(path=path, etag=current, op=op.op, changed=False)
        atomic_write(file, new, current)
        cx.log(EditEvent(ts=cx.clock(), client=client, path=path, op=op.op))
        cx.sync_paths([path])
    return Edited(path=path, etag=content_hash(new), op=op.op, changed=True)


def move(cx: Store, path: str, dest: str, *, etag: str | None = None, client: str = "api",
         op: str = "move") -> Moved:
    """Move a note and rewrite the links that would no longer reach it (minimal edits, each reported)."""
    src_file, dest_file = note_path(cx.root, path), note_path(cx.root, dest)
    if nfc(path) == nfc(dest):
        raise InvalidRequest(f"{path!r} is already there")
    with cx.writing():
        cx.sync()
        try:
            data = src_file.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise NoteNotFound(f"no note at {path!r}") from None
        if etag is not None and etag != content_hash(data):
            raise WriteConflict(f"{path} changed since it was read (ETag {etag} is stale); read it again")
        if dest_file.exists():
            raise WriteConflict(f"{dest!r} already exists; a move never overwrites")
        path, dest = nfc(path), nfc(dest)
        walked = walk(cx.root, cx.settings.index)
        files = {f.path for f in walked.notes} | set(walked.attachments) | {path}
        before = Resolver(files)
        after = Resolver((files - {path}) | {dest})
        moved = {path: dest}
        own, relinked = relink(data.decode("utf-8", "surrogateescape"), path, dest, before, after, moved)
        new = own.encode("utf-8", "surrogateescape")
        atomic_write(dest_file, new, None)
        src_file.unlink()
        cx.log(EditEvent(ts=cx.clock(), client=client, path=path, op=op, dest=dest))
        skipped: list[str] = []
        rewritten = [path, dest]
        for src in _linking(cx, path, dest):
            file = cx.root / src
            try:
                old = file.read_bytes()
            except OSError:
                continue
            text, changes = relink(old.decode("utf-8", "surrogateescape"), src, src, before, after, moved)
            if changes:
                try:
                    atomic_write(file, text.encode("utf-8", "surrogateescape"), content_hash(old))
                except WriteConflict:  # edited between our read and write: never overwrite it, report it
                    skipped.append(src)
                    continue
                cx.log(EditEvent(ts=cx.clock(), client=client, path=src, op="relink"))
                relinked += changes
                rewritten.append(src)
        cx.sync_paths(rewritten)
    return Moved(path=path, dest=dest, etag=content_hash(new), relinked=relinked, skipped=skipped)


def archive(cx: Store, path: str, *, etag: str | None = None, client: str = "api") -> Moved:
    """Move a note to `archive/` under its own path, as sleep's pruning does: never deleted, links kept."""
    rel = nfc(path.strip())
    if top_folder(rel) == ARCHIVE:
        raise InvalidRequest(f"{path!r} is already in {ARCHIVE}/")
    note_path(cx.root, rel)
    folder = cx.root / ARCHIVE
    taken = {nfc(p.relative_to(cx.root).as_posix()) for p in folder.rglob("*.md")} if folder.is_dir() else set()
    return move(cx, rel, unique_path(f"{ARCHIVE}/{rel}", taken), etag=etag, client=client, op="archive")


def _linking(cx: Store, path: str, dest: str) -> list[str]:
    """Notes whose links may change meaning: those linking the moved note, and those naming its new name."""
    name = note_name(dest).casefold()
    out = set(cx.db.linking(path, name))
    out.discard(path)
    out.discard(dest)
    return sorted(p for p in out if (cx.root / p).is_file())
