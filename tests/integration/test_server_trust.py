"""The real `vault-cortex serve` under stress (issue 11): it stops promptly on SIGINT/SIGTERM (about 1 s) while
the watcher embeds a big note (D7), a small write answers at once while a 3,000-chunk note is embedded and progress
moves by chunks (D8), and a truncated or deleted index.db is rebuilt without a restart (D5)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serving import STOP_WAIT, Server, free_port, serve, wait

from vault_cortex import Cortex

# From the signal to the process's exit: about 1 s on an idle machine (the issue asks 2 s), 10-12 s measured while
# embedding on a 2-core machine with two busy loops beside it; the figure is printed by tests/bench/server.py. What a
# regression looks like is checked as behaviour: the stop did not wait for the note to be embedded (the next sync
# still has chunks to embed). This bound, ~10x the loaded figure, only fails a hung shutdown.
STOP_SECONDS = STOP_WAIT


def small_vault(root: Path, config: str = "") -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text(config)
    (root / "scientific").mkdir()
    for i in range(3):
        (root / f"scientific/Gauge {i}.md").write_text(f"# Gauge {i}\nThe rain gauge {i} tips every 0.2 mm.\n")
    return root


def big_note(sections: int, words: int, seed: str) -> str:
    """A note of `sections` headed sections of `words` distinct words each (text no cache has seen)."""
    out = ["# Field log\n"]
    for k in range(sections):
        body = " ".join(f"{seed}{k}w{j}" for j in range(words))
        out.append(f"## Entry {k}\n{body}\n")
    return "\n".join(out)


def embedding(server: Server) -> dict[str, int] | None:
    ix: dict[str, int] | None = server.status()["index"]["indexing"]
    return ix


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".cortex" not in p.parts}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_at_the_next_batch_while_the_watcher_embeds_a_180kb_note(tmp_path: Path, embedder,  # type: ignore[no-untyped-def]
                                                                     sig: int) -> None:
    vault = small_vault(tmp_path / "vault")
    with serve(vault) as server:
        (vault / "scientific/Field log.md").write_text(big_note(180, 120, f"s{int(sig)}"))
        assert (vault / "scientific/Field log.md").stat().st_size > 180_000
        wait(lambda: (embedding(server) or {}).get("done", 0) > 0, 120, "the watcher embedding the big note")
        took = server.stop(sig)
        assert took <= STOP_SECONDS, f"serve took {took:.2f} s to stop"
        assert server.proc.returncode == 0
    before = snapshot(vault)
    with Cortex.open(vault, embedder=embedder) as cx:  # consistent: the next sync finishes it, verify agrees
        assert cx.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        report = cx.sync()
        assert report.chunks_cached > 0  # what was embedded before the signal was kept
        assert report.chunks_embedded > 0  # and serve stopped without waiting for the rest
        assert cx.verify().ok
    assert snapshot(vault) == before


@pytest.mark.slow
def test_a_small_write_answers_at_once_while_a_3000_chunk_note_embeds(tmp_path: Path) -> None:
    vault = small_vault(tmp_path / "vault", "[index]\nmax_chunks_per_note = 5000\n")
    with serve(vault) as server:
        (vault / "scientific/Dump.md").write_text(big_note(3000, 60, "d"))
        wait(lambda: (embedding(server) or {}).get("done", 0) > 0, 180, "the watcher embedding the big note")
        first = embedding(server)
        assert first is not None and first["total"] >= 3000  # progress counts chunks, not notes

        for n in range(3):  # how long each takes is a figure: tests/bench/server.py
            r = httpx.post(f"{server.url}/v1/notes", headers=server.auth, timeout=120,
                           json={"text": f"The anemometer cup {n} was replaced on Tuesday.", "title": f"Cup {n}"})
            assert r.status_code == 201, r.text
        # answered while the big note is still being embedded, not queued behind it (minutes, under load)
        hits = server.get("/v1/recall", q="anemometer cup replaced", k=3).json()
        assert hits["hits"] and hits["hits"][0]["path"].startswith("short_term/Cup")
        assert hits["indexing"]["total"] == first["total"]  # answered from what is indexed so far, and said so

        seen = [first["done"]]
        deadline = time.monotonic() + 180
        while len(set(seen)) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
            now = embedding(server)
            assert now is not None and now["total"] == first["total"]
            seen.append(now["done"])
        steps = sorted(set(seen))
        assert len(steps) >= 4, seen  # moving, chunk by chunk, long before the note is done
        assert steps[-1] < first["total"]
        done_at_stop = steps[-1]
        assert server.stop(signal.SIGTERM) <= STOP_SECONDS
    conn = sqlite3.connect(vault / ".cortex/index/embeddings.db")
    cached = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    conn.close()
    assert cached >= done_at_stop  # the embedding work survived the stop (it is cached batch by batch)
    assert cached < first["total"]  # and the stop did not wait for the rest


@pytest.mark.slow
def test_serve_starts_on_a_truncated_index_and_rebuilds_a_deleted_one(tmp_path: Path) -> None:
    vault = small_vault(tmp_path / "vault")
    with serve(vault) as server:
        assert server.stop(signal.SIGINT) <= STOP_SECONDS
    db = vault / ".cortex/index/index.db"
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    with serve(vault) as server:
        assert server.status()["index"]["notes"] == 3
        assert server.get("/v1/recall", q="rain gauge tips", k=1).json()["hits"]
        for name in ("index.db", "index.db-wal", "index.db-shm"):
            (vault / ".cortex/index" / name).unlink(missing_ok=True)
        r = server.get("/v1/status")  # a request thread without a connection yet cannot open the deleted file
        assert r.status_code in (200, 503)
        if r.status_code == 503:
            assert r.json()["error"] == "IndexUnavailable"
        (vault / "scientific/Gauge 9.md").write_text("# Gauge 9\nThe heated gauge melts snow before it tips.\n")

        def rebuilt() -> bool:
            r = server.get("/v1/recall", q="heated gauge melts snow", k=1)
            hits = r.json()["hits"] if r.status_code == 200 else []
            return bool(hits) and hits[0]["path"] == "scientific/Gauge 9.md"

        wait(rebuilt, 60, "the rebuilt index")
        assert server.status()["index"]["notes"] == 4
        assert server.status()["watch"]["last_error"] is None
        assert server.stop(signal.SIGINT) <= STOP_SECONDS
    log = (vault.parent / "server.log").read_text()
    assert log.count("the index was damaged") == 2, log  # once at start (truncated), once for the deletion
    assert "no such table" not in log and "Traceback" not in log
    assert len(list((vault / ".cortex/index").glob("broken-*"))) == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_serve_quietly(tmp_path: Path, sig: int) -> None:
    """Ctrl-C (or SIGTERM) is how a person stops `serve`: exit 0, a last line saying so, and no traceback
    (uvicorn re-raised the signal after shutting down, which logged a KeyboardInterrupt/CancelledError chain)."""
    vault = small_vault(tmp_path / "vault")
    with serve(vault) as server:
        took = server.stop(sig)
        assert took <= STOP_SECONDS
        assert server.proc.returncode == 0
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "Error" not in log, log
    assert "stopped" in log.splitlines()[-1]


def test_a_second_ctrl_c_while_stopping_still_stops_quietly(tmp_path: Path) -> None:
    """A person who presses Ctrl-C twice (the second while serve is shutting down) gets the same quiet stop:
    uvicorn's force-exit on the second SIGINT cancelled the app's lifespan and logged a CancelledError traceback.
    Shutdown is bounded (the tests above), so the second press only says it is already stopping."""
    vault = small_vault(tmp_path / "vault")
    with serve(vault) as server:
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        server.proc.send_signal(signal.SIGINT)
        server.proc.wait(timeout=STOP_WAIT)
        assert time.monotonic() - sent <= STOP_SECONDS
        assert server.proc.returncode == 0
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "Error" not in log, log
    assert "stopped" in log.splitlines()[-1]


def test_a_second_serve_on_a_served_vault_is_refused_naming_the_first(tmp_path: Path) -> None:
    """Two serves on one vault raced on its vector file (11 of 296 chunks without vectors); the second is now
    refused with the first one's pid and URL, and the first serves on."""
    vault = small_vault(tmp_path / "vault")
    with serve(vault) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
        second = subprocess.run([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port",
                                 str(free_port())], capture_output=True, text=True, env=env, timeout=120, check=False)
        assert second.returncode == 1, second.stderr
        assert "already serves" in second.stderr and f"pid {server.proc.pid}" in second.stderr
        assert server.url in second.stderr and "Traceback" not in second.stderr
        assert server.get("/v1/health").status_code == 200
    with serve(vault):  # the lock goes with the process, however it ended (the first was killed)
        pass


def test_idle_half_sent_requests_never_exhaust_the_descriptors_or_flood_the_log(tmp_path: Path) -> None:
    """400 requests whose headers never finish, against a serve limited to 256 descriptors: they took the server
    down (health timed out) and asyncio logged "socket.accept() out of system resource" ~880,000 times in 25 s.
    Now connections past the bound are closed as accepted, a request's headers get a deadline, and the log
    stays short; the server answers again once the deadline has passed."""
    import contextlib
    import resource
    import socket as socketlib

    from server.guard import HEADER_SECONDS

    vault = small_vault(tmp_path / "vault")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    log_path = tmp_path / "server.log"

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    with log_path.open("w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--vault", str(vault), "--port",
                                 str(port)], stdout=log_file, stderr=subprocess.STDOUT, text=True, env=env,
                                preexec_fn=small_limit)
        server = Server(vault, port, proc)
        socks: list[socketlib.socket] = []
        try:
            wait(lambda: httpx.get(f"{server.url}/v1/health", timeout=1).status_code == 200, 60, "the server")
            started = time.monotonic()
            for _ in range(400):
                try:
                    s = socketlib.create_connection(("127.0.0.1", port), timeout=2)
                    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    socks.append(s)
                except OSError:
                    pass
            while time.monotonic() - started < HEADER_SECONDS + 3:  # drip a header line now and then
                for s in socks:
                    with contextlib.suppress(OSError):
                        s.sendall(b"X-Slow: 1\r\n")
                time.sleep(1)
            assert proc.poll() is None, "the server died"
            wait(lambda: httpx.get(f"{server.url}/v1/health", timeout=2).status_code == 200, 60, "health again")
            open_ = set(socks)
            deadline = time.monotonic() + 2 * HEADER_SECONDS + 60  # those queued behind the bound come later
            while open_ and time.monotonic() < deadline:
                for s in list(open_):
                    s.settimeout(0.01)
                    try:
                        if s.recv(1) == b"":
                            open_.discard(s)
                    except ConnectionResetError:
                        open_.discard(s)
                    except OSError:  # still open
                        pass
                time.sleep(0.2)
            assert len(open_) <= len(socks) // 20, f"{len(open_)} of {len(socks)} slow requests still open"
        finally:
            for s in socks:
                s.close()
            proc.kill()
            proc.wait()
    lines = log_path.read_text(errors="replace").splitlines()
    assert len(lines) < 200, f"{len(lines)} log lines"
    # a burst may still meet the limit for a moment (asyncio then pauses accepting for a second): said once
    assert sum("out of system resource" in line for line in lines) <= 2
