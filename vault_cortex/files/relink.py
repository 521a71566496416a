"""Rewriting links when notes move, as Obsidian's "automatically update internal links" does.

Pure: takes a note's text, the link resolvers before and after the move, and returns the new text with only
the link targets that would otherwise point elsewhere rewritten (display text, heading and block subpaths,
embeds' `!`, a `.md` suffix and markdown links' URL-encoding are kept). A link that still resolves to the
same note after the move is left byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

import msgspec

from vault_cortex.files.links import MARKDOWN_LINK, WIKILINK, Dangling, Resolver, parse_destination, parse_linktext
from vault_cortex.files.note import parse_note
from vault_cortex.files.paths import note_name

__all__ = ["Relinked", "link_text", "relink"]


class Relinked(msgspec.Struct, frozen=True, kw_only=True):
    """One link rewritten: in which note, on which line (1-based), from what to what."""

    path: str
    line: int
    old: str
    new: str


def link_text(dest: str, source: str, resolver: Resolver) -> str:
    """The shortest link target that resolves to `dest` from `source`: the name, else the full path."""
    stem = dest.removesuffix(".md") if dest.lower().endswith(".md") else dest
    name = note_name(dest)
    for candidate in (name, stem):
        found = resolver.resolve(candidate, source)
        if not isinstance(found, Dangling) and found.path == dest:
            return candidate
    return stem


def _allowed(path: str, text: str) -> tuple[dict[int, set[str]], set[str], int]:
    """Link targets the parser found, by 1-based line (code blocks excluded), and those of the frontmatter."""
    note = parse_note(path, re.sub("[\udc80-\udcff]", "\ufffd", text))  # bytes that are not UTF-8, as parsing sees them
    by_line: dict[int, set[str]] = {}
    props: set[str] = set()
    for ln in note.links:
        if ln.kind == "property":
            props.add(ln.target)
        else:
            by_line.setdefault(ln.line, set()).add(ln.target)
    return by_line, props, note.body_line


def relink(text: str, source: str, new_source: str, before: Resolver, after: Resolver,
           moved: Mapping[str, str]) -> tuple[str, list[Relinked]]:
    """Rewrite the links in `text` (the note at `source`, now at `new_source`) that the moves would break.

    A link is rewritten when it resolved (before) to a note and no longer resolves (after) to where that
    note is now: to a moved note, a link that a moved note now captures, or a relative link of a moved note.
    """
    by_line, props, body_line = _allowed(source, text)
    if not by_line and not props:
        return text, []
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)  # as `parse_note` counts lines
    changes: list[Relinked] = []

    def target_for(target: str) -> str | None:
        """The new link target, or None to leave the link as it is."""
        old = before.resolve(target, source)
        if isinstance(old, Dangling):
            return None
        want = moved.get(old.path, old.path)
        now = after.resolve(target, new_source)
        if not isinstance(now, Dangling) and now.path == want:
            return None
        new = link_text(want, new_source, after)
        if target.lower().endswith(".md") and not new.lower().endswith(".md"):
            new += ".md"
        return new

    for i, line in enumerate(lines):
        number = i + 1
        wanted = props if number < body_line else by_line.get(number)
        if not wanted:
            continue
        new_line = _rewrite_line(line, wanted, target_for)
        if new_line != line:
            changes.append(Relinked(path=new_source, line=number, old=line.rstrip("\r\n"),
                                    new=new_line.rstrip("\r\n")))
            lines[i] = new_line
    return "".join(lines), changes


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Inline code spans of one line: a backtick run closed by a run of the same length."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", line)]
    spans = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        close = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == end - start), None)
        if close is None:
            i += 1
            continue
        spans.append((start, runs[close][1]))
        i = close + 1
    return spans


def _rewrite_line(line: str, wanted: set[str], target_for: Callable[[str], str | None]) -> str:
    """The line with each wanted link's target replaced where `target_for` gives a new one."""
    out: list[str] = []
    pos = 0
    code = _code_spans(line)
    spans: list[tuple[int, int, str]] = [(s, e, line[s:e]) for s, e in code]
    for m in WIKILINK.finditer(line):
        if any(s <= m.start() < e for s, e in code):
            continue
        inner = m.group(1)
        target, _, _ = parse_linktext(inner)
        if target not in wanted or not target:
            continue
        new = target_for(target)
        if new is None:
            continue
        cut = min([i for i in (inner.find("#"), inner.find("|"), inner.find("\\|")) if i >= 0], default=len(inner))
        head = inner[:cut]
        lead = head[: len(head) - len(head.lstrip())]
        trail = head[len(head.rstrip()):]
        spans.append((m.start(1), m.start(1) + cut, lead + new + trail))
    for m in MARKDOWN_LINK.finditer(line):
        if any(s <= m.start() < e for s, e, _ in spans):
            continue
        raw = m.group(2)
        parsed = parse_destination(raw)
        if parsed is None or parsed[0] not in wanted or not parsed[0]:
            continue
        new = target_for(parsed[0])
        if new is None:
            continue
        angle = raw.startswith("<")
        body = raw[1:-1] if angle else raw
        _, hash_, sub = body.partition("#")
        dest = new if angle else quote(new, safe="/()!$&'*+,;=:@-._~")
        rebuilt = dest + (hash_ + sub if hash_ else "")
        spans.append((m.start(2), m.end(2), f"<{rebuilt}>" if angle else rebuilt))
    if not spans:
        return line
    for start, end, new in sorted(spans):
        out.append(line[pos:start])
        out.append(new)
        pos = end
    out.append(line[pos:])
    return "".join(out)
