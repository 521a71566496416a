"""Writing memories and notes through the one write path (`Vault.change`): a new note from text, a typed
relation, a note created or replaced whole, one minimal edit, a move or an archive — atomic, checked, logged,
indexed; and which note an argument names."""

from __future__ import annotations

import re

import msgspec

from vault_cortex.errors import InvalidRequest, NoteNotFound, WriteConflict
from vault_cortex.files.edit import add_relation
from vault_cortex.files.links import Dangling, Resolver, parse_linktext, unwrap
from vault_cortex.files.paths import note_name, top_folder, unique_path
from vault_cortex.files.properties import normalise_tag
from vault_cortex.files.relations import RELATIONS_PATH, moved
from vault_cortex.files.relink import Relinked, link_text, relink
from vault_cortex.files.sections import EditOp
from vault_cortex.files.sections import apply as apply_edit
from vault_cortex.files.vault import ARCHIVE, Existing, NoteDoc, content_hash, nfc, note_path, on_disk
from vault_cortex.files.walk import walk
from vault_cortex.files.yamltext import note_filename, render_new_note
from vault_cortex.limits import check_unicode
from vault_cortex.store.change import Change, Vault

CREATE = "create"  # the edit event of a new note (`recent` lists it as created)
MOVE_TRIES = 3  # a note saved while it is being moved is read again and moved again, this many times at most


def remember(vault: Vault, text: str, *, title: str | None = None, region: str | None = None,
             tags: list[str] | None = None, importance: float | None = None, project: str | None = None,
             relations: dict[str, list[str]] | None = None) -> NoteDoc:
    """Write a new memory note (atomically, never over an existing file) and index it at once."""
    if not text or not text.strip():
        raise InvalidRequest("nothing to remember: the text is empty")
    for name, value in (("text", text), ("title", title), ("project", project), *(("tags", t) for t in tags or ())):
        if value:
            check_unicode(value, f"the {name}")
    regions = vault.settings.regions
    region = region or regions.default
    if region not in regions.order:
        raise InvalidRequest(f"unknown region {region!r}; regions: {', '.join(regions.order)}")
    if importance is not None and not 0 <= importance <= 1:
        raise InvalidRequest("importance must be between 0 and 1")
    title = (title or _title_from(text)).strip()
    stem = note_filename(title)
    props: dict[str, object] = {"cortex": region}
    if importance is not None:
        props["importance"] = importance
    props["created"] = vault.clock().astimezone().strftime("%Y-%m-%dT%H:%M")
    if tags:
        props["tags"] = _tags(tags)
    if project:
        props["project"] = project
    content = render_new_note(title=None, body=text.strip() + "\n", properties=props)
    for rel, targets in (relations or {}).items():
        _check_rel(rel)
        for target in targets:
            content = add_relation(content, rel, unwrap(target))
    data = content.encode("utf-8")
    with vault.change() as tx:
        rel_path = unique_path(f"{region}/{stem}.md", Existing(vault.root))
        etag = tx.write(rel_path, data, None, op=CREATE)
    return NoteDoc(path=rel_path, content=content, etag=etag, warnings=tx.warnings)


def write(vault: Vault, path: str, data: bytes, if_match: str | None) -> NoteDoc:
    """Create (if_match None: the note must not exist) or replace a note whose ETag still matches."""
    with vault.change() as tx:
        etag = tx.write(path, data, if_match, op=CREATE if if_match is None else "write")
    return NoteDoc(path=path, content=data.decode("utf-8", errors="replace"), etag=etag, warnings=tx.warnings)


def link(vault: Vault, src: str, rel: str, dst: str) -> NoteDoc:
    """Add a typed relation `rel` from note src to dst, as one minimal frontmatter change."""
    _check_rel(rel)
    target = unwrap(dst).removesuffix(".md")
    if not target.strip():
        raise InvalidRequest("the link target is empty")
    if re.search(r"[\[\]|\x00-\x1f\x7f]", target):
        raise InvalidRequest(f"a link target is a note name or path, without brackets, '|' or line breaks: {dst!r}")
    doc = vault.edit_text(src, lambda text: add_relation(text, rel, target), op="link")
    if any(ln.dst is None and ln.rel == rel and ln.target == target for ln in vault.index.db.links(src=src)):
        doc = msgspec.structs.replace(
            doc, warnings=[*doc.warnings, f"{target!r} is not a note in the vault yet: the link is dangling"])
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
    warnings: list[str] = msgspec.field(default_factory=list)  # saved, but something after it failed


class Moved(msgspec.Struct, frozen=True, kw_only=True):
    """A note moved (or archived): where it went, its ETag, and each link rewritten in the notes linking it."""

    path: str
    dest: str
    etag: str
    relinked: list[Relinked]
    skipped: list[str] = msgspec.field(default_factory=list)  # linking notes changed meanwhile: not rewritten
    warnings: list[str] = msgspec.field(default_factory=list)  # moved, but something after it failed


def resolve(vault: Vault, name: str) -> str:
    """A note's vault path from a path or a link target (`Title`, `[[Folder/Title#Heading|x]]`), as Obsidian
    resolves a link written at the vault root; a path outside the vault is refused."""
    target, _, _ = parse_linktext(unwrap(name))
    if not target:
        raise InvalidRequest(f"no note named in {name!r}")
    as_path = target if target.lower().endswith(".md") else target + ".md"
    if on_disk(vault.root, as_path).is_file():  # raises UnsafePath for anything outside the vault
        return nfc(as_path)
    found = Resolver(vault.index.db.note_paths()).resolve(target, "")
    if isinstance(found, Dangling) and vault.index.indexing is not None:  # not indexed yet: ask the files
        found = Resolver([f.path for f in walk(vault.root, vault.settings.index).notes]).resolve(target, "")
    if isinstance(found, Dangling) or not on_disk(vault.root, found.path).is_file():
        raise NoteNotFound(f"no note {name!r} (by path or by name, as Obsidian resolves a link)")
    return found.path


def edit(vault: Vault, path: str, op: EditOp, *, etag: str | None = None) -> Edited:
    """Apply one minimal edit to a note atomically; refused if `etag` is given and the note changed since."""
    def apply(data: bytes) -> bytes:
        return apply_edit(data.decode("utf-8", "surrogateescape"), op).encode("utf-8", "surrogateescape")

    with vault.change() as tx:
        old, new = tx.edit(path, apply, etag, op=op.op)
    return Edited(path=path, etag=content_hash(new), op=op.op, changed=new != old, warnings=tx.warnings)


def move(vault: Vault, path: str, dest: str, *, etag: str | None = None,
         op: str = "move") -> Moved:
    """Move a note and rewrite the links that would no longer reach it (minimal edits, each reported).

    A save that lands on the note while it is being moved is never lost: the move reads it again and redoes
    (MOVE_TRIES times), then refuses."""
    dest_file = on_disk(vault.root, dest)
    note_path(vault.root, path)
    if nfc(path) == nfc(dest):
        raise InvalidRequest(f"{path!r} is already there")
    with vault.change() as tx:
        vault.index.sync()  # under the lock: the link index is current for finding the linking notes
        if dest_file.exists():
            raise WriteConflict(f"{dest!r} already exists; a move never overwrites")
        data = tx.read(path, etag)
        path, dest = nfc(path), nfc(dest)
        walked = walk(vault.root, vault.settings.index)
        files = {f.path for f in walked.notes} | set(walked.attachments) | {path}
        before = Resolver(files)
        after = Resolver((files - {path}) | {dest})
        moved = {path: dest}
        for attempt in range(1, MOVE_TRIES + 1):
            own, relinked = relink(data.decode("utf-8", "surrogateescape"), path, dest, before, after, moved)
            new = own.encode("utf-8", "surrogateescape")
            try:
                new_etag = tx.move(path, dest, new, content_hash(data), op=op)
                break
            except WriteConflict:
                if attempt == MOVE_TRIES or dest_file.exists():  # tried enough, or it stays at dest (it says so)
                    raise
                data = tx.read(path)  # the user saved it while its own links were rewritten: move what is there now
        skipped: list[str] = []
        for src in _linking(vault, path, dest):
            try:
                old = tx.read(src)
            except NoteNotFound:
                continue
            text, changes = relink(old.decode("utf-8", "surrogateescape"), src, src, before, after, moved)
            if changes:
                try:
                    tx.write(src, text.encode("utf-8", "surrogateescape"), content_hash(old), op="relink")
                except WriteConflict:  # edited between our read and write: never overwrite it, report it
                    skipped.append(src)
                    continue
                relinked += changes
        _move_relations(tx, path, dest, before, after)
    return Moved(path=path, dest=dest, etag=new_etag, relinked=relinked, skipped=skipped, warnings=tx.warnings)


def _move_relations(tx: Change, path: str, dest: str, before: Resolver, after: Resolver) -> None:
    """The relations sidecar (an adopted vault's) follows a moved note: its edges from the note, and the links
    to it that the move would break, rewritten as its notes' links are."""
    try:
        old = tx.file(RELATIONS_PATH, own=True).read_bytes()
    except FileNotFoundError:
        return

    def retarget(src: str, new_src: str, target: str) -> str | None:
        was = before.resolve(target, src)
        if isinstance(was, Dangling) or was.path != path:
            return None
        now = after.resolve(target, new_src)
        return None if not isinstance(now, Dangling) and now.path == dest else link_text(dest, new_src, after)

    text = moved(old.decode("utf-8", "surrogateescape"), path, dest, retarget)
    new = text.encode("utf-8", "surrogateescape")
    if new != old:
        tx.write(RELATIONS_PATH, new, content_hash(old), own=True)


def archive(vault: Vault, path: str, *, etag: str | None = None) -> Moved:
    """Move a note to `archive/` under its own path, as sleep's pruning does: never deleted, links kept."""
    rel = nfc(path.strip())
    if top_folder(rel) == ARCHIVE:
        raise InvalidRequest(f"{path!r} is already in {ARCHIVE}/")
    note_path(vault.root, rel)
    folder = vault.root / ARCHIVE
    taken = {nfc(p.relative_to(vault.root).as_posix()) for p in folder.rglob("*.md")} if folder.is_dir() else set()
    return move(vault, rel, unique_path(f"{ARCHIVE}/{rel}", taken), etag=etag, op="archive")


def _linking(vault: Vault, path: str, dest: str) -> list[str]:
    """Notes whose links may change meaning: those linking the moved note, and those naming its new name."""
    name = note_name(dest).casefold()
    out = set(vault.index.db.linking(path, name))
    out.discard(path)
    out.discard(dest)
    return sorted(p for p in out if on_disk(vault.root, p).is_file())
