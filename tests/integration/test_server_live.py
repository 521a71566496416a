"""`vault-cortex serve` for real: an empty folder becomes a vault, uvicorn serves it on a free loopback port,
and a note saved by atomic rename shows up in recall."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator

import httpx
import pytest
from serving import Server, serve, wait

NEW_NOTE = "scientific/Rain gauge tipping bucket.md"
NEW_TEXT = ("# Rain gauge tipping bucket\n\nThe tipping bucket rain gauge counts 0.2 mm per tip on an interrupt "
            "pin; debounce it in software or a gust doubles the rainfall.\n")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    vault = tmp_path_factory.mktemp("live") / "vault"  # missing: serve creates it from the template
    with serve(vault) as server:
        yield server


@pytest.mark.slow
def test_serve_creates_the_vault_and_a_private_token(served: Server) -> None:
    assert (served.vault / ".cortex/config.toml").is_file()
    assert (served.vault / "soul").is_dir()
    assert stat.S_IMODE((served.vault / ".cortex/token").stat().st_mode) == 0o600
    status = served.get("/v1/status").json()
    assert status["index"]["notes"] >= 20
    assert status["watch"]["watching"] is True
    assert status["nightly"]["enabled"] is False and status["nightly"]["next_at"] is None  # off in the template
    assert status["regions"][0] == "soul" and "balanced" in status["modes"]
    assert httpx.get(f"{served.url}/v1/status", timeout=5).status_code == 401


@pytest.mark.slow
def test_an_atomic_save_is_recalled(served: Server) -> None:
    path = served.vault / NEW_NOTE
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(NEW_TEXT)
    os.replace(tmp, path)

    def found() -> bool:
        hits = served.get("/v1/recall", q="tipping bucket rain gauge debounce", k=3).json()["hits"]
        return bool(hits) and hits[0]["path"] == NEW_NOTE

    wait(found, 60, "the saved note in recall")  # how soon: tests/bench/server.py, save → recall
    assert served.get("/v1/status").json()["watch"]["lag_ms"] == 0.0


@pytest.mark.slow
def test_an_index_write_does_not_loop(served: Server) -> None:
    """The index and activity log live in .cortex/: their writes must not trigger more syncs."""
    before = served.get("/v1/status").json()["watch"]["syncs"]
    for _ in range(5):
        served.get("/v1/recall", q="battery")  # appends to .cortex/activity/
    time.sleep(1.0)  # time for a sync they would wrongly trigger (the note below shows the watcher was up)
    assert served.get("/v1/status").json()["watch"]["syncs"] == before
    tmp = served.vault / "scientific/.After the recalls.md.tmp"
    tmp.write_text("# After the recalls\n\nA real note.\n")
    os.replace(tmp, served.vault / "scientific/After the recalls.md")  # one event, as an editor saves
    wait(lambda: served.get("/v1/status").json()["watch"]["syncs"] > before, 60, "the watcher's sync")
    wait(lambda: not served.get("/v1/status").json()["watch"]["pending"], 60, "nothing pending")
    assert served.get("/v1/status").json()["watch"]["syncs"] == before + 1  # that note's sync alone
