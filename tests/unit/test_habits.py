"""Habits, pure parts: tool patterns, trigger words, scoring, and fitting a habit's text into a token cap."""

from __future__ import annotations

import pytest

from vault_cortex.identity.habits import (
    candidate,
    fit,
    lead,
    parse_tool,
    render,
    tool_arguments,
    tool_matches,
    trigger_hit,
)


@pytest.mark.parametrize(
    ("pattern", "name", "tool_input", "expected"),
    [
        ("Edit", "Edit", {"file_path": "/repo/a.py"}, True),
        ("Edit", "Write", {"file_path": "/repo/a.py"}, False),
        ("Edit", "edit", {}, False),  # tool names are case-sensitive
        ("mcp__*", "mcp__vault__recall", {}, True),
        ("mcp__*", "Bash", {"command": "mcp__x"}, False),
        ("Bash(pytest*)", "Bash", {"command": "pytest -q tests/unit"}, True),
        ("Bash(pytest*)", "Bash", {"command": "  pytest"}, True),
        ("Bash(pytest*)", "Bash", {"command": "cd /repo && pytest -q"}, True),  # a part of a compound command
        ("Bash(pytest*)", "Bash", {"command": "ls | grep x; pytest -k midnight"}, True),
        ("Bash(pytest*)", "Bash", {"command": "PYTHONPATH=. pytest -q"}, True),  # leading env assignments
        ("Bash(pytest*)", "Bash", {"command": "python -m pytest"}, False),
        ("Bash(pytest*)", "Bash", {"command": "echo pytest"}, False),
        ("Bash(pytest*)", "Edit", {"command": "pytest"}, False),
        ("Bash(pytest*)", "Bash", {}, False),
        ("Bash(npm run test:*)", "Bash", {"command": "npm run test -- --watch"}, True),  # Claude's prefix form
        ("Bash(*)", "Bash", {}, True),
        ("Bash()", "Bash", {}, True),
        ("Edit(*.py)", "Edit", {"file_path": "/repo/src/a.py"}, True),
        ("Edit(*.py)", "Edit", {"file_path": "/repo/README.md"}, False),
        ("Edit(*.py)", "Edit", None, False),
        ("Bash(curl*)", "Bash", {"command": "curl -LO https://x/fw.bin"}, True),
        ("", "Edit", {}, False),
        ("Edit", "", {}, False),
        ("Bash(pytest*", "Bash", {"command": "pytest"}, False),  # malformed: never matches
    ],
)
def test_tool_matches(pattern: str, name: str, tool_input: dict[str, str] | None, expected: bool) -> None:
    assert tool_matches(pattern, name, tool_input) is expected


def test_tool_arguments_and_parse_tool() -> None:
    assert tool_arguments({"command": "A=1 make && ./run"}) == ["A=1 make && ./run", "A=1 make", "make", "./run"]
    assert tool_arguments({"file_path": "x.md", "other": 3}) == ["x.md"]
    assert parse_tool("Edit") == ("Edit", {})
    assert parse_tool("Bash(pytest -q)") == ("Bash", {"command": "pytest -q", "file_path": "pytest -q"})
    assert tool_matches("Bash(pytest*)", *parse_tool("Bash(pytest -q)"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fix the flaky import", "fix"),
        ("fixing the timestamp", "fix"),
        ("two bugs in the parser", "bug"),
        ("the dashboard is broken again", "broken"),
        ("it doesn’t work since Tuesday", "doesn't work"),  # typographic apostrophe
        ("update the test fixture", None),  # `fix` is not a prefix match
        ("debugging the UART", None),
        ("", None),
    ],
)
def test_trigger_hit(text: str, expected: str | None) -> None:
    assert trigger_hit(["bug", "fix", "regression", "doesn't work", "broken"], text) == expected


def test_candidate_prefers_tool_then_trigger_then_meaning_and_scales_by_weight() -> None:
    fm = {"triggers": ["bug"], "tool_patterns": ["Bash(pytest*)"], "weight": 0.6}
    by_tool = candidate("h.md", fm, "a bug", 0.9, 0.45, "Bash", {"command": "pytest"})
    assert by_tool and by_tool.tool_pattern == "Bash(pytest*)" and by_tool.score == 0.8
    by_trigger = candidate("h.md", fm, "a bug", 0.9, 0.45, None, {})
    assert by_trigger and by_trigger.trigger == "bug" and by_trigger.why == "trigger “bug”"
    by_meaning = candidate("h.md", fm, "something odd", 0.5, 0.45, None, {})
    assert by_meaning and by_meaning.trigger is None and by_meaning.score == pytest.approx(0.5 * 0.8)
    assert candidate("h.md", fm, "something odd", 0.44, 0.45, None, {}) is None
    heavy = candidate("h.md", {**fm, "weight": 1.0}, "a bug", 0.0, 0.45, None, {})
    light = candidate("h.md", {**fm, "weight": 0.0}, "a bug", 0.0, 0.45, None, {})
    assert heavy and light and heavy.score == 1.0 and light.score == 0.5
    assert candidate("h.md", {"triggers": "bug"}, "bug", 0.0, 0.45, None, {}), "a single trigger as a string"
    assert candidate("h.md", {"triggers": None, "weight": "x"}, "bug", 0.0, 0.45, None, {}) is None


def test_lead_keeps_the_text_before_the_first_subheading() -> None:
    body = "# Title\n\n**When:** a.\n**Do:** b.\n\n\n\n%% a comment\nover lines %%\n## How\nmore\n"
    assert lead(body) == "**When:** a.\n**Do:** b."
    assert lead("Just text.\n") == "Just text."


def test_fit_cuts_at_line_ends_or_gives_up() -> None:
    def count(s: str) -> int:
        return len(s.split())

    text = "one two three\nfour five\nsix"
    full = fit(text, "T", 100, count)
    assert full == (text, count(render("T", text)))
    cut = fit(text, "T", count(render("T", "one two three\nfour five")), count)
    assert cut is not None and cut[0] == "one two three\nfour five"
    assert fit(text, "T", 2, count) is None
    assert render("T", "a\n\nb") == "- **T**\n  a\n\n  b"
