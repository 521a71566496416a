"""The /v1 routes end to end: the Litestar app, the real model and index, a copy of the starter vault."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from harness import TEST_HOSTS, TOKEN, assert_error_shape, checked_client, send_without_token
from litestar import Litestar
from litestar.testing import TestClient

from server.app import create_app
from vault_cortex.cortex import Cortex
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

ARCH = "long_term/greenhouse-sensor architecture.md"
WAL = "scientific/SQLite WAL mode.md"


def test_health_needs_no_token(client: TestClient[Litestar]) -> None:
    response = send_without_token(client, "GET", "/v1/health")
    assert response.status_code == 200
    assert response.json()["ok"] is True


def test_status_reports_counts_model_last_sync_lag_and_skipped(client: TestClient[Litestar], cx: Cortex,
                                                               tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# not part of the vault\n")
    link = cx.root / "scientific" / "outside.md"
    link.symlink_to(outside)
    try:
        cx.sync()
        body = client.get("/v1/status").json()
    finally:
        link.unlink()
        cx.sync()
    assert body["index"]["notes"] >= 20
    assert body["index"]["model"]
    assert body["index"]["last_sync"]
    assert body["watch"] is None  # this app runs no watcher; test_server_live covers the lag of a live one
    assert {"path": "scientific/outside.md", "reason": "symlink points outside the vault"} in body["skipped"]


def test_recall_get_and_post_agree(client: TestClient[Litestar]) -> None:
    got = client.get("/v1/recall", params={"q": "why did the battery run flat", "k": 3})
    posted = client.post("/v1/recall", json={"query": "why did the battery run flat", "k": 3})
    assert got.status_code == posted.status_code == 200
    paths = [h["path"] for h in got.json()["hits"]]
    assert paths == [h["path"] for h in posted.json()["hits"]]
    assert len(paths) == 3
    assert "short_term/2026-11-29 node 3 battery ran flat.md" in paths
    hit = got.json()["hits"][0]
    assert hit["reason"] and hit["signals"]  # every selection is explained


def test_recall_through_the_push_gate(client: TestClient[Litestar], cx: Cortex) -> None:
    """gate=true: only what the gate passes, each hit with its probability; nothing for an off-topic query."""
    query = "The dashboard froze while the collector was writing: what about WAL checkpoints?"
    got = client.get("/v1/recall", params={"q": query, "gate": "true"}).json()["hits"]
    assert got and all(0 <= h["push_probability"] <= 1 and h["push_why"] for h in got)
    assert got[0]["push_probability"] >= cx.settings.push.threshold
    assert client.post("/v1/recall", json={"query": query, "gate": True}).json()["hits"] == got
    plain = client.get("/v1/recall", params={"q": query}).json()["hits"]
    assert all(h.get("push_probability") is None for h in plain)
    assert [h.path for h in cx.recall(RecallRequest(query=query, gate=True),
                                      log_activity=False).hits] == [h["path"] for h in got]
    for off_topic in ("Write a haiku about autumn leaves on a river", "how do I center a div with CSS grid"):
        assert client.get("/v1/recall", params={"q": off_topic, "gate": "true"}).json()["hits"] == []
        assert client.get("/v1/recall", params={"q": off_topic}).json()["hits"]  # ungated recall still ranks


@pytest.mark.parametrize("params", [{"q": "x", "k": 0}, {"q": "x", "k": 1001}, {"q": ""}, {},
                                    {"q": "x" * 10_001}, {"q": "x", "k": "many"}])
def test_recall_query_limits(client: TestClient[Litestar], params: dict[str, str | int]) -> None:
    response = client.get("/v1/recall", params=params)
    assert response.status_code == 400


def test_recall_query_longer_than_the_vault_allows(client: TestClient[Litestar], cx: Cortex) -> None:
    too_long = "battery " * (cx.settings.recall.max_query_chars // 8 + 1)
    response = client.post("/v1/recall", json={"query": too_long})
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidRequest"


def test_body_limit_and_unknown_fields(client: TestClient[Litestar]) -> None:
    huge = client.post("/v1/recall", content=b'{"query": "' + b"x" * (1 << 20) + b'"}',
                       headers={"Content-Type": "application/json"})
    assert huge.status_code == 413
    typo = client.post("/v1/recall", json={"query": "battery", "kk": 3})
    assert typo.status_code == 400


def test_context_is_the_text_a_model_reads_and_its_items_keep_their_links(client: TestClient[Litestar]) -> None:
    """`markdown` is what an agent (or the plugin's copy for a paste) receives: each memory's path, why in words and
    passage, no link or score; the items are the fields for programs, links included."""
    response = client.post("/v1/context", json={"task": "debug the dashboard freeze", "budget_tokens": 600})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["markdown"].startswith("## soul/Build things that last.md — pinned identity note\n")
    assert "obsidian://" not in body["markdown"] and "score" not in body["markdown"]
    items = body["context"]["items"]
    assert items and all(i["wikilink"].startswith("[[") and i["obsidian_uri"].startswith("obsidian://open?")
                         for i in items)


def test_related_leaves_out_the_note_and_what_it_links(client: TestClient[Litestar], cx: Cortex) -> None:
    response = client.get("/v1/related", params={"path": ARCH, "k": 20})
    assert response.status_code == 200, response.text
    paths = {h["path"] for h in response.json()["hits"]}
    linked = {ln.dst for ln in cx.db.links() if ln.src == ARCH and ln.dst}
    assert linked, "the fixture note links other notes"
    assert paths, "some notes are related"
    assert ARCH not in paths
    assert not paths & linked


def test_read_note_with_etag(client: TestClient[Litestar], cx: Cortex) -> None:
    response = client.get("/v1/notes", params={"path": WAL})
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == (cx.root / WAL).read_text(encoding="utf-8")
    assert response.headers["ETag"] == f'"{body["etag"]}"'


def test_update_with_if_match_then_a_stale_etag_conflicts(client: TestClient[Litestar], cx: Cortex) -> None:
    path = "short_term/etag test.md"
    created = client.put("/v1/notes", params={"path": path}, json={"content": "first\n"})
    assert created.status_code == 201
    etag = created.headers["ETag"]
    updated = client.put("/v1/notes", params={"path": path}, json={"content": "second\n"},
                         headers={"If-Match": etag})
    assert updated.status_code == 200
    assert updated.headers["ETag"] != etag
    stale = client.put("/v1/notes", params={"path": path}, json={"content": "lost?\n"}, headers={"If-Match": etag})
    assert stale.status_code == 409
    assert stale.json()["error"] == "WriteConflict"
    assert (cx.root / path).read_text() == "second\n"


def test_a_change_on_disk_since_the_read_is_never_overwritten(client: TestClient[Litestar], cx: Cortex) -> None:
    path = "short_term/edited elsewhere.md"
    etag = client.put("/v1/notes", params={"path": path}, json={"content": "draft\n"}).headers["ETag"]
    (cx.root / path).write_text("edited in Obsidian meanwhile\n")
    response = client.put("/v1/notes", params={"path": path}, json={"content": "from the API\n"},
                          headers={"If-Match": etag})
    assert response.status_code == 409
    assert (cx.root / path).read_text() == "edited in Obsidian meanwhile\n"


def test_create_refuses_an_existing_note_and_star(client: TestClient[Litestar], cx: Cortex) -> None:
    before = (cx.root / WAL).read_bytes()
    assert client.put("/v1/notes", params={"path": WAL}, json={"content": "x"}).status_code == 409
    star = client.put("/v1/notes", params={"path": WAL}, json={"content": "x"}, headers={"If-Match": "*"})
    assert star.status_code == 400
    assert (cx.root / WAL).read_bytes() == before


def test_written_note_is_recalled(client: TestClient[Litestar]) -> None:
    path = "scientific/Quokka telemetry.md"
    text = "# Quokka telemetry\n\nThe quokka collar sends its GPS fix over LoRa every quarter hour.\n"
    assert client.put("/v1/notes", params={"path": path}, json={"content": text}).status_code == 201
    hits = client.get("/v1/recall", params={"q": "quokka collar LoRa", "k": 3}).json()["hits"]
    assert hits[0]["path"] == path


def test_remember_creates_an_indexed_note(client: TestClient[Litestar], cx: Cortex) -> None:
    response = client.post("/v1/notes", json={"text": "The greenhouse door sensor is a reed switch on GPIO 4.",
                                              "title": "Door sensor wiring", "region": "scientific",
                                              "tags": ["greenhouse"], "importance": 0.6})
    assert response.status_code == 201, response.text
    doc = response.json()
    assert response.headers["Location"] == f"/v1/notes?path={quote(doc['path'], safe='/')}"
    assert response.headers["ETag"] == f'"{doc["etag"]}"'
    assert (cx.root / doc["path"]).is_file()
    hits = client.get("/v1/recall", params={"q": "reed switch door sensor", "k": 3}).json()["hits"]
    assert doc["path"] in [h["path"] for h in hits]


def test_link_adds_a_typed_relation(client: TestClient[Litestar], cx: Cortex) -> None:
    src = "short_term/2026-11-28 dashboard froze.md"
    before = (cx.root / src).read_text(encoding="utf-8")
    response = client.post("/v1/links", json={"src": src, "rel": "supports", "dst": WAL})
    assert response.status_code == 200, response.text
    after = (cx.root / src).read_text(encoding="utf-8")
    assert "supports" in after and "SQLite WAL mode" in after
    assert response.json()["etag"] == client.get("/v1/notes", params={"path": src}).json()["etag"]
    assert len(after.splitlines()) - len(before.splitlines()) <= 2  # a minimal edit


def test_graph_health(client: TestClient[Litestar]) -> None:
    body = client.get("/v1/graph/health").json()
    assert body["notes"] >= 20
    assert {"hubs", "islands", "bridges", "dangling"} <= set(body)


def test_openapi_schema_lists_the_routes(client: TestClient[Litestar], app: Litestar) -> None:
    schema = client.get("/schema/openapi.json").json()
    assert client.get("/schema").json() == schema
    for path in ("/v1/health", "/v1/status", "/v1/recall", "/v1/context", "/v1/related", "/v1/notes",
                 "/v1/links", "/v1/graph/health", "/v1/hooks/{event}", "/v1/sleep/plan", "/v1/sleep/apply",
                 "/v1/habits", "/v1/habits/reinforce", "/v1/resonance/touch", "/v1/resonance/report",
                 "/v1/resonance/decay", "/v1/curiosities", "/v1/curiosities/explore"):
        assert path in schema["paths"], path
    schemas = schema["components"]["schemas"]
    for name in ("SleepPlanView", "ApplyBody", "ApplyReport", "Plan", "Habits", "WeightChange", "ResonanceReport",
                 "DecayPlan", "Curiosity", "Curiosities", "Explored", "NightlyStatus"):
        assert name in schemas, name  # typed bodies and responses, not free-form objects
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


class _Broken(Cortex):
    def status(self) -> dict[str, object]:
        raise RuntimeError("boom: internal detail that must not leak")


@pytest.fixture
def broken_client(vault: Path, embedder: Embedder) -> Iterator[TestClient[Litestar]]:
    with _Broken.open(vault, embedder=embedder) as cortex, checked_client(
            create_app(cortex, token=TOKEN, allowed_hosts=TEST_HOSTS)) as c:
        yield c


def test_every_error_has_the_one_shape(client: TestClient[Litestar],
                                       broken_client: TestClient[Litestar]) -> None:
    """Like datasette's test: each kind of error, ours and Litestar's own, in the one JSON shape.

    The `client` fixture checks the shape of every error response of the e2e suite as well.
    """
    cases = [
        (client.get("/v1/nope"), 404, "NotFound"),
        (client.delete("/v1/recall"), 405, "MethodNotAllowed"),
        (client.get("/v1/recall"), 400, "ValidationError"),
        (client.post("/v1/recall", content=b"{not json", headers={"Content-Type": "application/json"}), 400, None),
        (client.get("/v1/recall", headers={"Authorization": "Bearer wrong"}), 401, "Unauthorized"),
        (client.get("/v1/notes", params={"path": "soul/none such.md"}), 404, "NoteNotFound"),
        (client.get("/v1/notes", params={"path": "../x.md"}), 400, "UnsafePath"),
        (client.put("/v1/notes", params={"path": WAL}, json={"content": "x"}), 409, "WriteConflict"),
        (client.post("/v1/recall", json={"query": "x", "mode": "no-such-mode"}), 400, "InvalidRequest"),
        (client.post("/v1/recall", content=b"x" * ((1 << 20) + 1)), 413, "RequestEntityTooLarge"),
        (client.post("/v1/hooks/nonsense", json={}), 404, "NotFound"),
        (client.options("/v1/recall", headers={"Origin": "https://evil.example",
                                               "Access-Control-Request-Method": "GET"}), 403, "Forbidden"),
        (client.get("/mcp/nope"), 404, "NotFound"),
        (client.post("/mcp", content=b"{}", headers={"Content-Type": "text/plain"}), 400, "BadRequest"),
        (broken_client.get("/v1/status"), 500, "InternalServerError"),
    ]
    for response, status, name in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert_error_shape(response)
        if name:
            assert response.json()["error"] == name
    assert "boom" not in cases[-1][0].text


def test_litestar_500_never_leaks(broken_client: TestClient[Litestar]) -> None:
    response = broken_client.get("/v1/status")
    assert response.json()["detail"] == "unexpected error; see the server log"
