"""The privacy gate: every text that comes from an agent session (a prompt, an answer, a tool's input or output,
an error, a transcript) passes `redact` before it is written anywhere — `raw/`, the activity log, an import.
It leaves out `<private>…</private>` spans (nested or never closed) and replaces secrets (API keys, tokens,
private keys, passwords in URLs, headers and command lines) by a visible marker such as
`[redacted: AWS Access Key]`. A hook's query is not even kept redacted: the activity log keeps its keyed
fingerprint (`fingerprint`) and its length unless `[activity] log_hook_queries` says otherwise.

Secrets are found by Yelp's detect-secrets (its plugins, with their own patterns and entropy limits; never its
verification, which would send a found key over the network). It is imported on the first text that needs a
look, so only a capture or an import pays for it, never a prompt hook.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, overload

import msgspec

_TAG = re.compile(r"<(/?)private(?:\s[^<>]*)?\s*>", re.I)  # `<private>`, `</private>`, `<PRIVATE note="x">`
PRIVATE_MARK = "[private]"
# A line worth a look: long enough to hold a key, or naming one (`password = 'hunter2'` is short).
_SUSPECT = re.compile(r"[A-Za-z0-9+/_\-=]{16,}|://[^\s:@/]+:[^\s@/]+@|pass|pwd|secret|token|key|auth|PRIVATE", re.I)
PRIVATE_KEY = "Private Key"  # detect-secrets' kind for a key's BEGIN line
_EDGES = " \t\"'=:,"
LEFT_OUT = {"IPPublicDetector"}  # an address is not a secret, and debugging notes need them
MIN_SECRET_CHARS = 6  # a captured group shorter than this is a token's prefix ("ghp"): the whole match goes


class Redacted(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    private: int = 0  # `<private>` spans left out
    secrets: dict[str, int] = {}  # what was redacted, by kind


def strip_private(text: str) -> tuple[str, int]:
    """The text without its `<private>` spans, each replaced by a marker, and how many there were. Spans nest
    (the outer one runs to its own closing tag), and a span never closed runs to the end; a stray closing tag
    outside any span is left out too."""
    out: list[str] = []
    depth = at = spans = 0
    for tag in _TAG.finditer(text):
        closing = tag.group(1) == "/"
        if depth == 0:
            out.append(text[at:tag.start()])
            if not closing:
                spans += 1
                out.append(PRIVATE_MARK)
                depth = 1
            at = tag.end()
        else:
            depth += -1 if closing else 1
            at = tag.end()
    if depth == 0:
        out.append(text[at:])
    return "".join(out), spans


@overload
def agent_text(text: str) -> str: ...
@overload
def agent_text(text: None) -> None: ...
def agent_text(text: str | None) -> str | None:
    """What an agent asked to write (a memory, an edit, a question), as it may be written: its `<private>` spans
    and secrets gone. An agent's words are session text; a person's own edits (the API, the plugin) are not."""
    return redact(text).text if text else text


def fingerprint(text: str, key: bytes) -> str:
    """A keyed fingerprint of a query (case and spacing ignored): equal queries give equal fingerprints, so
    co-retrieval still counts distinct queries, and without the vault's key nothing can be guessed from it."""
    normal = " ".join(text.lower().split()).encode("utf-8", "surrogatepass")
    return hmac.new(key, normal, hashlib.sha256).hexdigest()[:32]


def redact(text: str) -> Redacted:
    """The text without private spans and with every secret detect-secrets finds replaced by a marker."""
    text, private = strip_private(text)
    if not text or not (_SUSPECT.search(text) or any(rx.search(text) for _, rx in CONTEXT)):
        return Redacted(text=text, private=private)
    found: dict[str, int] = {}
    out: list[str] = []
    in_key = False  # inside a private key's block: its lines are left out up to its END line (or the end)
    for line in text.split("\n"):
        if in_key:
            in_key = "-----END" not in line
            continue
        spans = [*_context_spans(line), *(_secret_spans(line) if _SUSPECT.search(line) else ())]
        if not spans:
            out.append(line)
            continue
        redacted, kinds = _replace(line, spans)
        for kind in kinds:
            found[kind] = found.get(kind, 0) + 1
        out.append(redacted)
        in_key = PRIVATE_KEY in kinds and "-----BEGIN" in line and "-----END" not in line
    return Redacted(text="\n".join(out), private=private, secrets=found)


GENERIC = ("Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword")  # named when nothing names more


def _replace(line: str, spans: list[tuple[int, int, str]]) -> tuple[str, list[str]]:
    """The line with each secret (overlapping finds merged) replaced by `[redacted: kind]`, and the kinds."""
    merged: list[list[Any]] = []
    for start, end, kind in sorted(spans):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            last[2] = kind if last[2] in GENERIC and kind not in GENERIC else last[2]
        else:
            merged.append([start, end, kind])
    out, at = [], 0
    for start, end, kind in merged:
        out += [line[at:start], f"[redacted: {kind}]"]
        at = end
    return "".join(out) + line[at:], [kind for _, _, kind in merged]


def _secret_spans(line: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each secret detect-secrets sees on the line, widened to the whole token."""
    for kind, regexes, finder in _detectors():
        found: list[tuple[int, int]] = []
        if regexes is not None:
            found += [_span(m) for rx in regexes for m in rx.finditer(line)]
        else:
            for value in finder(line):
                found += [(m.start(), m.end()) for m in re.finditer(re.escape(value), line)]
        for start, end in found:
            start, end = _widen(line, start, end)
            if end - start >= MIN_SECRET_CHARS:
                yield start, end, kind


_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/")


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    """The span grown to the whole token it lies in (a pattern may match only a token's head), not past `=`,
    `:` or `@`; trimmed of quotes and separators."""
    while start < end and line[start] in _EDGES:
        start += 1
    while end > start and line[end - 1] in _EDGES:
        end -= 1
    while start > 0 and line[start - 1] in _TOKEN:
        start -= 1
    while end < len(line) and (line[end] in _TOKEN or line[end] == "=" and (end + 1 == len(line) or line[
            end + 1] not in _TOKEN) or line[end] == "." and end + 1 < len(line) and line[end + 1] in _TOKEN):
        end += 1
    return start, end


def _span(m: re.Match[str]) -> tuple[int, int]:
    """The secret in a match: its longest captured group when that is the secret itself (a password in a URL),
    else the whole match (a token whose group is only its prefix)."""
    groups = [(m.start(g), m.end(g)) for g in range(1, (m.re.groups or 0) + 1) if m.group(g)]
    start, end = max(groups, key=lambda s: s[1] - s[0], default=(m.start(), m.end()))
    if end - start < MIN_SECRET_CHARS or start == m.start():
        return m.start(), m.end()
    return start, end


_VALUE = r"""(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"`]+))"""  # a value, quoted or bare: the secret is its group
# Secrets known by what stands beside them, which detect-secrets' line patterns miss: (kind, pattern).
CONTEXT = [
    ("Basic Auth Credentials", re.compile(r"[a-z][a-z0-9+.\-]*://[^\s:/?#@\[\]]+:(\S+)@", re.I)),  # any characters
    ("Authorization Header", re.compile(
        rf"\b(?:proxy-)?authorization\s*[:=]\s*(?:bearer|basic|token|digest|negotiate|bot)?\s*{_VALUE}", re.I)),
    ("Authorization Header", re.compile(rf"(?<![\w-])(?:bearer|basic)\s+(?=[^\s'\"]*\d)(?=\S{{12}}){_VALUE}", re.I)),
    ("API Key Header", re.compile(rf"\b(?:x-)?(?:api|auth)[-_]?(?:key|token)\s*:\s*{_VALUE}", re.I)),
    ("Command Line Password", re.compile(rf"(?:^|\s)(?:-u|--user)(?:\s+|=){_VALUE}")),  # curl: `user:password`
    ("Command Line Password", re.compile(rf"(?:^|\s)--?(?:password|passwd|pass|pwd)(?:\s+|=){_VALUE}", re.I)),
    ("Command Line Password", re.compile(r"\bmysql\w*\b[^\n|;&]*?\s-p(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"`]+))")),
    ("Command Line Password", re.compile(rf"\b(?:sshpass|redis-cli)\b[^\n|;&]*?\s-[pa]\s*{_VALUE}")),
    ("Secret Keyword", re.compile(
        rf"\b[A-Z0-9_]*(?:PASSWORD|PASSWD|PWD|PASS|SECRET|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*={_VALUE}",
        re.I)),
    ("Hex Key", re.compile(r"(?<![a-z])(?:api_?key|apikey|key|token|secret|passw(?:or)?d|pwd|auth|credentials?)"
                           r"s?\b\W{0,4}(?:(?:is|was|=|of)\s+)?([0-9a-f]{32}(?:[0-9a-f]{8}){0,4})\b", re.I)),
]
USER_FLAG = 4  # CONTEXT's `-u user:password`: only the part after the colon is the secret
_USERINFO = re.compile(r"[^\s:'\"]+:([^\s'\"]+)")  # `user:password` after `curl -u`


def _context_spans(line: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each secret known by its context: a header, a flag, an assignment, a URL's userinfo."""
    for kind, rx in CONTEXT:
        for m in rx.finditer(line):
            groups = [g for g in range(1, (rx.groups or 0) + 1) if m.group(g)]
            if not groups:
                continue
            start, end = m.span(groups[-1])
            value = line[start:end]
            if rx is CONTEXT[USER_FLAG][1]:
                inner = _USERINFO.fullmatch(value)
                if not inner:
                    continue
                start, end = start + inner.start(1), start + inner.end(1)
                value = line[start:end]
            if value.startswith(("$", "<", "%", "{")) or value.lower() in _PLACEHOLDERS:
                continue  # a reference or a template (`$TOKEN`, `<password>`), not a secret
            yield start, end, kind


_PLACEHOLDERS = frozenset({"***", "****", "xxx", "xxxx", "password", "secret", "token", "redacted", "none", "null",
                           "true", "false", "changeme"})


Finder = Callable[[str], Iterator[str]]
# detect-secrets' Basic Auth pattern with the characters RFC 3986 reserves allowed in the password: people type
# `postgres://app:S3cret!@db` without percent-encoding, and the library's pattern then sees no URL at all.
URL_PASSWORD = re.compile(r"://[^:/?#\[\]@\s]+:([^/?#\[\]@\s]+)@")
MIN_UNQUOTED = 20  # an unquoted string must be this long before its entropy marks it a key


@lru_cache(maxsize=1)
def _detectors() -> list[tuple[str, list[re.Pattern[str]] | None, Finder]]:
    """Each detect-secrets plugin as (kind, its patterns for a regex plugin else None, a finder of values)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HighEntropyStringsPlugin
    from detect_secrets.plugins.keyword import KeywordDetector

    out: list[tuple[str, list[re.Pattern[str]] | None, Finder]] = []
    plugins: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for kind, cls in sorted(plugins.items()):
        if cls.__name__ in LEFT_OUT:
            continue
        plugin = cls()
        if isinstance(plugin, RegexBasedDetector):
            extra = [URL_PASSWORD] if isinstance(plugin, BasicAuthDetector) else []
            out.append((kind, [*plugin.denylist, *extra], plugin.analyze_string))
        elif isinstance(plugin, HighEntropyStringsPlugin):
            out.append((kind, None, _entropy_finder(plugin, unquoted=isinstance(plugin, Base64HighEntropyString))))
        elif isinstance(plugin, KeywordDetector):
            out.append((kind, None, _keyword_finder(plugin)))
    return out


def _entropy_finder(plugin: Any, *, unquoted: bool) -> Finder:
    """Quoted strings above the plugin's entropy limit (as detect-secrets scans files); with `unquoted`, also
    long bare words above it (a key pasted into prose). Hex strings only quoted: a bare one is a commit or a hash."""
    chars = re.escape(plugin.charset.replace("=", ""))
    bare = re.compile(rf"[{chars}]{{{MIN_UNQUOTED},}}=*")  # `NAME=value` is two words: the name stays

    def find(line: str) -> Iterator[str]:
        values = list(plugin.analyze_string(line))
        if unquoted:
            values += bare.findall(line)
        for value in values:
            if plugin.calculate_shannon_entropy(value) > plugin.entropy_limit:
                yield value
    return find


def _keyword_finder(plugin: Any) -> Finder:
    """Values assigned to a secret's name (`password = "…"`, `API_KEY=…`), quoted or not, leaving out templates
    and references (`${TOKEN}`, `os.environ["KEY"]`) as detect-secrets' own filters do."""
    from detect_secrets.filters.heuristic import (
        is_indirect_reference,
        is_prefixed_with_dollar_sign,
        is_templated_secret,
    )
    from detect_secrets.plugins.keyword import FOLLOWED_BY_EQUAL_SIGNS_REGEX, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    attempts = [QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, {FOLLOWED_BY_EQUAL_SIGNS_REGEX: 5}]

    def find(line: str) -> Iterator[str]:
        if is_indirect_reference(line):
            return
        for attempt in attempts:
            for value in plugin.analyze_string(line, denylist_regex_to_group=attempt):
                quoted = f"'{value}'" in line or f'"{value}"' in line
                value = value if quoted else value.split()[0] if value.split() else ""
                if value and not is_templated_secret(value) and not is_prefixed_with_dollar_sign(value):
                    yield value
    return find
