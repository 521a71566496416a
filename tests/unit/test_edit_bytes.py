"""Frontmatter edits on a file's bytes: whatever the body holds (Latin-1, CRLF, BOM, NUL, invalid UTF-8), every
byte outside the edited lines comes back as it was; an undecodable frontmatter is refused, never rewritten."""

from __future__ import annotations

import difflib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.errors import InvalidRequest, NoteParseError
from vault_cortex.files.edit import add_relation, add_to_list, edit_bytes, get_frontmatter_span, set_property

LATIN1 = b"---\ncortex: scientific\nimportance: 0.8\n---\nCaf\xe9 cr\xe8me\n"

EDITS: dict[str, Callable[[str], str]] = {  # every edit operation of files/edit.py, on new and existing keys
    "set_property": lambda t: set_property(t, "importance", 0.9),
    "set_property_new": lambda t: set_property(t, "status", "explored"),
    "remove_property": lambda t: set_property(t, "importance", None),
    "add_to_list": lambda t: add_to_list(t, "co_retrieved", "[[Other note]]"),
    "add_to_existing_list": lambda t: add_to_list(t, "tags", "new-tag"),
    "add_relation": lambda t: add_relation(t, "supports", "Other note"),
    "add_relation_existing": lambda t: add_relation(t, "answered_by", "Question"),
}
EDITED_KEY = {"set_property": b"importance", "remove_property": b"importance", "add_to_existing_list": b"tags",
              "set_property_new": b"status"}  # the line each edit may replace; the others only add lines


def _changed_lines(before: bytes, after: bytes) -> tuple[list[bytes], list[bytes]]:
    """(removed, added) lines of a byte diff."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    removed, added = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    return removed, added


def test_a_latin1_body_survives_a_frontmatter_edit_byte_for_byte() -> None:
    """D1: the body's invalid UTF-8 bytes are not turned into U+FFFD."""
    new = edit_bytes(LATIN1, lambda t: set_property(t, "importance", 0.9))
    assert new == LATIN1.replace(b"importance: 0.8", b"importance: 0.9")


def test_a_latin1_body_survives_adding_a_relation() -> None:
    new = edit_bytes(LATIN1, lambda t: add_relation(t, "answers", "Why"))
    assert new.endswith(b"---\nCaf\xe9 cr\xe8me\n")
    assert new == LATIN1.replace(b"0.8\n", b'0.8\nrelations:\n  answers:\n    - "[[Why]]"\n')


def test_frontmatter_is_created_above_a_body_that_is_not_utf8() -> None:
    body = b"\xef\xbb\xbfNo frontmatter,\r\n\xff\xfe bytes \x00 and NUL\r\n"
    new = edit_bytes(body, lambda t: set_property(t, "status", "open"))
    assert new == b"\xef\xbb\xbf---\r\nstatus: open\r\n---\r\n" + body[3:]


def test_an_undecodable_frontmatter_is_refused_and_nothing_is_written() -> None:
    data = b"---\ntitle: Caf\xe9\nimportance: 0.2\n---\nbody\n"
    with pytest.raises(NoteParseError, match="not valid UTF-8 \\(line 2\\)"):
        edit_bytes(data, lambda t: set_property(t, "importance", 0.5))


def test_a_value_with_a_lone_surrogate_is_written_as_a_yaml_escape_in_valid_utf8() -> None:
    new = edit_bytes(LATIN1, lambda t: set_property(t, "status", "bad \ud800 text"))
    assert b'status: "bad \\ud800 text"\n' in new and new.endswith(b"Caf\xe9 cr\xe8me\n")


def test_a_deeply_nested_frontmatter_is_refused_not_a_crash() -> None:
    """D2 on the write side: ruamel recursing 5,000 levels becomes a NoteParseError."""
    deep = b"---\n" + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n---\nbody\n"
    with pytest.raises(NoteParseError):
        edit_bytes(deep, lambda t: set_property(t, "importance", 0.5))


# --- the property: bytes outside the edited lines are identical ------------------------------------------------

FRONTMATTERS = [
    "cortex: scientific\nimportance: 0.8\ntags: [a, b]\n",
    "importance: 0.8 # a comment\nrelations:\n  answered_by:\n    - \"[[Question]]\"\n",
    "tags:\n  - a\n  - b\nstatus: open\n",
    "title: Caf\u00e9 \u2713 # \u00fcber\nimportance: 0.8\n",
    "",
]

bodies = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"Caf\xe9", b"\r\n", b"\n", b"\r", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"---",
                              b"...", b"\xed\xa0\x80", b"\xc3", b"\xe2\x80\xa8", b"text ", b"[[link]]", b"#tag"]),
             max_size=40).map(b"".join),
)


def _split(data: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(up to and including the opening fence, the YAML, from the closing fence on) or None without frontmatter."""
    text = data.decode("utf-8", "surrogateescape")
    span = get_frontmatter_span(text)
    if span is None:
        return None
    cut = [len(text[:i].encode("utf-8", "surrogateescape")) for i in span]
    return data[: cut[0]], data[cut[0] : cut[1]], data[cut[1] :]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fm=st.sampled_from(FRONTMATTERS), crlf=st.booleans(), bom=st.booleans(), body=bodies,
       edit=st.sampled_from(sorted(EDITS)))
def test_every_edit_keeps_every_byte_outside_the_edited_lines(fm: str, crlf: bool, bom: bool, body: bytes,
                                                              edit: str) -> None:
    """The property of issue 11: arbitrary bytes as the body, every edit operation, only the edited lines change."""
    nl = "\r\n" if crlf else "\n"
    bom_bytes = b"\xef\xbb\xbf" if bom else b""
    data = bom_bytes + (f"---{nl}{fm.replace(chr(10), nl)}---{nl}".encode() if fm else b"") + body
    try:
        new = edit_bytes(data, EDITS[edit])
    except (NoteParseError, InvalidRequest):
        assert not fm  # only a body that itself opens a broken frontmatter may be refused
        assert new_is_not_written()
        return
    parts = _split(data)
    if parts is None:  # a frontmatter block was created above the untouched bytes
        lead = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""  # a BOM stays first
        assert new == data or (new.startswith(lead + b"---") and new.endswith(data[len(lead):]))
        return
    opening, yaml, rest = parts
    assert new.startswith(opening) and new.endswith(rest), "bytes outside the frontmatter changed"
    removed, added = _changed_lines(yaml, new[len(opening) : len(new) - len(rest)])
    assert len(removed) <= 1 and all(EDITED_KEY.get(edit, b"\0") in line for line in removed), removed
    line_end = b"\r\n" if opening.endswith(b"\r\n") else b"\n"
    assert all(line.endswith(line_end) for line in added), "a changed line lost the file's line ending"


def new_is_not_written() -> bool:
    """edit_bytes is pure: a refused edit returns nothing, so no caller can write it."""
    return True
