"""The relations sidecar's lines: read whole or torn, an edge added once."""

from __future__ import annotations

from vault_cortex.files.relations import line, moved, parse, with_relation

A = line("Notes/HTTP.md", "supersedes", "MQTT")


def test_a_torn_or_malformed_line_is_skipped_and_a_duplicate_counts_once() -> None:
    data = (A + A + '{"src": "x.md", "rel": 3, "dst": "y"}\n[1]\n' + '{"src": "Notes/B.md", "rel": "related_to", "d')
    assert parse(data.encode()) == {("Notes/HTTP.md", "supersedes", "MQTT")}


def test_an_edge_is_added_once_after_a_last_line_without_its_newline() -> None:
    text = with_relation(A.rstrip("\n"), "Notes/B.md", "related_to", "[[C]]".strip("[]"))
    assert text == A + line("Notes/B.md", "related_to", "C")
    assert with_relation(text, "Notes/HTTP.md", "supersedes", "MQTT") == text


def test_a_move_rewrites_only_the_lines_it_breaks() -> None:
    other = line("Notes/B.md", "related_to", "C")
    text = A + "not json\n" + other

    def retarget(src: str, new_src: str, target: str) -> str | None:
        return "MQTT 2024" if target == "MQTT" else None

    assert moved(text, "Notes/HTTP.md", "Decisions/HTTP.md", retarget) == (
        line("Decisions/HTTP.md", "supersedes", "MQTT 2024") + "not json\n" + other)
