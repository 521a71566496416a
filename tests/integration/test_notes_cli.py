"""The note commands on the command line (read, edit, move, archive, recent, related, link, reinforce, filters),
on a real starter vault, and byte-exact edits of a note that is not valid UTF-8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.cli import main
from vault_cortex.cortex import Cortex
from vault_cortex.files.sections import EditOp
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    root = tmp_path_factory.mktemp("cli") / "vault"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_read_edit_move_archive_recent(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = str(vault)
    code, out, err = run(capsys, "read", "--vault", v, "Prefer boring technology")
    assert code == 0 and out.startswith("---\n") and "long_term/Prefer boring technology.md (etag " in err
    etag = json.loads(run(capsys, "read", "--vault", v, "Prefer boring technology", "--json")[1])["etag"]
    code, out, _ = run(capsys, "edit", "--vault", v, "Prefer boring technology", "append",
                       "--content", "- Added from the CLI.", "--etag", etag)
    assert code == 0 and out.startswith("append: long_term/Prefer boring technology.md (etag ")
    assert (vault / "long_term/Prefer boring technology.md").read_text().endswith("- Added from the CLI.\n")
    code, _, err = run(capsys, "edit", "--vault", v, "Prefer boring technology", "append", "--content", "x",
                       "--etag", etag)
    assert code == 1 and "changed since it was read" in err
    code, _, err = run(capsys, "edit", "--vault", v, "Prefer boring technology", "replace_section",
                       "--heading", "Nope", "--content", "x")
    assert code == 1 and "no heading 'Nope'" in err
    code, _, _ = run(capsys, "edit", "--vault", v, "Prefer boring technology", "set_property", "--key",
                     "importance", "--value", "0.9")
    assert code == 0 and "\nimportance: 0.9\n" in (vault / "long_term/Prefer boring technology.md").read_text()

    code, out, _ = run(capsys, "move", "--vault", v, "Sketch before soldering", "artistic/Sketch first.md")
    assert code == 0 and out.startswith("moved artistic/Sketch before soldering.md → artistic/Sketch first.md")
    assert "link line" in out
    code, out, _ = run(capsys, "archive", "--vault", v, "Enclosure sketches", "--json")
    assert code == 0 and json.loads(out)["dest"] == "archive/artistic/Enclosure sketches.md"

    code, out, _ = run(capsys, "recent", "--vault", v, "--days", "2", "--kind", "changed")
    assert code == 0 and "changed  artistic/Sketch first.md" in out and "(move)" in out
    code, out, _ = run(capsys, "recent", "--vault", v, "--json")
    assert json.loads(out)["kinds"] == ["created", "changed", "recalled", "opened"]


def test_recall_filters_and_the_other_tool_commands(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = str(vault)
    code, out, _ = run(capsys, "recall", "--vault", v, "battery", "--tag", "hardware", "--path-prefix", "scientific/",
                       "--json")
    paths = [h["path"] for h in json.loads(out)["hits"]]
    assert code == 0 and paths and all(p.startswith("scientific/") for p in paths)
    code, out, _ = run(capsys, "recall", "--vault", v, "battery", "--created-after", "2099-01-01")
    assert code == 0 and out.startswith("nothing found")
    code, out, _ = run(capsys, "context", "--vault", v, "--task", "battery", "--region", "scientific",
                       "--format", "json")
    assert code == 0 and {i["region"] for i in json.loads(out)["context"]["items"] if not i["section"]} <= {
        "scientific"}
    code, out, _ = run(capsys, "related", "--vault", v, "SQLite WAL mode", "-k", "3")
    assert code == 0 and "results, mode balanced" in out
    code, out, _ = run(capsys, "link", "--vault", v, "Prefer boring technology", "supports", "SQLite WAL mode")
    assert code == 0 and "supports → [[SQLite WAL mode]]" in out
    code, out, _ = run(capsys, "reinforce", "--vault", v, "Write the test first")
    assert code == 0 and out.startswith("habits/Write the test first.md: weight")


def test_edits_keep_bytes_that_are_not_utf8(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    raw = b"---\ntitle: caf\xe9\n---\n# Notes\r\nLatin-1: caf\xe9 cr\xe8me\r\n\r\n## Log\r\nold\r\n"
    (root / "n.md").write_bytes(raw)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        cx.edit_note("n", EditOp(op="append", content="new line"))
        assert (root / "n.md").read_bytes() == raw + b"new line\r\n"
        cx.edit_note("n.md", EditOp(op="replace_section", heading="Log", content="fresh"))
        assert (root / "n.md").read_bytes() == raw.replace(b"old\r\n", b"fresh\r\n")  # the section ran to the end
        cx.edit_note("n.md", EditOp(op="find_replace", find="Notes", replace="Journal"))
        assert b"caf\xe9 cr\xe8me" in (root / "n.md").read_bytes()
        moved = cx.move_note("n.md", "sub/n.md")
        assert (root / "sub/n.md").read_bytes().count(b"\xe9") == 2 and moved.dest == "sub/n.md"



def test_archiving_a_second_note_of_the_same_path_never_overwrites(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    with Cortex.open(root, embedder=embedder) as cx:
        for n in (1, 2):
            (root / "short_term").mkdir(exist_ok=True)
            (root / "short_term/Twice.md").write_text(f"version {n}\n")
            cx.sync()
            moved = cx.archive_note("Twice")
            assert moved.dest == ("archive/short_term/Twice.md" if n == 1 else "archive/short_term/Twice 2.md")
        assert (root / "archive/short_term/Twice.md").read_text() == "version 1\n"
        assert (root / "archive/short_term/Twice 2.md").read_text() == "version 2\n"
