"""Minimal text edits of a note's frontmatter: one property changes one line, everything else stays byte-for-byte.

Pure: every function takes a note's full text and returns the new full text; IO stays in `vault`.
ruamel.yaml (round-trip) only locates keys and validates; the output is spliced text, never re-serialised YAML.
`edit_bytes` applies an edit to a file's bytes, so a body in any encoding (Latin-1, NUL, invalid UTF-8) comes
back byte-for-byte: the text holds undecodable bytes as surrogate escapes, and the frontmatter must be UTF-8.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLError

from vault_cortex.errors import InvalidRequest, NoteParseError
from vault_cortex.files.frontmatter import past_bounds
from vault_cortex.files.links import wikilink
from vault_cortex.files.yamltext import FENCE_OPEN, render_entry, render_key, scalar
from vault_cortex.limits import check_unicode, lone_surrogate

Value = str | int | float | bool | list[str] | None

_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)
_QUOTED = {'"': re.compile(r'"(?:[^"\\]|\\.)*"', re.S), "'": re.compile(r"'(?:[^']|'')*'")}


class _Constructor(RoundTripConstructor):
    """Round-trip constructor that keeps timestamps as the strings typed (so `2026-02-30` is not an error)."""


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", lambda c, node: str(c.construct_scalar(node)))


@dataclass
class _Fm:
    before: str  # BOM and opening fence
    lines: list[str]  # the YAML, one line each, with its line break
    after: str  # closing fence and body
    nl: str  # the file's line break
    data: CommentedMap
    created: bool = False  # the note had no frontmatter; this block is new


@dataclass
class _Entry:
    start: int  # key line
    end: int  # one past the value's last line (trailing comments and blank lines at the key's level excluded)
    head: str  # key line up to and including ':'
    gap: str  # whitespace after ':'
    value: str  # value text on the key line, comment excluded
    comment: str  # trailing whitespace and comment on the key line
    eol: str  # the key line's line break


def get_frontmatter_span(text: str) -> tuple[int, int] | None:
    """Offsets of the YAML between the fences, or None when the note has no (closed) frontmatter."""
    opening = FENCE_OPEN.match(text)
    if opening is None or not opening.group().endswith("\n"):
        return None
    closing = _CLOSE.search(text, opening.end())
    return (opening.end(), closing.start()) if closing else None


def edit_bytes(data: bytes, edit: Callable[[str], str]) -> bytes:
    """Apply a text edit to a file's bytes; every byte outside the edited frontmatter lines comes back as it was."""
    return edit(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def set_property(text: str, key: str, value: Value) -> str:
    """Set (or, with None, remove) a top-level property, touching only its own line(s)."""
    fm = _parse(text)
    _set(fm, fm.data, key, value, len(fm.lines), *_top(fm))
    return _finish(fm, text)


def add_to_list(text: str, key: str, item: str) -> str:
    """Append an item to a top-level list property (creating it) in its existing style; no-op if present."""
    fm = _parse(text)
    _add(fm, fm.data, key, item, len(fm.lines), *_top(fm))
    return _finish(fm, text)


def add_relation(text: str, rel: str, target: str) -> str:
    """Add `"[[target]]"` under `relations:` → `<rel>:`, creating either as needed; no-op if already there."""
    if not target.strip("[] "):
        raise InvalidRequest("a relation needs a target note")
    link = target if target.startswith("[[") and target.endswith("]]") else f"[[{target}]]"
    fm = _parse(text)
    data = fm.data
    top, (off, dash) = _indent(fm, data), _item_style(fm, data)
    if "relations" not in data:
        child = top + " " * _map_unit(data)
        new = [top + "relations:", child + render_key(rel) + ":", child + " " * off + dash + scalar(link)]
        fm.lines += [line + fm.nl for line in new]
        return _finish(fm, text)
    e = _entry(fm, data, "relations", len(fm.lines))
    rels = data["relations"]
    if rels is None or (isinstance(rels, CommentedMap) and not rels):
        if e.value:  # `relations: ~` or `relations: {}` must lose its value before a block mapping follows
            fm.lines[e.start] = e.head + e.comment + e.eol
        rels = CommentedMap()
    elif not isinstance(rels, CommentedMap) or rels.fa.flow_style() or rels.merge:
        raise NoteParseError("'relations' is not a block mapping of type → list; cannot add a relation minimally")
    child = _indent(fm, rels) if rels else top + " " * _map_unit(data)
    lists = [v for v in rels.values() if isinstance(v, CommentedSeq)]
    style = "flow" if lists and all(_flow(v) for v in lists) else "block"
    _add(fm, rels, rel, link, e.end, child, child + " " * off + dash, style)
    return _finish(fm, text)


def _parse(text: str) -> _Fm:
    i = text.find("\n")
    nl = "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"
    span = get_frontmatter_span(text)
    if span is None:
        if FENCE_OPEN.match(text):
            raise NoteParseError("the note opens frontmatter with '---' but never closes it")
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        return _Fm(bom + "---" + nl, [], "---" + nl + text[len(bom) :], nl, CommentedMap(), created=True)
    start, end = span
    bad = lone_surrogate(text, 0, end)
    if bad is not None:
        line = text.count("\n", 0, bad) + 1
        raise NoteParseError(f"the frontmatter is not valid UTF-8 (line {line}); the note was left untouched")
    src = text[start:end]
    if re.search("[\x85\u2028\u2029]|\r(?!\n)", src):
        raise NoteParseError("the frontmatter holds unusual line breaks (CR, NEL, U+2028); edit it by hand")
    too_big = past_bounds(src)
    if too_big:
        raise NoteParseError(f"the {too_big}; the note was left untouched (edit it by hand)")
    yaml = YAML(typ="rt")
    yaml.Constructor = _Constructor
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            data = yaml.load(src)
    except RecursionError:
        raise NoteParseError("the frontmatter nests too deeply to edit; edit it by hand") from None
    except (YAMLError, ValueError, Warning) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark else ""
        raise NoteParseError(f"the frontmatter is not valid YAML: {getattr(exc, 'problem', exc)}{where}") from exc
    data = CommentedMap() if data is None else data
    lines = [ln + "\n" for ln in src.split("\n")[:-1]]
    if not isinstance(data, CommentedMap):
        raise NoteParseError(f"the frontmatter is {_what(data)}, not a mapping of properties")
    if _flow(data) and not all(_filler(ln, 0) for ln in lines):
        raise NoteParseError("flow-style (JSON) frontmatter cannot be edited minimally; edit it by hand")
    if data.merge:
        raise NoteParseError("the frontmatter uses a '<<' merge key; edit it by hand")
    return _Fm(text[:start], lines, text[end:], nl, data)


def _finish(fm: _Fm, text: str) -> str:
    if fm.created and not fm.lines:
        return text
    for line in fm.lines:
        check_unicode(line, "a property value")
    return fm.before + "".join(fm.lines) + fm.after


def _filler(line: str, col: int) -> bool:
    """A blank line, or a comment no deeper than col (so it belongs to what follows, not to the value)."""
    s = line.strip()
    return not s or (s.startswith("#") and len(line) - len(line.lstrip(" \t")) <= col)


def _entry(fm: _Fm, m: CommentedMap, key: str, limit: int) -> _Entry:
    start, col = m.lc.key(key)
    end = min((m.lc.key(k)[0] for k in m if m.lc.key(k)[0] > start), default=limit)
    while end > start + 1 and _filler(fm.lines[end - 1], col):
        end -= 1
    line = fm.lines[start]
    content = line.rstrip("\r\n")
    colon = _key_end(content, col)
    rest = content[colon + 1 :]
    gap = rest[: len(rest) - len(rest.lstrip(" \t"))]
    value, comment = _split_comment(rest[len(gap) :])
    if not value:  # `key:  # note` — the whitespace belongs to the comment
        gap, comment = "", gap + comment
    return _Entry(start, end, content[: colon + 1], gap, value, comment, line[len(content) :])


def _key_end(content: str, col: int) -> int:
    i = col
    if content[col : col + 1] in ('"', "'"):
        i = _quote_end(content, col)
    for j in range(i, len(content)):
        if content[j] == ":" and content[j + 1 : j + 2] in ("", " ", "\t"):
            return j
    raise NoteParseError(f"cannot find where the key ends on frontmatter line {content!r}")


def _quote_end(s: str, i: int) -> int:
    """Index of the quote closing the scalar opened at s[i] (len(s) when it runs past the end)."""
    found = _QUOTED[s[i]].match(s, i)
    return found.end() - 1 if found else len(s)


def _split_comment(s: str) -> tuple[str, str]:
    """Split a value's text into the value and its trailing whitespace and `# comment`."""
    i, prev = 0, ""
    while i < len(s):
        c = s[i]
        if c in "\"'" and (prev in ("", "[", "{", ",") or (prev == ":" and s[i - 1] in " \t")):
            i = _quote_end(s, i)
            prev = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        elif not c.isspace():
            prev = c
        i += 1
    value = s[:i].rstrip(" \t")
    return value, s[len(value) :]


def _flow_close(s: str, i: int) -> tuple[int, int]:
    """The ']' matching the '[' at s[i], and the last significant character before it."""
    if s[i : i + 1] != "[":
        raise NoteParseError("the flow list does not start where expected (anchor or tag?); edit it by hand")
    depth, last, j = 0, i, i
    while j < len(s):
        c = s[j]
        if c in "\"'" and s[last] in "[{,:":
            j = last = _quote_end(s, j)
        elif c == "#" and s[j - 1] in " \t\n":
            j = s.find("\n", j)
            if j < 0:
                break
        elif c in "]}" and depth == 1:
            return j, last
        elif not c.isspace():
            depth += (c in "[{") - (c in "]}")
            last = j
        j += 1
    raise NoteParseError("unterminated flow list in the frontmatter")


def _flow(x: CommentedMap | CommentedSeq) -> bool:
    return not x or bool(x.fa.flow_style())  # an empty collection can only be written in flow style


def _what(x: object) -> str:
    return "a mapping" if isinstance(x, Mapping) else "a list" if isinstance(x, list) else f"a {type(x).__name__}"


def _indent(fm: _Fm, m: CommentedMap) -> str:
    """The indentation of a mapping's keys: its first key's column, or that of its `?` when the first key is a
    complex one (`? [a, b]` — the key's own column is past the `? `)."""
    if not m:
        return ""
    row, col = m.lc.key(next(iter(m)))
    line = fm.lines[row] if row < len(fm.lines) else ""
    head = line[:col].rstrip(" \t")
    return " " * (len(head) - 1) if head.endswith("?") and not head[:-1].strip() else " " * col


def _top(fm: _Fm) -> tuple[str, str]:
    """Indentation of top-level keys, and the prefix of a new top-level block list item."""
    off, dash = _item_style(fm, fm.data)
    top = _indent(fm, fm.data)
    return top, top + " " * off + dash


def _item_style(fm: _Fm, m: CommentedMap) -> tuple[int, str]:
    """(dash offset from its key, dash and spacing) of the file's first block list; (2, '- ') if none."""
    for mp in [m, *(v for v in m.values() if isinstance(v, CommentedMap))]:
        for k, v in mp.items():
            if isinstance(v, CommentedSeq) and v and not v.fa.flow_style():
                found = re.match(r"([ \t]*)(-[ \t]+)", fm.lines[v.lc.item(0)[0]])
                if found:
                    return max(0, len(found.group(1)) - mp.lc.key(k)[1]), found.group(2)
    return 2, "- "


def _map_unit(m: CommentedMap) -> int:
    for k, v in m.items():
        if isinstance(v, CommentedMap) and v and not v.fa.flow_style():
            return max(1, int(v.lc.key(next(iter(v)))[1]) - int(m.lc.key(k)[1]))
    return 2


def _set(
    fm: _Fm, m: CommentedMap, key: str, value: object, limit: int, indent: str, prefix: str, style: str | None = None
) -> None:
    if key not in m:
        if value is not None:
            fm.lines[limit:limit] = [
                ln + fm.nl for ln in render_entry(indent + render_key(key) + ":", value, prefix, style)
            ]
        return
    e = _entry(fm, m, key, limit)
    old = m[key]
    if value is None:
        del fm.lines[e.start : e.end]
        return
    if _same(old, value):
        return
    if isinstance(old, CommentedSeq) and isinstance(value, list):
        if _flow(old):
            style = "flow"
        elif value:
            fm.lines[e.start + 1 : e.end] = _reuse_items(fm, e, old, value, prefix)
            return
    quote = e.value[:1] if e.value[:1] in ("'", '"') and isinstance(value, str) else ""
    new = render_entry(e.head, value, prefix, style, e.gap or " ", e.comment, quote)
    fm.lines[e.start : e.end] = [ln + e.eol for ln in new]


def _reuse_items(fm: _Fm, e: _Entry, old: CommentedSeq, value: list[Any], prefix: str) -> list[str]:
    """New item lines for a block list, reusing an old item's lines byte-for-byte wherever it stays."""
    starts = [old.lc.item(i)[0] for i in range(len(old))]
    if starts[0] <= e.start:
        raise NoteParseError("a block list starts on its key's line; edit it by hand")
    found = re.match(r"[ \t]*-[ \t]+", fm.lines[starts[0]])
    prefix = found.group() if found else prefix
    pool = [(x, fm.lines[s:b]) for x, s, b in zip(old, starts, [*starts[1:], e.end], strict=True)]
    out = fm.lines[e.start + 1 : starts[0]]
    for v in value:
        hit = next((i for i, (x, _) in enumerate(pool) if isinstance(x, str) and x == v), None)
        out += [prefix + scalar(v) + e.eol] if hit is None else pool.pop(hit)[1]
    return out


def _add(
    fm: _Fm, m: CommentedMap, key: str, item: str, limit: int, indent: str, prefix: str, style: str | None = None
) -> None:
    old = m.get(key)
    if old is None or old == "":
        _set(fm, m, key, [item], limit, indent, prefix, style)
    elif isinstance(old, str) and "\n" not in old:
        if not _same_item(old, item):
            _set(fm, m, key, [str(old), item], limit, indent, prefix, style)
    elif not isinstance(old, CommentedSeq):
        raise NoteParseError(f"'{key}' holds {_what(old)}, not a list; cannot add {item!r} to it")
    elif not any(isinstance(x, str) and _same_item(x, item) for x in old):
        e = _entry(fm, m, key, limit)
        if _flow(old):
            blob = "".join(fm.lines[old.lc.line : e.end])
            close, last = _flow_close(blob, old.lc.col)
            inner = blob[old.lc.col + 1 : close]
            space = " " if "," not in inner or re.search(r",\s", inner) else ""
            ins = scalar(item, flow=True)
            ins = ins if blob[last] == "[" else (space if blob[last] == "," else "," + space) + ins
            blob = blob[: last + 1] + ins + blob[last + 1 :]
            fm.lines[old.lc.line : e.end] = re.findall(r"[^\n]*\n", blob)
        else:
            found = re.match(r"([ \t]*)-[ \t]+", fm.lines[old.lc.item(0)[0]])
            prefix, dash_col = (found.group(), len(found.group(1))) if found else (prefix, len(indent))
            pos = e.end
            while pos > old.lc.item(len(old) - 1)[0] + 1 and _filler(fm.lines[pos - 1], dash_col):
                pos -= 1
            fm.lines.insert(pos, prefix + scalar(item) + e.eol)


def _link_key(s: str) -> str | None:
    link = wikilink(s)
    if link is None:
        return None
    target, subpath, _ = link
    return unicodedata.normalize("NFC", f"{target}#{subpath}" if subpath else target).casefold()


def _same_item(a: str, b: str) -> bool:
    la, lb = _link_key(a), _link_key(b)
    return la == lb if la is not None and lb is not None else a == b


def _kind(x: object) -> str:
    return "bool" if isinstance(x, bool) else "num" if isinstance(x, int | float) else type(x).__name__


def _same(old: object, new: object) -> bool:
    if isinstance(new, list):
        return isinstance(old, list) and all(isinstance(x, str) for x in old) and list(old) == new
    return isinstance(old, str) == isinstance(new, str) and _kind(old) == _kind(new) and old == new
