"""Frontmatter: find the block and load it as YAML 1.2 (or JSON), bounded; what the values mean is in `properties`.

Pure. Values stay what the user typed: dates are strings, `yes` is a string, `012` is the integer 12.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader

__all__ = [
    "body_text",
    "load_frontmatter",
    "show",
    "split_frontmatter",
]

_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)

MAX_DEPTH = 64  # nesting levels of a frontmatter value; deeper is refused, not recursed into
MAX_VALUES = 50_000  # values in the frontmatter once YAML aliases are expanded (a "billion laughs" stops here)
MAX_CHARS = 4_000_000  # characters of text in it, expanded the same way (a bomb of long strings stops here)
_INT64 = 2**63  # integers beyond this are kept as the digits typed (JSON clients and msgspec cannot hold them)


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


def past_bounds(raw: str) -> str | None:
    """Why a frontmatter block nests or expands (through YAML aliases) past the bounds every reader keeps to; None
    when it does not, or is not valid YAML (the caller's own parser says why). A writer that loads the block in
    full (a round-trip edit) asks first: ruamel expands aliases as it checks mapping keys, and a "billion laughs"
    then runs for hours in the edit's thread."""
    loader = _Loader(raw)
    try:
        data = loader.get_single_data()
    except RecursionError:
        return f"frontmatter nests more than {MAX_DEPTH} levels deep"
    except Exception:  # noqa: BLE001 - not YAML the reader takes: not this check's to say
        return None
    finally:
        loader.dispose()
    try:
        _Plain().convert(data, 0)
    except _TooBig as exc:
        return str(exc)
    except RecursionError:
        return f"frontmatter nests more than {MAX_DEPTH} levels deep"
    return None


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
