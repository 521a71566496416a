"""Importing ChatGPT's data export (`conversations.json`) as raw notes, one per prompt→answer exchange.

The export is a JSON array of conversations; each holds its messages as a tree (`mapping`: node id →
{message, parent, children}) because an edited prompt or a regenerated answer branches it. The branch
imported is the one ChatGPT shows: from `current_node` up to the root. Messages become exchanges as in a
Claude Code transcript (`transcript.Exchange`): a user message opens one, the assistant's visible text is its
answer, a message the assistant addressed to a tool (`recipient` other than `all`) becomes one tool line and
the tool's reply its size; system messages, hidden context, reasoning and browsing displays are left out.
The array is decoded one conversation at a time, so the file is never loaded whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from vault_cortex.errors import InvalidRequest
from vault_cortex.importers.importlog import ImportLog
from vault_cortex.importers.transcript import Exchange, Imported, Tally, left_out, render_exchange, scrub
from vault_cortex.store.change import Change

ORIGIN = "chatgpt"
CHUNK = 1 << 16
_TEXT_TYPES = {"text", "multimodal_text", "code"}
MAX_TITLE = 60  # characters of a conversation's title in its notes' names (the exchange number must fit)


# -- the streaming decoder ---------------------------------------------------------------------------------
def iter_array(fh: IO[str], chunk: int = CHUNK) -> Iterator[Any]:
    """The elements of a top-level JSON array (or one top-level object), decoded one at a time.

    Reads more text only while the next element is incomplete, doubling the read so that a large element
    costs a few decodes, not one per chunk.
    """
    decoder = json.JSONDecoder()
    buf, pos, eof = "", 0, False

    def more(n: int) -> bool:
        nonlocal buf, pos, eof
        data = fh.read(n)
        if not data:
            eof = True
            return False
        buf, pos = buf[pos:] + data, 0
        return True

    def skip(chars: str) -> str:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in chars:
                pos += 1
            if pos < len(buf) or not more(chunk):
                return buf[pos] if pos < len(buf) else ""

    first = skip(" \t\r\n\ufeff")
    if first not in ("[", "{"):
        raise InvalidRequest("not a ChatGPT export: expected a JSON array of conversations")
    if first == "[":
        pos += 1
    want = chunk
    while True:
        c = skip(" \t\r\n,") if first == "[" else skip(" \t\r\n")
        if c == "]" or c == "":
            if c == "" and first == "[":
                raise InvalidRequest("the JSON array ends before its closing `]`: a truncated export?")
            return
        try:
            value, end = decoder.raw_decode(buf, pos)
        except RecursionError:
            raise InvalidRequest("the export holds JSON nested too deeply to read (not a ChatGPT export?)") from None
        except json.JSONDecodeError as exc:
            if eof or not more(want):
                raise InvalidRequest(f"not valid JSON near character {exc.pos}: {exc.msg} (a truncated or malformed "
                                     "export?)") from None
            want = max(want, len(buf) - pos)  # double the read until the element fits
            continue
        want = chunk
        pos = end
        yield value
        if first == "{":
            return


# -- one conversation, pure -----------------------------------------------------------------------------
def branch(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the branch ChatGPT shows, oldest first."""
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        return []
    node = conv.get("current_node")
    if node not in mapping:  # no pointer: follow the newest child from the root
        roots = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")]
        node = roots[0] if roots else None
        while node is not None and (mapping.get(node) or {}).get("children"):
            node = mapping[node]["children"][-1]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node, str) and node in mapping and node not in seen:
        seen.add(node)
        entry = mapping[node] if isinstance(mapping[node], dict) else {}
        if isinstance(entry.get("message"), dict):
            out.append(entry["message"])
        node = entry.get("parent")
    return out[::-1]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") not in _TEXT_TYPES:
        return ""
    if content.get("content_type") == "code":
        return f"```{content.get('language') or ''}\n{content.get('text') or ''}\n```"
    parts = []
    for part in content.get("parts") or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            parts.append("*(image)*" if "image" in str(part.get("content_type")) else "*(attachment)*")
    return "\n\n".join(p for p in parts if p.strip()).strip()


def _when(value: Any) -> datetime | None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):  # past year 9999, or infinite
        return None


def exchanges(conv: dict[str, Any]) -> list[Exchange]:
    """A conversation's exchanges along its shown branch, with tool traffic reduced to a line each."""
    out: list[Exchange] = []
    cur: dict[str, Any] | None = None

    def close() -> None:
        if cur is not None:
            tools = tuple(f"*(tool: {name}{' → ' + size if size else ''})*" for name, size in cur["tools"])
            out.append(Exchange(prompt=cur["prompt"], answer="\n\n".join(cur["answer"]).strip(), tools=tools,
                                at=cur["at"]))

    for m in branch(conv):
        role = (m.get("author") or {}).get("role")
        meta = m.get("metadata") or {}
        if meta.get("is_visually_hidden_from_conversation") or role == "system":
            continue
        text = _text(m)
        if role == "user":
            if text:
                close()
                cur = {"prompt": text, "answer": [], "tools": [], "at": _when(m.get("create_time"))}
            continue
        if cur is None:
            continue
        recipient = m.get("recipient") or "all"
        if role == "assistant" and recipient != "all":
            cur["tools"].append([str(recipient), ""])
        elif role == "tool":
            lines = len(_text(m).splitlines()) or len(str((m.get("content") or {}).get("text") or "").splitlines())
            if cur["tools"]:
                cur["tools"][-1][1] = f"{lines} line{'s' if lines != 1 else ''} of output" if lines else "no output"
            else:
                cur["tools"].append([str((m.get("author") or {}).get("name") or "tool"), ""])
        elif role == "assistant" and text:
            cur["answer"].append(text)
    close()
    return out


def session_of(conv: dict[str, Any], first: datetime | None) -> str:
    """`<day> <title> <id's first 8 characters>`: readable, and unique however many chats share a title."""
    title = " ".join(str(conv.get("title") or "untitled chat").split())
    if len(title) > MAX_TITLE:
        cut = title.rfind(" ", 0, MAX_TITLE)
        title = title[: cut if cut > MAX_TITLE // 2 else MAX_TITLE] + "…"
    cid = str(conv.get("conversation_id") or conv.get("id") or "")
    day = first or _when(conv.get("create_time"))
    return " ".join(p for p in (day.strftime("%Y-%m-%d") if day else "", title, cid[:8]) if p)


# -- the IO --------------------------------------------------------------------------------------------
def import_chatgpt(tx: Change, file: str | Path) -> Imported:
    """Write every conversation of an export as raw notes (what exists identical is left, edits are kept)."""
    path = Path(file).expanduser()
    log = ImportLog(tx, ORIGIN)
    tally, conversations, total, tools, foreign, malformed = Tally(), 0, 0, 0, 0, 0
    private = redacted = 0
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InvalidRequest(f"cannot read {path}: {exc}") from exc
    fallback = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    try:
        with fh:
            for conv in iter_array(fh):
                if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
                    foreign += 1
                    continue
                try:
                    xs = exchanges(conv)
                    session = session_of(conv, xs[0].at) if xs else ""
                except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, OSError):
                    malformed += 1  # fields of the wrong type (a hand-edited or foreign file): left out, counted
                    continue
                if not xs:
                    continue
                conversations += 1
                extra: dict[str, object] = {"conversation": str(conv.get("conversation_id") or conv.get("id") or "")}
                when = _when(conv.get("create_time")) or fallback
                for n, x in enumerate(xs, 1):
                    x, spans, secrets = scrub(x)
                    private += spans
                    redacted += sum(secrets.values())
                    rel, text = render_exchange(session, n, x, fallback=when, source=path.name, extra=extra)
                    tally.add(log.write(rel, text), rel)
                total += len(xs)
                tools += sum(len(x.tools) for x in xs)
    finally:
        log.save()
    if not conversations and foreign:
        raise InvalidRequest(f"not a ChatGPT export: {path} holds no conversation with a `mapping` of messages")
    if not conversations and malformed:
        raise InvalidRequest(f"{path}: none of its {malformed} conversations could be read (fields of the wrong type)")
    if not conversations:
        raise InvalidRequest(f"no conversation with a prompt and an answer in {path}")
    counts = {"conversations": conversations, "exchanges": total} | left_out(0, private, redacted) | (
        {"malformed": malformed} if malformed else {})
    return tally.result("", "chatgpt", tool_calls=tools, counts=counts)
