"""Issue 11, part A, through the real app: bad input gets a clear error in the one shape, symlinks never leak
a dot-folder or lose their link, /v1 refuses a foreign Host, a write through edit.py keeps a Latin-1 body."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness import TEST_HOSTS, TOKEN, checked_client
from litestar import Litestar
from litestar.testing import TestClient

from server.app import create_app
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder

LATIN1 = b"---\ncortex: scientific\nimportance: 0.8\n---\nCaf\xe9 cr\xe8me\n"


def test_a_path_name_too_long_for_the_file_system_is_a_400(client: TestClient[Litestar]) -> None:
    response = client.put(f"/v1/notes?path={'a' * 300}.md", json={"content": "x\n"})
    assert response.status_code == 400
    assert "at most 255 bytes" in response.json()["detail"]
    assert client.get(f"/v1/notes?path=short_term/{'b' * 300}.md").status_code == 400


def test_a_symlink_into_a_dot_folder_is_never_indexed_or_served(client: TestClient[Litestar], cx: Cortex) -> None:
    (cx.root / ".cortex/token").write_text("secret-token\n")
    (cx.root / "short_term/tok.md").symlink_to("../.cortex/token")
    (cx.root / ".git").mkdir(exist_ok=True)
    (cx.root / ".git/config").write_text("[core]\n")
    (cx.root / "short_term/gitconfig.md").symlink_to("../.git/config")
    (cx.root / "notes-from-git").symlink_to(".git", target_is_directory=True)
    try:
        cx.sync()
        for path in ("short_term/tok.md", "short_term/gitconfig.md"):
            response = client.get(f"/v1/notes?path={path}")
            assert response.status_code == 400 and "dot-folder" in response.json()["detail"], path
            assert path not in cx.db.note_paths()
        assert not [p for p in cx.db.note_paths() if p.startswith("notes-from-git/")]
        skipped = {s.path: s.reason for s in cx.doctor().skipped}
        assert skipped["short_term/tok.md"] == "symlink points into a dot-folder"
        assert skipped["notes-from-git"] == "symlink points into a dot-folder"
    finally:
        for link in ("short_term/tok.md", "short_term/gitconfig.md", "notes-from-git"):
            (cx.root / link).unlink()
        cx.sync()


def test_put_with_if_match_on_a_symlinked_note_writes_its_target_and_keeps_the_link(
        client: TestClient[Litestar], cx: Cortex) -> None:
    target = cx.root / "long_term/Prefer boring technology.md"
    link = cx.root / "short_term/boring.md"
    link.symlink_to("../long_term/Prefer boring technology.md")
    try:
        read = client.get("/v1/notes?path=short_term/boring.md")
        new = read.json()["content"] + "\nEdited through the link.\n"
        response = client.put("/v1/notes?path=short_term/boring.md", json={"content": new},
                              headers={"If-Match": read.headers["ETag"]})
        assert response.status_code == 200
        assert link.is_symlink() and os.readlink(link) == "../long_term/Prefer boring technology.md"
        assert target.read_text(encoding="utf-8") == new
    finally:
        link.unlink()
        cx.sync()


def test_v1_refuses_a_foreign_host_header_on_a_loopback_bind(cx: Cortex) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not reach /v1 (MCP already refused)."""
    with checked_client(create_app(cx, token=TOKEN)) as c:
        refused = c.get("/v1/status", headers={"Host": "evil.example"})
        assert refused.status_code == 421 and refused.json()["error"] == "MisdirectedRequest"
        assert c.get("/v1/health", headers={"Host": "evil.example:8765"}).status_code == 421
        assert c.get("/v1/status", headers={"Host": "127.0.0.1:8765"}).status_code == 200
        assert c.get("/v1/status", headers={"Host": "localhost"}).status_code == 200
    with checked_client(create_app(cx, token=TOKEN, allowed_hosts=None)) as c:  # a non-loopback bind
        assert c.get("/v1/status", headers={"Host": "evil.example"}).status_code == 200


def test_a_5000_digit_importance_gets_a_clear_error(client: TestClient[Litestar]) -> None:
    body = b'{"text": "A memory", "importance": ' + b"9" * 5000 + b"}"
    response = client.post("/v1/notes", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == "importance: the number is out of range (too many digits)"


@pytest.mark.parametrize("url", ["/v1/notes", "/v1/recall"])
def test_a_lone_surrogate_in_a_json_body_gets_a_clear_error(client: TestClient[Litestar], url: str) -> None:
    key = "text" if url == "/v1/notes" else "query"
    response = client.post(url, content=b'{"' + key.encode() + b'": "a \\ud800 b"}',
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "truncated" not in detail and "surrogate" in detail


def test_post_links_keeps_a_latin1_body_and_says_when_the_target_is_dangling(
        client: TestClient[Litestar], cx: Cortex) -> None:
    (cx.root / "scientific/Cafe.md").write_bytes(LATIN1)
    cx.sync()
    read = client.get("/v1/notes?path=scientific/Cafe.md").json()
    assert read["content"].endswith("Caf\ufffd cr\ufffdme\n") and "not valid UTF-8" in read["warnings"][0]
    assert client.get("/v1/notes?path=scientific/SQLite WAL mode.md").json()["warnings"] == []
    response = client.post("/v1/links", json={"src": "scientific/Cafe.md", "rel": "supports", "dst": "Nowhere yet"})
    assert response.status_code == 200
    assert response.json()["warnings"] == ["'Nowhere yet' is not a note in the vault yet: the link is dangling"]
    assert (cx.root / "scientific/Cafe.md").read_bytes() == LATIN1.replace(
        b"0.8\n", b'0.8\nrelations:\n  supports:\n    - "[[Nowhere yet]]"\n')


def test_post_notes_answers_201_with_a_deeply_nested_note_in_the_vault(client: TestClient[Litestar],
                                                                        cx: Cortex, vault: Path) -> None:
    """D2 as found: the sync after writing crashed on another note, and the client got a 500 (and retried).
    A write indexes just its own note; the next sync (the watcher's) indexes the hostile one without stopping."""
    (vault / "short_term/deep.md").write_bytes(b"---\n" + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n---\nx\n")
    response = client.post("/v1/notes", json={"text": "Written while a hostile note sits in the vault."})
    assert response.status_code == 201
    assert response.json()["path"] in set(cx.db.note_paths())
    cx.sync()
    assert {"short_term/deep.md", response.json()["path"]} <= set(cx.db.note_paths())


class _IndexBreaks(Cortex):
    """A Cortex whose index fails after every write (a corrupt index, a full disk)."""

    def sync(self, progress: object = None) -> object:  # type: ignore[override]
        raise RuntimeError("the index broke")


def test_post_notes_answers_201_when_indexing_fails_after_the_write(vault: Path, embedder: Embedder) -> None:
    """A 500 after the file is written makes a retrying client write duplicates: the write's outcome decides."""
    with _IndexBreaks.open(vault, embedder=embedder) as broken, \
            checked_client(create_app(broken, token=TOKEN, allowed_hosts=TEST_HOSTS)) as c:
        response = c.post("/v1/notes", json={"text": "Saved even though the index is broken."})
        assert response.status_code == 201
        assert (vault / response.json()["path"]).read_text().endswith("Saved even though the index is broken.\n")
