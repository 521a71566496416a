"""Minimal body edits (files/sections.py): each operation changes only the lines it touches."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.errors import InvalidRequest, NoteParseError
from vault_cortex.files.sections import EditOp, append, apply, find_replace, headings, prepend, replace_section

NOTE = """---
title: Setup notes
tags: [a, b]
---
# Top
intro

## Setup

old setup

### Install

pip install x

## Use
use it
"""


def lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def test_append_and_prepend_add_whole_lines_in_the_files_line_endings() -> None:
    assert append("a\r\nb", "c\nd") == "a\r\nb\r\nc\r\nd\r\n"
    assert append("a\n", "b") == "a\nb\n"
    assert prepend(NOTE, "first") == NOTE.replace("---\n# Top", "---\nfirst\n# Top")
    assert prepend("\ufeffno frontmatter\n", "x") == "\ufeffx\nno frontmatter\n"


def test_replace_section_by_heading_path_keeps_the_heading_and_the_blank_lines_around() -> None:
    new = replace_section(NOTE, "Setup/Install", "uv pip install x")
    assert new == NOTE.replace("pip install x", "uv pip install x")
    assert replace_section(NOTE, "Setup#Install", "uv pip install x") == new
    assert replace_section(NOTE, "install", "uv pip install x") == new  # headings match case-insensitively
    whole = replace_section(NOTE, "Setup", "all new")  # a section includes its subsections
    assert whole == NOTE.replace("old setup\n\n### Install\n\npip install x\n", "all new\n")
    assert replace_section(NOTE, "Use", "new use") == NOTE.replace("use it\n", "new use\n")


def test_replace_section_ignores_headings_in_code_and_names_the_ambiguous_ones() -> None:
    text = "# A\n```\n# B\n```\n## C\nx\n# D\n## C\ny\n"
    assert [h.text for h in headings(text)] == ["A", "C", "D", "C"]
    with pytest.raises(InvalidRequest, match="no heading 'B'"):
        replace_section(text, "B", "z")
    with pytest.raises(InvalidRequest, match="occurs 2 times"):
        replace_section(text, "C", "z")
    assert replace_section(text, "D/C", "z") == text.replace("y\n", "z\n")


def test_find_replace_needs_the_expected_count() -> None:
    assert find_replace(NOTE, "old setup", "new setup") == NOTE.replace("old setup", "new setup")
    with pytest.raises(InvalidRequest, match="occurs 0 times in the note, not 1"):
        find_replace(NOTE, "missing", "x")
    with pytest.raises(InvalidRequest, match="occurs 2 times"):
        find_replace(NOTE, "Setup", "x")
    assert find_replace(NOTE, "Setup", "Set-up", count=2).count("Set-up") == 2


def test_set_property_goes_through_the_minimal_frontmatter_editor() -> None:
    new = apply(NOTE, EditOp(op="set_property", key="status", value="done"))
    assert new == NOTE.replace("tags: [a, b]\n", "tags: [a, b]\nstatus: done\n")
    assert apply(new, EditOp(op="remove_property", key="status")) == NOTE
    with pytest.raises(InvalidRequest, match="set_property needs `value`"):
        apply(new, EditOp(op="set_property", key="status"))  # never a silent deletion
    with pytest.raises(InvalidRequest, match="set_property needs `value`"):
        apply(new, EditOp(op="set_property", key="status", value=None))
    with pytest.raises(InvalidRequest, match="needs `content`"):
        apply(NOTE, EditOp(op="append"))


# -- the property: random operations on random notes ------------------------------------------------------

WORDS = st.text(alphabet="abcxyz éß#[]*`-:\udc80", min_size=0, max_size=12)  # \udc80: a non-UTF-8 byte
TITLES = st.sampled_from(["Setup", "Install", "Use", "Notes", "Ünïcode"])


@st.composite
def notes(draw: st.DrawFn) -> tuple[str, list[tuple[str, int]]]:
    """A note's text and its real headings (text, line index), built from blocks so we know the truth."""
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    out: list[str] = []
    if draw(st.booleans()):
        out.append("---")
        for key in draw(st.lists(st.sampled_from(["title", "status", "tags", "# comment"]), unique=True)):
            out.append(key if key.startswith("#") else f"{key}: {draw(st.sampled_from(['x', '[a, b]', '0.5']))}")
        out.append("---")
    found: list[tuple[str, int]] = []
    for kind in draw(st.lists(st.sampled_from(["heading", "para", "blank", "code"]), max_size=12)):
        if kind == "heading":
            title = draw(TITLES)
            found.append((title, len(out)))
            out.append("#" * draw(st.integers(1, 3)) + " " + title)
        elif kind == "para":
            out.append("p" + draw(WORDS).rstrip())  # never a heading, fence or rule
        elif kind == "blank":
            out.append("")
        else:
            out += ["```", "# " + draw(TITLES), "```"]
    text = nl.join(out)
    if out and draw(st.booleans()):
        text += nl
    return text, found


OPS = st.sampled_from(["append", "prepend", "replace_section", "find_replace", "set_property"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(note=notes(), op=OPS, content=st.text(alphabet="abc é\n#", max_size=30), data=st.data())
def test_an_edit_changes_only_the_lines_it_touches(note: tuple[str, list[tuple[str, int]]], op: str, content: str,
                                                   data: st.DataObject) -> None:
    text, found = note
    old = lines(text)
    if op == "append":
        new = apply(text, EditOp(op="append", content=content))
        assert new.startswith(text)
        assert new.encode("utf-8", "surrogateescape").startswith(text.encode("utf-8", "surrogateescape"))
    elif op == "prepend":
        new = apply(text, EditOp(op="prepend", content=content))
        body = 0
        if text.startswith("---") and text.count("---") >= 2:
            body = sum(1 for _ in lines(text)[: [i for i, ln in enumerate(old) if ln.rstrip("\r\n") == "---"][1] + 1])
        head = "".join(old[:body])
        rest = text[len(head):]
        assert new.startswith(head) and new.endswith(rest)
    elif op == "replace_section":
        title = data.draw(TITLES)
        same = [(t, i) for t, i in found if t.casefold() == title.casefold()]
        if len(same) != 1:
            with pytest.raises(InvalidRequest):
                apply(text, EditOp(op="replace_section", heading=title, content=content))
            return
        new = apply(text, EditOp(op="replace_section", heading=title, content=content))
        at = same[0][1]
        level = len(old[at]) - len(old[at].lstrip("#"))
        after = [i for t, i in found if i > at and len(old[i]) - len(old[i].lstrip("#")) <= level]
        keep_head = "".join(old[: at + 1])
        keep_tail = "".join(old[after[0]:]) if after else ""
        assert new.startswith(keep_head) and new.endswith(keep_tail)
    elif op == "find_replace":
        pick = data.draw(st.sampled_from([ln.rstrip("\r\n") for ln in old if ln.strip("\r\n")] or ["zzz"]))
        a = data.draw(st.integers(0, max(0, len(pick) - 1)))
        find = pick[a: a + data.draw(st.integers(1, 6))] or "zzz"
        replace = data.draw(st.text(alphabet="QRS é", max_size=5))
        expected = data.draw(st.sampled_from([text.count(find), text.count(find) + 1]))
        if expected != text.count(find) or expected == 0:
            with pytest.raises(InvalidRequest):
                apply(text, EditOp(op="find_replace", find=find, replace=replace, count=max(1, expected)))
            return
        new = apply(text, EditOp(op="find_replace", find=find, replace=replace, count=expected))
        if "\r" not in find and "\n" not in find:
            for before, after_line in zip(text.split("\n"), new.split("\n"), strict=True):
                if find not in before:
                    assert after_line == before
    else:
        key = data.draw(st.sampled_from(["status", "title", "weight"]))
        value = data.draw(st.one_of(st.none(), st.sampled_from(["done", "a b", "x: y"]), st.floats(0, 1),
                                    st.lists(st.sampled_from(["a", "b c"]), max_size=3)))
        try:
            edit = EditOp(op="remove_property", key=key) if value is None else EditOp(op="set_property", key=key,
                                                                                      value=value)
            new = apply(text, edit)
        except NoteParseError:
            return
        close = [i for i, ln in enumerate(old) if ln.rstrip("\r\n") == "---"]
        if text.startswith("---") and len(close) >= 2:
            body = "".join(old[close[1] + 1:])
            assert new.endswith(body)
            others = [ln for ln in old[1: close[1]] if not ln.startswith(key + ":")]
            new_lines = lines(new)
            assert all(ln in new_lines for ln in others)
        else:
            assert new.endswith(text)
