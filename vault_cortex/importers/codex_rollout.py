"""Reading a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) as exchanges, the same
`Exchange` records a Claude Code transcript gives, so that a capture (the privacy gate, the substance filter, the
import log's resume point) is the one in capture.py.

A rollout line is `{"timestamp", "type", "payload"}`; the conversation is in its `response_item` lines (what Codex
sends the model again on a resume): a user message starts an exchange, assistant messages are its answer, a
`function_call` (a shell command: `exec_command` {"cmd"}) is one tool line and its `function_call_output` only its
size. What the user did not write is left out: developer messages (instructions, hook context), and user messages
the harness added — the environment context, a Stop hook's reason (`<hook_prompt>`) — told by their provenance
(`internal_chat_message_metadata_passthrough`), or, in a rollout without it, by their tag. Pure: lines in,
exchanges out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from vault_cortex.files.properties import parse_datetime
from vault_cortex.importers.transcript import Exchange, Turn, output_size, records, tool_line

FORMAT = "codex"
# user messages Codex writes itself: the session's setting, instructions, a hook's prompt, a shell command's echo
_HARNESS_TAG = re.compile(r"^\s*(?:<(?:environment_context|user_instructions|skills_instructions|hook_prompt|"
                          r"turn_aborted|user_shell_command|subagent_notification)\b|# AGENTS\.md instructions)")
# what Codex puts before a command's output: "Chunk ID: …\nWall time: …\nProcess exited with code 2\n…\nOutput:\n"
_OUTPUT_HEAD = re.compile(r"\A(?:(?:Chunk ID|Wall time|Process exited with code|Process running with session ID|"
                          r"Exit code|Original token count)\b[^\n]*\n)+Output:\n")


def is_rollout(first_line: str | bytes) -> bool:
    """Whether a JSONL file whose first line this is is a Codex rollout (it starts with the session's meta)."""
    try:
        rec = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and rec.get("type") == "session_meta" and isinstance(rec.get("payload"), dict)


def _texts(content: Any, kind: str) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(c.get("text") or "") for c in content if isinstance(c, dict) and c.get("type") == kind]


def _by_user(payload: dict[str, Any], text: str) -> bool:
    """A user message the user wrote (not one the harness added)."""
    meta = payload.get("internal_chat_message_metadata_passthrough")
    items = meta.get("content_item_metadata") if isinstance(meta, dict) else None
    if isinstance(items, list) and items:
        kinds = {(i.get("provenance") or {}).get("type") for i in items if isinstance(i, dict)}
        return kinds == {"user"}
    return not _HARNESS_TAG.match(text)


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return {}
    if not isinstance(args, dict):
        return {}
    command = args.get("cmd", args.get("command"))
    if isinstance(command, list):  # the older shell tool: ["bash", "-lc", "ls"]
        command = command[-1] if command else None
    return {**args, "command": command} if isinstance(command, str) else args


def tool_output(output: Any) -> str:
    """What a command printed, without the lines Codex puts before it (chunk id, wall time, exit code)."""
    if isinstance(output, dict):
        output = output.get("content") or output.get("output") or ""
    text = output if isinstance(output, str) else "\n".join(_texts(output, "input_text"))
    return _OUTPUT_HEAD.sub("", text, count=1)


def iter_rollout(lines: Iterable[tuple[int, str | bytes]]) -> Iterator[tuple[int, Exchange]]:
    """Exchanges of a Codex rollout as they close, each with the offset its prompt line had."""
    cur: Turn | None = None
    for offset, rec in records(lines):
        payload = rec.get("payload") if rec.get("type") == "response_item" else None
        if not isinstance(payload, dict):
            continue
        kind, role = payload.get("type"), payload.get("role")
        if kind == "message" and role == "user":
            text = "\n\n".join(t.strip() for t in _texts(payload.get("content"), "input_text") if t.strip())
            if text and _by_user(payload, text):
                if cur is not None:
                    yield cur.close()
                cur = Turn(text, parse_datetime(rec.get("timestamp")), offset)
            continue
        if cur is None:
            continue
        if kind == "message" and role == "assistant":
            cur.answer += [t.strip() for t in _texts(payload.get("content"), "output_text") if t.strip()]
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call = str(payload.get("call_id") or payload.get("id") or len(cur.tools))
            args = _arguments(payload.get("arguments", payload.get("action")))
            cur.tools[call] = [tool_line({"name": payload.get("name") or "shell", "input": args}), ""]
        elif kind in ("function_call_output", "custom_tool_call_output") and str(payload.get("call_id")) in cur.tools:
            printed = tool_output(payload.get("output"))
            cur.tools[str(payload.get("call_id"))][1] = output_size(printed)
            cur.printed(printed)
    if cur is not None:
        yield cur.close()

