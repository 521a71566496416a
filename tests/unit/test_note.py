"""The note parser: decoding, frontmatter, typed properties, tags, headings, block ids and links (pure)."""

from __future__ import annotations

import codecs
import math
import unicodedata
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.files.note import RELATION_TYPES, Note, RawLink, decode, is_binary, parse_note


def parse(text: str, path: str = "n.md", **kwargs: Any) -> Note:
    return parse_note(path, text, **kwargs)


def links(text: str) -> list[tuple[str, str, str | None, str, str, int]]:
    return [(x.target, x.subpath, x.display, x.kind, x.rel, x.line) for x in parse(text).links]


def targets(text: str) -> list[str]:
    return [x.target for x in parse(text).links]


# --- decoding -------------------------------------------------------------------------------------------


def test_decode_strips_bom_and_normalises_line_endings() -> None:
    assert decode(codecs.BOM_UTF8 + b"a\r\nb\rc\n") == ("a\nb\nc\n", ())


def test_decode_replaces_invalid_utf8_and_says_so() -> None:
    text, problems = decode(b"Caf\xe9 ok")
    assert text == "Caf\ufffd ok"
    assert problems == ("not valid UTF-8; undecodable bytes replaced",)


def test_binary_files_are_recognised_and_not_decoded() -> None:
    assert is_binary(b"\x89PNG\x00\x00")
    assert not is_binary(b"plain text")
    assert not is_binary(b"x" * 8192 + b"\x00")  # only the first 8 KiB are sniffed
    text, problems = decode(b"abc\x00def")
    assert text == ""
    assert "binary" in problems[0]


def test_a_late_nul_byte_is_replaced_not_kept() -> None:
    text, problems = decode(b"x" * 9000 + b"\x00")
    assert "\x00" not in text
    assert problems == ("NUL bytes replaced",)


@given(st.binary(max_size=2000))
def test_decode_never_raises(data: bytes) -> None:
    text, problems = decode(data)
    assert "\r" not in text
    assert isinstance(problems, tuple)


# --- path, title, frontmatter block ---------------------------------------------------------------------


def test_path_is_nfc_and_title_is_the_file_name() -> None:
    note = parse("x", path=unicodedata.normalize("NFD", "Café/Crème brûlée.MD"))
    assert note.path == unicodedata.normalize("NFC", "Café/Crème brûlée.MD")
    assert note.title == unicodedata.normalize("NFC", "Crème brûlée")


@pytest.mark.parametrize(
    ("text", "frontmatter", "body", "body_line"),
    [
        ("---\na: 1\n---\nbody", {"a": 1}, "body", 4),
        ("---\na: 1\n...\nbody", {"a": 1}, "body", 4),
        ("--- \na: 1\n---  \nbody", {"a": 1}, "body", 4),
        ("---\n---\nbody", {}, "body", 3),
        ("---\n# a comment only\n---\n", {}, "", 4),
        ("\ufeff---\na: 1\n---\nbody", {"a": 1}, "body", 4),
        ("---\r\na: 1\r\n---\r\nbody\r\n", {"a": 1}, "body\n", 4),
        ("no frontmatter\n---\na: 1\n---\n", {}, "no frontmatter\n---\na: 1\n---\n", 1),
        ("----\na: 1\n---\n", {}, "----\na: 1\n---\n", 1),
        ("\n---\na: 1\n---\n", {}, "\n---\na: 1\n---\n", 1),
    ],
)
def test_frontmatter_block(text: str, frontmatter: dict[str, Any], body: str, body_line: int) -> None:
    note = parse(text)
    assert (note.frontmatter, note.body, note.body_line, note.problems) == (frontmatter, body, body_line, ())


@pytest.mark.parametrize("text", ["---\ntags: [x]\n\nbody [[L]]", "---"])
def test_unclosed_fence_means_no_frontmatter(text: str) -> None:
    note = parse(text)
    assert note.frontmatter == {}
    assert note.body == text
    assert note.body_line == 1
    assert note.tags == ()
    assert "never closed" in note.problems[0]


def test_malformed_yaml_is_reported_and_the_body_still_parsed() -> None:
    note = parse("---\ntags: [a, b\ntitle: x: y\n---\nStill [[Here]] #tag\n")
    assert note.frontmatter == {}
    assert note.body_line == 5
    assert note.problems[0].startswith("malformed YAML frontmatter: ")
    assert "(line 3)" in note.problems[0]
    assert [(x.target, x.line) for x in note.links] == [("Here", 5)]
    assert note.tags == ("tag",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\n- a\n- b\n---\n", "frontmatter is a list, not a mapping; ignored"),
        ("---\njust text\n---\n", "frontmatter is a str, not a mapping; ignored"),
        ("---\na: !python/object:os.system x\n---\n", "malformed YAML frontmatter: could not determine"),
        ("---\n? [a, b]\n: c\n---\n", "malformed YAML frontmatter: found unhashable key"),
        ("---\na: 1\na: 2\n---\n", "duplicate frontmatter key 'a'; the last value is used"),
        ("---\na:\n\t- tab\n---\n", "malformed YAML frontmatter: "),
    ],
)
def test_bad_frontmatter_becomes_a_problem(text: str, problem: str) -> None:
    assert parse(text).problems[0].startswith(problem)


def test_yaml_keeps_what_the_user_typed() -> None:
    fm = parse(
        "---\nflag: yes\nno_: no\nsw: on\ny: y\noctal: 012\nreal_octal: 0o12\nhex: 0x1F\nunder: 1_000\n"
        "date: 2020-08-21\ndt: 2020-08-21T10:30:00\nshort: 2026-11-29T14:03\nclock: 1:20\n"
        "null1: ~\nnull2: null\nempty:\nt: True\nf: false\nfloat: .5\nexp: 1e3\nneg: -7\ninf: -.inf\n"
        "bin: !!binary aGk=\nts: !!timestamp 2020-01-01\nset: !!set {b, a}\n2024: numeric key\n---\n"
    ).frontmatter
    assert fm == {
        "flag": "yes",
        "no_": "no",
        "sw": "on",
        "y": "y",
        "octal": 12,
        "real_octal": 10,
        "hex": 31,
        "under": "1_000",
        "date": "2020-08-21",
        "dt": "2020-08-21T10:30:00",
        "short": "2026-11-29T14:03",
        "clock": "1:20",
        "null1": None,
        "null2": None,
        "empty": None,
        "t": True,
        "f": False,
        "float": 0.5,
        "exp": 1000.0,
        "neg": -7,
        "inf": -math.inf,
        "bin": "aGk=",
        "ts": "2020-01-01",
        "set": ["a", "b"],
        "2024": "numeric key",
    }
    assert msgspec.json.decode(msgspec.json.encode(fm)) is not None  # plain, serialisable values


def test_yaml_aliases_are_shared_and_cycles_cut() -> None:
    fm = parse("---\na: &x [1, 2]\nb: *x\nc: &c [*c]\nd: &d {k: *d}\n---\n").frontmatter
    assert fm == {"a": [1, 2], "b": [1, 2], "c": [None], "d": {"k": None}}
    msgspec.json.encode(fm)


def test_json_frontmatter_inside_the_fences() -> None:
    note = parse('---\n{\n  "tags": "journal",\n  "publish": false,\n  "up": "[[Index]]"\n}\n---\nbody')
    assert note.frontmatter == {"tags": "journal", "publish": False, "up": "[[Index]]"}
    assert note.tags == ("journal",)
    assert [(x.target, x.kind, x.rel, x.line) for x in note.links] == [("Index", "property", "links_to", 5)]


# --- typed properties ----------------------------------------------------------------------------------


def test_typed_fields() -> None:
    note = parse(
        "---\ncortex: scientific\nimportance: 0.62\ncreated: 2026-11-29T14:03\nproject: vault-cortex\n"
        "layer: fact\npinned: true\n---\n"
    )
    assert (note.cortex, note.importance, note.created, note.project, note.layer, note.pinned) == (
        "scientific",
        0.62,
        "2026-11-29T14:03",
        "vault-cortex",
        "fact",
        True,
    )
    assert note.problems == ()


@pytest.mark.parametrize(
    ("value", "importance", "problem"),
    [
        ("0", 0.0, None),
        ("1", 1.0, None),
        ("'0.5'", 0.5, None),
        ("1.7", 1.0, "importance: 1.7 is outside [0, 1]; clamped to 1"),
        ("-3", 0.0, "importance: -3 is outside [0, 1]; clamped to 0"),
        ("high", None, "importance: 'high' is not a number; ignored"),
        ("true", None, "importance: True is not a number; ignored"),
        (".nan", None, "importance: nan is not a number; ignored"),
        ("[0.5]", None, "importance: [0.5] is not a number; ignored"),
        ("", None, None),
    ],
)
def test_importance(value: str, importance: float | None, problem: str | None) -> None:
    note = parse(f"---\nimportance: {value}\n---\n")
    assert note.importance == importance
    assert note.problems == (() if problem is None else (problem,))


@pytest.mark.parametrize(
    ("value", "pinned", "problems"),
    [("true", True, 0), ("false", False, 0), ("", False, 0), ("'True'", True, 0), ("yes", False, 1), ("1", False, 1)],
)
def test_pinned(value: str, pinned: bool, problems: int) -> None:
    note = parse(f"---\npinned: {value}\n---\n")
    assert (note.pinned, len(note.problems)) == (pinned, problems)


@pytest.mark.parametrize(
    ("value", "project"),
    [('"[[Project X]]"', "Project X"), ('"[[Projects/X|shown]]"', "Projects/X"), ("plain", "plain"), ("2024", "2024")],
)
def test_project_unwraps_a_quoted_wikilink(value: str, project: str) -> None:
    assert parse(f"---\nproject: {value}\n---\n").project == project


def test_text_fields_take_the_first_of_a_list_and_say_so() -> None:
    note = parse("---\ncortex: [soul, long_term]\nlayer: {a: 1}\ncreated: 2024\n---\n")
    assert (note.cortex, note.layer, note.created) == ("soul", None, "2024")
    assert note.problems == ("cortex: has 2 values; the first is used", "layer: {'a': 1} is not text; ignored")


# --- tags and aliases ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "tags"),
    [
        ("meeting", ("meeting",)),
        ("recipe, cooking", ("recipe", "cooking")),
        ("recipe cooking", ("recipe", "cooking")),
        ("[Alpha, '#beta', nested/Child]", ("alpha", "beta", "nested/child")),
        ("\n  - Ünïcödé\n  - 🚀launch\n  - 日本語", ("ünïcödé", "🚀launch", "日本語")),
        ("[a, A, '#a']", ("a",)),
        ("", ()),
        ("[]", ()),
    ],
)
def test_frontmatter_tags(value: str, tags: tuple[str, ...]) -> None:
    note = parse(f"---\ntags: {value}\n---\n")
    assert (note.tags, note.problems) == (tags, ())


def test_invalid_frontmatter_tags_are_dropped_and_reported() -> None:
    note = parse("---\ntags: [ok, 1984, 'two words', true, {a: 1}, null]\n---\n")
    assert note.tags == ("ok",)
    assert [p.split(" is ")[0] for p in note.problems] == [
        "tags: 1984",
        "tags: 'two words'",
        "tags: True",
        "tags: {'a': 1}",
    ]


def test_tags_merge_frontmatter_first_then_body_without_duplicates() -> None:
    assert parse("---\ntags: [b, a]\n---\n#A #c #b").tags == ("b", "a", "c")


def test_tags_are_nfc() -> None:
    assert parse(unicodedata.normalize("NFD", "#café")).tags == (unicodedata.normalize("NFC", "café"),)


def test_property_keys_match_case_insensitively_and_legacy_keys_are_ignored() -> None:
    note = parse("---\nTags: [x]\nAliases: [Y]\ntag: old\nalias: Old\n---\n")
    assert (note.tags, note.aliases) == (("x",), ("Y",))
    assert parse("---\ntag: old\nalias: Old\n---\n").tags == ()


@pytest.mark.parametrize(
    ("value", "aliases"),
    [
        ("Some name", ("Some name",)),
        ("[WAL checkpoint stall, 'How to/Working with tags']", ("WAL checkpoint stall", "How to/Working with tags")),
        ("\n- One\n- One\n- 3\n-\n- ' '", ("One", "3")),
        ("a, b", ("a, b",)),
    ],
)
def test_aliases(value: str, aliases: tuple[str, ...]) -> None:
    assert parse(f"---\naliases: {value}\n---\n").aliases == aliases


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        (
            "#tag #Nested/Deep #snake_case #kebab-case #y1984",
            ("tag", "nested/deep", "snake_case", "kebab-case", "y1984"),
        ),
        ("#日本語 #emoji🎉 #über #Ελληνικά", ("日本語", "emoji🎉", "über", "ελληνικά")),
        ("#1984 #2024 #- #/ #__", ()),
        ("#2024-01 #2024/q1", ("2024-01", "2024/q1")),
        ("end of sentence #done. (#paren) #a,#b", ("done", "a")),
        ("`#code` \\#escaped https://x.org/a#frag x#y &#123; [[#Heading]] [a](#heading)", ()),
        ("# Heading\n## #inheading", ("inheading",)),
        ("```\n#fenced\n```\n\n    #indented", ()),
        ("%%#commented%%\n%% #spaced %%", ("spaced",)),
    ],
)
def test_body_tags(body: str, tags: tuple[str, ...]) -> None:
    assert parse(body).tags == tags


# --- headings and block ids ----------------------------------------------------------------------------


def test_headings() -> None:
    body = (
        "# One\n## Two ##\n###### Six\n####### Seven\n#NoSpace\n\nSetext\n===\n\nmulti\nline\n---\n\n---\n"
        "  ### Indented\n\n    # code\n\n```\n# fenced\n```\n- item\n---\n#\n## C# ###\n"
    )
    assert [(h.level, h.text, h.line) for h in parse(body).headings] == [
        (1, "One", 1),
        (2, "Two", 2),
        (6, "Six", 3),
        (1, "Setext", 7),
        (2, "multi line", 10),
        (3, "Indented", 15),
        (2, "C#", 25),
    ]


def test_heading_lines_count_the_frontmatter() -> None:
    assert parse("---\na: 1\n---\n\n# H\n").headings[0].line == 5


def test_block_ids() -> None:
    body = (
        "para ^p-1\n- item ^Item2\n\n| a |\n\n^tbl\n\nx^2 and [^1] ^bad_id\n`code ^c`\n"
        "```\nfenced ^f\n```\n> quote ^q\n[[Note#^ref]]\ntrailing ^t   \n"
    )
    assert parse(body).block_ids == ("p-1", "Item2", "tbl", "q", "t")


# --- links in the body ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[[Note]]", ("Note", "", None, "wikilink", "links_to")),
        ("[[Note|shown text]]", ("Note", "", "shown text", "wikilink", "links_to")),
        ("[[Note#Heading]]", ("Note", "Heading", None, "wikilink", "links_to")),
        ("[[Note#H1#H2|x]]", ("Note", "H1#H2", "x", "wikilink", "links_to")),
        ("[[#Heading]]", ("", "Heading", None, "wikilink", "links_to")),
        ("[[Note#^block-1]]", ("Note", "^block-1", None, "wikilink", "links_to")),
        ("| [[Note\\|alias]] |", ("Note", "", "alias", "wikilink", "links_to")),
        ("[[Folder/Note.md]]", ("Folder/Note.md", "", None, "wikilink", "links_to")),
        ("![[Note]]", ("Note", "", None, "embed", "embeds")),
        ("![[img.png|100x145]]", ("img.png", "", "100x145", "embed", "embeds")),
        ("| ![[img.png\\|100]] |", ("img.png", "", "100", "embed", "embeds")),
        ("![[doc.pdf#page=3]]", ("doc.pdf", "page=3", None, "embed", "embeds")),
        ("[text](Note%20name.md)", ("Note name.md", "", "text", "markdown", "links_to")),
        ("[text](Note%20name)", ("Note name", "", "text", "markdown", "links_to")),
        ("[t](Note.md#Some%20heading)", ("Note.md", "Some heading", "t", "markdown", "links_to")),
        ("[t](<Note name.md>)", ("Note name.md", "", "t", "markdown", "links_to")),
        ('[t](Note.md "a title")', ("Note.md", "", "t", "markdown", "links_to")),
        ("[t](#Local)", ("", "Local", "t", "markdown", "links_to")),
        ("[](Note.md)", ("Note.md", "", None, "markdown", "links_to")),
        ("![alt](x.png)", ("x.png", "", "alt", "embed", "embeds")),
        ("\\![alt](x.png)", ("x.png", "", "alt", "markdown", "links_to")),
        ("[[https://example.com]]", ("https://example.com", "", None, "wikilink", "links_to")),
        ("%%[[In comment]]%%", ("In comment", "", None, "wikilink", "links_to")),
        ("[[Sq]uare]]", ("Sq]uare", "", None, "wikilink", "links_to")),
        ("[[a [[Inner]] b]]", ("Inner", "", None, "wikilink", "links_to")),
        ("\\\\[[After a literal backslash]]", ("After a literal backslash", "", None, "wikilink", "links_to")),
        ("- [ ] task [[Note]]", ("Note", "", None, "wikilink", "links_to")),
        ("> [!note] Callout\n> [[Note]]", ("Note", "", None, "wikilink", "links_to")),
    ],
)
def test_link_forms(body: str, expected: tuple[str, str, str | None, str, str]) -> None:
    assert [x[:5] for x in links(body)] == [expected]


@pytest.mark.parametrize(
    "body",
    [
        "`[[code span]]`",
        "``[[double ` tick]]``",
        "```\n[[fenced]]\n```",
        "~~~python\n[[tilde fenced]]\n~~~",
        "````\n```\n[[inner fence]]\n```\n````",
        "```\n[[unclosed fence runs to the end]]",
        "> ```\n> [[fenced in a quote]]\n> ```",
        "\n    [[indented code]]",
        "\\[[escaped]]",
        "[[unclosed",
        "[[split\nacross lines]]",
        "[[]] [[ ]] [[|x]] [[#]]",
        "[t](https://example.com/x#y) [m](mailto:a@b.c) [o](obsidian://open?x) [p](//host/x)",
        "[t](Note name.md)",
        "\\[t](Note.md)",
        "`[t](Note.md)`",
        "[t]()",
    ],
)
def test_not_links(body: str) -> None:
    assert links(body) == []


def test_code_span_may_cross_a_line_but_not_a_paragraph() -> None:
    assert targets("`a\n[[inside]] b`") == []
    assert targets("`a\n\n[[outside]] b`") == ["outside"]


def test_indented_text_in_lists_and_paragraphs_is_not_code() -> None:
    assert targets("para\n    [[lazy continuation]]") == ["lazy continuation"]
    assert targets("- item\n\n    [[list continuation]]") == ["list continuation"]
    assert targets("- item\n\t- [[nested item]]\n\n        ```\n        [[fenced in list]]\n        ```") == [
        "nested item"
    ]


def test_link_lines_count_from_the_top_of_the_file() -> None:
    text = "---\na: 1\n---\nfirst [[A]]\n\n```\n[[no]]\n```\nlast [[B]] and ![[C]]"
    assert [(x.target, x.line) for x in parse(text).links] == [("A", 4), ("B", 9), ("C", 9)]


def test_links_come_in_document_order() -> None:
    assert targets("[m](M.md) [[W]] ![e](E.png) ![[F]]") == ["M.md", "W", "E.png", "F"]


def test_image_inside_a_markdown_link() -> None:
    assert links("[![alt](pic.png)](Note.md)") == [
        ("Note.md", "", "![alt](pic.png)", "markdown", "links_to", 1),
        ("pic.png", "", "alt", "embed", "embeds", 1),
    ]


# --- inline fields -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("follows:: [[D1-2]]", [("D1-2", "follows")]),
        ("depends_on:: [[Pool]], [[Other]]", [("Pool", "depends_on"), ("Other", "depends_on")]),
        ("- type:: [[X]]", [("X", "type")]),
        ("1. type:: [[X]]", [("X", "type")]),
        ("- [ ] task [due:: [[D]]]", [("D", "due")]),
        ("> quoted:: [[Q]]", [("Q", "quoted")]),
        ("text [leads_to:: [[A]]] then [[B]]", [("A", "leads_to"), ("B", "links_to")]),
        ("(reminds_of:: [[A]], [[B]])", [("A", "reminds_of"), ("B", "reminds_of")]),
        ("Depends On:: [[Pool]]", [("Pool", "depends_on")]),
        ("**Evokes**:: [[C]]", [("C", "evokes")]),
        ("source:: [text](Note.md) ![[img.png]]", [("Note.md", "source"), ("img.png", "source")]),
        ("outer:: see [inner:: [[A]]] and [[B]]", [("A", "inner"), ("B", "outer")]),
        ("std::vector [[X]]", [("X", "links_to")]),
        ("`code:: [[X]]`", []),
        ("[[A]] field:: [[B]]", [("A", "links_to"), ("B", "links_to")]),
    ],
)
def test_inline_fields(body: str, expected: list[tuple[str, str]]) -> None:
    assert [(x.target, x.rel) for x in parse(body).links] == expected


def test_inline_field_links_are_of_kind_inline_field() -> None:
    assert links("follows:: [[A]]") == [("A", "", None, "inline_field", "follows", 1)]


# --- links in properties -------------------------------------------------------------------------------


def test_property_links_with_their_relation_and_key_line() -> None:
    text = (
        "---\n"
        'link: "[[Target A]]"\n'
        "list:\n"
        '  - "[[Target B]]"\n'
        '  - "[[Target C#Sec|shown]]"\n'
        "nested:\n"
        '  deep: "see [[A]] and [[B]]"\n'
        "relations:\n"
        '  supports: ["[[S]]"]\n'
        '  Leads To: "[[L]]"\n'
        '  custom: "[[C]]"\n'
        'derived_from: ["[[raw/s1]]", "[[raw/s2]]"]\n'
        'Supports: "[[T]]"\n'
        'co_retrieved: ["[[CR]]"]\n'
        "plain: no links\n"
        "---\n"
        "body"
    )
    assert [(x.target, x.subpath, x.display, x.kind, x.rel, x.line) for x in parse(text).links] == [
        ("Target A", "", None, "property", "links_to", 2),
        ("Target B", "", None, "property", "links_to", 3),
        ("Target C", "Sec", "shown", "property", "links_to", 3),
        ("A", "", None, "property", "links_to", 6),
        ("B", "", None, "property", "links_to", 6),
        ("S", "", None, "property", "supports", 9),
        ("L", "", None, "property", "leads_to", 10),
        ("C", "", None, "property", "custom", 11),
        ("raw/s1", "", None, "property", "derived_from", 12),
        ("raw/s2", "", None, "property", "derived_from", 12),
        ("T", "", None, "property", "supports", 13),
        ("CR", "", None, "property", "co_retrieved", 14),
    ]


def test_relation_types_can_be_extended_by_the_vault() -> None:
    text = '---\ninspires: "[[X]]"\nsupports: "[[Y]]"\n---\n'
    assert [x.rel for x in parse(text).links] == ["links_to", "supports"]
    assert [x.rel for x in parse(text, relation_types=RELATION_TYPES | {"inspires"}).links] == ["inspires", "supports"]


def test_an_unquoted_wikilink_in_yaml_is_reported_not_linked() -> None:
    note = parse("---\nrelated: [[Target]]\nrelations:\n  supports: [[S]]\n---\n")
    assert note.links == ()
    assert [p.split(":")[0] for p in note.problems] == ["related", "relations.supports"]


def test_relation_types() -> None:
    assert {"supports", "derived_from", "co_retrieved", "follows", "answered_by"} <= RELATION_TYPES
    assert len(RELATION_TYPES) == 13


# --- robustness ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[[" * 20_000,
        "[" * 20_000 + "](",
        "[a:: " * 5000,
        "(a:: " * 5000 + "\n" + "(b:: [[x]]" * 2000,
        "`" * 3000 + " x " + "` `" * 3000,
        " ".join("`" * (i % 40 + 1) for i in range(4000)),
        "\\" * 50_000 + "[[a]]",
        "- a\n" * 20_000,
        "---\na: " + "[" * 5000 + "]" * 5000 + "\n---\n",
        "---\n" + "".join(f'k{i}: "[[x{i}]]"\n' for i in range(2000)) + "---\n",
        "---\na: &a ['[[x]]',x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n---\n",
    ],
)
def test_adversarial_input_is_parsed_quickly(text: str) -> None:
    note = parse(text)  # a catastrophic regex or an expanded alias bomb would hang here
    msgspec.json.encode(note)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("[]()!#^|\\`~:%*-_> \n\taZé日🎉.=/{}\"'")), max_size=300))
def test_parse_never_raises_on_markdown_like_text(text: str) -> None:
    note = parse(text)
    assert all(isinstance(x, RawLink) and x.line >= 1 for x in note.links)
    assert all(h.line >= 1 for h in note.headings)


@given(st.text(max_size=300))
def test_parse_never_raises_on_any_text(text: str) -> None:
    parse("---\n" + text + "\n---\n" + text)
