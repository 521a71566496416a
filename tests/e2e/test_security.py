"""Security: the token on every route but health and proof, the server's proof of the token, path validation
against traversal, CORS, loopback binds."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import TOKEN, send_without_token
from litestar import Litestar
from litestar.routes import ASGIRoute, HTTPRoute
from litestar.testing import TestClient

from server.auth import CORS_ORIGINS, is_loopback
from server.bearer import TOKEN_ENV, load_or_create_token, read_token
from server.cli import main as cli_main
from server.proof import peer_name, proof
from vault_cortex.cortex import Cortex

OUTSIDE = "outside"  # a folder next to the vault, holding a secret note
QUESTION = "curiosities/Why does the WAL file grow during long reads.md"


def _urls(app: Litestar) -> list[tuple[str, str]]:
    """(method, url) of every route the app serves, with sample path parameters."""
    out = []
    for route in app.routes:
        url = route.path.replace("{event:str}", "prompt").replace("/v1/proof", f"/v1/proof?nonce={'ab' * 32}")
        if isinstance(route, ASGIRoute):
            out.append(("POST", url))
        elif isinstance(route, HTTPRoute):
            out += [(m, url) for m in sorted(route.methods) if m not in ("OPTIONS", "HEAD")]
    return out


def test_every_route_but_health_and_proof_needs_the_token(client: TestClient[Litestar], app: Litestar) -> None:
    urls = _urls(app)
    assert ("POST", "/mcp") in urls and ("GET", "/schema/openapi.json") in urls
    for method, url in urls:
        missing = send_without_token(client, method, url)
        wrong = client.request(method, url, headers={"Authorization": f"Bearer {TOKEN[:-1]}"})
        basic = client.request(method, url, headers={"Authorization": f"Basic {TOKEN}"})
        expected = 200 if url == "/v1/health" or url.startswith("/v1/proof?") else 401
        for response in (missing, wrong, basic):
            assert response.status_code == expected, (method, url, response.status_code)
        if expected == 401:
            assert missing.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_proof_signs_a_fresh_nonce_and_the_askers_endpoint_and_nothing_else(client: TestClient[Litestar]) -> None:
    nonce = "5e" * 32
    reply = send_without_token(client, "GET", f"/v1/proof?nonce={nonce}")
    assert reply.status_code == 200
    body = reply.json()
    assert set(body) == {"peer", "proof"} and TOKEN not in reply.text
    assert body["peer"] == peer_name("testclient", 50000)  # the TestClient's end of the "connection"
    assert body["proof"] == proof(TOKEN, nonce, body["peer"])
    assert proof(TOKEN, "5f" * 32, body["peer"]) != body["proof"]  # another nonce, another proof
    for bad in ("", "abc", "5E" * 32, "zz" * 32, "5e" * 65):
        refused = send_without_token(client, "GET", f"/v1/proof?nonce={bad}")
        assert refused.status_code == 400, bad
        assert set(refused.json()) == {"error", "detail", "status"}
    for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
        forwarded = client.get(f"/v1/proof?nonce={nonce}", headers={header: "127.0.0.1:41234"})
        assert forwarded.status_code == 400 and "proof is given only to the connection" in forwarded.json()["detail"]


def test_an_endpoint_is_spelt_one_way_on_both_ends() -> None:
    assert peer_name("127.0.0.1", 52114) == "127.0.0.1:52114"
    assert peer_name("::ffff:127.0.0.1", 52114) == "127.0.0.1:52114"  # a dual-stack server's view of an IPv4 client
    assert peer_name("::1", 52114) == "[::1]:52114"
    assert peer_name("0:0:0:0:0:0:0:1", 52114) == "[::1]:52114"


@pytest.fixture
def escape(vault: Path) -> Iterator[tuple[Path, Path]]:
    """A secret note outside the vault, reachable through a symlinked folder and a symlinked note inside it."""
    outside = vault.parent / OUTSIDE
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text("the secret\n")
    (vault / "escape").symlink_to(outside, target_is_directory=True)
    (vault / "soul" / "leak.md").symlink_to(outside / "secret.md")
    yield outside, vault
    (vault / "escape").unlink()
    (vault / "soul" / "leak.md").unlink()


TRAVERSALS = [
    "../x.md", "../../x.md", "/etc/passwd", "/tmp/x.md", "..%2F..%2Fx.md", "a/../../x.md", "soul/../../x.md",
    "./x.md", ".obsidian/x.md", ".cortex/config.md", ".git/x.md", ".trash/x.md", "soul/.hidden.md",
    "x.txt", "soul/x.md.txt", "x", "x.md\x00.txt", "x\x00/../../x.md", "..\\..\\x.md", "soul\\..\\..\\x.md",
    "C:\\x.md", "C:/x.md", "c:x.md", "\\\\server\\share\\x.md", "//server/share/x.md", "soul//x.md", "..",
    "escape/secret.md", "escape/new.md", "soul/leak.md", f"../{OUTSIDE}/secret.md",
]


def _snapshot(top: Path) -> dict[str, str]:
    """Every file under top (vault and its neighbours) with a hash of its bytes, skipping the derived index."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not Path(dirpath, d).match("*/.cortex/index")]
        for name in filenames:
            path = Path(dirpath, name)
            out[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.mark.parametrize("payload", TRAVERSALS)
def test_traversal_and_symlink_escapes_are_refused(client: TestClient[Litestar], escape: tuple[Path, Path],
                                                   payload: str) -> None:
    outside, vault = escape
    before = _snapshot(vault.parent)
    responses = [
        client.get("/v1/notes", params={"path": payload}),
        client.put("/v1/notes", params={"path": payload}, json={"content": "pwned\n"}),
        client.put("/v1/notes", params={"path": payload}, json={"content": "pwned\n"},
                   headers={"If-Match": hashlib.blake2b(b"the secret\n", digest_size=16).hexdigest()}),
        client.post("/v1/context", json={"active_note": payload}),
    ]
    # These take a path or a name (resolved as a link is): a payload that is no path may still be a name, of a
    # note that does not exist (404); never a read or a write outside the vault.
    by_name = [
        client.get("/v1/related", params={"path": payload}),
        client.post("/v1/links", json={"src": payload, "rel": "supports", "dst": "soul/Build things that last.md"}),
        client.post("/v1/habits/reinforce", json={"path": payload}),
        client.post("/v1/curiosities/explore", json={"path": payload, "answer_path": "soul/Build things that last.md"}),
        client.post("/v1/curiosities/explore", json={"path": QUESTION, "answer_path": payload}),
    ]
    for response in responses:
        assert response.status_code == 400, (response.request.method, response.request.url, response.text)
        assert "the secret" not in response.text
    for response in by_name:
        assert response.status_code in (400, 404), (response.request.method, response.request.url, response.text)
        assert "the secret" not in response.text
    assert _snapshot(vault.parent) == before


def test_raw_encoded_traversal_in_the_query_string(client: TestClient[Litestar]) -> None:
    for raw in ("..%2F..%2Fx.md", "%2E%2E/%2E%2E/x.md", "a%2F..%2F..%2Fx.md", "x.md%00.txt"):
        response = client.get(f"/v1/notes?path={raw}")
        assert response.status_code == 400, raw


@pytest.mark.parametrize("origin", CORS_ORIGINS)
def test_cors_grants_the_obsidian_origins(client: TestClient[Litestar], origin: str) -> None:
    preflight = client.options("/v1/recall", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                      "Access-Control-Request-Headers": "authorization, if-match"})
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == origin
    assert "if-match" in preflight.headers["Access-Control-Allow-Headers"]
    response = client.get("/v1/notes", params={"path": "soul/Build things that last.md"}, headers={"Origin": origin})
    assert response.headers["Access-Control-Allow-Origin"] == origin
    assert "ETag" in response.headers["Access-Control-Expose-Headers"]


@pytest.mark.parametrize("origin", ["https://evil.example", "http://localhost:3000", "app://obsidian.md.evil",
                                    "null", "http://127.0.0.1"])
def test_cors_grants_no_other_origin(client: TestClient[Litestar], origin: str) -> None:
    preflight = client.options("/v1/recall", headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403
    assert "Access-Control-Allow-Origin" not in preflight.headers
    response = client.get("/v1/status", headers={"Origin": origin})
    assert "Access-Control-Allow-Origin" not in response.headers


def test_mcp_refuses_a_foreign_host_header(client: TestClient[Litestar]) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host."""
    response = client.post("/mcp", headers={"Host": "evil.example", "Content-Type": "application/json",
                                            "Accept": "application/json, text/event-stream"}, content=b"{}")
    assert response.status_code == 421


def test_token_file_is_created_private_and_kept(tmp_path: Path) -> None:
    token = load_or_create_token(tmp_path, {})
    path = tmp_path / ".cortex" / "token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 43
    assert load_or_create_token(tmp_path, {}) == token == read_token(tmp_path, {})
    assert load_or_create_token(tmp_path, {TOKEN_ENV: "from-env"}) == "from-env"


def test_loopback_detection() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.com", ""]))


def test_serve_refuses_a_remote_bind_without_allow_remote(cx: Cortex, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "--vault", str(cx.root), "--host", "0.0.0.0", "--port", "9"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_serve_refuses_a_folder_that_is_not_a_vault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.md").write_text("mine\n")
    assert cli_main(["serve", "--vault", str(tmp_path), "--port", "9"]) == 1
    assert "not a vault" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]
