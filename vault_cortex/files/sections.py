"""Minimal edits of a note's body: append, prepend, replace a section by heading path, exact find-and-replace.

Pure: each function takes a note's full text and returns the new full text; only the lines an operation
touches change, every other character stays as it was (line endings, final newline, frontmatter, BOM).
Callers decode with `surrogateescape` so that bytes that are not UTF-8 survive an edit unchanged.
Properties are edited by `edit.set_property`; `apply` dispatches one `EditOp` to either.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from vault_cortex.errors import InvalidRequest
from vault_cortex.files.edit import get_frontmatter_span, set_property

__all__ = ["OPERATIONS", "EditOp", "Section", "append", "apply", "find_replace", "headings", "prepend",
           "replace_section"]

Operation = Literal["append", "prepend", "replace_section", "find_replace", "set_property", "remove_property"]
OPERATIONS: tuple[str, ...] = ("append", "prepend", "replace_section", "find_replace", "set_property",
                               "remove_property")
PropertyValue = str | float | bool | list[str] | None

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")


class EditOp(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One edit of a note. Which fields an operation reads:

    append / prepend: `content`; replace_section: `heading` and `content`; find_replace: `find`, `replace`
    and `count` (how many times `find` must occur, default 1); set_property: `key` and `value` (required: a
    missing value is refused, never read as a deletion); remove_property: `key`.
    """

    op: Operation
    content: str | None = None
    heading: str | None = None
    find: str | None = None
    replace: str | None = None
    count: int = 1
    key: str | None = None
    value: PropertyValue = None


class Section(msgspec.Struct, frozen=True, kw_only=True):
    """An ATX heading of the body: its level, text and 0-based line index in the file."""

    level: int
    text: str
    line: int


def apply(text: str, op: EditOp) -> str:
    """The note's text after one operation; bad input raises InvalidRequest (or NoteParseError)."""
    if op.op == "append":
        return append(text, _need(op.content, "content", op.op))
    if op.op == "prepend":
        return prepend(text, _need(op.content, "content", op.op))
    if op.op == "replace_section":
        return replace_section(text, _need(op.heading, "heading", op.op), _need(op.content, "content", op.op))
    if op.op == "find_replace":
        return find_replace(text, _need(op.find, "find", op.op), _need(op.replace, "replace", op.op), op.count)
    key = _need(op.key, "key", op.op).strip()
    if not key or "\n" in key:
        raise InvalidRequest(f"{op.op} needs a property name (key) on one line")
    if op.op == "remove_property":
        return set_property(text, key, None)
    if op.value is None:
        raise InvalidRequest("set_property needs `value` (text, a number, true/false or a list of text); to remove "
                             "a property, use remove_property")
    value = op.value
    if isinstance(value, float) and value.is_integer() and not isinstance(value, bool):
        value = int(value)
    return set_property(text, key, value)


def _need(value: str | None, field: str, op: str) -> str:
    if value is None:
        raise InvalidRequest(f"{op} needs `{field}`")
    return value


def _nl(text: str, at: int = 0) -> str:
    """The line break used around offset `at`: the next one, else the one before, else \\n (files may mix)."""
    i = text.find("\n", at)
    if i < 0:
        i = text.rfind("\n", 0, at)
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def _block(content: str, nl: str) -> str:
    """Inserted text as whole lines in the file's line-break style."""
    lines = content.replace("\r\n", "\n").replace("\r", "\n")
    if not lines.endswith("\n"):
        lines += "\n"
    return lines.replace("\n", nl)


def _body_start(text: str) -> int:
    """Offset of the first character after the frontmatter's closing fence line (0 without frontmatter)."""
    span = get_frontmatter_span(text)
    if span is None:
        return 1 if text.startswith("\ufeff") else 0
    end = text.find("\n", span[1])
    return len(text) if end < 0 else end + 1


def append(text: str, content: str) -> str:
    """Add lines at the end of the note (a line break first if its last line has none)."""
    nl = _nl(text, len(text))
    sep = nl if text and not text.endswith(("\n", "\r")) else ""
    return text + sep + _block(content, nl)


def prepend(text: str, content: str) -> str:
    """Add lines at the start of the body, right after the frontmatter."""
    at = _body_start(text)
    nl = _nl(text, at)
    if at == len(text) and text and not text.endswith("\n"):  # frontmatter whose closing fence has no break
        return text + nl + _block(content, nl)
    return text[:at] + _block(content, nl) + text[at:]


def headings(text: str) -> list[Section]:
    """The ATX headings of the body, outside fenced code, in order."""
    out: list[Section] = []
    lines = text.split("\n")
    first = text[: _body_start(text)].count("\n")
    fence: tuple[str, int] | None = None
    for i in range(first, len(lines)):
        line = lines[i].rstrip("\r")
        m = _FENCE.match(line)
        if fence is not None:
            if m and m[1][0] == fence[0] and len(m[1]) >= fence[1] and not m[2].strip():
                fence = None
            continue
        if m and not (m[1][0] == "`" and "`" in m[2]):
            fence = (m[1][0], len(m[1]))
            continue
        h = _ATX.match(line)
        if h:
            title = _ATX_CLOSE.sub("", h[2] or "").strip()
            if title:
                out.append(Section(level=len(h[1]), text=title, line=i))
    return out


def _path_options(path: str) -> list[list[str]]:
    """Ways to read a heading path: `A#B` (Obsidian's subpath), `A/B`, or the whole text as one heading."""
    path = path.strip().lstrip("#").strip()
    if "#" in path:
        return [[p.strip() for p in path.split("#")]]
    options = [[path]]
    if "/" in path:
        options.append([p.strip() for p in path.split("/")])
    return options


def _find(sections: list[Section], parts: list[str]) -> list[int]:
    """Indexes of the sections matching a heading path (each part nested in the one before), case-insensitive."""
    want = [p.casefold() for p in parts]
    found = []
    for i, s in enumerate(sections):
        if s.text.casefold() != want[-1]:
            continue
        level, k, j = s.level, len(want) - 2, i - 1
        while k >= 0 and j >= 0:
            if sections[j].level < level:
                if sections[j].text.casefold() == want[k]:
                    k -= 1
                level = sections[j].level
            j -= 1
        if k < 0:
            found.append(i)
    return found


def replace_section(text: str, heading: str, content: str) -> str:
    """Replace what is under a heading (up to the next heading of the same or a higher level).

    The heading path names nested headings, `Setup/Install` or `Setup#Install`; the heading line itself and
    the blank lines around the section's text are kept.
    """
    if not heading.strip().strip("#/").strip():
        raise InvalidRequest("replace_section needs a heading, e.g. 'Setup/Install'")
    sections = headings(text)
    hits: list[int] = []
    for parts in _path_options(heading):
        hits = _find(sections, parts)
        if hits:
            break
    if not hits:
        known = ", ".join(repr(s.text) for s in sections[:20]) or "none"
        raise InvalidRequest(f"no heading {heading!r} in the note (its headings: {known})")
    if len(hits) > 1:
        lines = ", ".join(str(sections[i].line + 1) for i in hits)
        raise InvalidRequest(f"the heading {heading!r} occurs {len(hits)} times (lines {lines}); "
                             "name its parent too, e.g. 'Parent/Heading'")
    at = sections[hits[0]]
    end_line = next((s.line for s in sections[hits[0] + 1:] if s.level <= at.level), None)
    rows = re.findall(r"[^\n]*\n|[^\n]+\Z", text)
    stop = len(rows) if end_line is None else end_line
    start = at.line + 1
    while start < stop and not rows[start].strip():
        start += 1
    last = stop
    while last > start and not rows[last - 1].strip():
        last -= 1
    nl = _nl(text, len("".join(rows[: at.line])))
    head = "".join(rows[:start])
    if head and not head.endswith(("\n", "\r")):  # the heading is the file's last line, without a break
        head += nl
    new = _block(content, nl) if content.strip() else ""
    tail = "".join(rows[last:])
    if not tail and text and not text.endswith(("\n", "\r")) and new:
        new = new[: -len(nl)]  # keep the file's "no final newline"
    return head + new + tail


def find_replace(text: str, find: str, replace: str, count: int = 1) -> str:
    """Replace every occurrence of an exact string, refusing unless it occurs exactly `count` times."""
    if not find:
        raise InvalidRequest("find_replace needs a non-empty `find` string")
    if count < 1:
        raise InvalidRequest(f"count is how many times `find` occurs (1 or more), not {count}")
    found = text.count(find)
    if found != count:
        raise InvalidRequest(f"{find!r} occurs {found} time{'' if found == 1 else 's'} in the note, not {count}; "
                             "nothing was changed")
    return text.replace(find, replace)
