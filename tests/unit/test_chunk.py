"""Chunking: heading sections, the embed prefix, splitting to fit, noise left out."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.files.chunk import (
    Chunk,
    chunk_note,
    embed_text,
    heading_text,
    join_head,
    split_head,
    stored_head,
    text_hash,
)
from vault_cortex.files.note import Heading, Note


def words(text: str) -> int:
    return len(text.split())


def chars(text: str) -> int:
    """A counter that is not additive over joins, unlike the real tokenizer."""
    return len(text)


def make_note(body: str, title: str = "Plan", body_line: int = 1) -> Note:
    """A Note as the parser would build it: ATX headings outside code fences."""
    headings = []
    fenced = False
    for i, line in enumerate(body.split("\n")):
        if line.startswith("```"):
            fenced = not fenced
        m = re.match(r"^(#{1,6}) (.*)$", line)
        if m and not fenced:
            headings.append(Heading(level=len(m.group(1)), text=m.group(2).strip(), line=body_line + i))
    return Note(path=f"{title}.md", title=title, frontmatter={}, body=body, body_line=body_line,
                headings=tuple(headings))


def summary(chunks: tuple[Chunk, ...]) -> list[tuple[tuple[str, ...], int, int, str]]:
    return [(c.heading_path, c.start_line, c.end_line, c.text) for c in chunks]


BODY = """Intro before any heading.

# Design
We keep notes as files.

## Index
SQLite for text, usearch for vectors.

### FTS
BM25 over chunks.

## Empty

## Ranking
Fused scores.
"""


def test_one_chunk_per_section_with_its_heading_path_and_file_lines() -> None:
    chunked = chunk_note(make_note(BODY, body_line=5), words)
    assert summary(chunked.chunks) == [
        ((), 5, 5, "Intro before any heading."),
        (("Design",), 8, 8, "We keep notes as files."),
        (("Design", "Index"), 11, 11, "SQLite for text, usearch for vectors."),
        (("Design", "Index", "FTS"), 14, 14, "BM25 over chunks."),
        (("Design", "Ranking"), 19, 19, "Fused scores."),  # the empty section is skipped
    ]
    assert [c.ord for c in chunked.chunks] == [0, 1, 2, 3, 4]
    assert chunked.noise == ()


def test_embed_text_is_title_then_heading_path_then_text() -> None:
    chunks = chunk_note(make_note(BODY), words).chunks
    assert chunks[0].embed_text == "Plan\nIntro before any heading."
    assert chunks[3].embed_text == "Plan\nDesign > Index > FTS\nBM25 over chunks."


def test_a_first_heading_equal_to_the_title_is_not_repeated() -> None:
    chunks = chunk_note(make_note("# plan\nText.\n## Sub\nMore.", title="Plan"), words).chunks
    assert [c.embed_text for c in chunks] == ["Plan\nText.", "Plan\nSub\nMore."]
    assert chunks[1].heading_path == ("plan", "Sub")
    assert embed_text("", ("A",), "t") == "A\nt"


def test_tokens_and_hash_describe_the_embed_text() -> None:
    for chunk in chunk_note(make_note(BODY), words).chunks:
        assert chunk.tokens == words(chunk.embed_text)
        assert chunk.hash == hashlib.blake2b(chunk.embed_text.encode(), digest_size=16).hexdigest()
        assert chunk.hash == text_hash(chunk.embed_text) and len(chunk.hash) == 32


def test_a_long_section_splits_at_paragraphs_and_keeps_them_in_order() -> None:
    paragraphs = [" ".join(f"p{p}w{w}" for w in range(12)) + "." for p in range(6)]
    body = "# Long\n" + "\n\n".join(paragraphs)
    chunks = chunk_note(make_note(body, title="T"), words, max_tokens=30).chunks
    assert all(c.tokens <= 30 for c in chunks)
    assert [c.text for c in chunks] == ["\n\n".join(paragraphs[i:i + 2]) for i in (0, 2, 4)]
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 4), (6, 8), (10, 12)]
    assert all(c.heading_path == ("Long",) for c in chunks)


def test_a_long_paragraph_splits_at_sentences_then_words() -> None:
    sentences = [" ".join(f"s{s}w{w}" for w in range(8)) + "." for s in range(4)]
    chunks = chunk_note(make_note(" ".join(sentences), title="T"), words, max_tokens=10).chunks
    assert [c.text for c in chunks] == sentences  # 1 title token + 8 words: one sentence per chunk

    giant = " ".join(f"w{i}" for i in range(50))  # one sentence longer than a chunk
    chunks = chunk_note(make_note(giant, title="T"), words, max_tokens=10).chunks
    assert all(c.tokens <= 10 for c in chunks)
    assert " ".join(c.text for c in chunks) == giant


def test_a_word_longer_than_a_chunk_is_cut_by_characters() -> None:
    blob = "x" * 95
    chunks = chunk_note(make_note(f"before {blob} after", title="T"), chars, max_tokens=40).chunks
    assert all(c.tokens <= 40 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == f"before{blob}after"


def test_a_code_block_stays_whole_when_it_fits() -> None:
    code = "```python\ndef f():\n\n    return 1\n```"
    body = f"# Code\nFirst para here.\n\n{code}\nAfter the fence."
    chunks = chunk_note(make_note(body, title="T"), words, max_tokens=8).chunks
    assert code in [c.text for c in chunks]
    whole = chunk_note(make_note(body, title="T"), words).chunks
    assert [c.text for c in whole] == [f"First para here.\n\n{code}\nAfter the fence."]


def test_a_heading_inside_a_code_fence_is_text() -> None:
    body = "# Real\n```md\n# not a heading\n```"
    assert summary(chunk_note(make_note(body), words).chunks) == [
        (("Real",), 2, 4, "```md\n# not a heading\n```")
    ]


def test_setext_headings_leave_their_underline_out() -> None:
    note = Note(path="n.md", title="N", frontmatter={}, body="Top\n===\nText under it.", body_line=3,
                headings=(Heading(level=1, text="Top", line=3),))
    assert summary(chunk_note(note, words).chunks) == [(("Top",), 5, 5, "Text under it.")]


def test_a_note_without_a_body_is_one_chunk_of_its_title() -> None:
    chunks = chunk_note(make_note("", title="Quarterly review"), words).chunks
    assert summary(chunks) == [((), 1, 1, "Quarterly review")]
    assert chunks[0].embed_text == "Quarterly review"
    assert chunk_note(make_note("\n\n", title=""), words).chunks == ()
    headings_only = chunk_note(make_note("# A\n## B\n", title="N"), words).chunks
    assert [c.embed_text for c in headings_only] == ["N"]


TRACE = """Sync crashed:

Traceback (most recent call last):
  File "/srv/vault_cortex/index.py", line 41, in open
    db.execute("PRAGMA journal_mode=WAL")
sqlite3.OperationalError: database is locked

The old server held the lock."""


def test_noise_is_left_out_and_reported_in_file_lines() -> None:
    chunked = chunk_note(make_note("# Debugging\n" + TRACE, body_line=4), words)
    assert summary(chunked.chunks) == [
        (("Debugging",), 5, 12,
         "Sync crashed:\n\nsqlite3.OperationalError: database is locked\n\nThe old server held the lock.")
    ]  # the frames go; the error message stays searchable
    assert [(n.start_line, n.end_line, n.kind) for n in chunked.noise] == [(7, 9, "stack_trace")]


def test_a_section_of_only_noise_gives_no_chunk() -> None:
    trace = TRACE.split("\n")[2:5]  # the frames without their error message
    chunked = chunk_note(make_note("# Keep\nProse.\n# Trace\n" + "\n".join(trace)), words)
    assert summary(chunked.chunks) == [(("Keep",), 2, 2, "Prose.")]
    assert len(chunked.noise) == 1


def test_a_trace_keeps_only_its_error_message() -> None:
    trace = TRACE.split("\n")[2:6]
    chunked = chunk_note(make_note("# Keep\nProse.\n# Trace\n" + "\n".join(trace)), words)
    assert summary(chunked.chunks)[1] == (("Trace",), 7, 7, "sqlite3.OperationalError: database is locked")


def test_a_long_heading_path_gives_way_to_the_text() -> None:
    heading = " ".join(["deep"] * 40)
    chunks = chunk_note(make_note(f"# {heading}\none two three four five six", title="T"), words, 30).chunks
    assert [(c.heading_path, c.embed_text, c.tokens) for c in chunks] == [
        ((heading,), "T\none two three four five six", 7)  # the path is kept for addressing, not embedded
    ]


_line = st.one_of(
    st.text(alphabet="abc xyz.!?", min_size=0, max_size=60),
    st.sampled_from(["", "", "# Head", "## Sub", "```", "- item one. item two", "x" * 70]),
)


@settings(max_examples=150, deadline=None, database=None)
@given(lines=st.lists(_line, max_size=30), max_tokens=st.integers(min_value=16, max_value=64),
       additive=st.booleans())
def test_chunks_never_exceed_the_budget_and_keep_every_word(lines: list[str], max_tokens: int,
                                                            additive: bool) -> None:
    count = words if additive else chars
    note = make_note("\n".join(lines), title="T")
    chunked = chunk_note(note, count, max_tokens)
    assert all(c.tokens <= max_tokens and c.tokens == count(c.embed_text) for c in chunked.chunks)
    assert all(c.start_line <= c.end_line for c in chunked.chunks)
    if chunked.noise or not additive:
        return  # character cuts may split words; noise is left out on purpose
    heading_lines = {h.line - 1 for h in note.headings}
    body_words = [w for i, line in enumerate(lines) if i not in heading_lines for w in line.split()]
    chunk_words = [w for c in chunked.chunks for w in c.text.split()]
    assert chunk_words == (body_words or ["T"])


@settings(max_examples=150, deadline=None, database=None)
@given(lines=st.lists(_line, max_size=30), max_tokens=st.integers(min_value=8, max_value=64),
       title=st.sampled_from(["T", "Head", "", "a > b", "x" * 70]))
def test_the_embedded_text_is_rebuilt_from_head_and_text(lines: list[str], max_tokens: int, title: str) -> None:
    """Issue 13: the index stores no embedded text; head + text rebuild it byte for byte (the hash is the cache
    key), and the head stored is needed only where the title and heading do not give it."""
    chunked = chunk_note(make_note("\n".join(lines), title=title), words, max_tokens)
    for c in chunked.chunks:
        assert join_head(c.head, c.text) == c.embed_text and text_hash(join_head(c.head, c.text)) == c.hash
        assert split_head(c.embed_text, c.text) == c.head
        if c.head == stored_head(title, heading_text(c.heading_path)):
            assert embed_text(title, c.heading_path, c.text) == c.embed_text


def test_a_head_the_heading_cannot_give_is_not_the_stored_one() -> None:
    """The title left out for room, a heading with ' > ' in it, a note of only a title: each head differs from
    what the title and stored heading give, so the index keeps it."""
    heading = " ".join(["deep"] * 40)
    dropped = chunk_note(make_note(f"# {heading}\none two three four five six", title="T"), words, 30).chunks[0]
    assert dropped.head == "T" and stored_head("T", heading_text(dropped.heading_path)) != dropped.head
    only_title = chunk_note(make_note("", title="Quarterly review"), words).chunks[0]
    assert only_title.head == "" and stored_head("Quarterly review", "") == "Quarterly review"
    arrow = chunk_note(make_note("# T > x\nBody.", title="T"), words).chunks[0]
    assert arrow.embed_text == "T\nT > x\nBody." and stored_head("T", heading_text(arrow.heading_path)) != arrow.head
