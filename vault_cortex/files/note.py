"""A note parsed once at the boundary: typed frontmatter, headings, block ids, tags, aliases and raw links.

Pure: takes a path and bytes, returns values. Nothing downstream re-reads raw YAML.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from bisect import bisect_right
from typing import Any

import msgspec

from vault_cortex.files.frontmatter import load_frontmatter, split_frontmatter
from vault_cortex.files.links import MARKDOWN_LINK, WIKILINK, parse_destination, parse_linktext
from vault_cortex.files.paths import note_name
from vault_cortex.files.properties import (
    TAG_CHAR,
    get_property,
    is_tag,
    property_links,
    read_aliases,
    read_tags,
    typed_fields,
)

__all__ = ["RELATION_TYPES", "Heading", "Note", "RawLink", "decode", "is_binary", "parse_note"]

RELATION_TYPES = frozenset(
    [
        "supports",
        "contradicts",
        "leads_to",
        "reminds_of",
        "derived_from",
        "example_of",
        "related_to",
        "evokes",
        "depends_on",
        "co_retrieved",
        "follows",
        "answered_by",
        "supersedes",  # a later note that reverses or corrects an earlier one (recall/supersession.py)
    ]
)


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


_SNIFF = 8192
_MASK = "\x1a"  # stands in for masked code and links: not whitespace, so no tag or field starts after it


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB means a binary file, whatever its name."""
    return b"\x00" in data[:_SNIFF]


def decode(data: bytes) -> tuple[str, tuple[str, ...]]:
    """Bytes to text with \\n line endings: BOM stripped, bad UTF-8 replaced and reported."""
    if is_binary(data):
        return "", ("binary file (NUL byte in the first 8 KiB); not read as text",)
    problems: list[str] = []
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        problems.append("not valid UTF-8; undecodable bytes replaced")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        problems.append("NUL bytes replaced")
    return text, tuple(problems)


def parse_note(path: str, text: str, relation_types: frozenset[str] = RELATION_TYPES) -> Note:
    """Parse one note's text; never raises on bad content, reports it in `problems`."""
    path = unicodedata.normalize("NFC", path)
    title = note_name(path)
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    raw, body, body_line, problems = split_frontmatter(text)
    fm: dict[str, Any] = {}
    links: list[RawLink] = []
    if raw is not None:
        fm, found = load_frontmatter(raw)
        problems += found
        prop, found = property_links(fm, raw, relation_types)
        problems += found
        links += [RawLink(target=t, subpath=s, display=d, kind="property", rel=r, line=n) for t, s, d, r, n in prop]
    typed, found = typed_fields(fm)
    problems += found
    tags, found = read_tags(get_property(fm, "tags"))
    problems += found
    aliases, found = read_aliases(get_property(fm, "aliases"))
    problems += found
    scan = _Scan(body, body_line)
    links += scan.links
    tags += [t for t in dict.fromkeys(scan.tags) if t not in tags]
    tags = list(dict.fromkeys(t if t.isascii() else unicodedata.normalize("NFC", t) for t in tags))
    return Note(
        path=path,
        title=title,
        frontmatter=fm,
        body=body,
        body_line=body_line,
        tags=tuple(tags),
        aliases=tuple(aliases),
        headings=tuple(scan.headings),
        block_ids=tuple(dict.fromkeys(scan.block_ids)),
        links=tuple(links),
        **msgspec.structs.asdict(typed),
        problems=tuple(problems),
    )


# Block structure (CommonMark, simplified to what decides code, headings and paragraphs).
_FENCE = re.compile(r"(?:[ \t]*>)*[ \t]*(`{3,}|~{3,})(.*)")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")

# Inline syntax.
_BACKTICKS = re.compile(r"`+")
_NOT_NEWLINE = re.compile(r"[^\n]")
_TAG = re.compile(r"#(" + TAG_CHAR + "+)")  # only where the '#' follows whitespace or starts the text
_BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)  # only after a space or alone
_FIELD_KEY = r"(?P<key>[^\s:`\[\]()>#\x1a][^:\n`\[\]()\x1a]*?)[ \t]*::(?=[ \t]|$)"  # `std::vector` is no field
_FIELD_LINE = re.compile(
    r"[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|[0-9]{1,9}[.)])[ \t]+(?:\[.\][ \t]+)?)?" + _FIELD_KEY + r"(?P<value>[^\n]*)"
)
_FIELD_OPEN = re.compile(r"[\[(][ \t]*" + _FIELD_KEY)


class _Scan:
    """One pass over a note body: code masked, then headings, links, fields, tags and block ids."""

    def __init__(self, body: str, first_line: int) -> None:
        self.first_line = first_line
        self.headings: list[Heading] = []
        self.links: list[RawLink] = []
        self.tags: list[str] = []
        self.block_ids: list[str] = []
        self._starts: list[int] | None = None
        self._found: list[tuple[int, RawLink]] = []
        self._fields: list[tuple[int, int, str]] = []
        self._lines = body.split("\n")
        self.text = "\n".join(self._structure(self._lines))
        if "`" in self.text:
            self.text = _mask_code_spans(self.text)
        self._inline()

    def _structure(self, lines: list[str]) -> list[str]:
        """Blank out fenced and indented code and collect headings, line by line."""
        out = list(lines)
        fence: tuple[str, int] | None = None
        in_list = open_para = False
        prev_blank = True
        para = -1  # first line of an open top-level paragraph, for setext headings
        for i, line in enumerate(lines):
            if fence is not None:
                out[i] = ""
                m = _FENCE.match(line)
                if m and m[1][0] == fence[0] and len(m[1]) >= fence[1] and not m[2].strip():
                    fence = None
                continue
            stripped = line.lstrip(" \t")
            if not stripped.lstrip("> \t"):
                out[i] = ""  # so a blank line is always "\n\n" for the inline pass
                prev_blank, open_para, para = True, False, -1
                continue
            lead = line[: len(line) - len(stripped)]
            indent = len(lead.expandtabs(4)) if "\t" in lead else len(lead)
            first = stripped[0]
            if prev_blank and in_list and indent < 2 and not _LIST_ITEM.match(line):
                in_list = False
            prev_blank = False
            m = _FENCE.match(line) if first in "`~>" and (indent <= 3 or in_list) else None
            if m and not (m[1][0] == "`" and "`" in m[2]):  # a backtick fence's info has no backtick
                fence = (m[1][0], len(m[1]))
                out[i] = ""
                open_para, para = False, -1
                continue
            if indent >= 4 and not open_para and not in_list:
                out[i] = ""  # indented code
                continue
            if first == "#" and (m := _ATX.match(line)):
                text = _ATX_CLOSE.sub("", m[2] or "").strip()
                if text:
                    self.headings.append(Heading(level=len(m[1]), text=text, line=self.first_line + i))
                open_para, in_list, para = False, False, -1
                continue
            if para >= 0 and first in "=-" and _SETEXT.match(line):
                text = " ".join(s.strip() for s in lines[para:i])
                level = 1 if first == "=" else 2
                self.headings.append(Heading(level=level, text=text, line=self.first_line + para))
                open_para, para = False, -1
                continue
            if first in "-*_" and _BREAK.match(line):
                open_para, para = False, -1
                continue
            if first == ">" or ((first in "-*+" or first.isdigit()) and _LIST_ITEM.match(line)):
                in_list = in_list or first != ">"
                open_para, para = True, -1
                continue
            if not open_para and not in_list:
                para = i
            open_para = True
        return out

    def _line(self, pos: int) -> int:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self.first_line + bisect_right(self._starts, pos) - 1

    def _original(self, start: int, end: int) -> str:
        """The body's own text for a one-line span of the masked text (code lines change offsets)."""
        index = self._line(start) - self.first_line
        col = start - self._starts[index] if self._starts else start
        return self._lines[index][col : col + end - start]

    def _link(self, pos: int, target: str, subpath: str, display: str | None, kind: str) -> None:
        """Record a link; inside an inline field's value it takes the field's name as its rel."""
        rel = "embeds" if kind == "embed" else "links_to"
        for start, end, name in self._fields:
            if start <= pos < end:
                kind, rel = "inline_field", name
                break
        link = RawLink(target=target, subpath=subpath, display=display, kind=kind, rel=rel, line=self._line(pos))
        self._found.append((pos, link))

    def _inline(self) -> None:
        text = self.text
        self._fields = _fields(text) if "::" in text else []
        if "[[" in text:
            masks = []
            for m in WIKILINK.finditer(text):
                start = m.start()
                if _escaped(text, start):
                    continue
                target, subpath, display = parse_linktext(self._original(m.start(1), m.end(1)))
                if not (target or subpath):
                    continue
                embed = start > 0 and text[start - 1] == "!" and not _escaped(text, start - 1)
                self._link(start, target, subpath, display, "embed" if embed else "wikilink")
                masks.append((start - embed, m.end()))
            text = _mask(text, masks)
        if "](" in text:
            masks = []
            for m in MARKDOWN_LINK.finditer(text):
                self._markdown(m, text)
                masks.append((m.end(1), m.end()))
                if "](" in m[1]:  # an image inside the link text: [![alt](img.png)](Note.md)
                    for inner in MARKDOWN_LINK.finditer(text, m.start(1), m.end(1)):
                        self._markdown(inner, text)
            text = _mask(text, masks)
        self._found.sort(key=lambda item: item[0])
        self.links = [link for _, link in self._found]
        if "#" in text:
            self.tags = [
                m[1].lower()
                for m in _TAG.finditer(text)
                if (m.start() == 0 or text[m.start() - 1].isspace()) and is_tag(m[1])
            ]
        if "^" in text:
            self.block_ids = [
                m[1] for m in _BLOCK_ID.finditer(text) if m.start() == 0 or text[m.start() - 1] in " \t\n"
            ]

    def _markdown(self, m: re.Match[str], text: str) -> None:
        start = m.start()
        parsed = None if _escaped(text, start) else parse_destination(self._original(m.start(2), m.end(2)))
        if parsed is not None:  # None: escaped, or an external URL
            embed = start > 0 and text[start - 1] == "!" and not _escaped(text, start - 1)
            kind = "embed" if embed else "markdown"
            self._link(start - embed, *parsed, self._original(m.start(1), m.end(1)).strip() or None, kind)


def _fields(text: str) -> list[tuple[int, int, str]]:
    """Dataview inline fields as (value start, value end, rel), read only on lines holding '::'."""
    spans: list[tuple[int, int, str]] = []
    pos = text.find("::")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        closing = _closings(text, start, end)
        for m in _FIELD_OPEN.finditer(text, start, end):  # bracketed ones first: they nest
            if m.start() in closing and (rel := _rel(m["key"])):
                spans.append((m.end(), closing[m.start()], rel))
        line = _FIELD_LINE.match(text, start, end)
        if line and (rel := _rel(line["key"])):
            spans.append((line.start("value"), line.end("value"), rel))
        pos = text.find("::", end)
    return spans


def _rel(key: str) -> str:
    """A field name as a relation: `**Depends On**` → `depends_on`."""
    return "_".join(key.strip().strip("*_").lower().split())


def _closings(text: str, start: int, end: int) -> dict[int, int]:
    """For each `[` or `(` in text[start:end], the index of the bracket that closes it."""
    found: dict[int, int] = {}
    stacks: dict[str, list[int]] = {"[": [], "(": []}
    for i in range(start, end):
        c = text[i]
        if c in "[(":
            stacks[c].append(i)
        elif c in "])":
            stack = stacks["[" if c == "]" else "("]
            if stack:
                found[stack.pop()] = i
    return found


def _escaped(text: str, pos: int) -> bool:
    """Whether the character at `pos` is escaped by an odd run of backslashes."""
    n = 0
    while pos > n and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace each span by mask characters, keeping its newlines so offsets and lines stay put."""
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        segment = text[start:end]
        parts += (text[pos:start], _NOT_NEWLINE.sub(_MASK, segment) if "\n" in segment else _MASK * len(segment))
        pos = end
    return "".join(parts) + text[pos:] if parts else text


def _mask_code_spans(text: str) -> str:
    """Blank out inline code spans: a backtick run closed by an equal run within the same paragraph."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_size: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_size.setdefault(end - start, []).append(index)
    spans: list[tuple[int, int]] = []
    i, limit = 0, -1
    while i < len(runs):
        start, end = runs[i]
        i += 1
        if _escaped(text, start):
            start += 1  # `\`` is a literal backtick; the rest of the run may still open a span
        if end > limit:  # the paragraph ends at the next blank line
            limit = text.find("\n\n", end)
            limit = len(text) if limit < 0 else limit
        same = by_size.get(end - start, [])
        k = bisect_right(same, i - 1)
        if start < end and k < len(same) and runs[same[k]][0] < limit:
            spans.append((start, runs[same[k]][1]))
            i = same[k] + 1
    return _mask(text, spans)
