"""A note parsed once at the boundary: typed frontmatter, headings, block ids, tags, aliases and raw links.

Pure: takes a path and bytes, returns values. Nothing downstream re-reads raw YAML.
"""

from __future__ import annotations

from typing import Any

import msgspec


class RawLink(msgspec.Struct, frozen=True, kw_only=True):
    """A link as written, before resolution."""

    target: str  # path part as written, '' for a same-note link like [[#Heading]]
    subpath: str = ""  # 'H1#H2' for headings, '^id' for blocks, 'page=3' for PDFs, '' for none
    display: str | None = None  # display text (or image size for embeds)
    kind: str  # 'wikilink' | 'embed' | 'markdown' | 'property' | 'inline_field'
    rel: str  # 'links_to' | 'embeds' | a relation type: 'supports', 'derived_from', 'follows', ...
    line: int  # 1-based line in the file (frontmatter links: the line of their key)


class Heading(msgspec.Struct, frozen=True, kw_only=True):
    level: int
    text: str
    line: int  # 1-based line in the file


class Note(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the index needs from one markdown file."""

    path: str  # vault-relative, '/'-separated, NFC
    title: str  # file name without .md
    frontmatter: dict[str, Any]  # typed values; dates kept as the strings the user typed
    body: str  # text after the frontmatter, line endings normalised to \n
    body_line: int  # 1-based file line where the body starts
    tags: tuple[str, ...] = ()  # lower-cased, without '#', nested kept as 'a/b'; frontmatter and inline
    aliases: tuple[str, ...] = ()
    headings: tuple[Heading, ...] = ()
    block_ids: tuple[str, ...] = ()
    links: tuple[RawLink, ...] = ()
    cortex: str | None = None  # the `cortex:` property as written
    importance: float | None = None
    created: str | None = None
    project: str | None = None
    layer: str | None = None
    pinned: bool = False
    problems: tuple[str, ...] = ()  # parse problems worth showing in doctor (malformed YAML, bad encoding)
