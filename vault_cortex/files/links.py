"""Which file a link means: Obsidian's resolution rules over a fixed set of vault paths.

Pure: the resolver is built from vault-relative paths and never touches the disk.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

import msgspec

__all__ = ["MARKDOWN_LINK", "WIKILINK", "Dangling", "Resolved", "Resolver", "parse_destination", "parse_linktext",
           "target_names", "unwrap", "wikilink"]

# `[[inner]]` on one line; a single `[` or `]` may occur inside, `[[` may not (then the inner one wins).
WIKILINK = re.compile(r"\[\[((?:[^\[\]\n]++|\[(?!\[)|\](?!\]))*+)\]\]")
# `[text](destination "title")`, CommonMark-style: group 1 the text, group 2 the destination.
MARKDOWN_LINK = re.compile(
    r"\[((?:[^\[\]\n\\]++|\\.|\[[^\[\]\n]*+\])*+)\]"
    r"\([ \t]*(<[^<>\n]*+>|(?:[^\s()<>\\]++|\\.|\((?:[^\s()\\]|\\.)*+\))*+)"
    r"(?:[ \t]+(?:\"[^\"\n]*+\"|'[^'\n]*+'|\([^()\n]*+\)))?[ \t]*\)"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:|//")  # http:, mailto:, obsidian:, //host
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


class Resolved(msgspec.Struct, frozen=True, kw_only=True):
    """A link that names an existing file; `ambiguous` lists the candidates a tie-break passed over."""

    path: str  # vault-relative, NFC
    ambiguous: tuple[str, ...] = ()


class Dangling(msgspec.Struct, frozen=True, kw_only=True):
    """A link to a file that does not exist (kept as an edge; no placeholder is ever created)."""

    raw: str


def parse_linktext(inner: str) -> tuple[str, str, str | None]:
    """Split the text inside `[[...]]` into (target, subpath, display) like Obsidian's parseLinktext."""
    if "\\|" in inner:  # the table escape `[[Note\|alias]]`
        inner = inner.replace("\\|", "|")
    linktext, bar, display = inner.partition("|")
    path, hash_, subpath = linktext.partition("#")
    shown = display.strip() if bar else ""
    return path.strip(), subpath.strip() if hash_ else "", shown or None


def wikilink(text: str) -> tuple[str, str, str | None] | None:
    """(target, subpath, display) when `text`, surrounding space aside, is one wikilink; None when it is not."""
    found = WIKILINK.fullmatch(text.strip())
    return None if found is None else parse_linktext(found.group(1))


def unwrap(text: str) -> str:
    """`text` stripped, and without its brackets when it is one wikilink: ` [[Note|shown]] ` → `Note|shown`.
    Brackets go only in pairs: `[[Note` is not a link and stays as it is."""
    text = text.strip()
    found = WIKILINK.fullmatch(text)
    return text if found is None else found.group(1)


def parse_destination(dest: str) -> tuple[str, str] | None:
    """A markdown link destination as URL-decoded (target, subpath); None for an external URL."""
    if dest.startswith("<"):
        dest = dest[1:-1]
    if "\\" in dest:
        dest = _ESCAPE.sub(r"\1", dest)
    if not dest or _SCHEME.match(dest):
        return None
    path, _, subpath = dest.partition("#")
    target, subpath = unquote(path).strip(), unquote(subpath).strip()
    return (target, subpath) if target or subpath else None


def _nfc(text: str) -> str:
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def target_names(target: str) -> tuple[str, ...] | None:
    """The lower-cased file names a link target can resolve to (`Note` -> note.md or a file named `note`),
    whatever the linking note's folder; None when it could be any name (`..`, or the note itself)."""
    text = _nfc(target).strip().lower()
    last = text.rpartition("/")[2]
    if last in ("", ".", ".."):
        return None
    return (last,) if last.endswith(".md") else (last + ".md", last)


def target_key(target: str) -> str | None:
    """The indexed name of a link target: its lower-cased last segment without `.md`. A file named `n` can be
    reached only by targets whose key is `file_key(n)`; None (a `..`, a folder) could reach any file. The
    empty target (`[[#Heading]]`) names its own note only, so its key is "" and matches no file."""
    if not _nfc(target).strip():
        return ""
    names = target_names(target)
    return None if names is None else names[0][:-3] if names[0].endswith(".md") else names[0]


def file_key(name: str) -> str:
    """The key (see `target_key`) of the targets that can name a file called `name` (lower-cased)."""
    return name[:-3] if name.endswith(".md") else name


class _File:
    """One vault file, with the lower-cased forms the indexes compare."""

    __slots__ = ("folder", "lower", "name", "path", "resolved")

    def __init__(self, path: str) -> None:
        self.path = path  # NFC
        self.lower = path.lower()
        self.folder, _, self.name = self.lower.rpartition("/")  # folder is '' at the root
        self.resolved = Resolved(path=path)


class Resolver:
    """Resolves link targets to vault files: exact path, then own folder, then shortest path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_path: dict[str, list[_File]] = {}
        self._by_name: dict[str, list[_File]] = {}
        self._anywhere: dict[str, Resolved | Dangling] = {}  # results that do not depend on the source
        self._memo: dict[tuple[str, str], Resolved | Dangling] = {}
        for raw in paths:
            file = _File(_nfc(raw).strip("/"))
            self._by_path.setdefault(file.lower, []).append(file)
            self._by_name.setdefault(file.name, []).append(file)

    def resolve(self, target: str, source: str) -> Resolved | Dangling:
        """The file `target` (the path part of a link, no '#subpath') means when written in `source`."""
        found = self._anywhere.get(target)
        if found is not None:
            return found
        source = _nfc(source)
        if not target.strip():
            return Resolved(path=source)  # [[#Heading]] links the note to itself
        folder = source.lower().rpartition("/")[0]
        found = self._memo.get((target, folder))
        if found is None:
            result, local = self._resolve(_nfc(target).strip(), folder)
            found = result or Dangling(raw=target)
            if local:
                self._memo[(target, folder)] = found
            else:
                self._anywhere[target] = found
        return found

    def _resolve(self, target: str, folder: str) -> tuple[Resolved | None, bool]:
        """The match, and whether it depended on the linking note's folder."""
        if target.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(folder, target))
            if joined == ".." or joined.startswith("../"):
                return None, True
            return self._first(joined, folder, exact_only=True)[0], True
        return self._first(target.lstrip("/"), folder, exact_only=target.startswith("/"))

    def _first(self, target: str, folder: str, *, exact_only: bool) -> tuple[Resolved | None, bool]:
        # `[[Note]]` means Note.md; a target with another extension (`img.png`) needs no `.md`.
        keys = (target,) if target.lower().endswith(".md") else (target + ".md", target)
        local = False
        for key in keys:
            found, depends = self._match(key, folder, exact_only=exact_only)
            local = local or depends
            if found is not None:
                return found, local
        return None, local

    def _match(self, key: str, folder: str, *, exact_only: bool) -> tuple[Resolved | None, bool]:
        lower = key.lower()
        exact = self._by_path.get(lower)
        if exact:
            return _pick(exact, key), False
        candidates = None if exact_only else self._by_name.get(lower.rpartition("/")[2])
        if not candidates:
            return None, False
        if "/" in lower:  # `[[b/Note]]` matches `a/b/Note.md`
            suffix = "/" + lower
            candidates = [f for f in candidates if f.lower.endswith(suffix)]
            if not candidates:
                return None, False
        if len(candidates) == 1:
            return candidates[0].resolved, False
        own = [f for f in candidates if f.folder == folder]
        if own:
            return _pick(own, key), True
        shortest = min(len(f.path) for f in candidates)
        return _pick([f for f in candidates if len(f.path) == shortest], key), True


def _pick(files: list[_File], key: str) -> Resolved:
    """Break a tie: a case-exact name first, then alphabetical; the others are reported."""
    if len(files) == 1:
        return files[0].resolved
    name = key.rpartition("/")[2]
    ranked = sorted(files, key=lambda f: (f.path.rpartition("/")[2] != name, f.path))
    return Resolved(path=ranked[0].path, ambiguous=tuple(f.path for f in ranked[1:]))
