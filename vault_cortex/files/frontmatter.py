"""Frontmatter: find the block, load it as YAML 1.2 (or JSON), and read tags, aliases and typed properties.

Pure. Values stay what the user typed: dates are strings, `yes` is a string, `012` is the integer 12.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import msgspec
import yaml

from vault_cortex.files.links import WIKILINK, parse_linktext

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader

__all__ = [
    "TAG_CHAR",
    "Typed",
    "get_property",
    "is_date",
    "is_tag",
    "load_frontmatter",
    "normalise_tag",
    "property_links",
    "read_aliases",
    "read_tags",
    "show",
    "body_text",
    "split_frontmatter",
    "typed_fields",
]

# One character of a tag: anything but whitespace, control characters and punctuation, except `_ - /`.
TAG_CHAR = (
    r"[^\s\x00-\x1f\x7f!-,.:-@\[-^`{-~¡§«¶·»¿×÷\u2000-\u206f\u2e00-\u2e7f\u3000-\u3003"
    r"\u3008-\u3011\u3014-\u301f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]"
)
_TAG = re.compile(TAG_CHAR + "+")
_NOT_A_TAG = re.compile(r"[0-9]+|[-_/]+")  # at least one non-digit, and more than punctuation
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_SPLIT_TAGS = re.compile(r"[,\s]+")

MAX_DEPTH = 64  # nesting levels of a frontmatter value; deeper is refused, not recursed into
MAX_VALUES = 50_000  # values in the frontmatter once YAML aliases are expanded (a "billion laughs" stops here)
MAX_CHARS = 4_000_000  # characters of text in it, expanded the same way (a bomb of long strings stops here)
_INT64 = 2**63  # integers beyond this are kept as the digits typed (JSON clients and msgspec cannot hold them)


def is_tag(text: str) -> bool:
    """Whether `text` (without '#') is a valid tag: tag characters only, not all digits or dashes."""
    return _TAG.fullmatch(text) is not None and _NOT_A_TAG.fullmatch(text) is None


def normalise_tag(text: str) -> str | None:
    """A tag to write: '#' dropped, runs of spaces as '-' (Obsidian allows no spaces); None if still invalid."""
    tag = "-".join(text.strip().removeprefix("#").split())
    return tag if is_tag(tag) else None


def body_text(text: str) -> str:
    """A note's text after its frontmatter, as the parser reads it (BOM dropped, line endings as LF)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return split_frontmatter(text)[1]


def split_frontmatter(text: str) -> tuple[str | None, str, int, list[str]]:
    """(frontmatter text or None, body, 1-based body line, problems); an unclosed `---` is body."""
    if not text.startswith("---"):
        return None, text, 1, []
    newline = text.find("\n")
    if (text if newline < 0 else text[:newline]).rstrip() != "---":
        return None, text, 1, []
    close = _CLOSE.search(text, newline + 1) if newline >= 0 else None
    if close is None:
        return None, text, 1, ["frontmatter '---' on line 1 is never closed; read as body"]
    raw = text[newline + 1 : close.start()]
    return raw, text[close.end() + 1 :], raw.count("\n") + 3, []


class _Loader(_BaseLoader):  # type: ignore[misc]
    """PyYAML's safe loader with the YAML 1.2 core schema: no `yes` booleans, octals or timestamps."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    self.duplicates.append(key.value)
                seen.add(key.value)
        return super().construct_mapping(node, deep=deep)


def _core_resolver(tag: str, pattern: str, first: str) -> None:
    _Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))


_core_resolver("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN")
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])
_core_resolver("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_core_resolver("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
_core_resolver(
    "tag:yaml.org,2002:float",
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    "-+.0123456789",
)
_core_resolver("tag:yaml.org,2002:merge", r"^<<$", "<")


def _construct_int(loader: _Loader, node: Any) -> int | str:
    typed = str(loader.construct_scalar(node))
    text = typed.replace("_", "")
    if len(text) > 40:  # far past 64 bits: keep the digits typed (int() refuses 4,300+ digits anyway)
        return typed
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _construct_float(loader: _Loader, node: Any) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    return math.nan if text == ".nan" else float(text)


def _construct_str(loader: _Loader, node: Any) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_str)


def load_frontmatter(raw: str) -> tuple[dict[str, Any], list[str]]:
    """Parse frontmatter text into plain JSON-like values; never raises, reports problems instead.

    Bounded: a value nested deeper than MAX_DEPTH or expanding (through YAML aliases) past MAX_VALUES
    makes the whole frontmatter ignored with a problem, so no note costs more than that to index.
    """
    if not raw.strip():
        return {}, []
    problems: list[str] = []
    data: Any = None
    loaded = False
    if raw.lstrip().startswith("{"):  # JSON properties, inside the `---` fences
        try:
            data, loaded = json.loads(raw), True
        except RecursionError:
            return {}, [f"frontmatter nests more than {MAX_DEPTH} levels deep; ignored"]
        except ValueError:
            pass
    if not loaded:
        loader = _Loader(raw)
        try:
            data = loader.get_single_data()
        except RecursionError:
            return {}, [f"frontmatter nests more than {MAX_DEPTH} levels deep; ignored"]
        except Exception as exc:  # any loader failure is bad input, never a crash
            return {}, [f"malformed YAML frontmatter: {_reason(exc)}"]
        finally:
            loader.dispose()
        problems += [f"duplicate frontmatter key {show(k)}; the last value is used" for k in loader.duplicates]
    if data is None:
        return {}, problems
    if not isinstance(data, dict):
        return {}, [*problems, f"frontmatter is a {type(data).__name__}, not a mapping; ignored"]
    try:
        return _Plain().convert(data, 0), problems
    except _TooBig as exc:
        return {}, [*problems, f"{exc}; ignored"]
    except RecursionError:
        return {}, [*problems, f"frontmatter nests more than {MAX_DEPTH} levels deep; ignored"]


def show(value: Any, limit: int = 80) -> str:
    """A value's repr for a problem message, cut short: a huge property must not make a huge message."""
    if isinstance(value, dict | list) and _Plain.quick_size(value) > limit:
        return f"<a {type(value).__name__} of {len(value)} items>"
    text = repr(value) if not isinstance(value, int) or abs(value) < _INT64 else f"<a {value.bit_length()}-bit number>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(exc: Exception) -> str:
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 2})" if mark is not None else str(problem)  # file line


class _TooBig(ValueError):
    """The frontmatter nests or expands past its bounds."""


class _Plain:
    """Convert loader output to dict/list/str/int/float/bool/None, sharing aliases, cutting cycles, bounded."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, int, int]] = {}  # id -> (converted, values, characters) once expanded
        self.active: set[int] = set()
        self.values = 0  # values so far, counting each use of an alias in full
        self.chars = 0  # characters of text so far, the same way (what storing it as JSON costs)

    @staticmethod
    def quick_size(value: Any) -> int:
        """Roughly how long a value's repr is, without building it (stops counting early)."""
        size, stack = 0, [value]
        while stack and size < 1000:
            item = stack.pop()
            if isinstance(item, dict):
                stack += [*item.keys(), *item.values()]
            elif isinstance(item, list):
                stack += item
            size += len(item) + 2 if isinstance(item, str) else 4
        return size

    def convert(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, str | bool | float):
            self.count(1, len(value) if isinstance(value, str) else 0)
            return value
        if isinstance(value, int):
            self.count(1, 0)
            return value if abs(value) < _INT64 else str(value)
        if depth >= MAX_DEPTH:
            raise _TooBig(f"frontmatter nests more than {MAX_DEPTH} levels deep")
        ident = id(value)
        if ident in self.memo:
            shared, values, chars = self.memo[ident]
            self.count(values, chars)
            return shared
        if ident in self.active:  # a recursive YAML alias
            return None
        self.active.add(ident)
        values, chars = self.values, self.chars
        self.count(1, 0)
        out: Any
        if isinstance(value, dict):
            out = {self.key(k): self.convert(v, depth + 1) for k, v in value.items()}
        elif isinstance(value, set | frozenset):
            out = [self.convert(v, depth + 1) for v in sorted(value, key=str)]
        elif isinstance(value, list | tuple):
            out = [self.convert(v, depth + 1) for v in value]
        elif isinstance(value, dt.date):
            out = value.isoformat()
        elif isinstance(value, bytes):
            out = base64.b64encode(value).decode("ascii")
        else:
            out = str(value)
        self.active.discard(ident)
        self.memo[ident] = (out, self.values - values, self.chars - chars)
        return out

    def key(self, key: Any) -> str:
        text = _key(key)
        self.count(0, len(text))
        return text

    def count(self, values: int, chars: int) -> None:
        self.values += values
        self.chars += chars
        if self.values > MAX_VALUES:
            raise _TooBig(f"frontmatter expands to more than {MAX_VALUES:,} values (YAML aliases?)")
        if self.chars > MAX_CHARS:
            raise _TooBig(f"frontmatter expands to more than {MAX_CHARS:,} characters (YAML aliases?)")


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def get_property(fm: dict[str, Any], name: str) -> Any:
    """A property by name, matching the key case-insensitively as Obsidian does."""
    if name in fm:
        return fm[name]
    return next((v for k, v in fm.items() if k.lower() == name), None)


def read_tags(value: Any) -> tuple[list[str], list[str]]:
    """Tags from the `tags` property: a list, a string, or comma/space-separated; '#' dropped, lower-cased."""
    items = _SPLIT_TAGS.split(value) if isinstance(value, str) else _items(value)
    tags: list[str] = []
    problems: list[str] = []
    for item in items:
        if item is None or item == "":
            continue
        text = str(item).strip() if isinstance(item, str | int | float) else None
        if text is not None and text.startswith("#"):
            text = text[1:]
        if text is None or isinstance(item, bool) or not is_tag(text):
            problems.append(f"tags: {show(item)} is not a valid tag; ignored")
        elif text.lower() not in tags:
            tags.append(text.lower())
    return tags, problems


def read_aliases(value: Any) -> tuple[list[str], list[str]]:
    """Aliases from the `aliases` property: a list or one plain string; case kept."""
    aliases: list[str] = []
    problems: list[str] = []
    for item in _items(value):
        if isinstance(item, dict | list):
            problems.append(f"aliases: {show(item)} is not text; ignored")
            continue
        text = "" if item is None else _text(item).strip()
        if text and text not in aliases:
            aliases.append(text)
    return aliases, problems


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Typed(msgspec.Struct, frozen=True, kw_only=True):
    """The properties vault-cortex gives a meaning to."""

    cortex: str | None = None
    importance: float | None = None
    created: str | None = None
    project: str | None = None
    layer: str | None = None
    pinned: bool = False


def typed_fields(fm: dict[str, Any]) -> tuple[Typed, list[str]]:
    """Read cortex, importance, created, project, layer and pinned; bad values become problems."""
    problems: list[str] = []

    def text(name: str) -> str | None:
        value = get_property(fm, name)
        if isinstance(value, list) and value:
            if len(value) > 1:
                problems.append(f"{name}: has {len(value)} values; the first is used")
            value = value[0]
        if value is None or value == "":
            return None
        if isinstance(value, dict | list):
            problems.append(f"{name}: {show(value)} is not text; ignored")
            return None
        return _text(value).strip()

    created = text("created")
    if created is not None and not is_date(created):
        problems.append(f"created: {show(created)} is not a date (YYYY-MM-DD, optionally THH:MM); ignored")
        created = None
    problems += _relation_problems(get_property(fm, "relations"))
    project = text("project")
    if project and (m := WIKILINK.fullmatch(project)):
        project = parse_linktext(m.group(1))[0] or project
    return Typed(
        cortex=text("cortex"),
        importance=_importance(get_property(fm, "importance"), problems),
        created=created,
        project=project,
        layer=text("layer"),
        pinned=_pinned(get_property(fm, "pinned"), problems),
    ), problems


def _importance(value: Any, problems: list[str]) -> float | None:
    if value is None:
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        problems.append(f"importance: {show(value)} is not a number; ignored")
        return None
    clamped = min(1.0, max(0.0, number))
    if clamped != number:
        problems.append(f"importance: {show(value)} is outside [0, 1]; clamped to {clamped:g}")
    return clamped


_DATE = re.compile(
    r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,][0-9]{1,9})?)?"
    r"(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?)?)?"
)


def is_date(text: str) -> bool:
    """A date or date-time as Obsidian's date properties hold it (a year or year-month is accepted too)."""
    m = _DATE.fullmatch(text.strip())
    if m is None:
        return False
    y, mo, d, h, mi, s = (int(g) if g else None for g in m.groups())
    try:
        dt.datetime(y or 1, mo or 1, d or 1, h or 0, mi or 0, s or 0)
    except ValueError:
        return False
    return True


def _relation_problems(value: Any) -> list[str]:
    """`relations` is a mapping of type → "[[link]]" or a list of them; anything else is said, not dropped."""
    if value is None or value == "":
        return []
    if not isinstance(value, dict):
        return [f"relations: {show(value)} is not a mapping of type → links; ignored"]
    problems = []
    for rel, targets in value.items():
        for item in targets if isinstance(targets, list) else [targets]:
            if item is None or (isinstance(item, list) and len(item) == 1 and isinstance(item[0], str)):
                continue  # empty, or an unquoted [[link]] (reported on its own)
            if not isinstance(item, str) or "[[" not in item:
                problems.append(f'relations.{rel}: {show(item)} is not a "[[link]]"; ignored')
    return problems


def _pinned(value: Any, problems: list[str]) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problems.append(f"pinned: {show(value)} is not true or false; read as false")
    return False


def property_links(
    fm: dict[str, Any], raw: str, relation_types: frozenset[str]
) -> tuple[list[tuple[str, str, str | None, str, int]], list[str]]:
    """Links in property values as (target, subpath, display, rel, file line of the key), and problems."""
    found: list[tuple[str, str, str | None, str, int]] = []
    problems: list[str] = []
    if "[[" not in raw:
        return found, problems
    lines: dict[str, list[int]] = {}
    for key, value in fm.items():
        name = key.strip().lower()
        relations = value if name == "relations" and isinstance(value, dict) else {}
        problems += _unquoted(key, value)
        problems += [p for k, v in relations.items() for p in _unquoted(f"relations.{k}", v)]
        links = _links_in(value)
        if not links:
            continue
        lines = lines or _key_lines(raw)
        at = _line_of(lines, key, 0)
        if relations:
            for rel_key, rel_value in relations.items():
                rel = "_".join(rel_key.lower().split()) or "links_to"
                line = _line_of(lines, rel_key, at) or at
                found += [(*link, rel, line) for link in _links_in(rel_value)]
        else:
            rel = name if name in relation_types else "links_to"
            found += [(*link, rel, at) for link in links]
    return found, problems


def _links_in(value: Any) -> list[tuple[str, str, str | None]]:
    """(target, subpath, display) of every quoted wikilink in a property value."""
    out = []
    for text in _strings(value):
        if "[[" in text:
            for m in WIKILINK.finditer(text):
                target, subpath, display = parse_linktext(m[1])
                if target or subpath:
                    out.append((target, subpath, display))
    return out


def _strings(value: Any) -> Iterator[str]:
    """Every string in a value, visiting each shared (aliased) container once."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(reversed(list(item.values()) if isinstance(item, dict) else item))


def _unquoted(key: str, value: Any) -> list[str]:
    """An unquoted `[[X]]` in YAML is a nested list, not a link; say so rather than drop it silently."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, list) and len(v) == 1 and isinstance(v[0], str) for v in value)
    ):
        return [f'{key}: unquoted [[link]] is a nested YAML list, not a link; write "[[...]]"']
    return []


_KEY = re.compile(r"^[ \t]*(?:- +)?([\"']?)([^\s\"'#:][^\n]*?)\1[ \t]*:(?:[ \t]|$)", re.MULTILINE)


def _key_lines(raw: str) -> dict[str, list[int]]:
    """Every `key:` in the frontmatter text with its file lines (the text starts on line 2)."""
    lines: dict[str, list[int]] = {}
    line, pos = 2, 0
    for m in _KEY.finditer(raw):
        line += raw.count("\n", pos, m.start())
        pos = m.start()
        lines.setdefault(m[2], []).append(line)
    return lines


def _line_of(lines: dict[str, list[int]], key: str, after: int) -> int:
    """File line of the first `key:` after line `after` (best effort: 1, the fence, when not found)."""
    return next((line for line in lines.get(key, ()) if line > after), 1 if after == 0 else 0)
