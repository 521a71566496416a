"""YAML values as text: how vault-cortex writes property values, new notes and file names.

Pure. A value is written plain when YAML 1.1 and 1.2 readers (PyYAML, ruamel, Obsidian) read it back
unchanged, and quoted otherwise; wikilinks are always double-quoted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from vault_cortex.errors import InvalidRequest

FENCE_OPEN = re.compile(r"\ufeff?---[ \t]*(?:\r?\n|\Z)")
_WORDS = {"~", "null", "true", "false", "yes", "no", "on", "off", "=", "<<"}
_NUMBERISH = re.compile(r"[-+]?(?:\.(?:inf|nan)|\.?[0-9][0-9a-z_.:+-]*)", re.I)
_DATEISH = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[-+]\d\d:\d\d)?)?")
_SPECIAL_FLOATS = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_BAD_NAME = re.compile(r'%%|[#|^:\[\]/\\?*<>"\x00-\x1f\x7f-\x9f\u2028\u2029]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def render_new_note(*, title: str | None, body: str, properties: Mapping[str, object]) -> str:
    """A new note's text: frontmatter in the given key order, `# title` unless the body has one, LF, final newline."""
    lines: list[str] = []
    for key, value in properties.items():
        if value is not None:
            lines += render_entry(render_key(key) + ":", value, "  - ", None)
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if title and title.strip() and not body.startswith("# "):
        title = " ".join(title.split())
        body = f"# {title}\n\n{body}" if body.strip() else f"# {title}\n"
    if body and not body.endswith("\n"):
        body += "\n"
    if not lines and not FENCE_OPEN.match(body):
        return body
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


def note_filename(title: str) -> str:
    """A safe file stem (without `.md`) for a title: no link- or file-system-breaking characters, ≤ 100 chars."""
    name = " ".join(_BAD_NAME.sub(" ", unicodedata.normalize("NFC", title)).split()).lstrip(". ")
    if len(name) > 100 or len(name.encode()) > 200:
        name = name[:100]
        while len(name.encode()) > 200:
            name = name[:-1]
        cut = name.rfind(" ")
        name = name[:cut] if cut >= 60 else name
    name = name.rstrip(". \u200d")
    if name.split(".")[0].upper() in _RESERVED:
        name += "_"
    return name or "untitled"


def render_entry(
    head: str, value: object, prefix: str, style: str | None, gap: str = " ", comment: str = "", quote: str = ""
) -> list[str]:
    """Lines (without line breaks) for `head value`, lists in flow or block style, mappings as blocks."""
    if isinstance(value, Mapping):
        if not value:
            return [head + gap + "{}" + comment]
        child = " " * (len(head) - len(head.lstrip()) + 2)
        out = [head + comment]
        for k, v in value.items():
            out += render_entry(child + render_key(k) + ":", v, child + "  - ", None)
        return out
    if isinstance(value, list | tuple):
        style = style or default_style(list(value))
        if style == "flow" or not value:
            return [head + gap + "[" + ", ".join(scalar(i, flow=True) for i in value) + "]" + comment]
        return [head + comment] + [prefix + scalar(i) for i in value]
    return [head + gap + scalar(value, quote=quote) + comment]


def default_style(items: list[Any]) -> str:
    """Flow for short lists of plain words, block otherwise (wikilinks, quoting, long items)."""
    plain = all(isinstance(i, int | float) or (isinstance(i, str) and plain_ok(i, True)) for i in items)
    return "flow" if plain and sum(len(str(i)) + 2 for i in items) <= 60 else "block"


def render_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidRequest(f"a property name must be a non-empty string, not {key!r}")
    return scalar(key)


def scalar(v: object, flow: bool = False, quote: str = "") -> str:
    """A scalar as YAML needs it: plain when YAML 1.1 and 1.2 both read it back unchanged, else quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, date | datetime):
        v = v.isoformat()
    if not isinstance(v, str):
        raise InvalidRequest(f"cannot write a {type(v).__name__} as a property value")
    if "[[" in v:
        return _double(v)
    if quote == "'" and v.isprintable():
        return "'" + v.replace("'", "''") + "'"
    return _double(v) if quote == '"' or not plain_ok(v, flow) else v


def plain_ok(s: str, flow: bool) -> bool:
    if not s or s != s.strip() or not s.isprintable() or s[0] in "-?:,[]{}#&*!|>'\"%@`":
        return False
    if ": " in s or " #" in s or s.endswith(":") or (flow and any(c in s for c in ",[]{}:#?")):
        return False
    if s.lower() in _WORDS:
        return False
    if _DATEISH.fullmatch(s):  # dates stay plain, as Obsidian writes them; only valid ones (PyYAML builds them)
        try:
            (date.fromisoformat if len(s) == 10 else datetime.fromisoformat)(s)
            return True
        except ValueError:
            return False
    return not _NUMBERISH.fullmatch(s)


def _double(s: str) -> str:
    return '"' + "".join(_ESCAPES.get(c) or (c if c.isprintable() else _hex(ord(c))) for c in s) + '"'


def _hex(n: int) -> str:
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _float(f: float) -> str:
    r = repr(f)
    if r in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[r]
    return r.replace("e", ".0e") if "e" in r and "." not in r else r  # PyYAML reads '1e-05' as a string
