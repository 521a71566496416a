"""Reading, editing, moving and archiving notes, filtered recall and recent activity, through the real HTTP app
and the real MCP client (issue 14). Each test works on its own notes of the module's vault copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from harness import LiveServer, over_http
from litestar import Litestar
from litestar.testing import TestClient
from mcp.client import Client

from vault_cortex.cortex import Cortex
from vault_cortex.files.activity import EditEvent, OpenEvent, read_events
from vault_cortex.recall.request import RecallRequest

WAL = "scientific/SQLite WAL mode.md"
BOARING = "long_term/Prefer boring technology.md"


def _note(vault: Path, rel: str, text: str) -> None:
    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault / rel).write_text(text, encoding="utf-8")


def test_read_a_note_by_path_or_title_with_its_etag(client: TestClient[Litestar], cx: Cortex) -> None:
    by_path = client.get("/v1/notes", params={"path": WAL})
    by_title = client.get("/v1/notes", params={"name": "sqlite wal mode"})  # resolved like [[sqlite wal mode]]
    by_link = client.get("/v1/notes", params={"name": "[[SQLite WAL mode#Checkpoints|the WAL]]"})
    assert by_path.status_code == by_title.status_code == by_link.status_code == 200
    assert by_title.json() == by_path.json() == by_link.json()
    assert by_title.json()["path"] == WAL and by_title.headers["ETag"] == f'"{by_path.json()["etag"]}"'
    opened = [e for e in read_events(cx.root)[0] if isinstance(e, OpenEvent) and e.path == WAL]
    assert len(opened) >= 3
    missing = client.get("/v1/notes", params={"name": "No such note"})
    outside = client.get("/v1/notes", params={"name": "../../etc/passwd.md"})
    not_by_name = client.get("/v1/notes", params={"path": "SQLite WAL mode.md"})  # a path is never a name
    both = client.get("/v1/notes", params={"path": WAL, "name": "x"})
    assert (missing.status_code, missing.json()["error"]) == (404, "NoteNotFound")
    assert (outside.status_code, outside.json()["error"]) == (400, "UnsafePath")
    assert (not_by_name.status_code, both.status_code) == (404, 400)


def test_edit_note_over_http_each_operation_minimal_atomic_and_logged(client: TestClient[Litestar], cx: Cortex,
                                                                       vault: Path) -> None:
    rel = "long_term/Edit me over http.md"
    _note(vault, rel, "---\ncortex: long_term\ntags: [x]  # keep\n---\n# Edit me\n\n## Setup\n\n### Install\n\n"
                      "pip install x\n\n## Use\nuse it\n")
    cx.sync()
    etag = client.get("/v1/notes", params={"path": rel}).json()["etag"]

    def edit(op: dict[str, Any], tag: str | None) -> Any:
        headers = {"If-Match": f'"{tag}"'} if tag else {}
        return client.post("/v1/notes/edit", json={"note": rel, "edit": op}, headers=headers)

    steps = [{"op": "append", "content": "- appended"}, {"op": "prepend", "content": "> prepended"},
             {"op": "replace_section", "heading": "Setup/Install", "content": "uv pip install x"},
             {"op": "find_replace", "find": "use it", "replace": "use it daily"},
             {"op": "set_property", "key": "status", "value": "done"}]
    for step in steps:
        response = edit(step, etag)
        assert response.status_code == 200, response.text
        assert response.json()["changed"] is True and response.json()["op"] == step["op"]
        etag = response.json()["etag"]
        assert response.headers["ETag"] == f'"{etag}"'
    assert (vault / rel).read_text() == (
        "---\ncortex: long_term\ntags: [x]  # keep\nstatus: done\n---\n> prepended\n# Edit me\n\n## Setup\n\n"
        "### Install\n\nuv pip install x\n\n## Use\nuse it daily\n- appended\n")
    logged = [e.op for e in read_events(cx.root)[0] if isinstance(e, EditEvent) and e.path == rel]
    assert logged == [s["op"] for s in steps]
    assert cx.recall(RecallRequest(query="uv pip install", k=3)).hits[0].path == rel  # re-indexed at once

    stale = edit({"op": "append", "content": "x"}, "0" * 32)
    assert (stale.status_code, stale.json()["error"]) == (409, "WriteConflict")
    heading = edit({"op": "replace_section", "heading": "Nope", "content": "x"}, None)
    assert (heading.status_code, heading.json()["error"]) == (400, "InvalidRequest")
    assert "no heading 'Nope'" in heading.json()["detail"]
    twice = edit({"op": "find_replace", "find": "pip install", "replace": "add", "count": 2}, None)
    assert twice.status_code == 400 and "occurs 1 time in the note, not 2" in twice.json()["detail"]
    outside = client.post("/v1/notes/edit", json={"note": "../x.md", "edit": {"op": "append", "content": "x"}})
    assert (outside.status_code, outside.json()["error"]) == (400, "UnsafePath")
    unknown = client.post("/v1/notes/edit", json={"note": rel, "edit": {"op": "delete"}})
    assert unknown.status_code == 400 and unknown.json()["error"] == "ValidationError"
    assert client.get("/v1/notes", params={"path": rel}).json()["etag"] == etag  # refused edits changed nothing


def test_move_and_archive_over_http_rewrite_links_and_never_delete(client: TestClient[Litestar], cx: Cortex,
                                                                    vault: Path) -> None:
    _note(vault, "long_term/Move target.md", "# Move target\nbody\n")
    _note(vault, "long_term/Links to it.md", "See [[Move target#Setup|the target]] and [md](Move%20target.md).\n"
                                              "Untouched line.\n")
    _note(vault, "short_term/Retire me.md", "# Retire me\nobsolete, see [[Move target]]\n")
    cx.sync()
    before = (vault / "long_term/Links to it.md").read_bytes()
    moved = client.post("/v1/notes/move", json={"note": "Move target", "dest": "scientific/Moved target.md"})
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert body["path"] == "long_term/Move target.md" and body["dest"] == "scientific/Moved target.md"
    assert {(r["path"], r["line"]) for r in body["relinked"]} == {("long_term/Links to it.md", 1),
                                                                   ("short_term/Retire me.md", 2)}
    after = (vault / "long_term/Links to it.md").read_bytes()
    assert after == before.replace(b"[[Move target#", b"[[Moved target#").replace(b"(Move%20target.md)",
                                                                                  b"(Moved%20target.md)")
    assert not (vault / "long_term/Move target.md").exists() and (vault / "scientific/Moved target.md").exists()
    exists = client.post("/v1/notes/move", json={"note": "Links to it", "dest": "scientific/Moved target.md"})
    assert (exists.status_code, exists.json()["error"]) == (409, "WriteConflict")
    stale = client.post("/v1/notes/move", json={"note": "Links to it", "dest": "scientific/Elsewhere.md"},
                        headers={"If-Match": '"0123"'})
    assert (stale.status_code, stale.json()["error"]) == (409, "WriteConflict")
    assert (vault / "long_term/Links to it.md").exists() and not (vault / "scientific/Elsewhere.md").exists()
    outside = client.post("/v1/notes/move", json={"note": "Links to it", "dest": "../escape.md"})
    assert (outside.status_code, outside.json()["error"]) == (400, "UnsafePath")

    archived = client.post("/v1/notes/archive", json={"note": "short_term/Retire me.md"})
    assert archived.status_code == 200 and archived.json()["dest"] == "archive/short_term/Retire me.md"
    assert (vault / "archive/short_term/Retire me.md").read_text().startswith("# Retire me")
    retire = RecallRequest(query="obsolete retire", k=20)
    assert "archive/short_term/Retire me.md" not in {h.path for h in cx.recall(retire).hits}
    with_archive = msgspec.structs.replace(retire, include_archive=True)
    assert "archive/short_term/Retire me.md" in {h.path for h in cx.recall(with_archive).hits}
    again = client.post("/v1/notes/archive", json={"note": "archive/short_term/Retire me.md"})
    assert again.status_code == 400 and "already in archive/" in again.json()["detail"]


def test_recall_and_context_filters_over_http(client: TestClient[Litestar]) -> None:
    got = client.get("/v1/recall", params={"q": "battery", "k": 5, "tags": "hardware", "path_prefix": "scientific/"})
    assert got.status_code == 200, got.text
    paths = [h["path"] for h in got.json()["hits"]]
    assert paths and all(p.startswith("scientific/") for p in paths)
    posted = client.post("/v1/recall", json={"query": "battery", "k": 5, "tags": ["hardware"],
                                             "path_prefix": "scientific/"})
    assert [h["path"] for h in posted.json()["hits"]] == paths
    none = client.get("/v1/recall", params={"q": "battery", "created_after": "2099-01-01"})
    assert none.status_code == 200 and none.json()["hits"] == []
    bad = client.get("/v1/recall", params={"q": "battery", "created_after": "someday"})
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidRequest"
    # a task that bears on the vault (the start context holds only what bears), the recall narrowed to a folder
    ctx = client.post("/v1/context", json={"task": "measure the ESP32 deep sleep current for the battery test",
                                           "path_prefix": "scientific/", "budget_tokens": 600})
    recalled = [i["path"] for i in ctx.json()["context"]["items"] if not i["section"]]
    assert recalled and all(p.startswith("scientific/") for p in recalled)


def test_recent_over_http_groups_by_day(client: TestClient[Litestar], cx: Cortex) -> None:
    client.get("/v1/notes", params={"path": BOARING})
    client.get("/v1/recall", params={"q": "boring technology", "k": 1})
    got = client.get("/v1/recent", params={"days": 3})
    assert got.status_code == 200, got.text
    body = got.json()
    today = body["groups"][0]
    kinds = {(i["path"], i["kind"]) for i in today["items"]}
    assert (BOARING, "opened") in kinds and (BOARING, "recalled") in kinds
    only = client.get("/v1/recent", params={"days": 3, "kinds": "opened"}).json()
    assert {i["kind"] for g in only["groups"] for i in g["items"]} == {"opened"}
    created = client.get("/v1/recent", params={"days": 3660, "kinds": "created"}).json()
    assert any(i["path"] == "short_term/2026-11-29 node 3 battery ran flat.md"
               for g in created["groups"] if g["date"] == "2026-11-29" for i in g["items"])
    bad = client.get("/v1/recent", params={"kinds": "deleted"})
    assert (bad.status_code, bad.json()["error"]) == (400, "InvalidRequest")


def test_the_same_operations_over_mcp(live: LiveServer, vault: Path) -> None:
    _note(vault, "long_term/Mcp note.md", "---\nstatus: draft\n---\n# Mcp note\n\n## Setup\nold\n\n## Use\nx\n")
    _note(vault, "long_term/Mcp linker.md", "Depends on [[Mcp note#Setup]].\n")

    async def body(mcp: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        await mcp.call_tool("recall", {"query": "sync first", "k": 1})  # lets the watcher catch up meanwhile
        import anyio

        with anyio.move_on_after(120):  # a deadline for the watcher to index the note, not a figure
            while (read := await mcp.call_tool("note", {"note": "Mcp note"})).is_error:
                await anyio.sleep(0.05)
        out["read"] = read
        etag = read.structured_content["etag"]
        out["edit"] = await mcp.call_tool("note", {"note": "Mcp note", "op": "replace_section", "heading": "Setup",
                                                   "content": "new", "etag": etag})
        out["stale"] = await mcp.call_tool("note", {"note": "Mcp note", "op": "append", "content": "x",
                                                    "etag": etag})
        out["prop"] = await mcp.call_tool("note", {"note": "Mcp note", "op": "set_property", "key": "status",
                                                   "value": "final"})
        out["count"] = await mcp.call_tool("note", {"note": "Mcp note", "op": "find_replace",
                                                    "find": "nothing like this", "content": "y"})
        out["no_dest"] = await mcp.call_tool("note", {"note": "long_term/Mcp note.md", "op": "move"})
        out["move"] = await mcp.call_tool("note", {"note": "long_term/Mcp note.md", "op": "move",
                                                   "dest": "scientific/Mcp note moved.md"})
        out["archive"] = await mcp.call_tool("note", {"note": "Mcp linker", "op": "archive"})
        out["recall"] = await mcp.call_tool("recall", {"query": "battery", "k": 3, "tags": ["hardware"],
                                                       "regions": ["scientific", "short_term"], "format": "json"})
        out["context"] = await mcp.call_tool("context", {"task": "battery", "path_prefix": "scientific/"})
        out["recent"] = await mcp.call_tool("overview", {"op": "recent", "days": 2, "kinds": ["changed"]})
        out["outside"] = await mcp.call_tool("note", {"note": "../../etc/passwd.md"})
        return out

    out = over_http(live, body)
    assert out["read"].structured_content["path"] == "long_term/Mcp note.md"
    assert not out["edit"].is_error and out["edit"].structured_content["changed"] is True
    assert out["stale"].is_error and "WriteConflict" in out["stale"].content[0].text
    assert not out["prop"].is_error
    assert out["count"].is_error and "occurs 0 times" in out["count"].content[0].text
    assert out["no_dest"].is_error and out["no_dest"].content[0].text.endswith("InvalidRequest: move needs `dest`")
    assert out["move"].structured_content["relinked"][0]["new"] == "Depends on [[Mcp note moved#Setup]]."
    assert out["archive"].structured_content["dest"] == "archive/long_term/Mcp linker.md"
    assert (vault / "scientific/Mcp note moved.md").read_text() == (
        "---\nstatus: final\n---\n# Mcp note\n\n## Setup\nnew\n\n## Use\nx\n")
    hits = out["recall"].structured_content["result"]["hits"]
    assert hits and all(h["region"] in ("scientific", "short_term") for h in hits)
    assert not out["context"].is_error
    changed = {i["path"] for g in out["recent"].structured_content["groups"] for i in g["items"]}
    assert {"scientific/Mcp note moved.md", "archive/long_term/Mcp linker.md"} <= changed
    assert out["outside"].is_error and "UnsafePath" in out["outside"].content[0].text
    assert json.loads(json.dumps(out["recent"].structured_content))  # plain JSON


def test_set_property_without_a_value_is_refused_and_removal_is_its_own_operation(
        client: TestClient[Litestar], live: LiveServer, vault: Path) -> None:
    """A missing value used to delete the property, over HTTP and MCP alike; now it is a clear 400."""
    rel = "long_term/Property note.md"
    _note(vault, rel, "---\nstatus: draft\n---\nBody.\n")
    for edit in ({"op": "set_property", "key": "status"}, {"op": "set_property", "key": "status", "value": None}):
        refused = client.post("/v1/notes/edit", json={"note": rel, "edit": edit})
        assert refused.status_code == 400 and "set_property needs `value`" in refused.json()["detail"]
    assert (vault / rel).read_text(encoding="utf-8") == "---\nstatus: draft\n---\nBody.\n"

    async def body(mcp: Client) -> Any:
        return await mcp.call_tool("note", {"note": rel, "op": "set_property", "key": "status"})

    out = over_http(live, body)
    assert out.is_error and "set_property needs `value`" in out.content[0].text
    removed = client.post("/v1/notes/edit", json={"note": rel, "edit": {"op": "remove_property", "key": "status"}})
    assert removed.status_code == 200 and "status" not in (vault / rel).read_text(encoding="utf-8")
