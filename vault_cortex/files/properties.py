"""Properties: what frontmatter values mean — tags, aliases, the typed fields, dates, relations and their links.

Pure. Reads the plain values `frontmatter.load_frontmatter` returns; bad values become problems, never exceptions.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from vault_cortex.files.frontmatter import show
from vault_cortex.files.links import WIKILINK, parse_linktext, wikilink

__all__ = [
    "DEFAULT_WEIGHT",
    "RAW_LAYER",
    "TAG_CHAR",
    "Typed",
    "as_weight",
    "get_property",
    "is_capture",
    "is_date",
    "is_tag",
    "normalise_tag",
    "parse_datetime",
    "property_links",
    "read_aliases",
    "read_tags",
    "typed_fields",
]

# One character of a tag: anything but whitespace, control characters and punctuation, except `_ - /`.
TAG_CHAR = (
    r"[^\s\x00-\x1f\x7f!-,.:-@\[-^`{-~¡§«¶·»¿×÷\u2000-\u206f\u2e00-\u2e7f\u3000-\u3003"
    r"\u3008-\u3011\u3014-\u301f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]"
)
_TAG = re.compile(TAG_CHAR + "+")
_NOT_A_TAG = re.compile(r"[0-9]+|[-_/]+")  # at least one non-digit, and more than punctuation
_SPLIT_TAGS = re.compile(r"[,\s]+")
DEFAULT_WEIGHT = 0.5  # a habit's or resonance concept's weight (and baseline) when it has none


def is_tag(text: str) -> bool:
    """Whether `text` (without '#') is a valid tag: tag characters only, not all digits or dashes."""
    return _TAG.fullmatch(text) is not None and _NOT_A_TAG.fullmatch(text) is None


def normalise_tag(text: str) -> str | None:
    """A tag to write: '#' dropped, runs of spaces as '-' (Obsidian allows no spaces); None if still invalid."""
    tag = "-".join(text.strip().removeprefix("#").split())
    return tag if is_tag(tag) else None


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


RAW_LAYER = "raw"  # `layer: raw`: what the session capture and the chat importers write


def is_capture(layer: str | None) -> bool:
    """Whether a note of this layer is a capture: a session's words as they were said (the capture hook's or an
    imported chat's `layer: raw`), what was said rather than what is true, until sleep consolidates it."""
    return layer == RAW_LAYER


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
    if project and (link := wikilink(project)):
        project = link[0] or project
    return Typed(
        cortex=text("cortex"),
        importance=_importance(get_property(fm, "importance"), problems),
        created=created,
        project=project,
        layer=text("layer"),
        pinned=_pinned(get_property(fm, "pinned"), problems),
    ), problems


def as_weight(value: object, default: float) -> float:
    """A frontmatter value as a weight in [0, 1] (a number, or a string holding one: `weight: "0.8"`); anything
    else gives the default."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return default
    try:
        number = float(value)
    except ValueError:
        return default
    return default if math.isnan(number) else min(1.0, max(0.0, number))


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


def parse_datetime(value: object, naive: dt.tzinfo | None = dt.UTC) -> dt.datetime | None:
    """An ISO date or date-time (a `created:` value, a typed filter, a log's timestamp; `Z` for UTC), or a
    date/datetime value, as an aware datetime; None when it is not one.

    naive: the zone of a value written without an offset; None takes it as this machine's local time.
    """
    if isinstance(value, dt.datetime):
        when = value
    else:
        if value is None or isinstance(value, bool | int | float):
            return None
        try:
            when = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if when.tzinfo is not None:
        return when
    if naive is not None:
        return when.replace(tzinfo=naive)
    try:
        return when.astimezone()
    except (OverflowError, ValueError):  # year 1 or 9999: no local time the platform can compute; read as UTC
        return when.replace(tzinfo=dt.UTC)


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
