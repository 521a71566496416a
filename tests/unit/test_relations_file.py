"""The relations sidecar's lines: read whole or torn, an edge added once."""

from __future__ import annotations

from vault_cortex.files.relations import line, parse, with_relation

A = line("Notes/HTTP.md", "supersedes", "MQTT")


def test_a_torn_or_malformed_line_is_skipped_and_a_duplicate_counts_once() -> None:
    data = (A + A + '{"src": "x.md", "rel": 3, "dst": "y"}\n[1]\n' + '{"src": "Notes/B.md", "rel": "related_to", "d')
    assert parse(data.encode()) == {("Notes/HTTP.md", "supersedes", "MQTT")}


def test_an_edge_is_added_once_after_a_last_line_without_its_newline() -> None:
    text = with_relation(A.rstrip("\n"), "Notes/B.md", "related_to", "[[C]]".strip("[]"))
    assert text == A + line("Notes/B.md", "related_to", "C")
    assert with_relation(text, "Notes/HTTP.md", "supersedes", "MQTT") == text
