"""Minimal frontmatter edits: golden before/after texts, exact diffs, and a round-trip property."""

from __future__ import annotations

import difflib
import re
from typing import Any

import pytest
import yaml as pyyaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from vault_cortex.errors import NoteParseError
from vault_cortex.files.edit import add_relation, add_to_list, get_frontmatter_span, set_property
from vault_cortex.files.yamltext import note_filename, render_new_note

NOTE = """\
---
cortex: scientific   # region
importance: 0.62
created: 2026-11-29T14:03
title: 'single'
quote: "double"
# the tags come next
tags: [sqlite, debugging]
project: vault-cortex
aliases:
  - WAL checkpoint stall
relations:
  supports: ["[[WAL mode needs a checkpoint]]"]
  derived_from:
    - "[[raw/2026-11-29 session]]"
---
The stall came from a long read transaction. See [[SQLite notes#Checkpoints]].

---
depends_on:: [[Connection pool]]
"""


def diff(before: str, after: str) -> tuple[list[str], list[str]]:
    """(removed lines, added lines) between two texts, line endings included."""
    removed: list[str] = []
    added: list[str] = []
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    return removed, added


def body(text: str) -> str:
    return text[text.index("---\nThe stall") :]


# --- get_frontmatter_span -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\na: 1\n---\nbody", "a: 1\n"),
        ("---\r\na: 1\r\n---\r\nbody", "a: 1\r\n"),
        ("\ufeff---\na: 1\n---\n", "a: 1\n"),
        ("---\na: 1\n...\n---\n", "a: 1\n"),
        ("---\n---\n", ""),
        ("---\na: 1\n---", "a: 1\n"),
        ("---\na: 1\n--- \nx\n---\n", "a: 1\n"),
        ("---\na: |\n  ----\n---\n", "a: |\n  ----\n"),
    ],
)
def test_span_finds_the_yaml_between_the_fences(text: str, expected: str) -> None:
    span = get_frontmatter_span(text)
    assert span is not None
    assert text[span[0] : span[1]] == expected


@pytest.mark.parametrize("text", ["", "body", "---\na: 1\n", "---", "----\na: 1\n----\n", "\n---\na: 1\n---\n"])
def test_span_is_none_without_a_closed_frontmatter(text: str) -> None:
    assert get_frontmatter_span(text) is None


# --- set_property ---------------------------------------------------------------------------------------


def test_changing_a_number_changes_exactly_one_line() -> None:
    after = set_property(NOTE, "importance", 0.7)
    assert diff(NOTE, after) == (["importance: 0.62\n"], ["importance: 0.7\n"])


@pytest.mark.parametrize(
    ("key", "value", "old", "new"),
    [
        ("title", "it's new", "title: 'single'\n", "title: 'it''s new'\n"),
        ("quote", "a: b", 'quote: "double"\n', 'quote: "a: b"\n'),
        ("cortex", "soul", "cortex: scientific   # region\n", "cortex: soul   # region\n"),
        ("cortex", "has: colon", "cortex: scientific   # region\n", 'cortex: "has: colon"   # region\n'),
        ("created", "2026-12-01T09:30", "created: 2026-11-29T14:03\n", "created: 2026-12-01T09:30\n"),
        ("project", "[[Vault Cortex]]", "project: vault-cortex\n", 'project: "[[Vault Cortex]]"\n'),
        ("project", True, "project: vault-cortex\n", "project: true\n"),
        ("tags", ["sqlite", "wal"], "tags: [sqlite, debugging]\n", "tags: [sqlite, wal]\n"),
        ("tags", [], "tags: [sqlite, debugging]\n", "tags: []\n"),
    ],
)
def test_setting_keeps_quoting_comments_and_list_style(key: str, value: Any, old: str, new: str) -> None:
    assert diff(NOTE, set_property(NOTE, key, value)) == ([old], [new])


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("plain words", "k: plain words"),
        ("it's fine", "k: it's fine"),
        ("ünïcödé 日本語 🙂", "k: ünïcödé 日本語 🙂"),
        ("2026-11-29", "k: 2026-11-29"),
        ("2026-11-29T14:03", "k: 2026-11-29T14:03"),
        ("2026-02-30", 'k: "2026-02-30"'),
        ("a: b", 'k: "a: b"'),
        ("a #b", 'k: "a #b"'),
        ("#tag", 'k: "#tag"'),
        ("[x", 'k: "[x"'),
        ('"q"', 'k: "\\"q\\""'),
        ("yes", 'k: "yes"'),
        ("No", 'k: "No"'),
        ("null", 'k: "null"'),
        ("012", 'k: "012"'),
        ("1.5", 'k: "1.5"'),
        ("12:30", 'k: "12:30"'),
        ("", 'k: ""'),
        (" padded", 'k: " padded"'),
        ("two\nlines", 'k: "two\\nlines"'),
        ("[[Note]]", 'k: "[[Note]]"'),
        ("see [[Note|n]]", 'k: "see [[Note|n]]"'),
        (True, "k: true"),
        (3, "k: 3"),
        (0.5, "k: 0.5"),
        (1e-05, "k: 1.0e-05"),
        (["a", "b c"], "k: [a, b c]"),
        (["a", "x, y"], "k:\n  - a\n  - x, y"),
        (["[[A]]", "[[B]]"], 'k:\n  - "[[A]]"\n  - "[[B]]"'),
    ],
)
def test_new_key_is_one_line_rendered_as_yaml_needs(value: Any, line: str) -> None:
    before = "---\na: 1\n---\nbody\n"
    after = set_property(before, "k", value)
    assert after == f"---\na: 1\n{line}\n---\nbody\n"
    if not str(value).startswith("2026"):  # dates are written plain, as Obsidian does, and load as dates
        assert _load(after)["k"] == value


def test_new_key_goes_after_trailing_comments_and_keeps_everything_else() -> None:
    before = "---\na: 1\n# last words\n---\nbody\n"
    assert set_property(before, "b", "x") == "---\na: 1\n# last words\nb: x\n---\nbody\n"


def test_none_removes_only_the_keys_lines() -> None:
    after = set_property(NOTE, "aliases", None)
    assert diff(NOTE, after) == (["aliases:\n", "  - WAL checkpoint stall\n"], [])
    after = set_property(NOTE, "tags", None)
    assert diff(NOTE, after) == (["tags: [sqlite, debugging]\n"], [])
    assert "# the tags come next\n" in after
    assert set_property(NOTE, "missing", None) == NOTE


def test_setting_the_same_value_changes_nothing() -> None:
    text = "---\nimportance: 0.50\ntags: [a, b]\nt: 'x'\n---\n"
    assert set_property(text, "importance", 0.5) == text
    assert set_property(text, "tags", ["a", "b"]) == text
    assert set_property(text, "t", "x") == text


def test_block_list_keeps_its_style_and_unchanged_item_lines() -> None:
    before = "---\nlinks:\n    -   '[[A]]'  # first\n    -   b\nx: 1\n---\n"
    after = set_property(before, "links", ["[[A]]", "b", "[[C]]"])
    assert diff(before, after) == ([], ['    -   "[[C]]"\n'])
    after = set_property(before, "links", ["b"])
    assert diff(before, after) == (["    -   '[[A]]'  # first\n"], [])


def test_scalar_becomes_list_in_default_style() -> None:
    before = "---\naliases: Some name\n---\n"
    assert set_property(before, "aliases", ["Some name", "Other"]) == "---\naliases: [Some name, Other]\n---\n"
    assert set_property(before, "aliases", ["[[X]]"]) == '---\naliases:\n  - "[[X]]"\n---\n'


def test_block_scalar_and_nested_mapping_are_replaced_whole() -> None:
    before = "---\na: |\n  line\n  # not a comment\nb: 2\n---\n"
    assert set_property(before, "a", "x") == "---\na: x\nb: 2\n---\n"
    removed, added = diff(NOTE, set_property(NOTE, "relations", None))
    assert (removed[0], len(removed), added) == ("relations:\n", 4, [])


def test_crlf_bom_and_missing_final_newline_are_kept() -> None:
    before = "\ufeff---\r\na: 1\r\ntags:\r\n- x\r\n---\r\nbody\r\n---\r\nend"
    assert set_property(before, "a", 2) == before.replace("a: 1", "a: 2")
    assert set_property(before, "b", 3) == before.replace("- x\r\n", "- x\r\nb: 3\r\n")
    assert add_to_list(before, "tags", "y") == before.replace("- x\r\n", "- x\r\n- y\r\n")


def test_body_is_never_touched() -> None:
    for after in (
        set_property(NOTE, "importance", 0.1),
        add_to_list(NOTE, "tags", "wal"),
        add_relation(NOTE, "supports", "X"),
        set_property(NOTE, "relations", None),
    ):
        assert body(after) == body(NOTE)


def test_note_without_frontmatter_gets_a_block_on_top() -> None:
    assert set_property("body\n---\nx", "a", 1) == "---\na: 1\n---\nbody\n---\nx"
    assert set_property("\ufeffbody\r\n", "a", 1) == "\ufeff---\r\na: 1\r\n---\r\nbody\r\n"
    assert set_property("", "a", 1) == "---\na: 1\n---\n"
    assert set_property("body", "a", None) == "body"


@pytest.mark.parametrize(
    "text",
    [
        "---\na: [1\n---\nbody\n",  # malformed
        "---\na: 1\na: 2\n---\n",  # duplicate key
        "---\n- a\n- b\n---\n",  # not a mapping
        "---\njust text\n---\n",  # not a mapping
        "---\na:\tb\n\tc: d\n---\n",  # tabs
        "---\na: 1\nbody without a closing fence\n",  # unclosed
        '---\n{"a": 1}\n---\n',  # JSON frontmatter
        "---\n<<: {x: 1}\nz: 3\n---\n",  # merge key
    ],
)
def test_malformed_frontmatter_is_refused(text: str) -> None:
    for edit in (
        lambda: set_property(text, "a", 2),
        lambda: add_to_list(text, "tags", "x"),
        lambda: add_relation(text, "supports", "X"),
    ):
        with pytest.raises(NoteParseError):
            edit()


def test_odd_dates_are_valid_yaml_to_edit_around() -> None:
    before = "---\ncreated: 2026-02-30\nx: 1\n---\n"
    assert set_property(before, "x", 2) == "---\ncreated: 2026-02-30\nx: 2\n---\n"


# --- add_to_list ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tags: [sqlite, debugging]\n", "tags: [sqlite, debugging, wal]\n"),
        ("tags: [a,b]\n", "tags: [a,b,wal]\n"),
        ("tags: [ a ]  # c\n", "tags: [ a, wal ]  # c\n"),
        ("tags: []\n", "tags: [wal]\n"),
        ("tags: [a, 'b, c',]\n", "tags: [a, 'b, c', wal]\n"),
        ("tags: ['it''s', \"q]\"]\n", "tags: ['it''s', \"q]\", wal]\n"),
    ],
)
def test_flow_list_gains_the_item_on_the_same_line(old: str, new: str) -> None:
    before = f"---\n{old}x: 1\n---\n"
    after = add_to_list(before, "tags", "wal")
    assert diff(before, after) == ([old], [new])


def test_multiline_flow_list_changes_one_line() -> None:
    before = "---\ntags: [\n  a,\n  b # c\n]\nx: 1\n---\n"
    assert diff(before, add_to_list(before, "tags", "wal")) == (["  b # c\n"], ["  b, wal # c\n"])


@pytest.mark.parametrize("prefix", ["  - ", "- ", "    - ", "  -   "])
def test_block_list_gains_one_line_with_its_indentation(prefix: str) -> None:
    before = f"---\nlinks:\n{prefix}a\n{prefix}b\n# about x\nx: 1\n---\n"
    after = add_to_list(before, "links", "[[Note]]")
    assert diff(before, after) == ([], [f'{prefix}"[[Note]]"\n'])
    assert after.index('"[[Note]]"') < after.index("# about x")


def test_present_items_are_a_no_op() -> None:
    before = "---\nlinks:\n  - \"[[WAL Mode]]\"\n  - '[[Other|shown]]'\ntags: [a]\n---\n"
    assert add_to_list(before, "links", "[[wal mode]]") == before
    assert add_to_list(before, "links", "[[other]]") == before
    assert add_to_list(before, "tags", "a") == before
    assert add_to_list(before, "tags", "A") != before  # only wikilink targets ignore case


def test_missing_null_and_scalar_keys_become_lists() -> None:
    assert add_to_list("---\na: 1\n---\n", "tags", "x") == "---\na: 1\ntags: [x]\n---\n"
    assert add_to_list("---\na: 1\n---\n", "links", "[[X]]") == '---\na: 1\nlinks:\n  - "[[X]]"\n---\n'
    assert add_to_list("---\ntags:  # mine\na: 1\n---\n", "tags", "x") == "---\ntags: [x]  # mine\na: 1\n---\n"
    assert add_to_list("---\naliases: Some name\n---\n", "aliases", "B") == "---\naliases: [Some name, B]\n---\n"
    assert add_to_list("---\naliases: Some name\n---\n", "aliases", "Some name") == "---\naliases: Some name\n---\n"
    assert add_to_list("no frontmatter\n", "tags", "x") == "---\ntags: [x]\n---\nno frontmatter\n"


def test_new_block_lists_follow_the_files_indentation() -> None:
    before = "---\ntags:\n- a\n---\n"
    assert add_to_list(before, "links", "[[X]]") == '---\ntags:\n- a\nlinks:\n- "[[X]]"\n---\n'


@pytest.mark.parametrize("value", ["{a: 1}", "\n  a: 1", "3", "true", "|\n  text\n  more"])
def test_adding_to_a_non_list_is_refused(value: str) -> None:
    with pytest.raises(NoteParseError):
        add_to_list(f"---\ntags: {value}\n---\n", "tags", "x")


# --- add_relation ---------------------------------------------------------------------------------------


def test_relation_joins_a_flow_list_on_its_line() -> None:
    after = add_relation(NOTE, "supports", "Other note")
    assert diff(NOTE, after) == (
        ['  supports: ["[[WAL mode needs a checkpoint]]"]\n'],
        ['  supports: ["[[WAL mode needs a checkpoint]]", "[[Other note]]"]\n'],
    )


def test_relation_joins_a_block_list_as_one_line() -> None:
    after = add_relation(NOTE, "derived_from", "[[raw/2026-11-30 session]]")
    assert diff(NOTE, after) == ([], ['    - "[[raw/2026-11-30 session]]"\n'])


def test_new_relation_type_is_added_under_relations() -> None:
    after = add_relation(NOTE, "evokes", "Rain")
    assert diff(NOTE, after) == ([], ["  evokes:\n", '    - "[[Rain]]"\n'])
    assert after.index("evokes") < after.index("---\nThe stall")


def test_new_relation_type_follows_flow_siblings() -> None:
    before = '---\nrelations:\n    supports: ["[[A]]"]\n---\n'
    after = add_relation(before, "leads_to", "B")
    assert after == '---\nrelations:\n    supports: ["[[A]]"]\n    leads_to: ["[[B]]"]\n---\n'


def test_relations_block_is_created() -> None:
    before = "---\ntags: [a]\n---\nbody\n"
    expected = '---\ntags: [a]\nrelations:\n  supports:\n    - "[[X]]"\n---\nbody\n'
    assert add_relation(before, "supports", "X") == expected
    assert add_relation("body\n", "supports", "X") == '---\nrelations:\n  supports:\n    - "[[X]]"\n---\nbody\n'
    before = "---\nrelations: ~  # later\nx: 1\n---\n"
    after = add_relation(before, "supports", "X")
    assert after == '---\nrelations:  # later\n  supports:\n    - "[[X]]"\nx: 1\n---\n'


def test_existing_relation_is_a_no_op() -> None:
    assert add_relation(NOTE, "supports", "wal MODE needs a checkpoint") == NOTE
    assert add_relation(NOTE, "derived_from", "[[raw/2026-11-29 session]]") == NOTE


@pytest.mark.parametrize("value", ['["[[X]]"]', "{supports: []}", "text"])
def test_relations_of_an_unusable_shape_are_refused(value: str) -> None:
    with pytest.raises(NoteParseError):
        add_relation(f"---\nrelations: {value}\n---\n", "supports", "Y")


# --- render_new_note and note_filename ------------------------------------------------------------------


def test_render_new_note_golden() -> None:
    text = render_new_note(
        title="WAL stall",
        body="The stall came from a long read.\r\nSee [[SQLite]].",
        properties={
            "cortex": "scientific",
            "importance": 0.62,
            "created": "2026-11-29T14:03",
            "tags": ["sqlite", "debugging"],
            "pinned": False,
            "skipped": None,
            "relations": {"derived_from": ["[[raw/2026-11-29 session]]"]},
        },
    )
    assert text == (
        "---\ncortex: scientific\nimportance: 0.62\ncreated: 2026-11-29T14:03\ntags: [sqlite, debugging]\n"
        'pinned: false\nrelations:\n  derived_from:\n    - "[[raw/2026-11-29 session]]"\n---\n'
        "# WAL stall\n\nThe stall came from a long read.\nSee [[SQLite]].\n"
    )


def test_render_new_note_without_properties() -> None:
    assert render_new_note(title=None, body="text", properties={}) == "text\n"
    assert render_new_note(title="T", body="# Own heading\n", properties={}) == "# Own heading\n"
    assert render_new_note(title=None, body="---\nnot yaml\n---\n", properties={}) == "---\n---\n---\nnot yaml\n---\n"


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("WAL checkpoint stall", "WAL checkpoint stall"),
        ('Q: why? #1 [[x]] | a/b\\c *<>"', "Q why 1 x a b c"),
        ("a^b %% c % d", "a b c % d"),
        ("  many   spaces\tand\nlines  ", "many spaces and lines"),
        ("...hidden", "hidden"),
        ("trailing dots...", "trailing dots"),
        ("Cafe\u0301", "Café"),
        ("", "untitled"),
        ("#?:", "untitled"),
        ("con", "con_"),
        ("\x00ctrl\x1fchars\x7f", "ctrl chars"),
    ],
)
def test_note_filename(title: str, name: str) -> None:
    assert note_filename(title) == name


def test_note_filename_is_short_and_safe_on_disk() -> None:
    long = note_filename("word " * 60)
    assert len(long) <= 100
    assert not long.endswith(" ")
    assert len(note_filename("日本" * 200).encode()) <= 200


# --- property: set_property on rendered notes changes only that key -----------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12).filter(
    lambda s: not re.match(r"\d{4}-\d\d-\d\d", s)
)
_keys = _text.filter(lambda s: s.strip() != "")
_values = st.one_of(
    _text,
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(_text, max_size=4),
    st.lists(_text.map(lambda s: f"[[{s.replace(']', '')}]]"), max_size=3),
)


def _typed(mapping: dict[str, Any]) -> list[tuple[str, type, Any]]:
    return [(k, type(v), v) for k, v in mapping.items()]


def _load(text: str) -> dict[str, Any]:
    span = get_frontmatter_span(text)
    if span is None:
        return {}
    src = text[span[0] : span[1]]
    loaded = YAML(typ="safe", pure=True).load(src) or {}
    assert (pyyaml.safe_load(src) or {}) == loaded  # python-frontmatter reads with PyYAML: both must agree
    return dict(loaded)


def _frontmatter_lines(key: str, value: Any) -> str:
    return render_new_note(title=None, body="", properties={key: value})[4:-4]


@settings(max_examples=300, deadline=None)
@given(props=st.dictionaries(_keys, _values, min_size=1, max_size=6), data=st.data())
def test_set_property_changes_that_key_and_nothing_else(props: dict[str, Any], data: st.DataObject) -> None:
    text = render_new_note(title=None, body="body\n---\nmore\n", properties=props)
    assert _typed(_load(text)) == _typed(props)
    key = data.draw(st.one_of(st.sampled_from(sorted(props)), _keys))
    value = data.draw(st.one_of(st.none(), _values))
    after = set_property(text, key, value)

    expected = dict(props)
    if value is None:
        expected.pop(key, None)
    else:
        expected[key] = value
    assert _typed(_load(after)) == _typed(expected)

    if key in props:
        lines, block = text.splitlines(keepends=True), _frontmatter_lines(key, props[key]).splitlines(keepends=True)
        i = lines.index(block[0])
        assert lines[i : i + len(block)] == block
        prefix, suffix = "".join(lines[:i]), "".join(lines[i + len(block) :])
    else:
        prefix, suffix = text[: -len("---\nbody\n---\nmore\n")], "---\nbody\n---\nmore\n"
    assert after.startswith(prefix) and after.endswith(suffix)
    if value is not None and not isinstance(value, list) and key in props:
        assert len(after.splitlines()) == len(text.splitlines()) or isinstance(props[key], list)
    assert set_property(text.replace("\n", "\r\n"), key, value) == after.replace("\n", "\r\n")


def _around(text: str, key: str, value: Any) -> tuple[str, str]:
    """The text before and after the lines render_new_note wrote for key (before the fence if absent)."""
    if value is None:
        return text[: text.rindex("---\nbody")], text[text.rindex("---\nbody") :]
    lines, block = text.splitlines(keepends=True), _frontmatter_lines(key, value).splitlines(keepends=True)
    i = lines.index(block[0])
    assert lines[i : i + len(block)] == block
    return "".join(lines[:i]), "".join(lines[i + len(block) :])


_links = st.from_regex(r"\[\[[A-Za-z0-9]{1,8}\]\]", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(props=st.dictionaries(_keys, _values, min_size=1, max_size=5), data=st.data())
def test_add_to_list_appends_once_and_touches_nothing_else(props: dict[str, Any], data: st.DataObject) -> None:
    text = render_new_note(title=None, body="body\n", properties=props)
    key = data.draw(st.one_of(st.sampled_from(sorted(props)), _keys))
    item = data.draw(
        st.one_of(
            _text, _links, st.sampled_from([x for v in props.values() if isinstance(v, list) for x in v] or ["x"])
        )
    )
    old = props.get(key)
    if isinstance(old, bool | int | float) or (isinstance(old, str) and "\n" in old):
        with pytest.raises(NoteParseError):
            add_to_list(text, key, item)
        return
    after = add_to_list(text, key, item)
    items = [] if old in (None, "") else [old] if isinstance(old, str) else list(old)
    if any(x == item or (x.startswith("[[") and x.lower() == item.lower()) for x in items):
        assert after == text
        return
    assert _load(after)[key] == [*items, item]
    prefix, suffix = _around(text, key, old)
    assert after.startswith(prefix) and after.endswith(suffix)
    if isinstance(old, list) and old:
        assert len(diff(text, after)[1]) == 1  # one line changed (flow) or added (block)


@settings(max_examples=100, deadline=None)
@given(
    props=st.dictionaries(_keys, _values, max_size=4),
    rels=st.lists(st.tuples(st.sampled_from(["supports", "evokes"]), _links), max_size=6),
)
def test_add_relation_builds_the_mapping_incrementally(props: dict[str, Any], rels: list[tuple[str, str]]) -> None:
    props.pop("relations", None)
    text = render_new_note(title=None, body="body\n", properties=props)
    expected: dict[str, list[str]] = {}
    for rel, link in rels:
        before, text = text, add_relation(text, rel, link)
        if link.lower() in (x.lower() for x in expected.get(rel, [])):
            assert text == before
        else:
            expected.setdefault(rel, []).append(link)
            removed, added = diff(before, text)
            assert removed == [] and len(added) <= 5  # 1 item, 2 with a new type, 3 with relations, +2 fences
        assert _load(text).get("relations") == (expected or None)
    assert _typed({k: v for k, v in _load(text).items() if k != "relations"}) == _typed(props)


def test_a_frontmatter_alias_bomb_is_refused_before_the_edit_loads_it() -> None:
    """A "billion laughs" in a note's properties (an alias expanding 9^6 times, used as a value and as a key):
    the reader ignores it within its bounds, and an edit — a sleep's `supersedes` line, a property set over the
    API — must refuse it too; before, ruamel expanded it while checking the mapping's keys (a 9-level one held a
    test worker for minutes at 16 GB)."""
    head = "b0: &b0 [" + ",".join(["lol"] * 9) + "]\n" + "".join(
        f"b{i}: &b{i} [" + ",".join([f"*b{i - 1}"] * 9) + "]\n" for i in range(1, 7))
    text = f"---\n{head}tags: *b6\ntags: *b6\n---\n# A bomb\n"  # a duplicate key: ruamel's check repr()s it
    for edit in (lambda t: add_relation(t, "supersedes", "Older"), lambda t: set_property(t, "importance", 0.5)):
        with pytest.raises(NoteParseError, match="expands to more than 50,000 values"):
            edit(text)



@pytest.mark.parametrize("first", ["? [a, b]\n: c\n", "? [a, b]\n: c\ntitle: x\n", "?   long key\n:   c\n"])
def test_a_property_added_after_a_complex_key_stays_at_the_top_level(first: str) -> None:
    text = f"---\n{first}---\nbody\n"
    out = set_property(text, "status", "done")
    safe = YAML(typ="safe")
    assert safe.load(out.split("---\n")[1]) == {**safe.load(first), "status": "done"}
    assert out == f"---\n{first}status: done\n---\nbody\n"
    out = add_relation(text, "supports", "[[Other]]")
    assert safe.load(out.split("---\n")[1])["relations"] == {"supports": ["[[Other]]"]}
