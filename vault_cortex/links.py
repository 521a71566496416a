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

__all__ = ["MARKDOWN_LINK", "WIKILINK", "Dangling", "Resolved", "Resolver", "parse_destination", "parse_linktext"]

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
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


class _File(msgspec.Struct, frozen=True):
    path: str  # NFC
    lower: str  # lower-cased NFC path
    folder: str  # lower-cased NFC folder, '' at the root


class Resolver:
    """Resolves link targets to vault files: exact path, then own folder, then shortest path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_path: dict[str, list[_File]] = {}
        self._by_name: dict[str, list[_File]] = {}
        self._memo: dict[tuple[str, str], Resolved | Dangling] = {}
        for raw in paths:
            path = _nfc(raw).strip("/")
            lower = path.lower()
            file = _File(path, lower, posixpath.dirname(lower))
            self._by_path.setdefault(lower, []).append(file)
            self._by_name.setdefault(posixpath.basename(lower), []).append(file)

    def resolve(self, target: str, source: str) -> Resolved | Dangling:
        """The file `target` (the path part of a link, no '#subpath') means when written in `source`."""
        source = _nfc(source)
        if not target.strip():
            return Resolved(path=source)  # [[#Heading]] links the note to itself
        folder = posixpath.dirname(source.lower())
        key = (target, folder)
        found = self._memo.get(key)
        if found is None:
            found = self._resolve(_nfc(target).strip(), folder) or Dangling(raw=target)
            self._memo[key] = found
        return found

    def _resolve(self, target: str, folder: str) -> Resolved | None:
        if target.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(folder, target))
            if joined == ".." or joined.startswith("../"):
                return None
            return self._first(joined, folder, exact_only=True)
        return self._first(target.lstrip("/"), folder, exact_only=target.startswith("/"))

    def _first(self, target: str, folder: str, *, exact_only: bool) -> Resolved | None:
        # `[[Note]]` means Note.md; a target with another extension (`img.png`) needs no `.md`.
        keys = (target,) if target.lower().endswith(".md") else (target + ".md", target)
        for key in keys:
            found = self._match(key, folder, exact_only=exact_only)
            if found is not None:
                return found
        return None

    def _match(self, key: str, folder: str, *, exact_only: bool) -> Resolved | None:
        lower = key.lower()
        exact = self._by_path.get(lower)
        if exact:
            return _pick(exact, key)
        if exact_only:
            return None
        candidates = self._by_name.get(posixpath.basename(lower))
        if not candidates:
            return None
        if "/" in lower:  # `[[b/Note]]` matches `a/b/Note.md`
            suffix = "/" + lower
            candidates = [f for f in candidates if f.lower.endswith(suffix)]
            if not candidates:
                return None
        own = [f for f in candidates if f.folder == folder]
        if own:
            return _pick(own, key)
        shortest = min(len(f.path) for f in candidates)
        return _pick([f for f in candidates if len(f.path) == shortest], key)


def _pick(files: list[_File], key: str) -> Resolved:
    """Break a tie: a case-exact name first, then alphabetical; the others are reported."""
    if len(files) == 1:
        return Resolved(path=files[0].path)
    name = posixpath.basename(key)
    ranked = sorted(files, key=lambda f: (posixpath.basename(f.path) != name, f.path))
    return Resolved(path=ranked[0].path, ambiguous=tuple(f.path for f in ranked[1:]))
