"""Chunking: a note's body cut into heading sections that fit the model's window, with noise left out.

Pure: takes a `Note` and a token counter, returns values.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import msgspec

from vault_cortex.files.noise import Fence, Noise, fences, find_noise
from vault_cortex.files.note import Note

CountTokens = Callable[[str], int]

_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)\s*$")
# Split levels for a paragraph too long for one chunk: sentences, then lines, then words.
_SENTENCE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n(?=\s*(?:[-*+]|\d+[.)]|\|)\s?)")
_LINE = re.compile(r"\n")
_WORD = re.compile(r"\s+")


class Chunk(msgspec.Struct, frozen=True, kw_only=True):
    """One embedded piece of a note: a heading section, or part of one that was too long."""

    ord: int  # 0-based position in the note
    heading_path: tuple[str, ...]  # ancestors' headings, then its own; () before the first heading
    text: str  # the section text as written (noise left out), for snippets and text search
    embed_text: str  # what is embedded: `head`, then text (not stored: `join_head` rebuilds it)
    head: str  # what precedes the text in embed_text: the title and heading path shown ("" for none)
    start_line: int  # 1-based file lines, inclusive
    end_line: int
    tokens: int  # tokens of embed_text
    hash: str  # blake2b-128 hex of embed_text: the embedding cache key


class Chunked(msgspec.Struct, frozen=True, kw_only=True):
    """A note's chunks and the noise spans left out of them."""

    chunks: tuple[Chunk, ...]
    noise: tuple[Noise, ...]


class _Block(msgspec.Struct, frozen=True, kw_only=True):
    """A paragraph or fenced block: consecutive kept lines from `start` (a body line index)."""

    start: int
    text: str
    gap: bool  # blank or dropped lines separate it from the block before
    fence: bool


class _Unit(msgspec.Struct, frozen=True, kw_only=True):
    """A span [a, b) of one block's text that fits a chunk on its own."""

    block: int
    a: int
    b: int
    tokens: int


def text_hash(text: str) -> str:
    """blake2b-128 hex of a text: the embedding cache key."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def embed_text(title: str, heading_path: Sequence[str], text: str) -> str:
    """What the model sees: the title, the heading path joined with ' > ', then the text."""
    path = list(heading_path)
    if path and title and path[0].strip().casefold() == title.strip().casefold():
        path = path[1:]  # a leading '# Title' heading repeats the title
    head = [p for p in (title, " > ".join(path)) if p.strip()]
    return "\n".join([*head, text]) if text else "\n".join(head)


def embed_head(title: str, heading_path: Sequence[str]) -> str:
    """What `embed_text` puts before a chunk's text: the title, then the heading path ("" for neither)."""
    return embed_text(title, heading_path, "")


def join_head(head: str, text: str) -> str:
    """A chunk's embedded text from its head and its text: `embed_text(title, path, text)` exactly, for
    `head = embed_head(title, path)`."""
    return f"{head}\n{text}" if head and text else head or text


def split_head(embedded: str, text: str) -> str:
    """The head of an embedded text made by `join_head(head, text)`."""
    if embedded == text:
        return ""
    return embedded[:len(embedded) - len(text) - 1] if text else embedded


def heading_text(heading_path: Sequence[str]) -> str:
    """A heading path as stored and searched: the headings joined with ' > '."""
    return " > ".join(heading_path)


def stored_head(title: str, heading: str) -> str:
    """The head a chunk gets from its note's title and its stored heading (`heading_text`): the usual one,
    which the index does not store (a head that differs, such as a title left out for room, is stored)."""
    return embed_head(title, heading.split(" > ") if heading else ())


def chunk_note(note: Note, count_tokens: CountTokens, max_tokens: int = 256) -> Chunked:
    """Heading sections of the body, each split (paragraphs, sentences, words) to fit `max_tokens`."""
    lines = note.body.split("\n")
    noise = find_noise(lines, note.body_line)
    dropped = {i - note.body_line for span in noise for i in range(span.start_line, span.end_line + 1)}
    fence_at = {f.start: f for f in fences(lines)}
    chunks: list[Chunk] = []
    for path, lo, hi in _sections(note, lines):
        blocks = _blocks(lines, lo, hi, dropped, fence_at)
        if not blocks:
            continue
        title, shown, pieces = _fit(note.title, path, blocks, count_tokens, max_tokens)
        for text, start, end in pieces:
            head = embed_head(title, shown)
            full = join_head(head, text)
            chunks.append(Chunk(ord=len(chunks), heading_path=path, text=text, embed_text=full, head=head,
                                start_line=start + note.body_line, end_line=end + note.body_line,
                                tokens=count_tokens(full), hash=text_hash(full)))
    if not chunks and note.title.strip():
        block = _Block(start=0, text=note.title.strip(), gap=False, fence=False)
        for text, _, _ in _fit("", (), [block], count_tokens, max_tokens)[2]:
            chunks.append(Chunk(ord=len(chunks), heading_path=(), text=text, embed_text=text, head="",
                                start_line=1, end_line=1, tokens=count_tokens(text), hash=text_hash(text)))
    return Chunked(chunks=tuple(chunks), noise=noise)


def _sections(note: Note, lines: Sequence[str]) -> list[tuple[tuple[str, ...], int, int]]:
    """(heading path, first body line index, last body line index) of the preamble and each section."""
    heads = sorted((h for h in note.headings if 0 <= h.line - note.body_line < len(lines)), key=lambda h: h.line)
    sections: list[tuple[tuple[str, ...], int, int]] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    lo = 0
    for h in heads:
        at = h.line - note.body_line
        sections.append((path, lo, at - 1))
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.text))
        path = tuple(text for _, text in stack)
        setext = at + 1 < len(lines) and not lines[at].lstrip().startswith("#") \
            and _SETEXT_UNDERLINE.match(lines[at + 1]) is not None
        lo = at + (2 if setext else 1)
    sections.append((path, lo, len(lines) - 1))
    return sections


def _blocks(
    lines: Sequence[str], lo: int, hi: int, dropped: set[int], fence_at: dict[int, Fence]
) -> list[_Block]:
    """Paragraphs and whole fenced blocks of body lines lo..hi, without blank or dropped lines."""
    blocks: list[_Block] = []
    gap = False
    i = lo
    while i <= hi:
        if i in dropped or not lines[i].strip():
            gap, i = True, i + 1
            continue
        fence = fence_at.get(i)
        if fence is not None and not dropped.intersection(range(i, fence.end + 1)):
            end = min(fence.end, hi)
        else:
            fence, end = None, i
            while end < hi and end + 1 not in dropped and end + 1 not in fence_at and lines[end + 1].strip():
                end += 1
        text = "\n".join(lines[i:end + 1])
        blocks.append(_Block(start=i, text=text, gap=gap and bool(blocks), fence=fence is not None))
        gap, i = False, end + 1
    return blocks


def _fit(
    title: str, path: tuple[str, ...], blocks: Sequence[_Block], count: CountTokens, max_tokens: int
) -> tuple[str, tuple[str, ...], list[tuple[str, int, int]]]:
    """The title and path to embed with, and (text, first line, last line) of each chunk within max_tokens."""
    whole = _join(blocks, [_Unit(block=k, a=0, b=len(b.text), tokens=0) for k, b in enumerate(blocks)])
    if count(embed_text(title, path, whole)) <= max_tokens:
        return title, path, [(whole, blocks[0].start, _line(blocks[-1], len(blocks[-1].text)))]
    if count(embed_text(title, path, "x")) > max_tokens // 2:
        path = ()  # a heading path too long to leave room for text; the title alone must do
        if count(embed_text(title, path, "x")) > max_tokens // 2:
            title = ""
    base = count(embed_text(title, path, ""))

    def size(text: str) -> int:
        return count(embed_text(title, path, text))

    units: list[_Unit] = []
    for k, block in enumerate(blocks):
        levels = (_LINE, _WORD) if block.fence else (_SENTENCE, _LINE, _WORD)
        spans = _spans(block.text, 0, len(block.text), levels, size, max_tokens)
        units += [_Unit(block=k, a=a, b=b, tokens=n - base) for a, b, n in spans]
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(units):
        j, total = i + 1, base + units[i].tokens
        while j < len(units) and total + units[j].tokens <= max_tokens:
            total, j = total + units[j].tokens, j + 1
        while j - i > 1 and size(_join(blocks, units[i:j])) > max_tokens:
            j -= 1  # a counter that is not additive over the joins
        first, last = units[i], units[j - 1]
        out.append((_join(blocks, units[i:j]), _line(blocks[first.block], first.a),
                    _line(blocks[last.block], last.b)))
        i = j
    return title, path, out


def _spans(text: str, a: int, b: int, levels: Sequence[re.Pattern[str]], size: CountTokens,
           max_tokens: int) -> list[tuple[int, int, int]]:
    """(start, end, size) spans covering text[a:b], each fitting alone: split at the first level that helps."""
    n = size(text[a:b])
    if n <= max_tokens:
        return [(a, b, n)]
    for k, level in enumerate(levels):
        parts = _cut(text, a, b, level)
        if len(parts) > 1:
            return [s for pa, pb in parts for s in _spans(text, pa, pb, levels[k + 1:], size, max_tokens)]
    out: list[tuple[int, int, int]] = []  # one word longer than a chunk: cut it by characters
    while a < b:
        lo, hi = a + 1, b  # the longest prefix that fits, by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if size(text[a:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        out.append((a, lo, size(text[a:lo])))
        a = lo
    return out


def _cut(text: str, a: int, b: int, level: re.Pattern[str]) -> list[tuple[int, int]]:
    """Non-blank pieces of text[a:b] between matches of `level`, as spans trimmed of whitespace."""
    parts: list[tuple[int, int]] = []
    start = a
    for m in level.finditer(text, a, b):
        parts.append((start, m.start()))
        start = m.end()
    parts.append((start, b))
    trimmed = []
    for pa, pb in parts:
        piece = text[pa:pb]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            trimmed.append((pa + lead, pa + len(piece.rstrip())))
    return trimmed


def _join(blocks: Sequence[_Block], units: Sequence[_Unit]) -> str:
    """The text of consecutive units as written: within a block verbatim, blocks joined as separated."""
    pieces: list[str] = []
    k = 0
    while k < len(units):
        block = units[k].block
        end = k
        while end + 1 < len(units) and units[end + 1].block == block:
            end += 1
        if pieces:
            pieces.append("\n\n" if blocks[block].gap else "\n")
        pieces.append(blocks[block].text[units[k].a:units[end].b])
        k = end + 1
    return "".join(pieces)


def _line(block: _Block, offset: int) -> int:
    """Body line index of a span's start or (exclusive, never after a newline) end offset in a block."""
    return block.start + block.text.count("\n", 0, offset)
