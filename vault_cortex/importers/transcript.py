"""Importing a chat as raw notes: a Claude Code JSONL transcript or a markdown chat, one note per exchange.

Each note is `layer: raw` with its `session`; the answer points at its prompt (`answer_to::`) and each
exchange at the one before it (`follows::`). Tool calls and their output are noise: each becomes one line
naming the tool and how much output it gave, never the output itself; so are meta records, slash-command
echoes, system reminders, compaction summaries and sub-agent side chains. The file is read line by line and
each exchange written when the next prompt begins, so a transcript of any size costs the memory of one
exchange. Writing the notes (a capture, and resuming a transcript that grew) is `capture`'s.
"""

from __future__ import annotations

import json
import os
import re
import stat as filestat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from vault_cortex.config import CaptureSettings
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.properties import parse_datetime
from vault_cortex.files.yamltext import note_filename, render_new_note

RAW = "raw"
_MD_TURN = re.compile(r"^(?:\*\*(?P<b>user|human|you|assistant|claude|ai):\*\*|#{1,4}\s+(?P<h>user|human|you|"
                      r"assistant|claude|ai)\s*:?\s*$)", re.I)
_USER = {"user", "human", "you"}
_INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")
# Text Claude Code puts in user records that the user did not write: slash-command echoes, their output,
# reminders the harness adds, interruptions.
_NOISE_TAG = re.compile(r"<(system-reminder|command-name|command-message|command-args|local-command-stdout|"
                        r"local-command-stderr|user-prompt-submit-hook)>.*?</\1>", re.S)
_NOISE_LINE = re.compile(r"^\[Request interrupted by user[^\]]*\]$", re.M)
TOOL_INPUT_CHARS = 60  # of a tool call's input, on its one line
OUTPUT_CHARS = 1 << 16  # of an exchange's tool output, kept in memory while it is read
MAX_TRANSCRIPT_BYTES = 1 << 28  # 256 MiB: a long Claude Code session with big tool outputs is tens of MiB
ALL = CaptureSettings()  # everything kept, in raw/: what an import writes
# A FIFO opens at once instead of waiting for a writer; a symbolic link as the file's last part is refused.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class Exchange(msgspec.Struct, frozen=True, kw_only=True):
    """One prompt and everything the assistant said and did until the next prompt."""

    prompt: str
    answer: str
    tools: tuple[str, ...] = ()  # one line per tool call
    at: datetime | None = None
    output: str = ""  # what the tools printed (its first OUTPUT_CHARS): read to tell echo from memory, never written


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    format: str  # "jsonl", "gemini" or "markdown"
    exchanges: tuple[Exchange, ...]


class Imported(msgspec.Struct, frozen=True, kw_only=True):
    """What an import did: notes created, replaced (their source grew), already there, and left alone."""

    session: str  # the session's name; "" when the file held several (a ChatGPT export)
    format: str
    created: list[str]  # new notes
    unchanged: list[str]  # already imported, identical
    tool_calls: int = 0  # tool calls reduced to one line each
    updated: list[str] = []  # imported before from this source, untouched since, and the source changed
    kept: list[str] = []  # differ from the source but were edited (or written by something else): left alone
    counts: dict[str, int] = {}  # what the file held: exchanges, conversations, entities, relations…


# -- parsing, pure: lines in, exchanges out ----------------------------------------------------------------
def parse_transcript(text: str, session: str) -> Transcript:
    """A transcript from JSONL (Claude Code) or markdown chat text; the format is detected."""
    lines = text.splitlines()
    fmt = detect(lines)
    exchanges = iter_markdown(lines) if fmt == "markdown" else reader(fmt)((0, line) for line in lines)
    return Transcript(session=session, format=fmt, exchanges=tuple(x for _, x in exchanges))


def detect(lines: Iterable[str | bytes]) -> str:
    """`jsonl` (Claude Code), `gemini` (a Gemini CLI chat log), `codex` (a Codex CLI rollout) or `markdown`, from
    the first line that is not blank."""
    from vault_cortex.importers.codex_rollout import is_rollout
    from vault_cortex.importers.gemini_chat import FORMAT, is_chat

    first = next((line for line in lines if line.strip()), "")
    if first.lstrip()[:1] not in ("{", b"{"):
        return "markdown"
    if is_chat(first):
        return FORMAT
    return "codex" if is_rollout(first) else "jsonl"


Reader = Callable[[Iterable[tuple[int, str | bytes]]], Iterator[tuple[int, Exchange]]]


def reader(fmt: str) -> Reader:
    """How the lines of a JSONL transcript in `fmt` (as `detect` names it) are read into exchanges."""
    from vault_cortex.importers.codex_rollout import iter_rollout
    from vault_cortex.importers.gemini_chat import FORMAT, iter_chat

    return {FORMAT: iter_chat, "codex": iter_rollout}.get(fmt, iter_jsonl)


class Turn:
    def __init__(self, prompt: str, at: datetime | None, offset: int) -> None:
        self.prompt, self.at, self.offset = prompt, at, offset
        self.answer: list[str] = []
        self.tools: dict[str, list[str]] = {}  # tool_use id → [name and input, output size]
        self.output: list[str] = []
        self.output_chars = 0

    def printed(self, content: Any) -> None:
        """Keep the start of a tool's output, to see whether the answer only reads it back."""
        if self.output_chars < OUTPUT_CHARS:
            text = _text(content)[: OUTPUT_CHARS - self.output_chars]
            self.output.append(text)
            self.output_chars += len(text)

    def close(self) -> tuple[int, Exchange]:
        tools = tuple(f"*(tool: {name}{' → ' + size if size else ''})*" for name, size in self.tools.values())
        return self.offset, Exchange(prompt=self.prompt.strip(), answer="\n\n".join(self.answer).strip(),
                                     tools=tools, at=self.at, output="\n".join(self.output))


def records(lines: Iterable[tuple[int, str | bytes]], what: str = "transcript",
            ) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file's lines with their offsets, blank lines and other values passed over; a last
    line still being written (no newline yet) ends it, any other line that is no JSON is InvalidRequest (`what`
    names the file in the message)."""
    for n, (offset, line) in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            if isinstance(line, bytes) and not line.endswith(b"\n"):
                return  # the last line, still being written
            raise InvalidRequest(f"{what} line {n} is not JSON") from None
        except RecursionError:
            raise InvalidRequest(f"{what} line {n} is JSON nested too deeply to read") from None
        if isinstance(rec, dict):
            yield offset, rec


def iter_jsonl(lines: Iterable[tuple[int, str | bytes]]) -> Iterator[tuple[int, Exchange]]:
    """Exchanges of a Claude Code transcript as they close, each with the offset its prompt line had."""
    cur: Turn | None = None
    for offset, rec in records(lines):
        kind = rec.get("type")
        if kind not in ("user", "assistant") or rec.get("isMeta") or rec.get("isSidechain") or rec.get(
                "isCompactSummary") or rec.get("isVisibleInTranscriptOnly"):
            continue
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        if kind == "user":
            texts = [_clean(str(b.get("text") or "")) for b in blocks if b.get("type") == "text"]
            if any(texts):
                if cur is not None:
                    yield cur.close()
                cur = Turn("\n\n".join(t for t in texts if t), parse_datetime(rec.get("timestamp")), offset)
                continue
        if cur is None:
            continue
        for b in blocks:
            if kind == "assistant" and b.get("type") == "text" and str(b.get("text") or "").strip():
                cur.answer.append(str(b["text"]).strip())
            elif b.get("type") == "tool_use":
                cur.tools[str(b.get("id") or len(cur.tools))] = [tool_line(b), ""]
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in cur.tools:
                cur.tools[str(b.get("tool_use_id"))][1] = output_size(b.get("content"))
                cur.printed(b.get("content"))
    if cur is not None:
        yield cur.close()


def _clean(text: str) -> str:
    return _NOISE_LINE.sub("", _NOISE_TAG.sub("", text)).strip()


def tool_line(block: dict[str, Any]) -> str:
    name = str(block.get("name") or "tool")
    raw = block.get("input")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    value = next((args[k] for k in _INPUT_KEYS if isinstance(args.get(k), str)), None)
    if value is None:
        return name
    flat = " ".join(str(value).split())
    if len(flat) > TOOL_INPUT_CHARS:  # cut between words: a token cut short could be a secret no detector knows
        cut = flat[:TOOL_INPUT_CHARS]
        flat = (cut[: cut.rfind(" ") + 1] if flat[TOOL_INPUT_CHARS] != " " else cut).rstrip() + "…"
    return f"{name} `{flat}`".replace("``", "`")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    return str(content or "")


def output_size(content: Any) -> str:
    """How much output a tool gave, in lines; the output itself is never kept."""
    lines = len(_text(content).strip().splitlines())
    return f"{lines} line{'s' if lines != 1 else ''} of output" if lines else "no output"


def iter_markdown(lines: Iterable[str]) -> Iterator[tuple[int, Exchange]]:
    """Exchanges of a markdown chat (`**User:**` lines or `## User` headings), as they close."""
    cur: Turn | None = None
    role: str | None = None
    body: list[str] = []
    seen = False

    def flush() -> Iterator[tuple[int, Exchange]]:
        nonlocal cur
        text = "\n".join(body).strip()
        if role in _USER:
            if cur is not None:
                yield cur.close()
            cur = Turn(text, None, 0)
        elif role is not None and cur is not None and text:
            cur.answer.append(text)

    for line in lines:
        m = _MD_TURN.match(line)
        if m is None:
            body.append(line)
            continue
        yield from flush()
        seen = True
        role = (m["b"] or m["h"]).lower()
        body = [line[m.end():]] if m["b"] else []
    if not seen:
        raise InvalidRequest("no chat turns found: expected `**User:**`/`**Assistant:**` lines or `## User` headings")
    yield from flush()
    if cur is not None:
        yield cur.close()


# -- rendering, pure ------------------------------------------------------------------------------------
def title(session: str, n: int) -> str:
    """The title of a session's n-th exchange; stable however long the session grows."""
    return note_filename(f"{session} {n:02d}")


def render_exchange(session: str, n: int, x: Exchange, *, fallback: datetime, source: str,
                    extra: dict[str, object] | None = None, keep: CaptureSettings = ALL) -> tuple[str, str]:
    """The raw note of a session's n-th exchange (from 1) as (vault path, text): in `keep.folder`, with the parts
    `keep` keeps (prompt, answer, tool lines)."""
    name = title(session, n)
    parts = []
    if keep.prompts:
        parts.append(f"## Prompt\n\n{x.prompt or '(empty)'}\n")
    if keep.answers:
        points = "answer_to:: [[#Prompt]]\n" if keep.prompts else ""
        parts.append(f"## Answer\n{points}\n{x.answer or '(no answer)'}\n")
    if keep.tools and x.tools:
        parts.append("\n".join(x.tools) + "\n")
    body = "\n".join(parts)
    if n > 1:
        body += f"\nfollows:: [[{title(session, n - 1)}]]\n"
    at = x.at or fallback
    props: dict[str, object] = {"layer": RAW, "session": session, "exchange": n,
                                "created": at.strftime("%Y-%m-%dT%H:%M"), "source": source}
    props.update(extra or {})
    props["tags"] = ["transcript"]
    return f"{keep.path}/{name}.md", render_new_note(title=name, body=body, properties=props)


def render(t: Transcript, *, fallback: datetime, source: str) -> list[tuple[str, str]]:
    """The raw notes of a transcript as (vault path, text), in order."""
    return [render_exchange(t.session, n, x, fallback=fallback, source=source)
            for n, x in enumerate(t.exchanges, 1)]


# -- the IO: a file in, notes out -----------------------------------------------------------------------
def open_transcript(path: Path, max_bytes: int | None = MAX_TRANSCRIPT_BYTES) -> BinaryIO:
    """A transcript opened for reading: a regular file only (never a FIFO, a device or a folder, and never through
    a symbolic link at its last part), opened without waiting, and at most `max_bytes` long; InvalidRequest else.

    A FIFO opened the usual way waits for a writer: 45 Stop hooks naming one held every worker thread of `serve`.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if os.path.islink(path):  # ELOOP, or EMLINK on some BSDs
            raise InvalidRequest(f"the transcript {path} is a symbolic link; name the file itself") from None
        raise InvalidRequest(f"cannot read the transcript {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not filestat.S_ISREG(info.st_mode):
            raise InvalidRequest(f"the transcript {path} is not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise InvalidRequest(f"the transcript {path} is larger than {max_bytes >> 20} MiB "
                                 f"({info.st_size >> 20} MiB)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def transcript_file(file: str | Path) -> Path:
    """Where a transcript is, its folders resolved and its last part as named (a link there is refused on open)."""
    path = Path(file).expanduser()
    return Path(os.path.realpath(path.parent)) / path.name


class Tally:
    """The outcomes of writing notes, gathered into an `Imported`."""

    def __init__(self) -> None:
        self.paths: dict[str, list[str]] = {"created": [], "unchanged": [], "updated": [], "kept": []}

    def add(self, outcome: str, path: str) -> None:
        self.paths[outcome].append(path)

    def result(self, session: str, fmt: str, *, tool_calls: int = 0, counts: dict[str, int] | None = None,
               ) -> Imported:
        p = self.paths
        return Imported(session=session, format=fmt, created=p["created"], unchanged=p["unchanged"],
                        updated=p["updated"], kept=p["kept"], tool_calls=tool_calls, counts=counts or {})


def left_out(echo: int, private: int, redacted: int) -> dict[str, int]:
    """What an import did not write, for its counts (only what happened)."""
    counts = {"left out (nothing to keep)": echo, "private spans left out": private, "secrets redacted": redacted}
    return {k: v for k, v in counts.items() if v}


def scrub(x: Exchange) -> tuple[Exchange, int, dict[str, int]]:
    """The exchange as it may be written: `<private>` spans left out and secrets redacted, everywhere in it;
    with how many spans and secrets of each kind went."""
    from vault_cortex.privacy import redact

    parts = [redact(t) for t in (x.prompt, x.answer, *x.tools)]
    secrets: Counter[str] = Counter()
    for part in parts:
        secrets.update(part.secrets)
    if not secrets and not any(p.private for p in parts):
        return x, 0, {}
    prompt, answer, *tools = (p.text for p in parts)
    return (msgspec.structs.replace(x, prompt=prompt.strip(), answer=answer.strip(), tools=tuple(tools)),
            sum(p.private for p in parts), dict(secrets))


TAIL_BYTES = 1 << 20  # how far back from a transcript's end the last prompt is looked for
TAIL_BLOCK = 1 << 16  # read backwards this much at a time: the prompt is usually in the last block


def last_prompt(file: Path, tail: int = TAIL_BYTES) -> str:
    """The last prompt of a transcript (Claude Code's, a Codex rollout, a Gemini CLI chat log), read backwards from
    its end (the lines after the prompt are parsed, nothing before it); "" when there is none within `tail` bytes or
    the file cannot be read through.
    What `open_transcript` refuses (no regular file, a link) raises InvalidRequest."""
    with open_transcript(file, max_bytes=None) as fh:  # no size limit: at most `tail` bytes of it are read
        try:
            pos = fh.seek(0, 2)
            floor = max(0, pos - tail)
            rest = b""
            while pos > floor:
                start = max(floor, pos - TAIL_BLOCK)
                fh.seek(start)
                lines = (fh.read(pos - start) + rest).split(b"\n")
                pos = start
                rest = lines.pop(0)  # cut by the block's start, unless it is the file's first line
                if pos == 0:
                    lines.insert(0, rest)
                for line in reversed(lines):
                    if b'"user"' in line and (prompt := _prompt_of(line)):
                        return prompt
        except OSError:
            return ""
    return ""


def _prompt_of(line: bytes) -> str:
    """The prompt a transcript line holds, as `iter_jsonl` (for a Codex rollout `iter_rollout`, for a Gemini CLI chat
    log `iter_chat`) reads it ("" for any other line)."""
    from vault_cortex.importers.codex_rollout import iter_rollout
    from vault_cortex.importers.gemini_chat import iter_chat

    try:
        return next((x.prompt for reader in (iter_jsonl, iter_rollout, iter_chat)
                     for _, x in reader([(0, line + b"\n")])), "")
    except InvalidRequest:
        return ""
