"""Reading a Gemini CLI chat log (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`) as exchanges, the same
`Exchange` records a Claude Code transcript gives, so that a capture (the privacy gate, the substance filter, the
import log's resume point) is the one in capture.py.

The log is compact JSON lines: a header `{sessionId, projectHash, startTime, ...}`, `{"$set": {...}}` updates (the
first holds the session's opening messages), `{"$rewindTo": id}` when the user rewinds, and message records
`{id, timestamp, type: "user" | "gemini" | "info" | ..., content}`. A user record whose text the user wrote starts an
exchange; what a hook added (`<hook_context>…</hook_context>`, vault-cortex's own memories among them), the CLI's
`<session_context>`, slash commands and a tool's function response are not a prompt; nor is vault-cortex's own
second look (an AfterAgent hook's block becomes the next user turn): the answer it sends the agent on to write
belongs to the exchange before it. Gemini records are the answer:
their text, and their `toolCalls` one line each (the output only its size). A Gemini record is written again with
the same id once its tool calls are done: the later line wins. Pure: lines in, exchanges out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from vault_cortex.files.properties import parse_datetime
from vault_cortex.importers.transcript import OUTPUT_CHARS, Exchange, output_size, records, tool_line
from vault_cortex.recall.second_look import HEADER as SECOND_LOOK

FORMAT = "gemini"
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.S)  # its own `<` and `>` are escaped
_UNTRUSTED = re.compile(r"</?untrusted_context>")
# what Gemini CLI itself does not take for a prompt when it resumes a session: a command, help, its own context
_NOT_A_PROMPT = ("/", "?", "<session_context>")


def is_chat(first_line: str | bytes) -> bool:
    """Whether a JSONL file whose first line this is is a Gemini CLI chat log (it starts with the session's header)."""
    try:
        rec = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and isinstance(rec.get("sessionId"), str) and isinstance(rec.get("projectHash"), str)


class _Exchange:
    """An exchange being read: its prompt and the Gemini records answering it, by id, in order."""

    def __init__(self, rec: dict[str, Any], prompt: str, offset: int) -> None:
        self.id, self.prompt, self.offset = rec.get("id"), prompt, offset
        self.at: datetime | None = parse_datetime(rec.get("timestamp"))
        self.answers: dict[str, dict[str, Any]] = {}

    def rewind(self, to: object) -> bool:
        """Forget the records from `to` on; True when that is the prompt itself (the exchange is gone)."""
        ids = list(self.answers)
        if to in ids:
            for gone in ids[ids.index(to):]:
                del self.answers[gone]
        return to == self.id

    def close(self) -> tuple[int, Exchange]:
        answer: list[str] = []
        tools: list[str] = []
        output: list[str] = []
        for rec in self.answers.values():
            if text := _text(rec.get("content")).strip():
                answer.append(text)
            for call in rec.get("toolCalls") or []:
                if not isinstance(call, dict):
                    continue
                printed = _printed(call)
                size = output_size(printed)
                tools.append(f"*(tool: {tool_line({'name': call.get('name'), 'input': call.get('args')})}"
                             f"{' → ' + size if size else ''})*")
                output.append(printed)
        return self.offset, Exchange(prompt=self.prompt, answer="\n\n".join(answer), tools=tuple(tools), at=self.at,
                                     output="\n".join(output)[:OUTPUT_CHARS])


def iter_chat(lines: Iterable[tuple[int, str | bytes]]) -> Iterator[tuple[int, Exchange]]:
    """Exchanges of a Gemini CLI chat log as they close, each with the offset its prompt line had."""
    cur: _Exchange | None = None
    for offset, rec in records(lines, "chat log"):
        if "$rewindTo" in rec:
            if cur is not None and cur.rewind(rec["$rewindTo"]):
                cur = None
            continue
        updates = rec.get("$set")
        opening = updates.get("messages") if isinstance(updates, dict) else rec.get("messages")
        for msg in [*(opening if isinstance(opening, list) else []), rec]:
            if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
                continue
            if msg.get("type") == "gemini":
                if cur is not None:
                    cur.answers[msg["id"]] = msg  # written again once its tool calls are done: the later wins
            elif msg.get("type") == "user" and (prompt := _prompt(msg.get("content"))):
                if prompt.startswith(SECOND_LOOK) and cur is not None:
                    continue  # the agent sent on by the second look: its next answer is this exchange's
                if cur is not None:
                    yield cur.close()
                cur = _Exchange(msg, prompt, offset)
    if cur is not None:
        yield cur.close()


def _text(content: Any) -> str:
    """The text of a record's content: a string, or its parts' texts (function calls and responses are not text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _prompt(content: Any) -> str:
    """What the user wrote in a user record: its text without what hooks added; "" for anything else."""
    text = _HOOK_CONTEXT.sub("", _text(content)).strip()
    return "" if text.startswith(_NOT_A_PROMPT) else text


def _printed(call: dict[str, Any]) -> str:
    """What a tool call printed: its display text, else the output (or error) it sent the model, without the
    context a hook appended to it."""
    shown = call.get("resultDisplay")
    if isinstance(shown, str):
        return shown
    result = call.get("result")
    out: list[str] = []
    for part in result if isinstance(result, list) else []:
        response = (part.get("functionResponse") or {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", ""))
            out.append(value if isinstance(value, str) else json.dumps(value))
    return _UNTRUSTED.sub("", _HOOK_CONTEXT.sub("", "\n".join(out))).strip()
