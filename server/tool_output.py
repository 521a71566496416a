"""What failed in a tool's output or error, as a recall query: a traceback's message line, failing tests, a non-zero
exit.

Pure and standard-library only (the hook command imports it before deciding whether to load the library).
`failure_query` returns None when the output reports no failure, so a successful tool call costs no recall.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

FAILURE_QUERY_CHARS = 400  # how much of the failure lines becomes the recall query (not a request limit)
MAX_SCAN_CHARS = 200_000  # the tail of a huge output is where the failure is
TEXT_KEYS = ("stderr", "stdout", "output", "error", "result", "content", "text", "message")
# Tools whose output is content (a file, a search, a page), not the result of running something.
CONTENT_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS",
                           "WebFetch", "WebSearch", "TodoWrite", "Task"})
EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code")

# "ValueError: bad", "sqlite3.OperationalError: database is locked", "E   KeyError: 'x'", "Error: ENOENT ..."
_EXCEPTION = re.compile(r"^(?:E\s+)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]*(?:Error|Exception|Failure|Fault)):\s*(.+)$")
# pytest "FAILED tests/x.py::test_y - AssertionError: ...", jest/vitest "FAIL src/x.test.ts", go "--- FAIL: TestY"
_FAILED_TEST = re.compile(r"^(?:FAILED|FAIL|--- FAIL:|not ok \d+)\s+(?:-\s+)?(\S+)(?:\s+-\s+(.+))?")
# "✗ parses a date" (a test runner), "× This environment is externally managed" (pip): the sentence after the cross
_CROSS = re.compile(r"^[✗×]\s+(.+)$")
_ERROR_LINE = re.compile(r"^(?:(?:(?:fatal|FATAL|Fatal) )?(?:error|fatal|panic|ERROR|Error)(?:\[[\w-]+\])?:|npm ERR!)"
                         r"\s*(.+)$")
# "curl: (60) SSL certificate problem: ...": a program's name, its error code in brackets, the message
_PROGRAM_CODE = re.compile(r"^([\w.-]+): \(\d+\)\s+(.+)$")
# what a log puts before its message: a build step and its seconds (BuildKit's "#7 2.931"), a time in brackets,
# an ISO time stamp
_LOG_PREFIX = re.compile(r"^(?:#\d+\s+(?:\d+(?:\.\d+)?\s+)?|\[\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\]\s*|"
                         r"\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\s+)")
_NOISE = re.compile(r"(?:/[\w.@+-]+){2,}/?|0x[0-9a-f]+|\b\d{3,}\b|[│┃|]+")


def response_text(response: Any) -> str:
    """The text of a tool response: a string as is, a mapping's text fields joined, a list's items joined."""
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping):
        parts = [response_text(response[k]) for k in TEXT_KEYS if k in response]
        return "\n".join(p for p in parts if p)
    if isinstance(response, list):
        return "\n".join(response_text(x) for x in response)
    return ""


def exit_code(response: Any) -> int | None:
    """The exit status a tool response reports, if any (0 = success)."""
    if isinstance(response, Mapping):
        for key in EXIT_KEYS:
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        if response.get("is_error") is True or response.get("isError") is True:
            return 1
    return None


def failure_lines(text: str) -> list[str]:
    """The lines that say what failed, most telling first: exception messages, failed tests, error lines."""
    lines = [_LOG_PREFIX.sub("", ln.strip(), count=1) for ln in text[-MAX_SCAN_CHARS:].splitlines()]
    exceptions, tests, errors = [], [], []
    for ln in lines:
        if m := _EXCEPTION.match(ln):
            exceptions.append(f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}")
        elif m := _FAILED_TEST.match(ln):
            name = m.group(1).rsplit("::", 1)[-1]
            tests.append(f"{name} {m.group(2) or ''}".strip())
        elif m := _CROSS.match(ln):
            tests.append(m.group(1).strip())
        elif m := _ERROR_LINE.match(ln):
            errors.append(m.group(1))
        elif m := _PROGRAM_CODE.match(ln):
            errors.append(f"{m.group(1)}: {m.group(2)}")
    # the last exception is the one that escaped; tests in order; each distinct line once
    return _unique([*reversed(exceptions), *tests, *errors])


def failure_query(response: Any, tool: str = "") -> str | None:
    """A recall query for what failed in a tool response; None when it reports no failure."""
    code = exit_code(response)
    if tool in CONTENT_TOOLS and code in (None, 0):
        return None  # a file that mentions an error is not a failure
    text = response_text(response)
    lines = failure_lines(text)
    if not lines and code not in (None, 0):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()][-3:]  # the last words of a failed command
    if not lines:
        return None
    query = " ".join(_NOISE.sub(" ", ln) for ln in lines[:3])
    query = " ".join(query.split())[:FAILURE_QUERY_CHARS]
    return query or None


_EXIT_LINE = re.compile(r"^Exit code (-?\d+)$")


def error_query(error: Any, tool: str = "") -> str | None:
    """A recall query for a failed tool call's `error` text (Claude Code's PostToolUseFailure sends
    "Exit code 1\n<output>" for a command); None when it says nothing to look up."""
    if not isinstance(error, str) or not error.strip():
        return None
    first, _, rest = error.strip().partition("\n")
    code = int(m.group(1)) if (m := _EXIT_LINE.match(first.strip())) else None
    text = rest if code is not None else error
    return failure_query({"error": text, "exit_code": code or 1}, tool)


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
