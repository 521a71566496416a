"""Imports from other tools: ChatGPT's conversations.json and the MCP memory server's memory.json, idempotent."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from vault_cortex.cli.main import build_parser, run
from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.vault import init_vault
from vault_cortex.importers import imports
from vault_cortex.importers.chatgpt import iter_array
from vault_cortex.importers.imports import detect_format
from vault_cortex.importers.transcript import Imported
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def import_file(vault: Path, file: Path, **kw: Any) -> Imported:
    """Import through the one write path, files only (what the tests here check; indexing is tested apart)."""
    with Cortex.open(vault) as cx:
        return imports.import_file(cx.vault, file, index=False, **kw)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


def read(vault: Path, rel: str) -> str:
    return (vault / rel).read_text(encoding="utf-8")


def test_formats_are_detected() -> None:
    assert detect_format(FIX / "conversations.json") == "chatgpt"
    assert detect_format(FIX / "memory.json") == "mcp-memory"
    assert {detect_format(f) for f in TRANSCRIPTS.iterdir()} == {"claude-code"}


def test_chatgpt_export_follows_the_shown_branch_and_leaves_noise_out(vault: Path) -> None:
    done = import_file(vault, FIX / "conversations.json")
    assert done.format == "chatgpt" and done.counts == {"conversations": 2, "exchanges": 3}
    first = "raw/2025-11-30 SQLite WAL checkpoints 674b1f3e"
    assert done.created == [f"{first} 01.md", f"{first} 02.md", "raw/2025-12-01 SQLite WAL checkpoints 674c7090 01.md"]
    one, two = read(vault, f"{first} 01.md"), read(vault, f"{first} 02.md")
    prompt = "Why does my WAL file keep growing while a report runs?"
    assert f"## Prompt\n\n{prompt}\n\n## Answer\nanswer_to:: [[#Prompt]]" in one
    assert 'conversation: "674b1f3e-8c2a-800b-9f1d-4c2e6a7b9d10"\n' in one and "created: 2025-11-30T09:30\n" in one
    assert "layer: raw\n" in one and "session: 2025-11-30 SQLite WAL checkpoints 674b1f3e\n" in one
    assert "*(image)*\n\nHere is the WAL size over the night." in two
    assert "About 340 MB by morning" in two and "*(tool: python → 1 line of output)*" in two
    assert f"follows:: [[{first.removeprefix('raw/')} 01]]" in two
    for noise in ("abandoned branch", "nobody sees", "greenhouse sensors", "Be brief", "337.5", "print(48"):
        assert noise not in one + two, noise


def test_imports_are_idempotent_and_keep_edits(vault: Path, tmp_path: Path) -> None:
    import_file(vault, FIX / "conversations.json")
    import_file(vault, FIX / "memory.json")
    before = {p: p.read_bytes() for p in vault.rglob("*.md")}
    for name in ("conversations.json", "memory.json"):
        again = import_file(vault, FIX / name)
        assert not again.created and not again.updated and not again.kept and again.unchanged
    assert {p: p.read_bytes() for p in vault.rglob("*.md")} == before
    # a later export: the conversation went on, and one note was edited by hand meanwhile
    export = json.loads((FIX / "conversations.json").read_text())
    conv = export[1]
    conv["mapping"]["a"]["children"] = ["u3"]
    conv["mapping"]["u3"] = {"id": "u3", "parent": "a", "children": ["a3"], "message": {
        "id": "u3", "author": {"role": "user"}, "create_time": 1764582000.0, "recipient": "all",
        "content": {"content_type": "text", "parts": ["And checkpoint_fullfsync?"]}}}
    conv["mapping"]["a3"] = {"id": "a3", "parent": "u3", "children": [], "message": {
        "id": "a3", "author": {"role": "assistant"}, "create_time": 1764582010.0, "recipient": "all",
        "content": {"content_type": "text", "parts": ["Only on macOS."]}}}
    conv["current_node"] = "a3"
    export[0]["mapping"]["a2"]["message"]["content"]["parts"] = ["A corrected answer."]
    edited = vault / "raw/2025-11-30 SQLite WAL checkpoints 674b1f3e 02.md"
    edited.write_text(edited.read_text() + "\nmy note\n")
    later = tmp_path / "elsewhere" / "conversations.json"  # a new export unpacks somewhere else
    later.parent.mkdir()
    later.write_text(json.dumps(export))
    done = import_file(vault, later)
    assert done.created == ["raw/2025-12-01 SQLite WAL checkpoints 674c7090 02.md"]
    assert done.kept == [str(edited.relative_to(vault))] and edited.read_text().endswith("my note\n")
    assert len(done.unchanged) == 2


def test_mcp_memory_graph_becomes_notes_with_typed_relations(vault: Path) -> None:
    done = import_file(vault, FIX / "memory.json", folder="long_term")
    assert done.format == "mcp-memory"
    assert done.counts == {"entities": 3, "relations": 3, "relations from unknown entities": 1}
    assert sorted(done.created) == ["long_term/Ana_Lima.md", "long_term/Greenhouse collector.md",
                                    "long_term/SQLite WAL checkpoints.md"]
    assert read(vault, "long_term/Ana_Lima.md") == (
        "---\nentity_type: person\nsource: memory.json\ntags: [mcp-memory]\nrelations:\n"
        "  maintains:\n    - \"[[Greenhouse collector]]\"\n  works_on:\n    - \"[[Node 3]]\"\n---\n"
        "# Ana_Lima\n\n- Maintains the greenhouse collector\n- Prefers SQLite over Postgres for the Pi\n"
        "- Writes the test first\n")
    assert "  depends_on:\n    - \"[[SQLite WAL checkpoints]]\"" in read(vault, "long_term/Greenhouse collector.md")
    assert read(vault, "long_term/SQLite WAL checkpoints.md").split("---\n")[2].startswith(
        "# SQLite WAL/checkpoints\n\n- A long read")


def test_imported_relations_are_graph_edges(vault: Path, embedder: Embedder) -> None:
    with Cortex.open(vault, embedder=embedder) as cx:
        done = cx.import_file(FIX / "memory.json")
        links = {(ln.src, ln.rel, ln.dst) for ln in cx.db.links() if ln.src.startswith("short_term/")}
        hits = cx.recall(RecallRequest(query="who maintains the collector", k=3)).hits
    assert all(p.startswith("short_term/") for p in done.created)  # the vault's default region, as remember
    assert ("short_term/Ana_Lima.md", "maintains", "short_term/Greenhouse collector.md") in links
    assert ("short_term/Greenhouse collector.md", "depends_on", "short_term/SQLite WAL checkpoints.md") in links
    assert hits[0].path in ("short_term/Ana_Lima.md", "short_term/Greenhouse collector.md")


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_the_array_is_decoded_one_element_at_a_time(chunk: int) -> None:
    text = (FIX / "conversations.json").read_text()
    got = list(iter_array(io.StringIO(text), chunk=chunk))
    assert got == json.loads(text)
    assert list(iter_array(io.StringIO('{"mapping": {}}'))) == [{"mapping": {}}]
    assert list(iter_array(io.StringIO(" [ ] "))) == []
    with pytest.raises(InvalidRequest, match="truncated"):
        list(iter_array(io.StringIO(text[: len(text) // 2]), chunk=chunk))


def test_a_large_export_streams(vault: Path, tmp_path: Path) -> None:
    import tracemalloc

    conv = json.loads((FIX / "conversations.json").read_text())[1]
    big = tmp_path / "conversations.json"
    conv["mapping"]["a"]["message"]["content"]["parts"] = ["A long answer. " * 1000]
    with big.open("w") as fh:  # 200 conversations, about 3 MB
        fh.write("[")
        for i in range(200):
            c = dict(conv, conversation_id=f"{i:08d}-x", title=f"chat {i}")
            fh.write(("," if i else "") + json.dumps(c))
        fh.write("]")
    with Cortex.open(vault) as cx:
        # the first import loads what a chat import uses (the privacy gate's detectors among them) on first use:
        # the peak below measures the stream, not those modules being imported
        imports.import_file(cx.vault, FIX / "conversations.json", index=False)
        tracemalloc.start()
        done = imports.import_file(cx.vault, big, index=False)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert done.counts["conversations"] == 200 and len(done.created) == 200
    assert big.stat().st_size > 3_000_000 and peak < 1_000_000, peak  # a few conversations' worth


def test_cli_import_with_format_and_summary(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert run(parser, ["import", "--vault", str(vault), str(FIX / "memory.json")]) == 0
    out = capsys.readouterr().out
    assert "(mcp-memory): entities 3, relations 3, relations from unknown entities 1" in out
    assert "notes: 3 created, 0 updated, 0 already there, 0 kept\n" in out and "created: short_term/Ana_Lima.md" in out
    copy = vault.parent / "t.jsonl"
    shutil.copy(TRANSCRIPTS / "2026-10-05 collector refactor.jsonl", copy)
    assert run(parser, ["import", "transcript", str(copy), "--vault", str(vault), "--session", "s"]) == 0  # old form
    assert "session 's'" in capsys.readouterr().out
    assert run(parser, ["import", "--vault", str(vault), "--format", "chatgpt", str(copy)]) == 1
    assert "not a ChatGPT export" in capsys.readouterr().err


def test_an_export_with_fields_of_the_wrong_type_imports_the_rest_and_counts_them(vault: Path, tmp_path: Path) -> None:
    """A ChatGPT export with wrong types (children not a list, a node id that is a list, a huge timestamp) was a
    TypeError traceback; the readable conversations are imported and the others counted."""
    convs = json.loads((FIX / "conversations.json").read_text())
    good = convs[1]
    bad_children = json.loads(json.dumps(good)) | {"current_node": None, "conversation_id": "bad-1"}
    for entry in bad_children["mapping"].values():
        entry["children"] = 5
        entry["parent"] = None
    bad_node = json.loads(json.dumps(good)) | {"current_node": ["a", "list"], "conversation_id": "bad-2",
                                               "create_time": 1e300}
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([good, bad_children, bad_node]), encoding="utf-8")
    done = import_file(vault, export)
    assert done.counts["conversations"] >= 1 and done.created
    assert done.counts.get("malformed", 0) >= 1


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-code", "mcp-memory"])
def test_json_nested_too_deeply_is_a_clear_error(vault: Path, tmp_path: Path, fmt: str) -> None:
    """Deeply nested JSON in an import was a RecursionError traceback."""
    deep = "[" * 200_000 + "]" * 200_000
    file = tmp_path / ("conversations.json" if fmt == "chatgpt" else "deep.jsonl")
    if fmt == "chatgpt":
        file.write_text(f'[{{"mapping": {deep}}}]', encoding="utf-8")
    elif fmt == "mcp-memory":
        file.write_text('{"type": "entity", "name": "x", "entityType": "t", "observations": []}\n'
                        f'{{"type": "entity", "name": {deep}}}\n', encoding="utf-8")
    else:
        file.write_text(f'{{"type": "user", "message": {deep}}}\n', encoding="utf-8")
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        import_file(vault, file, fmt=fmt)
