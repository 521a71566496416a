"""The noise filter: the labelled fixture, and the thresholds that separate noise from content."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from vault_cortex.files.noise import Fence, Noise, fences, find_noise

FIXTURE = Path(__file__).parent.parent / "fixtures" / "noise"
KINDS = ("log", "stack_trace", "json_dump", "tool_output")


def spans(text: str, first_line: int = 1) -> list[tuple[int, int, str]]:
    return [(n.start_line, n.end_line, n.kind) for n in find_noise(text.split("\n"), first_line)]


def predicted_label(found: tuple[Noise, ...]) -> str:
    """A file's label as the filter sees it: keep, or the kind covering the most lines."""
    if not found:
        return "keep"
    sizes: Counter[str] = Counter()
    for n in found:
        sizes[n.kind] += n.end_line - n.start_line + 1
    return "drop:" + sizes.most_common(1)[0][0]


def test_the_labelled_fixture() -> None:
    labels = json.loads((FIXTURE / "labels.json").read_text(encoding="utf-8"))
    assert set(labels) == {p.name for p in FIXTURE.glob("*.md")}
    assert len(labels) >= 25
    names = ["keep", *(f"drop:{k}" for k in KINDS)]
    confusion: Counter[tuple[str, str]] = Counter()
    wrong = []
    for name, expected in labels.items():
        lines = (FIXTURE / name).read_text(encoding="utf-8").removesuffix("\n").split("\n")
        found = find_noise(lines)
        got = predicted_label(found)
        confusion[expected["label"], got] += 1
        dropped = {i for n in found for i in range(n.start_line, n.end_line + 1)}
        if "lines" in expected:
            first, last = expected["lines"]
            want = set(range(first, last + 1))
        else:
            want = {i for i, line in enumerate(lines, 1) if line.strip()} if got != "keep" else set()
        kept = set(expected.get("kept", []))  # a trace's error message lines stay searchable
        want -= kept
        if got != expected["label"] or not want <= dropped or dropped - want - _blank(lines) or kept & dropped:
            wrong.append(f"{name}: expected {expected}, got {[(n.start_line, n.end_line, n.kind) for n in found]}")
    table = [f"{'expected / got':>18} " + " ".join(f"{n:>16}" for n in names)]
    table += [f"{row:>18} " + " ".join(f"{confusion[row, col]:>16}" for col in names) for row in names]
    print("\nnoise fixture confusion (rows expected, columns predicted):\n" + "\n".join(table))
    assert not wrong, "\n".join(wrong + table)
    assert {label["label"] for label in labels.values()} == set(names)


def _blank(lines: list[str]) -> set[int]:
    return {i for i, line in enumerate(lines, 1) if not line.strip()}


def log_lines(n: int) -> str:
    return "\n".join(f"2024-01-02 12:00:{i:02d} INFO sync: step {i}" for i in range(n))


def test_five_log_lines_are_a_run_four_are_not() -> None:
    assert spans(log_lines(4)) == []
    assert spans(log_lines(5)) == [(1, 5, "log")]
    assert spans("[INFO] a\n[WARN] b\nDEBUG: c\nERROR x\n[INFO] e") == [(1, 5, "log")]


def test_spans_are_numbered_from_first_line() -> None:
    assert spans("Prose first.\n\n" + log_lines(6), first_line=10) == [(12, 17, "log")]


def test_indented_continuations_and_single_blanks_stay_in_a_run() -> None:
    text = log_lines(3) + "\n    continued detail\n\n" + log_lines(2) + "\n\nProse after."
    assert spans(text) == [(1, 7, "log")]


def test_timestamps_without_seconds_and_table_rows_are_content() -> None:
    journal = "\n".join(f"2024-01-0{d} 09:30 standup, then review" for d in range(1, 8))
    table = "\n".join(f"| 2024-01-02 12:00:0{i} | INFO | row {i} |" for i in range(7))
    assert spans(journal) == [] and spans(table) == []


def json_lines(n: int) -> str:
    return "{\n" + ",\n".join(f'  "key{i}": {i}' for i in range(n - 2)) + "\n}"


def test_json_blocks_longer_than_ten_lines_are_dumps() -> None:
    assert spans(json_lines(10)) == []
    assert spans(json_lines(11)) == [(1, 11, "json_dump")]
    assert spans("```json\n" + json_lines(10) + "\n```") == []
    assert spans("```json\n" + json_lines(11) + "\n```") == [(1, 13, "json_dump")]
    assert spans("{\n  not json\n" + "  x\n" * 12 + "}") == []


def test_a_long_minified_json_line_is_a_dump_a_short_one_is_not() -> None:
    long = json.dumps({f"k{i}": "v" * 10 for i in range(40)}, separators=(",", ":"))
    assert len(long) > 400
    assert spans(f"Response: {long}") == [(1, 1, "json_dump")]
    assert spans('Config: {"a": 1, "b": [1, 2]}') == []
    assert spans("word " * 120) == []


def test_output_fences_longer_than_fifteen_lines_are_tool_output() -> None:
    def fence(tag: str, n: int) -> str:
        return f"```{tag}\n" + "\n".join(f"line {i} of the output" for i in range(n)) + "\n```"

    assert spans(fence("console", 15)) == []
    assert spans(fence("console", 16)) == [(1, 18, "tool_output")]
    assert spans(fence("python", 40)) == []
    assert spans(fence("text", 30)) == []  # a text fence needs output-looking lines, not just length


def test_tool_result_tags_are_dropped_only_when_closed() -> None:
    assert spans("<tool_output>\nok\n</tool_output>\nAfter.") == [(1, 3, "tool_output")]
    assert spans("<function_results>done</function_results>") == [(1, 1, "tool_output")]
    assert spans("<tool_output>\nunclosed\n\nProse.") == []


def test_stack_traces_keep_the_prose_around_them() -> None:
    text = "Before.\nTypeError: x is not a function\n    at f (a.js:1:2)\n    at g (b.js:3:4)\nAfter."
    assert spans(text) == [(3, 4, "stack_trace")]  # the error message (line 2) stays searchable
    assert spans("One frame is a mention:\n    at f (a.js:1:2)") == []


def test_fences_finds_closed_and_unclosed_blocks() -> None:
    lines = ["a", "```py", "x", "```", "~~~~", "```", "~~~~", "````", "open"]
    assert fences(lines) == [
        Fence(start=1, end=3, info="py"),
        Fence(start=4, end=6, info=""),
        Fence(start=7, end=8, info="", closed=False),
    ]
    assert list(fences(lines)[2].content) == [8]


@pytest.mark.parametrize("text", ["", "\n\n", "# Heading only", "- [ ] task\n- [x] done", "[[Link]] and [[Other]]"])
def test_plain_markdown_has_no_noise(text: str) -> None:
    assert spans(text) == []
