"""The noise filter: finds mechanical text (logs, stack traces, JSON dumps, tool output) to leave unindexed.

Pure: takes lines, returns spans. Prose, decisions, short code, short config examples and tables are kept.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

NoiseKind = Literal["log", "stack_trace", "json_dump", "tool_output"]
_Mark = Callable[[int, int, NoiseKind], None]

LOG_RUN = 5  # consecutive log (or command output) lines before a run counts as noise
JSON_LINES = 10  # a JSON block longer than this is a dump; shorter ones are examples worth keeping
OUTPUT_LINES = 15  # an output-tagged fence longer than this is tool output
MINIFIED_CHARS = 400  # a single line of JSON longer than this is a dump

_JSON_TAGS = {"json", "jsonc", "json5", "jsonl", "ndjson", "geojson"}
_OUTPUT_TAGS = {"output", "console", "log", "logs", "stdout", "stderr", "shell-session", "terminal"}
_TEXT_TAGS = {"text", "txt", "plaintext", "plain"}  # dropped when long and not prose
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)")
_XML_TAGS = r"(tool_output|tool_results?|function_results?|function_calls|tool_use|stdout|stderr|command[-_]output)"
_XML_OPEN = re.compile(rf"<{_XML_TAGS}\b[^>]*>")
_XML_CLOSE = re.compile(rf"</{_XML_TAGS}>")

_TIME = r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL|SEVERE|PANIC)"
_LOG = re.compile(
    "|".join((
        rf"^\s*\[?\d{{4}}-\d{{2}}-\d{{2}}[T ]{_TIME}",  # ISO timestamp with seconds
        rf"^\s*\[?{_TIME}\b",  # time with seconds first
        rf"^\s*\[?{_LEVEL}\]?(?::|\s)",  # level first: INFO ..., [WARN] ..., DEBUG:root:...
        rf"^[IWEF]\d{{4}} {_TIME}",  # glog
        rf"^[A-Z][a-z]{{2}} [ \d]\d {_TIME} ",  # syslog
        r"^\d{1,3}(?:\.\d{1,3}){3} \S+ \S+ \[",  # access log
        r"^\s*\[\s*\d+\.\d+\]",  # dmesg
        rf"^\S*\d{{2}}:\d{{2}}:\d{{2}}\S*\s.{{0,40}}\b{_LEVEL}\b",  # timestamp, then a level
    ))
)
_OUTPUT = re.compile(
    "|".join((
        r"^={3,} .* ={3,}$|^_{3,} .* _{3,}$|^-{3,} .* -{3,}$",  # pytest section rules
        r"^(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b",
        r"^\S+\.py(?:::\S+)*\s+(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b",
        r"^\S+\.py \.*[.FEsxX]+\s*(?:\[\s*\d+%\])?$",
        r"^E {2,}\S", r"^> {3,}\S", r"^\S+\.py:\d+: \S", r"^collected \d+ items?", r"^platform \S+ -- Python",
        r"^(?:rootdir|cachedir|configfile|plugins): ",
        r"^commit [0-9a-f]{7,40}\b", r"^Author: .+<.*>$", r"^(?:Date|AuthorDate|CommitDate):\s+\S",
        r"^Merge: [0-9a-f]{7,} [0-9a-f]{7,}", r"^[*|/\\ ]*(?=[0-9a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,12} \S",
        r"^On branch \S", r"^Your branch is ", r"^Changes (?:not staged|to be committed)",
        r"^Untracked files:",
        r"^\s+(?:modified|new file|deleted|renamed|both modified):\s+\S", r'^\s+\(use "git ',
        r"^npm (?:ERR!|WARN|notice)", r"^(?:Collecting|Downloading|Installing collected packages|"
        r"Successfully (?:installed|built)|Requirement already satisfied|Using cached)\b",
        r"^\s*(?:added|removed|changed|audited) \d+ packages?",
        r"^\S+:\d+:\d+: (?:error|warning|note)\b", r"^(?:error|warning)(?:\[E\d+\])?: ",
        r"^\s+--> \S+:\d+:\d+",
        r"^make(?:\[\d+\])?: ", r"^Step \d+/\d+ : ", r"^ ---> ", r"^#\d+ \[", r"^[d-][rwx-]{9}[@+.]?\s+\d+ ",
        r"^\s*\d+%\|",
    ))
)
# A prompt line neither starts nor counts toward a run (a list of commands is a how-to), but continues one.
_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:[\w.@:~/-]*\$|[\w.@:~/-]+[#%]|PS [A-Z]:\\.*>) \S")
_FRAME = re.compile(
    "|".join((
        r"^\s+at [\w$.<>/\[\]]+\((?:[\w$.-]+:\d+|Native Method|Unknown Source)\)(?: ~?\[\S*\])?\s*$",  # Java
        r"^\s*at (?:async )?(?:new )?(?:\S+ )?\(?[^\s()]+:\d+(?::\d+)?\)?\s*$",  # JavaScript, Rust
        r"^\s*at .+ \((?:<anonymous>|native|index \d+)\)\s*$",
        r"^\s+at .+ in \S+:line \d+\s*$",  # C#
        r"^\s+\S+\.go:\d+(?: \+0x[0-9a-f]+)?\s*$",  # Go: a file line under each function line
        r"^[\w.*/()\[\]-]+\(.*\)\s*$",  # a Go function line; frames only count when the file lines follow
        r"^\s*\.\.\. \d+ (?:more|common frames omitted)\s*$",
        r"^(?:Caused by|Suppressed): ",
    ))
)
_EXCEPTION = re.compile(
    r"^(?:Exception in thread .*|Uncaught .*|panic: .*|goroutine \d+ \[.*|"
    r"[\w$.]*(?:Exception|Error|Throwable)\b.*|thread '.*' panicked at .*)$"
)
_CAUSE = re.compile(r"^\s*(?:Caused by|Suppressed): \S")  # a chained exception's message, kept
_PY_TRACE = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_PY_CHAIN = re.compile(
    r"^\s*(?:During handling of the above exception|The above exception was the direct cause)"
)
_PY_FILE = re.compile(r'^\s*File "[^"<][^"]*", line \d+')  # a real file: not <stdin>, not a doctest
_PY_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
_DECODER = json.JSONDecoder()
_JSON_START = re.compile(r"^\s*[\[{]\s*(?:$|[\"{\d-]|\[\s*(?:$|[\"{\[\d-]))")


class Noise(msgspec.Struct, frozen=True, kw_only=True):
    """A span of mechanical text left out of the index."""

    start_line: int  # 1-based file lines, inclusive
    end_line: int
    kind: NoiseKind


class Fence(msgspec.Struct, frozen=True, kw_only=True):
    """A fenced code block: `start` and `end` are the indexes of its fence lines in the list of lines."""

    start: int
    end: int  # the closing fence, or the last line when the fence is never closed
    info: str  # the language tag, lower-cased
    closed: bool = True

    @property
    def content(self) -> range:
        """Indexes of the lines inside the fence."""
        return range(self.start + 1, self.end if self.closed else self.end + 1)


def fences(lines: Sequence[str]) -> list[Fence]:
    """Fenced code blocks; an unclosed fence runs to the end, as in CommonMark."""
    found: list[Fence] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None or (m.group(1)[0] == "`" and "`" in lines[i][m.end(1):]):
            i += 1
            continue
        marker = m.group(1)
        close = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
        info = m.group(2).lower()
        if end is None:
            end = len(lines) - 1
            found.append(Fence(start=i, end=end, info=info, closed=False))
        else:
            found.append(Fence(start=i, end=end, info=info))
        i = end + 1
    return found


def find_noise(lines: Sequence[str], first_line: int = 1) -> tuple[Noise, ...]:
    """Spans of noise in `lines`, numbered from `first_line`; earlier detectors win where spans overlap."""
    kinds: list[NoiseKind | None] = [None] * len(lines)
    kept: set[int] = set()  # a trace's error message lines: the one part worth finding again

    def mark(start: int, end: int, kind: NoiseKind) -> None:
        for i in range(start, end + 1):
            if kinds[i] is None and i not in kept:
                kinds[i] = kind

    blocks = fences(lines)
    _xml_blocks(lines, mark)
    _python_traces(lines, mark, kept)
    _frame_runs(lines, mark, kept)
    _fenced_blocks(lines, blocks, mark)
    _line_runs(lines, mark)
    _bare_json(lines, kinds, mark)
    _minified_json(lines, mark)
    _whole_fences(lines, blocks, kinds, kept)
    spans: list[Noise] = []
    for i, kind in enumerate(kinds):
        if kind is None:
            continue
        if spans and spans[-1].kind == kind and spans[-1].end_line == first_line + i - 1:
            spans[-1] = Noise(start_line=spans[-1].start_line, end_line=first_line + i, kind=kind)
        else:
            spans.append(Noise(start_line=first_line + i, end_line=first_line + i, kind=kind))
    return tuple(spans)


def _xml_blocks(lines: Sequence[str], mark: _Mark) -> None:
    """Closed tool-result tags; one pass to find every tag, so unclosed ones cost nothing."""
    opens: list[tuple[int, str, int]] = []
    closes: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if "<" in line:
            opens += [(i, m.group(1), m.end()) for m in _XML_OPEN.finditer(line)]
            for m in _XML_CLOSE.finditer(line):
                closes.setdefault(m.group(1), []).append(i)
    covered = -1
    for i, tag, col in opens:
        rows = closes.get(tag, [])
        k = bisect.bisect_left(rows, i)
        if k < len(rows) and rows[k] == i and f"</{tag}>" not in lines[i][col:]:
            k += 1  # a close tag before the open one on the same line
        if i > covered and k < len(rows):
            mark(i, rows[k], "tool_output")
            covered = rows[k]


def _python_traces(lines: Sequence[str], mark: _Mark, kept: set[int]) -> None:
    i = 0
    while i < len(lines):
        if not _PY_TRACE.match(lines[i]):
            i += 1
            continue
        start, j = i, i + 1
        raised: list[int] = []
        while True:
            indent = len(lines[i]) - len(lines[i].lstrip())
            while j < len(lines) and (_indent(lines[j]) > indent or lines[j].lstrip().startswith("File ")):
                j += 1
            if j < len(lines) and _PY_RAISED.match(lines[j].strip()) and _indent(lines[j]) <= indent:
                raised.append(j)  # the exception line: its message is kept
                j += 1
            k = _next_text(lines, j)
            if k is None or not _PY_CHAIN.match(lines[k]):
                break
            t = _next_text(lines, k + 1)
            if t is None or not _PY_TRACE.match(lines[t]):
                break
            i, j = t, t + 1
        if any(_PY_FILE.match(lines[k]) for k in range(start, j)):  # REPL and doctest examples stay
            kept.update(raised)
            mark(start, j - 1, "stack_trace")
        i = max(j, start + 1)


def _frame_runs(lines: Sequence[str], mark: _Mark, kept: set[int]) -> None:
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and _FRAME.match(lines[j]):
            j += 1
        frames = sum(1 for k in range(i, j) if lines[k].lstrip().startswith("at ") or ".go:" in lines[k])
        if frames >= 2:
            start = i
            for _ in range(2):  # the exception line; for Go, the panic line above the goroutine line
                above = _previous_text(lines, start)
                if above is None or start - above > 2 or not _EXCEPTION.match(lines[above].strip()):
                    break
                start = above
                if not lines[above].lstrip().startswith("goroutine "):
                    kept.add(above)  # the exception or panic message is kept
            kept.update(k for k in range(start, j) if _CAUSE.match(lines[k]))
            mark(start, j - 1, "stack_trace")
        i = max(j, i + 1)


def _fenced_blocks(lines: Sequence[str], blocks: Sequence[Fence], mark: _Mark) -> None:
    for f in blocks:
        body = [lines[i] for i in f.content if lines[i].strip()]
        if f.info in _JSON_TAGS and len(body) > JSON_LINES:
            mark(f.start, f.end, "json_dump")
        elif f.info in _OUTPUT_TAGS and len(body) > OUTPUT_LINES:
            logs = f.info in ("log", "logs") and _share(body, _LOG.match) > 0.5
            mark(f.start, f.end, "log" if logs else "tool_output")
        elif f.info in _TEXT_TAGS and len(body) > OUTPUT_LINES and _share(body, _looks_output) >= 0.5:
            mark(f.start, f.end, "tool_output")


def _line_runs(lines: Sequence[str], mark: _Mark) -> None:
    """Runs of log or command-output lines; indented continuation lines and single blanks ride along."""
    i = 0
    while i < len(lines):
        if _family(lines[i]) is None:
            i += 1
            continue
        families: Counter[NoiseKind] = Counter()
        j, last = i, i
        while j < len(lines):
            line = lines[j]
            family = _family(line)
            if family is not None:
                families[family] += 1
            elif not line.strip():
                k = _next_text(lines, j)
                if k is None or k - j > 1 or not _continues(lines[k]):
                    break
            elif not _continues(line):
                break
            if line.strip():
                last = j
            j += 1
        if sum(families.values()) >= LOG_RUN:
            mark(i, last, families.most_common(1)[0][0])
        i = max(last + 1, i + 1)


def _bare_json(lines: Sequence[str], kinds: Sequence[NoiseKind | None], mark: _Mark) -> None:
    i = 0
    while i < len(lines):
        if kinds[i] is not None or len(lines[i]) > 200 or not _JSON_START.match(lines[i]):
            i += 1
            continue
        last, resume = _json_value(lines, i)
        if last is not None and last - i + 1 > JSON_LINES:
            mark(i, last, "json_dump")
        i = max(resume, i + 1)


def _json_value(lines: Sequence[str], i: int) -> tuple[int | None, int]:
    """Last line of a JSON container starting at line i (None if there is none), and where to look next."""
    size = 64  # a window that grows while the value runs past it, so failures stay cheap
    while True:
        text = "\n".join(lines[i:i + size])
        try:
            value, end = _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
        except json.JSONDecodeError as exc:
            if exc.pos >= len(text.rstrip()) and i + size < len(lines):
                size *= 4
                continue
            return None, i + text.count("\n", 0, exc.pos)  # lines before the error hold no dump of their own
        except RecursionError:
            return None, i + size
        last = i + text.count("\n", 0, end)
        whole = isinstance(value, dict | list) and not lines[last][_col(text, end):].strip()
        return (last if whole else None), (last + 1 if whole else i + 1)


def _minified_json(lines: Sequence[str], mark: _Mark) -> None:
    for i, line in enumerate(lines):
        if len(line) <= MINIFIED_CHARS:
            continue
        start = min((p for p in (line.find("{"), line.find("[")) if p >= 0), default=-1)
        if start < 0:
            continue
        try:
            _, end = _DECODER.raw_decode(line, start)
            parsed = end - start > MINIFIED_CHARS
        except (ValueError, RecursionError):
            parsed = False
        if parsed or (start < 40 and line.count('":') >= 10):  # a cut-off dump does not parse
            mark(i, i, "json_dump")


def _whole_fences(lines: Sequence[str], blocks: Sequence[Fence], kinds: list[NoiseKind | None],
                  kept: set[int]) -> None:
    """A fence whose content is mostly noise goes whole, fence lines and leftovers included (but not a
    trace's error message)."""
    for f in blocks:
        inner = [i for i in f.content if lines[i].strip() and i not in kept]
        noisy: Counter[NoiseKind] = Counter(k for i in inner if (k := kinds[i]) is not None)
        if inner and sum(noisy.values()) >= 0.8 * len(inner):
            kind = noisy.most_common(1)[0][0]
            for i in range(f.start, f.end + 1):
                if i not in kept:
                    kinds[i] = kinds[i] or kind


def _continues(line: str) -> bool:
    return _family(line) is not None or _indent(line) > 0 or _PROMPT.match(line) is not None


def _family(line: str) -> NoiseKind | None:
    if line.startswith("|"):
        return None  # a markdown table row
    if _LOG.match(line):
        return "log"
    if line.startswith("{") and line.rstrip().endswith("}") and _is_json(line):
        return "json_dump"  # JSON lines: an event log or an API trace
    if _OUTPUT.match(line):
        return "tool_output"
    return None


def _share(body: Sequence[str], test: Callable[[str], object]) -> float:
    """Share of lines passing `test`."""
    return sum(1 for line in body if test(line)) / len(body) if body else 0.0


def _looks_output(line: str) -> bool:
    """A line of program output rather than prose or a diagram: a known pattern, or dense with numbers."""
    if _family(line) is not None or _FRAME.match(line) or _PROMPT.match(line):
        return True
    visible = [c for c in line if not c.isspace()]
    return len(visible) >= 12 and sum(c.isdigit() for c in visible) >= 0.25 * len(visible)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip()) if line.strip() else 0


def _previous_text(lines: Sequence[str], start: int) -> int | None:
    return next((k for k in range(start - 1, -1, -1) if lines[k].strip()), None)


def _next_text(lines: Sequence[str], start: int) -> int | None:
    return next((k for k in range(start, len(lines)) if lines[k].strip()), None)


def _col(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1)
