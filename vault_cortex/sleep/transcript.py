"""Importing a chat as raw notes: a Claude Code JSONL transcript or a markdown chat, one note per exchange.

Each note is `layer: raw` with its `session`; the answer points at its prompt (`answer_to::`) and each
exchange at the one before it (`follows::`). Tool calls and their output are noise: each becomes one line
naming the tool and how much output it gave, never the output itself. Parsing is pure; `import_transcript`
does the IO.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from vault_cortex.errors import InvalidRequest, WriteConflict
from vault_cortex.files.vault import atomic_write, note_path
from vault_cortex.files.yamltext import note_filename, render_new_note
from vault_cortex.index.host import Store

RAW = "raw"
_MD_TURN = re.compile(r"^(?:\*\*(?P<b>user|human|you|assistant|claude|ai):\*\*|#{1,4}\s+(?P<h>user|human|you|"
                      r"assistant|claude|ai)\s*:?\s*$)", re.I | re.M)
_USER = {"user", "human", "you"}
_INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")


class Exchange(msgspec.Struct, frozen=True, kw_only=True):
    """One prompt and everything the assistant said and did until the next prompt."""

    prompt: str
    answer: str
    tools: tuple[str, ...] = ()  # one line per tool call
    at: datetime | None = None


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    format: str  # "jsonl" or "markdown"
    exchanges: tuple[Exchange, ...]


class Imported(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    format: str
    created: list[str]  # new raw notes
    unchanged: list[str]  # already imported, identical
    tool_calls: int  # tool calls reduced to one line each


def parse_transcript(text: str, session: str) -> Transcript:
    """A transcript from JSONL (Claude Code) or markdown chat text; the format is detected."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        return Transcript(session=session, format="jsonl", exchanges=tuple(_jsonl(text)))
    return Transcript(session=session, format="markdown", exchanges=tuple(_markdown(text)))


class _Open:
    def __init__(self, prompt: str, at: datetime | None) -> None:
        self.prompt, self.at = prompt, at
        self.answer: list[str] = []
        self.tools: dict[str, list[str]] = {}  # tool_use id → [name and input, output size]

    def close(self) -> Exchange:
        tools = tuple(f"*(tool: {name}{' → ' + size if size else ''})*" for name, size in self.tools.values())
        return Exchange(prompt=self.prompt.strip(), answer="\n\n".join(self.answer).strip(), tools=tools, at=self.at)


def _jsonl(text: str) -> list[Exchange]:
    out: list[Exchange] = []
    cur: _Open | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise InvalidRequest(f"transcript line {n} is not JSON") from None
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind not in ("user", "assistant") or rec.get("isMeta"):
            continue
        content = (rec.get("message") or {}).get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        blocks = [b for b in blocks if isinstance(b, dict)]
        texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text"]
        if kind == "user" and any(t.strip() for t in texts):
            if cur is not None:
                out.append(cur.close())
            cur = _Open("\n\n".join(t for t in texts if t.strip()), _when(rec.get("timestamp")))
            continue
        if cur is None:
            continue
        for b in blocks:
            if kind == "assistant" and b.get("type") == "text" and str(b.get("text") or "").strip():
                cur.answer.append(str(b["text"]).strip())
            elif b.get("type") == "tool_use":
                cur.tools[str(b.get("id") or len(cur.tools))] = [_tool(b), ""]
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in cur.tools:
                cur.tools[str(b.get("tool_use_id"))][1] = _size(b.get("content"))
    if cur is not None:
        out.append(cur.close())
    return out


def _tool(block: dict[str, Any]) -> str:
    name = str(block.get("name") or "tool")
    raw = block.get("input")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    value = next((args[k] for k in _INPUT_KEYS if isinstance(args.get(k), str)), None)
    if value is None:
        return name
    flat = " ".join(str(value).split())
    return f"{name} `{flat[:60] + '…' if len(flat) > 60 else flat}`".replace("``", "`")


def _size(content: Any) -> str:
    """How much output a tool gave, in lines; the output itself is never kept."""
    if isinstance(content, list):
        content = "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    lines = len(str(content or "").strip().splitlines())
    return f"{lines} line{'s' if lines != 1 else ''} of output" if lines else "no output"


def _when(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _markdown(text: str) -> list[Exchange]:
    marks = list(_MD_TURN.finditer(text))
    if not marks:
        raise InvalidRequest("no chat turns found: expected `**User:**`/`**Assistant:**` lines or `## User` headings")
    out: list[Exchange] = []
    cur: _Open | None = None
    for i, m in enumerate(marks):
        role = (m["b"] or m["h"]).lower()
        body = text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
        if role in _USER:
            if cur is not None:
                out.append(cur.close())
            cur = _Open(body, None)
        elif cur is not None and body:
            cur.answer.append(body)
    if cur is not None:
        out.append(cur.close())
    return out


def render(t: Transcript, *, fallback: datetime, source: str) -> list[tuple[str, str]]:
    """The raw notes of a transcript as (vault path, text), in order."""
    width = max(2, len(str(len(t.exchanges))))
    titles = [note_filename(f"{t.session} {n:0{width}d}") for n in range(1, len(t.exchanges) + 1)]
    out = []
    for n, (x, title) in enumerate(zip(t.exchanges, titles, strict=True)):
        at = x.at or fallback
        body = (f"## Prompt\n\n{x.prompt or '(empty)'}\n\n## Answer\nanswer_to:: [[#Prompt]]\n\n"
                f"{x.answer or '(no answer)'}\n")
        if x.tools:
            body += "\n" + "\n".join(x.tools) + "\n"
        if n:
            body += f"\nfollows:: [[{titles[n - 1]}]]\n"
        props = {"layer": RAW, "session": t.session, "exchange": n + 1, "created": at.strftime("%Y-%m-%dT%H:%M"),
                 "source": source, "tags": ["transcript"]}
        out.append((f"{RAW}/{title}.md", render_new_note(title=title, body=body, properties=props)))
    return out


def import_transcript(cx: Store, file: str | Path, session: str | None = None) -> Imported:
    """Write a transcript's exchanges as raw notes (never over different ones) and index them."""
    path = Path(file).expanduser()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError as exc:
        raise InvalidRequest(f"cannot read the transcript {path}: {exc}") from exc
    t = parse_transcript(text, session or path.stem)
    if not t.exchanges:
        raise InvalidRequest(f"no prompt and answer found in {path}")
    notes = render(t, fallback=mtime, source=path.name)
    created, unchanged = _write(cx, notes)
    cx.sync()
    return Imported(session=t.session, format=t.format, created=created, unchanged=unchanged,
                    tool_calls=sum(len(x.tools) for x in t.exchanges))


def _write(cx: Store, notes: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    files = [(p, note_path(cx.root, p), c.encode()) for p, c in notes]
    clash = [p for p, f, data in files if f.exists() and f.read_bytes() != data]
    if clash:
        raise WriteConflict(f"{clash[0]} already exists with other content; import under another --session name")
    created, unchanged = [], []
    for p, f, data in files:
        if f.exists():
            unchanged.append(p)
        else:
            atomic_write(f, data, None)
            created.append(p)
    return created, unchanged
